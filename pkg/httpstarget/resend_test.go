package httpstarget_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/seed-f6d3920e/warrant/pkg/httpstarget"
	"github.com/seed-f6d3920e/warrant/pkg/remote"
	"github.com/seed-f6d3920e/warrant/pkg/remote/remotetest"
)

// bound is how long a call that a transport keeps sending again is given
// before the test counts what arrived; a call sent once ends long before.
const bound = 5 * time.Second

// Issue 25 A: an HTTP/2 endpoint that reads the whole call and then resets
// its stream (REFUSED_STREAM, PROTOCOL_ERROR) or sends GOAWAY receives it
// exactly once, and the call's outcome is unknown; whether the firm's
// client is net/http's or golang.org/x/net/http2's. (net/http's HTTP/2
// client sent such a call again for as long as the context lived.)
func TestHTTP2FaultSentOnce(t *testing.T) {
	for _, fault := range []remotetest.Fault{remotetest.RefusedStream, remotetest.ProtocolError, remotetest.GoAway} {
		for _, base := range []string{"net/http", "x/net/http2"} {
			t.Run(fmt.Sprintf("%s/%s", fault, base), func(t *testing.T) {
				var calls atomic.Int32
				srv := remotetest.NewServer(http.NotFoundHandler(), func(r *http.Request, _ []byte) remotetest.Fault {
					calls.Add(1)
					return fault
				})
				defer srv.Close()
				hc := srv.Client()
				if base == "x/net/http2" {
					hc = &http.Client{Transport: &http2.Transport{TLSClientConfig: srv.TLSConfig()}}
				}
				tg, err := httpstarget.New(httpstarget.Config{Name: "court", URL: srv.URL + "/api", Auth: remote.Auth{Kind: remote.AuthNone}, HTTPClient: hc})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), bound)
				defer cancel()
				_, err = tg.Call(ctx, call("filings", `{"to":"court"}`))
				if n := calls.Load(); n != 1 {
					t.Fatalf("the call arrived %d times, want once (err %v)", n, err)
				}
				wantClass(t, err, "unknown")
				if ctx.Err() != nil {
					t.Fatalf("the call ended with its context (%v), not with the fault", err)
				}
			})
		}
	}
}
