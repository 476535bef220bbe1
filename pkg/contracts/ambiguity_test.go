package contracts

import (
	"errors"
	"strings"
	"testing"
)

// Two different inputs must never share a tool_input_hash, and the hash must
// cover the value that was sent. Unpaired UTF-16 surrogate escapes collapse to
// U+FFFD when decoded, and numbers a double cannot hold exactly round to
// another value; both are refused wherever an input is hashed or decoded,
// naming the JSON path.
func TestAmbiguousInputsAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name, in, path string
	}{
		{"lone high surrogate", `{"title":"\ud800\u0041"}`, "title"},
		{"lone high surrogate at end", `{"title":"x\ud83d"}`, "title"},
		{"lone low surrogate", `{"a":{"b":"\udc00"}}`, "a.b"},
		{"reversed pair", `{"s":"\ude00\ud83d"}`, "s"},
		{"surrogate in a key", `{"\ud800":1}`, ""},
		{"surrogate in an array", `{"to":["ok","\udfff"]}`, "to[1]"},
		{"2^53 + 1", `{"amount":9007199254740993}`, "amount"},
		{"-(2^53 + 1)", `{"amount":-9007199254740993}`, "amount"},
		{"huge integer", `{"n":123456789012345678901234567890}`, "n"},
		{"too many digits", `{"x":0.10000000000000001}`, "x"},
		{"exponent beyond a double", `{"x":1e400}`, "x"},
		{"nested", `{"a":[{"b":[1,2,18446744073709551616]}]}`, "a[0].b[2]"},
		// Cheap to refuse: no exact comparison of huge powers of ten.
		{"tiny exponent", `{"x":1e-999999999}`, "x"},
		{"huge exponent", `{"x":1e999999999}`, "x"},
		{"long literal", `{"x":1.` + strings.Repeat("0", 100) + `1}`, "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := InputHash([]byte(tc.in))
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Path != tc.path {
				t.Fatalf("InputHash = %v, want a FieldError at %q", err, tc.path)
			}
			var v map[string]any
			if err := DecodeStrict([]byte(tc.in), &v); !errors.Is(err, ErrInvalid) {
				t.Fatalf("DecodeStrict = %v, want ErrInvalid", err)
			}
		})
	}
	for _, ok := range []string{
		`{"title":"\ud83d\ude00"}`, // a proper pair (U+1F600)
		`{"title":"😀"}`,
		`{"amount":9007199254740992}`, `{"amount":-9007199254740992}`,
		`{"x":0.1}`, `{"x":1.0}`, `{"x":1e2}`, `{"x":-0.0}`, `{"x":123.456}`, `{"x":5e-324}`,
	} {
		if _, err := InputHash([]byte(ok)); err != nil {
			t.Errorf("InputHash(%s) = %v, want accepted", ok, err)
		}
	}
}
