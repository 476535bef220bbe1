package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/seed-f6d3920e/warrant/pkg/remote"
	"github.com/seed-f6d3920e/warrant/pkg/remote/remotetest"
)

// bound is how long a call that the transport keeps sending again is given
// before the test counts what arrived; a call sent once ends long before.
const bound = 5 * time.Second

// send POSTs one call through a Transport over base under a Probe: a body
// net/http can rewind (GetBody, as http.NewRequest sets for a
// bytes.Reader) and the canonical Idempotency-Key, which net/http's HTTP/1
// client takes as leave to send a POST again.
func send(t *testing.T, base http.RoundTripper, target string) (remote.Verdict, error) {
	t.Helper()
	origin, _ := url.Parse(target)
	hc := &http.Client{Transport: &remote.Transport{Base: base, Origin: origin}, CheckRedirect: remote.NoRedirect}
	p := &remote.Probe{}
	ctx, cancel := context.WithTimeout(remote.WithProbe(context.Background(), p), bound)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader([]byte(`{"file":"motion"}`)))
	if req.GetBody == nil {
		t.Fatal("the request cannot be rewound: the test would prove nothing")
	}
	req.Header.Set("Idempotency-Key", `"eff-1"`)
	resp, err := hc.Do(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return p.Seal(), err
}

// An HTTP/2 server that reads the whole call and then refuses its stream,
// or sends GOAWAY, receives it once: net/http's HTTP/2 client (and
// golang.org/x/net/http2's) would send it again, on the same connection or
// a new one, for as long as the context lives.
func TestHTTP2FaultNotResent(t *testing.T) {
	for _, fault := range []remotetest.Fault{remotetest.RefusedStream, remotetest.ProtocolError, remotetest.GoAway} {
		for _, base := range []string{"net/http", "x/net/http2"} {
			t.Run(fmt.Sprintf("%s/%s", fault, base), func(t *testing.T) {
				srv := remotetest.NewServer(http.NotFoundHandler(), func(*http.Request, []byte) remotetest.Fault { return fault })
				defer srv.Close()
				var rt http.RoundTripper = srv.Client().Transport
				if base == "x/net/http2" {
					rt = &http2.Transport{TLSClientConfig: srv.TLSConfig()}
				}
				v, err := send(t, rt, srv.URL)
				if n := srv.Arrivals(); n != 1 {
					t.Fatalf("the call arrived %d times, want once (err %v)", n, err)
				}
				if err == nil || errors.Is(err, context.DeadlineExceeded) || !v.Sent || v.Status != 0 {
					t.Fatalf("verdict %+v, err %v: want sent, no answer, and the error of the fault", v, err)
				}
			})
		}
	}
}

// An HTTP/1 server that closes a kept-alive connection after reading the
// whole call receives it once, Idempotency-Key and all.
func TestHTTP1DropNotResent(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path != "/drop" {
			return
		}
		calls.Add(1)
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}))
	defer srv.Close()
	base := remote.DefaultTransport()
	if v, err := send(t, base, srv.URL+"/warm"); err != nil || v.Status != 200 { // a connection kept alive
		t.Fatalf("verdict %+v, err %v", v, err)
	}
	v, err := send(t, base, srv.URL+"/drop")
	if n := calls.Load(); n != 1 {
		t.Fatalf("the call arrived %d times, want once (err %v)", n, err)
	}
	if err == nil || !v.Sent || v.Status != 0 {
		t.Fatalf("verdict %+v, err %v: want sent and no answer", v, err)
	}
}

// The same server answers what it does not fault, over either client: a
// call sent once still gets its answer.
func TestHTTP2Served(t *testing.T) {
	srv := remotetest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write(body)
	}), nil)
	defer srv.Close()
	for name, rt := range map[string]http.RoundTripper{"net/http": srv.Client().Transport, "x/net/http2": &http2.Transport{TLSClientConfig: srv.TLSConfig()}} {
		v, err := send(t, rt, srv.URL)
		if err != nil || !v.Sent || v.Status != http.StatusCreated {
			t.Fatalf("%s: verdict %+v, err %v", name, v, err)
		}
	}
	if n := srv.Arrivals(); n != 2 {
		t.Fatalf("%d arrivals, want 2", n)
	}
}
