package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/remote"
)

// fixedTokens are credentials that have held these secrets.
type fixedTokens []string

func (f fixedTokens) Token(context.Context) (string, error) { return f[0], nil }
func (f fixedTokens) Invalidate(string)                     {}
func (f fixedTokens) Known() []string                       { return f }

// FuzzRedactJSON: whatever JSON a system answers, the result is JSON, no
// string in it (names included) holds a secret as decoded, and an answer
// without a secret is kept byte for byte.
func FuzzRedactJSON(f *testing.F) {
	for _, s := range []string{`{"a":"tok-1"}`, `["x\u0061b", {"ab":1}]`, `"tok\u002d1"`, `{"e":"{\"t\":\"a\\u0062\"}"}`, `1`, `null`, `"\\\""`} {
		f.Add(s)
	}
	c := fixedTokens{"tok-1", "ab"}
	f.Fuzz(func(t *testing.T, in string) {
		if !json.Valid([]byte(in)) {
			return
		}
		out := remote.RedactJSON([]byte(in), c)
		if !json.Valid(out) {
			t.Fatalf("RedactJSON(%s) = %s, not JSON", in, out)
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		var walk func(any)
		walk = func(v any) {
			switch v := v.(type) {
			case string:
				for _, s := range c {
					if strings.Contains(v, s) {
						t.Fatalf("RedactJSON(%s) = %s: %q holds %q", in, out, v, s)
					}
				}
			case []any:
				for _, e := range v {
					walk(e)
				}
			case map[string]any:
				for k, e := range v {
					walk(k)
					walk(e)
				}
			}
		}
		walk(v)
		if !strings.Contains(string(out), "[redacted]") && string(out) != in {
			t.Fatalf("RedactJSON(%s) = %s: changed, nothing redacted", in, out)
		}
	})
}
