package httpstarget_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/httpstarget"
	"github.com/seed-f6d3920e/warrant/pkg/remote"
)

// Issue 25 D: an answer after the call was sent is the effect's outcome or
// unknown, never "did not run", unless the catalog says the endpoint's 4xx
// answers are final; and nothing is sent again. The endpoint applies each
// call, then answers the status its path names: a redirect ("created, see
// there"), a gateway's 409, 422 or 429 after the backend acted, a 401.
func TestAnswersAfterSending(t *testing.T) {
	var mu sync.Mutex
	applied := map[string]int{}
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		mu.Lock()
		applied[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		var status int
		fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/api/s"), "%d", &status)
		if status/100 == 3 {
			w.Header().Set("Location", "/api/filings/f-1")
		}
		w.WriteHeader(status)
	})
	sec := &fakeSecrets{get: func(context.Context, string) (string, error) { return "tok-1", nil }}
	for _, tc := range []struct {
		status int
		final  bool
		want   string // an error class, or "tool error"
	}{
		{303, false, "unknown"},
		{302, false, "unknown"},
		{303, true, "unknown"}, // final_client_errors speaks of 4xx only
		{302, true, "unknown"},
		{409, false, "unknown"},
		{422, false, "unknown"},
		{429, false, "unknown"},
		{401, false, "unknown"},
		{409, true, "tool error"},
		{422, true, "tool error"},
		{429, true, "tool error"},
		{401, true, "tool error"},
	} {
		t.Run(fmt.Sprintf("%d final %v", tc.status, tc.final), func(t *testing.T) {
			before := sec.reads.Load()
			tg := newTarget(t, e, httpstarget.Config{FinalClientErrors: tc.final, Auth: remote.Auth{Kind: remote.AuthBearer, TokenSecretID: "court/token"}, Secrets: sec})
			c := call(fmt.Sprintf("s%d", tc.status), `{"to":"court"}`)
			res, err := tg.Call(context.Background(), c)
			mu.Lock()
			n := applied[`"`+c.EffectRef+`"`]
			mu.Unlock()
			if n != 1 {
				t.Fatalf("the call arrived %d times, want once", n)
			}
			if tc.want == "tool error" {
				if want := fmt.Sprintf(`{"http_status":%d}`, tc.status); err != nil || !res.IsError || string(res.Content) != want {
					t.Fatalf("result %s (isError %v), err %v; want %s as a tool error", res.Content, res.IsError, err, want)
				}
			} else {
				wantClass(t, err, tc.want)
				if !strings.Contains(err.Error(), fmt.Sprintf("HTTP %d", tc.status)) {
					t.Fatalf("error %q does not name the status", err)
				}
			}
			if tc.status != http.StatusUnauthorized {
				return
			}
			// The refused token was dropped: the next call reads the secret again.
			if _, err := tg.Call(context.Background(), call("s200", `{}`)); err != nil {
				t.Fatal(err)
			}
			if got := sec.reads.Load() - before; got != 2 {
				t.Fatalf("the secret was read %d times for a 401 and a call after it, want 2", got)
			}
		})
	}
}
