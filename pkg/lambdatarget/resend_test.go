package lambdatarget_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/internal/lambdalocal"
	"github.com/seed-f6d3920e/warrant/pkg/lambdatarget"
	"github.com/seed-f6d3920e/warrant/pkg/remote/remotetest"
)

// bound is how long a call that a transport keeps sending again is given
// before the test counts what arrived; a call sent once ends long before.
const bound = 5 * time.Second

// Issue 25 A: a Lambda endpoint speaking HTTP/2 that reads the whole Invoke
// and then resets its stream (REFUSED_STREAM, PROTOCOL_ERROR) or sends
// GOAWAY receives it exactly once, and the call's outcome is unknown,
// whether the client is net/http's or golang.org/x/net/http2's. (The SDK's
// request cannot be rewound, so this held before pkg/remote made it so for
// every target; the test keeps it so.)
func TestHTTP2FaultInvokedOnce(t *testing.T) {
	for _, fault := range []remotetest.Fault{remotetest.RefusedStream, remotetest.ProtocolError, remotetest.GoAway} {
		for _, base := range []string{"net/http", "x/net/http2"} {
			t.Run(fmt.Sprintf("%s/%s", fault, base), func(t *testing.T) {
				var invokes atomic.Int32
				srv := remotetest.NewServer(http.NotFoundHandler(), func(r *http.Request, _ []byte) remotetest.Fault {
					if strings.HasSuffix(r.URL.Path, "/invocations") {
						invokes.Add(1)
					}
					return fault
				})
				defer srv.Close()
				hc := srv.Client()
				if base == "x/net/http2" {
					hc = &http.Client{Transport: &http2.Transport{TLSClientConfig: srv.TLSConfig()}}
				}
				tg, err := lambdatarget.New(lambdatarget.Config{Name: "firm-fns", Function: fnTool, Client: client(srv.URL), HTTPClient: hc, RetryDelay: time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), bound)
				defer cancel()
				_, err = tg.Call(ctx, callFor("h2-"+fault.String(), `{"say":"`+canary+`"}`))
				if n := invokes.Load(); n != 1 {
					t.Fatalf("the Invoke arrived %d times, want once (err %v)", n, err)
				}
				if !errors.Is(err, warrant.ErrTargetOutcomeUnknown) || ctx.Err() != nil {
					t.Fatalf("%v, want outcome unknown, before the context ended", err)
				}
				noContent(t, err)
			})
		}
	}
}

// Issue 25 A: the endpoint runs the function and drops a kept-alive
// connection before answering: one Invoke received, outcome unknown.
// (TestAnswerDroppedAfterRun drops a connection's first request, which
// net/http never sends again; this one is where HTTP/1 would.)
func TestKeptAliveDropInvokedOnce(t *testing.T) {
	l := startLocal(t, lambdalocal.Options{Fault: func(_ string, n int) lambdalocal.Fault {
		if n == 1 {
			return lambdalocal.NoFault
		}
		return lambdalocal.DropAnswer
	}})
	tg := newTarget(t, l.URL(), arn(fnTool))
	if _, err := tg.Call(context.Background(), callFor("warm", `{"do":"echo"}`)); err != nil {
		t.Fatal(err)
	}
	_, err := tg.Call(context.Background(), callFor("kept-alive", `{"say":"`+canary+`"}`))
	if !errors.Is(err, warrant.ErrTargetOutcomeUnknown) {
		t.Fatalf("%v, want outcome unknown", err)
	}
	noContent(t, err)
	if n := l.runs(t, "kept-alive"); n != 1 {
		t.Fatalf("ran %d times, want once", n)
	}
	if n := l.Requests(fnTool); n != 2 {
		t.Fatalf("%d requests, want two (the first call, and the dropped one once)", n)
	}
}
