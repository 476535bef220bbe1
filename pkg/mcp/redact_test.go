package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/mcp"
)

// stringsIn lists every string in a JSON value, object keys included, as
// decoded, and, where one is JSON itself, the strings within it.
func stringsIn(t *testing.T, raw []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
			var inner any
			if json.Unmarshal([]byte(v), &inner) == nil {
				walk(inner)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for k, e := range v {
				out = append(out, k)
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// Issue 25 G: a careless server echoes the bearer token in its result: in a
// text block, in JSON inside one (JSON-escaped), as a member's name and
// value of its structured content. The result, which reaches the model and
// the ledger, holds it in none of these forms.
func TestTokenRedactedFromResults(t *testing.T) {
	const tok = "tok-5ecret/1"
	srv := newServer(t, serverOptions{token: tok})
	sec := &fakeSecrets{get: func(context.Context, string) (string, error) { return tok, nil }}
	tg := newTarget(t, mcp.Config{URL: srv.URL, Auth: mcp.Auth{Kind: mcp.AuthBearer, TokenSecretID: "mcp/docs-token"}, Secrets: sec})
	for _, input := range []string{`{}`, `{"want":"structured"}`} {
		res, err := tg.Call(context.Background(), call("whoami", anySchema, input))
		if err != nil || res.IsError {
			t.Fatalf("%s: %s %v", input, res.Content, err)
		}
		if strings.Contains(string(res.Content), tok) || strings.Contains(string(res.Content), `tok\u002d`) {
			t.Errorf("%s: the result holds the token: %s", input, res.Content)
		}
		for _, s := range stringsIn(t, res.Content) {
			if strings.Contains(s, tok) {
				t.Errorf("%s: the result holds the token in %q", input, s)
			}
		}
		if !strings.Contains(string(res.Content), "you sent") && !strings.Contains(string(res.Content), "filed") {
			t.Errorf("%s: the rest of the answer was lost: %s", input, res.Content)
		}
	}
}
