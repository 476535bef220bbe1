package contracts

import (
	"errors"
	"strings"
	"testing"
)

type inner struct {
	Name string `json:"name"`
	Opt  int    `json:"opt,omitempty"`
}

type outer struct {
	ID    string            `json:"id"`
	Count int64             `json:"count"`
	Flag  bool              `json:"flag,omitempty"`
	In    inner             `json:"in"`
	List  []inner           `json:"list,omitempty"`
	Tags  map[string]string `json:"tags,omitempty"`
	Raw   []byte            `json:"-"`
	Any   any               `json:"any,omitempty"`
}

func TestDecodeStrict(t *testing.T) {
	good := `{"id":"a","count":1,"in":{"name":"n"}}`
	tests := []struct {
		name, in, path string // path "" with ok=true means success
		ok             bool
	}{
		{"good", good, "", true},
		{"good with optionals", `{"id":"a","count":1,"in":{"name":"n","opt":2},"list":[{"name":"x"}],"tags":{"k":"v"},"any":{"a":[1,2]}}`, "", true},
		{"unknown field", `{"id":"a","count":1,"in":{"name":"n"},"extra":1}`, "extra", false},
		{"unknown nested field", `{"id":"a","count":1,"in":{"name":"n","x":1}}`, "in.x", false},
		{"duplicate key", `{"id":"a","id":"b","count":1,"in":{"name":"n"}}`, "id", false},
		{"duplicate key in free-form value", `{"id":"a","count":1,"in":{"name":"n"},"any":{"k":1,"k":2}}`, "any.k", false},
		{"duplicate key in map", `{"id":"a","count":1,"in":{"name":"n"},"tags":{"k":"1","k":"2"}}`, "tags.k", false},
		{"case-variant key", `{"ID":"a","count":1,"in":{"name":"n"}}`, "ID", false},
		{"case-variant nested key", `{"id":"a","count":1,"in":{"Name":"n"}}`, "in.Name", false},
		{"trailing data", good + ` {}`, "", false},
		{"trailing garbage", good + `x`, "", false},
		{"wrong type string", `{"id":1,"count":1,"in":{"name":"n"}}`, "id", false},
		{"wrong type number", `{"id":"a","count":"1","in":{"name":"n"}}`, "count", false},
		{"fraction into int", `{"id":"a","count":1.5,"in":{"name":"n"}}`, "count", false},
		{"wrong type object", `{"id":"a","count":1,"in":[]}`, "in", false},
		{"wrong type in array", `{"id":"a","count":1,"in":{"name":"n"},"list":[1]}`, "list[0]", false},
		{"missing required", `{"id":"a","in":{"name":"n"}}`, "count", false},
		{"missing nested required", `{"id":"a","count":1,"in":{}}`, "in.name", false},
		{"null for required", `{"id":null,"count":1,"in":{"name":"n"}}`, "id", false},
		{"empty", ``, "", false},
		{"whitespace only", "  \n", "", false},
		{"not an object", `[]`, "", false},
		{"invalid utf8", "{\"id\":\"\xff\",\"count\":1,\"in\":{\"name\":\"n\"}}", "", false},
		{"leading zero", `{"id":"a","count":01,"in":{"name":"n"}}`, "count", false},
		{"control char", "{\"id\":\"a\x01\",\"count\":1,\"in\":{\"name\":\"n\"}}", "id", false},
		{"unterminated", `{"id":"a"`, "", false},
		{"deep nesting", `{"id":"a","count":1,"in":{"name":"n"},"any":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var o outer
			err := DecodeStrict([]byte(tc.in), &o)
			if tc.ok {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted %s", tc.in)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not match ErrInvalid", err)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T is not a *FieldError", err)
			}
			if tc.path != "" && fe.Path != tc.path {
				t.Fatalf("path = %q, want %q (%v)", fe.Path, tc.path, err)
			}
		})
	}
}

func TestDecodeStrictEscapedKeyIsTheSameKey(t *testing.T) {
	// "\u0069d" is "id": a duplicate spelled with an escape is still a duplicate.
	var o outer
	err := DecodeStrict([]byte(`{"id":"a","\u0069d":"b","count":1,"in":{"name":"n"}}`), &o)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Path != "id" {
		t.Fatalf("escaped duplicate not rejected: %v", err)
	}
}

func TestDecodeStrictNeedsPointer(t *testing.T) {
	if err := DecodeStrict([]byte(`{}`), outer{}); err == nil {
		t.Fatal("non-pointer accepted")
	}
}
