package toolpolicy

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

func TestParseTape(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{`{}`, true},
		{` {"a":1} `, true},
		{"{\"a\":[1,2,{\"b\":null}],\"c\":true,\"d\":false,\"e\":-0.5e+3}", true},
		{`{"s":"\ud83d\ude00 \u00e9 \n \" \\ \/"}`, true},
		{`{"é":"ü"}`, true},
		{`{"a":1,"a":2}`, true}, // parsed; a pointer reaching the key is refused
		{``, false},
		{`[]`, false},
		{`"x"`, false},
		{`null`, false},
		{`{"a":1}{}`, false},
		{`{"a":1,}`, false},
		{`{"a" 1}`, false},
		{`{a:1}`, false},
		{`{"a":01}`, false},
		{`{"a":1.}`, false},
		{`{"a":.5}`, false},
		{`{"a":1e}`, false},
		{`{"a":-}`, false},
		{`{"a":tru}`, false},
		{`{"a":"x}`, false},
		{"{\"a\":\"\x01\"}", false},
		{`{"a":"\x"}`, false},
		{`{"a":"\u12"}`, false},
		{`{"a":"\ud800"}`, false},
		{`{"a":"\udc00\ud800"}`, false},
		{`{"a":"\ud800\u0041"}`, false},
		{"{\"a\":\"\xff\"}", false},
		{"{\"a\":\"\xc3\"}", false},
		{strings.Repeat(`{"a":`, 64) + `1` + strings.Repeat(`}`, 64), true},
		{strings.Repeat(`{"a":`, 65) + `1` + strings.Repeat(`}`, 65), false},
		{`{"a":` + strings.Repeat(`[`, 70) + strings.Repeat(`]`, 70) + `}`, false},
	} {
		_, ok := parseTape([]byte(tc.in), nil)
		if ok != tc.ok {
			t.Errorf("parseTape(%q) = %v, want %v", tc.in, ok, tc.ok)
		}
	}
}

// surrogateEscape matches a \u escape of a UTF-16 surrogate, which the
// tape accepts only as a proper pair.
var surrogateEscape = regexp.MustCompile(`\\u[dD][89a-fA-F]`)

func jsonDepth(d []byte) int {
	depth, max, inStr := 0, 0, false
	for i := 0; i < len(d); i++ {
		switch c := d[i]; {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case !inStr && (c == '{' || c == '['):
			if depth++; depth > max {
				max = depth
			}
		case !inStr && (c == '}' || c == ']'):
			depth--
		}
	}
	return max
}

// FuzzTape checks the tape against encoding/json: it accepts exactly the
// valid JSON objects, but for invalid UTF-8, surrogate escapes (it refuses
// unpaired ones) and nesting beyond maxInputDepth; and every string it decodes, key or
// value, reads as encoding/json reads it.
func FuzzTape(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,{"b":"\u00e9\n"}],"c":null}`, `{"a":"\ud83d\ude00"}`, `{"a":"\ud800"}`, `[1]`, `{"a":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		tape, ok := parseTape(d, nil)
		trimmed := bytes.TrimLeft(d, " \t\r\n")
		// encoding/json lets invalid UTF-8 through (as U+FFFD); the tape
		// refuses it, as contracts does.
		want := json.Valid(d) && utf8.Valid(d) && len(trimmed) > 0 && trimmed[0] == '{'
		if ok && !want {
			t.Fatalf("tape accepted %q, which is not a valid JSON object", d)
		}
		if !ok {
			if want && !surrogateEscape.Match(d) && jsonDepth(d) <= maxInputDepth {
				t.Fatalf("tape refused the valid object %q", d)
			}
			return
		}
		for i := range tape {
			nd := &tape[i]
			if nd.kind == kString {
				var s string
				if err := json.Unmarshal(d[nd.start:nd.end], &s); err != nil {
					t.Fatalf("node %d %q: %v", i, d[nd.start:nd.end], err)
				}
				if got := string(appendUnescaped(nil, d[nd.start+1:nd.end-1])); got != s {
					t.Fatalf("decoded %q, encoding/json %q", got, s)
				}
			}
			if nd.kend > nd.kstart || (nd.kstart > 0 && d[nd.kstart-1] == '"') {
				var k string
				if err := json.Unmarshal(d[nd.kstart-1:nd.kend+1], &k); err != nil {
					t.Fatalf("key of node %d: %v", i, err)
				}
				if got := string(appendUnescaped(nil, d[nd.kstart:nd.kend])); got != k {
					t.Fatalf("decoded key %q, encoding/json %q", got, k)
				}
			}
		}
	})
}

