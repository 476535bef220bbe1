package contracts

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Keys a client may send that no error may echo: error paths reach problem
// details and CloudWatch lines. Each holds a marker that survives JSON
// escaping, so a test can look for it in encoded output too.
var hostileKeys = map[string]string{
	"5000 chars": "LONGKEY" + strings.Repeat("a", 5000-7),
	"privileged": "PRIVILEGED: the client admitted backdating the merger documents",
	"punctuated": "QUOTED \"key\" with spaces,\nnewlines\tand non-ASCII é 中文 \u2028 [0].$",
}

// hostileMarker is a fragment of every hostile key.
func hostileMarker(key string) string { return key[:6] }

// q encodes a key as a JSON string.
func q(key string) string {
	b, err := json.Marshal(key)
	if err != nil {
		panic(err)
	}
	return string(b)
}

type countsDoc struct {
	N map[string]int `json:"n"`
}

func TestErrorPathsDoNotEchoKeys(t *testing.T) {
	good := `"id":"a","count":1,"in":{"name":"n"}`
	for kname, key := range hostileKeys {
		k := q(key)
		for _, tc := range []struct {
			name, in, path, reason string
			into                   any
		}{
			{"top-level unknown", `{` + good + `,` + k + `:1}`, "$[3]", "unknown field", &outer{}},
			{"top-level unknown first", `{` + k + `:1,` + good + `}`, "$[0]", "unknown field", &outer{}},
			{"top-level duplicate", `{` + k + `:1,` + k + `:2,` + good + `}`, "$[1]", "duplicate key", &outer{}},
			{"unknown in nested struct", `{"id":"a","count":1,"in":{"name":"n",` + k + `:1}}`, "$.in[1]", "unknown field", &outer{}},
			{"unknown in array element", `{` + good + `,"list":[{"name":"x"},{"name":"y",` + k + `:true}]}`, "$.list[1][1]", "unknown field", &outer{}},
			{"duplicate in array element", `{` + good + `,"list":[{` + k + `:1,` + k + `:1}]}`, "$.list[0][1]", "duplicate key", &outer{}},
			{"duplicate in free-form value", `{` + good + `,"any":{"k":1,` + k + `:1,` + k + `:2}}`, "$.any[2]", "duplicate key", &outer{}},
			{"duplicate in map", `{` + good + `,"tags":{` + k + `:"1",` + k + `:"2"}}`, "$.tags[1]", "duplicate key", &outer{}},
			{"wrong type under map key", `{` + good + `,"tags":{"a":"x",` + k + `:1}}`, "$.tags[1]", "wrong type: must be a string", &outer{}},
			{"bad number under free-form key", `{` + good + `,"any":{` + k + `:01}}`, "$.any[0]", "number with a leading zero", &outer{}},
			{"identifier under free-form key", `{` + good + `,"any":{` + k + `:[{"x":1,"x":2}]}}`, "$.any[0][0].x", "duplicate key", &outer{}},
			{"nesting under free-form key", `{` + good + `,"any":{` + k + `:` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}}`,
				"$.any[0]" + strings.Repeat("[0]", 63), "nested deeper than 64 levels", &outer{}},
			{"fraction into int under map key", `{"n":{"a":1,` + k + `:3.5}}`, "$.n[1]", "wrong type or out of range", &countsDoc{}},
			{"into a bare map", `{"a":1,` + k + `:3.5}`, "$[1]", "wrong type or out of range", &map[string]int{}},
			{"free-form document", `[{"a":1},{` + k + `:1,` + k + `:1}]`, "$[1][1]", "duplicate key", new(any)},
		} {
			t.Run(kname+"/"+tc.name, func(t *testing.T) {
				err := DecodeStrict([]byte(tc.in), tc.into)
				var fe *FieldError
				if !errors.As(err, &fe) {
					t.Fatalf("DecodeStrict = %v, want a *FieldError", err)
				}
				if fe.Path != tc.path || fe.Reason != tc.reason {
					t.Errorf("FieldError{Path: %.120q, Reason: %.80q}, want {%q, %q}", fe.Path, fe.Reason, tc.path, tc.reason)
				}
				if want := "field " + tc.path + ": " + tc.reason; err.Error() != want {
					t.Errorf("Error() = %.200q, want %q", err.Error(), want)
				}
				if !ValidPath(fe.Path) {
					t.Errorf("ValidPath(%.120q) = false", fe.Path)
				}
				if m := hostileMarker(key); strings.Contains(err.Error(), m) {
					t.Errorf("error echoes the key: %.200q", err.Error())
				}
			})
		}
	}
}

// Short identifiers are still named, and every existing message for them
// stays as it was; anything else is rendered by position.
func TestErrorPathIdentifierRule(t *testing.T) {
	long64 := "k" + strings.Repeat("x", 63)
	for _, tc := range []struct {
		key, path string
	}{
		{"x", "any.x"},
		{"_x", "any._x"},
		{"Tool_Name", "any.Tool_Name"},
		{"agent-key", "any.agent-key"},
		{"a1", "any.a1"},
		{long64, "any." + long64},
		{long64 + "x", "$.any[2]"}, // 65 characters
		{"1abc", "$.any[2]"},       // starts with a digit
		{"-x", "$.any[2]"},         // starts with a hyphen
		{"a.b", "$.any[2]"},        // a dot would read as nesting
		{"a[0]", "$.any[2]"},       // so would brackets
		{"$", "$.any[2]"},          // and the root sign
		{"", "$.any[2]"},           // the empty key
		{"é", "$.any[2]"},          // non-ASCII
		{"a b", "$.any[2]"},        // space
	} {
		in := `{"id":"a","count":1,"in":{"name":"n"},"any":{"first":0,` + q(tc.key) + `:1,` + q(tc.key) + `:2}}`
		var o outer
		err := DecodeStrict([]byte(in), &o)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Path != tc.path || fe.Reason != "duplicate key" {
			t.Errorf("key %q: %v, want a duplicate key at %q", tc.key, err, tc.path)
		}
		if !ValidPath(tc.path) {
			t.Errorf("ValidPath(%q) = false", tc.path)
		}
		// (A key holding path syntax would read as several segments.)
		if got := ValidPath("any." + tc.key); !strings.ContainsAny(tc.key, ".[") && got != (tc.path == "any."+tc.key) {
			t.Errorf("ValidPath(%q) = %v: a key is valid in a path exactly when it is named", "any."+tc.key, got)
		}
	}
}

// A path found inside a nested document (a tool input) keeps its form when
// re-rooted under the member that holds the document.
func TestPrefixedPositionalPath(t *testing.T) {
	for _, tc := range []struct{ inner, want string }{
		{"", "payload.input"},
		{"a", "payload.input.a"},
		{"[2]", "payload.input[2]"},
		{"$[2]", "$.payload.input[2]"},
		{"$.a[2]", "$.payload.input.a[2]"},
		{"$[0][3].b", "$.payload.input[0][3].b"},
	} {
		err := prefixed("payload.input", &FieldError{Path: tc.inner, Reason: "duplicate key"})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Path != tc.want {
			t.Errorf("prefixed(%q) = %v, want path %q", tc.inner, err, tc.want)
		}
	}
	_, err := InputHash([]byte(`{"a":{` + q(hostileKeys["privileged"]) + `:9007199254740993}}`))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Path != "$.a[0]" {
		t.Errorf("InputHash = %v, want a FieldError at $.a[0]", err)
	}
}
