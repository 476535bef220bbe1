package httpstarget_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/httpstarget"
	"github.com/seed-f6d3920e/warrant/pkg/remote"
)

// The HTTPS endpoints the tests call: TLS servers on loopback, each keeping
// what reached it.

// seenRequest is one request as the endpoint received it, body read whole.
type seenRequest struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// endpoint is a firm's HTTPS system. handle answers each request after its
// body was read (a nil handle answers {"ok":true}).
type endpoint struct {
	*httptest.Server
	handle func(w http.ResponseWriter, r *http.Request, body []byte)

	mu   sync.Mutex
	seen []seenRequest
}

func newEndpoint(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, body []byte)) *endpoint {
	t.Helper()
	e := &endpoint{handle: handle}
	e.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.seen = append(e.seen, seenRequest{Method: r.Method, Path: r.URL.EscapedPath(), Header: r.Header.Clone(), Body: body})
		e.mu.Unlock()
		if e.handle == nil {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true}`)
			return
		}
		e.handle(w, r, body)
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *endpoint) requests() []seenRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]seenRequest(nil), e.seen...)
}

// drop closes the connection without an answer, after the call was read
// (and, by the handler that calls it, applied).
func drop(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	conn.Close()
}

// newTarget returns a target for e's base URL /api, trusting e's
// certificate; cfg's zero fields are filled in.
func newTarget(t *testing.T, e *endpoint, cfg httpstarget.Config) *httpstarget.Target {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "court"
	}
	if cfg.URL == "" {
		cfg.URL = e.URL + "/api"
	}
	if cfg.Auth.Kind == "" {
		cfg.Auth.Kind = remote.AuthNone
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = e.Client()
	}
	tg, err := httpstarget.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

const (
	firmID   = "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b"
	runID    = "3a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	matterID = "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"
)

var effects atomic.Int64

// call is a call of tool with input, under a new effect_ref.
func call(tool, input string) agent.TargetCall {
	return agent.TargetCall{
		Tool:      tool,
		Input:     []byte(input),
		EffectRef: fmt.Sprintf("7d0c2e4a-1b3f-4c5d-8e6f-%012d", effects.Add(1)),
		FirmID:    firmID, RunID: runID, MatterID: matterID,
	}
}

// class says which of the two target errors err matches.
func class(err error) string {
	u, k := errors.Is(err, warrant.ErrTargetUnreachable), errors.Is(err, warrant.ErrTargetOutcomeUnknown)
	switch {
	case err == nil:
		return "nil"
	case u && !k:
		return "unreachable"
	case k && !u:
		return "unknown"
	}
	return fmt.Sprintf("unclassified (%v)", err)
}

func wantClass(t *testing.T, err error, want string) {
	t.Helper()
	if got := class(err); got != want {
		t.Fatalf("error class = %s, want %s; err: %v", got, want, err)
	}
}

// fakeSecrets is a Secrets reader that counts its reads.
type fakeSecrets struct {
	get   func(ctx context.Context, id string) (string, error)
	reads atomic.Int32
}

func (f *fakeSecrets) GetSecret(ctx context.Context, id string) (string, error) {
	f.reads.Add(1)
	return f.get(ctx, id)
}