func TestParseNumber(t *testing.T) {
	for _, s := range []string{"0", "-0", "7", "-42", "123456789012345", "1234567890123456", "9007199254740993",
		"1.5", "-2.25e3", "1E-7", "1e400", "-1e400", "0.1"} {
		want, _ := strconv.ParseFloat(s, 64)
		if got := parseNumber([]byte(s)); got != want {
			t.Errorf("parseNumber(%s) = %v, want %v", s, got, want)
		}
	}
}

// refResolve is the pointer semantics written over encoding/json's tree:
// the reference the tape-based resolve is checked against.
func refResolve(v any, ptr []segment, out *[]any) (unknown bool) {
	if len(ptr) == 0 {
		*out = append(*out, v)
		return false
	}
	s := ptr[0]
	switch v := v.(type) {
	case []any:
		switch {
		case s.wild:
			for _, el := range v {
				if refResolve(el, ptr[1:], out) {
					unknown = true
				}
			}
			return unknown
		case s.index >= 0:
			if s.index >= len(v) {
				return false
			}
			return refResolve(v[s.index], ptr[1:], out)
		case s.name == "-":
			return false
		}
		return true
	case map[string]any:
		if s.wild {
			return true
		}
		el, ok := v[s.name]
		if !ok {
			return false
		}
		return refResolve(el, ptr[1:], out)
	}
	return true
}

// FuzzResolve checks resolve against refResolve on inputs without
// duplicate keys (encoding/json keeps the last of two; the tape refuses to
// choose).
func FuzzResolve(f *testing.F) {
	f.Add([]byte(`{"to":"a@b.c","cc":["x@y.z",1,{"a":2}],"attachments":[{"size_bytes":3},{"size_bytes":"4"},5]}`), "/attachments/*/size_bytes")
	f.Add([]byte(`{"a~b":{"c/d":[true,false]}}`), "/a~0b/c~11/1")
	f.Add([]byte(`{"":{"":1},"*":2}`), "//")
	f.Add([]byte(`{"a":[[1,2],[3]]}`), "/a/*/*")
	f.Add([]byte(`{"a":[1,2]}`), "/a/-")
	f.Add([]byte(`{"a":{"0":1}}`), "/a/0")
	f.Fuzz(func(t *testing.T, d []byte, pointer string) {
		ptr, err := parsePointer(pointer)
		if err != nil {
			return
		}
		var v any
		if contracts.DecodeStrict(d, &v) != nil {
			return // duplicate keys, or not JSON
		}
		if _, ok := v.(map[string]any); !ok {
			return
		}
		tape, ok := parseTape(d, nil)
		if !ok {
			if !surrogateEscape.Match(d) && jsonDepth(d) <= maxInputDepth {
				t.Fatalf("tape refused %q", d)
			}
			return
		}
		var want []any
		wantUnknown := refResolve(v, ptr, &want)

		e := &evaluator{in: d, tape: tape, input: 1}
		if len(ptr) > 0 && !ptr[0].wild {
			e.firsts = map[string]int{ptr[0].name: 0}
			ptr[0].first = 0
		}
		e.indexTop()
		gotUnknown := e.resolve(0, ptr) == tUnknown
		if gotUnknown != wantUnknown {
			t.Fatalf("%s on %s: unknown = %v, want %v", pointer, d, gotUnknown, wantUnknown)
		}
		got := make([]any, 0, len(e.sel))
		for _, n := range e.sel {
			var x any
			if err := json.Unmarshal(d[tape[n].start:tape[n].end], &x); err != nil {
				t.Fatal(err)
			}
			got = append(got, x)
		}
		if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("%s on %s: selected %v, want %v", pointer, d, got, want)
		}
	})
}

func TestParsePointer(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{"", nil, true},
		{"/", []string{""}, true},
		{"/a/b", []string{"a", "b"}, true},
		{"/a~1b/c~0d/~01", []string{"a/b", "c~d", "~1"}, true},
		{"/*/x", []string{"*", "x"}, true},
		{"a", nil, false},
		{"/a~", nil, false},
		{"/a~2", nil, false},
		{"/~x", nil, false},
		{"/" + strings.Repeat("a/", maxPointerSegs), nil, false},
	} {
		segs, err := parsePointer(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("parsePointer(%q) err = %v, want ok %v", tc.in, err, tc.ok)
			continue
		}
		var names []string
		for _, s := range segs {
			names = append(names, s.name)
		}
		if !reflect.DeepEqual(names, tc.want) {
			t.Errorf("parsePointer(%q) = %q, want %q", tc.in, names, tc.want)
		}
	}
	segs, _ := parsePointer("/0/10/01/-/*/~1")
	for i, want := range []struct {
		index int
		wild  bool
	}{{0, false}, {10, false}, {-1, false}, {-1, false}, {-1, true}, {-1, false}} {
		if segs[i].index != want.index || segs[i].wild != want.wild {
			t.Errorf("segment %d = %+v, want %+v", i, segs[i], want)
		}
	}
}
