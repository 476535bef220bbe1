package httpstarget_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/httpstarget"
	"github.com/seed-f6d3920e/warrant/pkg/remote"
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

// Issue 25 G: a careless endpoint echoes the bearer token in a 2xx answer:
// as it is, JSON-escaped, as a member's name, in JSON inside a string, in a
// body that is not JSON. The result, which reaches the model and the
// ledger, holds it in none of these forms; the rest of the answer is kept.
func TestTokenRedactedFromResults(t *testing.T) {
	const tok = "tok-5ecret/1"
	escaped := strings.NewReplacer("-", `\u002d`, "/", `\/`).Replace(tok)
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		auth := r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/api/plain":
			fmt.Fprintf(w, `{"echo":%q,"filed":true}`, auth)
		case "/api/escaped":
			fmt.Fprintf(w, `{"echo":"Bearer %s","filed":true}`, escaped)
		case "/api/key":
			fmt.Fprintf(w, `{%q:1,"filed":true}`, tok)
		case "/api/nested":
			// A JSON document as a string: {"echo":"Bearer tok\u002d…"}.
			inner, _ := json.Marshal(`{"echo":"Bearer ` + escaped + `"}`)
			fmt.Fprintf(w, `{"log":%s,"filed":true}`, inner)
		case "/api/text":
			fmt.Fprintf(w, "filed; you sent %s", auth)
		}
	})
	sec := &fakeSecrets{get: func(context.Context, string) (string, error) { return tok, nil }}
	tg := newTarget(t, e, httpstarget.Config{Auth: remote.Auth{Kind: remote.AuthBearer, TokenSecretID: "court/token"}, Secrets: sec})
	for _, tool := range []string{"plain", "escaped", "key", "nested", "text"} {
		res, err := tg.Call(context.Background(), call(tool, `{}`))
		if err != nil || res.IsError {
			t.Fatalf("%s: %s %v", tool, res.Content, err)
		}
		if strings.Contains(string(res.Content), tok) || strings.Contains(string(res.Content), escaped) {
			t.Errorf("%s: the result holds the token: %s", tool, res.Content)
		}
		for _, s := range stringsIn(t, res.Content) {
			if strings.Contains(s, tok) {
				t.Errorf("%s: the result holds the token in %q", tool, s)
			}
		}
		if !strings.Contains(string(res.Content), "filed") {
			t.Errorf("%s: the rest of the answer was lost: %s", tool, res.Content)
		}
	}
}
