package mcp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/mcp"
)

// Issue 25 D: an answer to a tools/call after it was sent is the tool's
// outcome or unknown, never "did not run", and the call is never sent
// again: a redirect ("created, see there"), a gateway's 404, 409, 422 or 429
// after the server acted, a 401 (the token is dropped, the call not made
// again with a fresh one), a 404 on a session, and a JSON-RPC error from
// inside the tool (invalid params: since 2026-07-28 an HTTP 400). Each
// arrives once.
func TestAnswersAfterSending(t *testing.T) {
	for _, f := range flavors {
		t.Run(f.name, func(t *testing.T) {
			o := f.o
			o.token = "tok-1"
			srv := newServer(t, o)
			sec := &fakeSecrets{get: func(context.Context, string) (string, error) { return "tok-1", nil }}
			tg := newTarget(t, mcp.Config{URL: srv.URL, Auth: mcp.Auth{Kind: mcp.AuthBearer, TokenSecretID: "mcp/docs-token"}, Secrets: sec})
			ctx := context.Background()
			for _, tool := range []string{"after_303", "after_302", "after_404", "after_409", "after_422", "after_429", "after_401", "session_gone", "invalid_params", "forbidden"} {
				before := sec.reads.Load()
				_, err := tg.Call(ctx, call(tool, anySchema, `{"to":"court"}`))
				if got := class(err); got != "unknown" {
					t.Errorf("%s: class %s, want unknown (%v)", tool, got, err)
				}
				if n := srv.arrivals(tool); n != 1 {
					t.Errorf("%s: the tools/call arrived %d times, want once", tool, n)
				}
				if tool == "after_401" {
					// The refused token is dropped: the next call reads the secret again.
					if _, err := tg.Call(ctx, call("file_motion", motionSchema, `{"matter_id":"m","title":"t"}`)); err != nil {
						t.Fatalf("the call after the 401: %v", err)
					}
					if got := sec.reads.Load() - before; got != 1 {
						t.Errorf("the secret was read %d times after the 401, want once", got)
					}
				}
				if strings.HasPrefix(tool, "after_") && len(srv.seen(tool)) != 1 {
					t.Errorf("%s ran %d times, want once", tool, len(srv.seen(tool)))
				}
			}
			if t.Failed() {
				return
			}
			// The target still works.
			if _, err := tg.Call(ctx, call("file_motion", motionSchema, `{"matter_id":"m","title":"t"}`)); err != nil {
				t.Fatal(fmt.Errorf("a call after them: %w", err))
			}
		})
	}
}
