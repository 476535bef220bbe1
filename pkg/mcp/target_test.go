package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/mcp"
	"github.com/seed-f6d3920e/warrant/pkg/secrets"
)

var _ mcp.Secrets = (*secrets.Manager)(nil)
var _ agent.Target = (*mcp.Target)(nil)

// legacy is the last protocol version with an initialize handshake and
// server-to-client requests: what most servers spoke before 2026-07-28.
var legacy = []string{"2025-11-25"}

// flavors are the servers most tests run against. The SDK serves
// 2026-07-28 (no handshake, no sessions, input_required) only statelessly;
// a stateful server speaks 2025-11-25; 2025-06-18 stateless is how other
// SDKs' stateless servers are often deployed.
var flavors = []struct {
	name string
	o    serverOptions
}{
	{"2025-11-25", serverOptions{}},
	{"2026-07-28", serverOptions{stateless: true}},
	{"2025-06-18", serverOptions{stateless: true, versions: []string{"2025-06-18"}}},
}

// spoke reports the protocol versions the client's tools/call requests
// named (Mcp-Protocol-Version), to check what a flavor negotiated.
func (s *testServer) spoke() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, v := range s.callVersions {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func pin(t testing.TB, schema string) string {
	t.Helper()
	h, err := mcp.SchemaHash(json.RawMessage(schema))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func newTarget(t testing.TB, cfg mcp.Config) *mcp.Target {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "docs"
	}
	if cfg.Auth.Kind == "" {
		cfg.Auth.Kind = mcp.AuthNone
	}
	tg, err := mcp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	return tg
}

func call(tool, schema, input string) agent.TargetCall {
	h, err := mcp.SchemaHash(json.RawMessage(schema))
	if err != nil {
		panic(err)
	}
	return agent.TargetCall{
		Tool:         tool,
		Input:        json.RawMessage(input),
		SchemaSHA256: h,
		EffectRef:    "eff-0001",
		FirmID:       "firm-1",
		RunID:        "run-1",
		MatterID:     "matter-1",
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

func TestSchemaHash(t *testing.T) {
	a := pin(t, `{"type":"object","required":["x"],"properties":{"x":{"type":"number","maximum":1.50}}}`)
	b := pin(t, "{ \"properties\" : {\"x\":{\"maximum\":1.5,\"type\":\"number\"}},\n \"required\":[\"x\"], \"type\":\"object\" }")
	if a != b {
		t.Fatalf("spacing, key order and number spelling changed the hash: %s vs %s", a, b)
	}
	if want := pin(t, `{"properties":{"x":{"maximum":1.5,"type":"number"}},"required":["x"],"type":"object"}`); a != want || len(a) != 64 {
		t.Fatalf("hash = %s, want the SHA-256 of the RFC 8785 form (%s)", a, want)
	}
	if _, err := mcp.SchemaHash(json.RawMessage(`{"type":"object","type":"string"}`)); err == nil {
		t.Fatal("a schema with a duplicate key was hashed")
	}
}

// Discovery lists each tool with its canonical schema, its hash and the
// server's annotations; a pinned call reaches the server with the exact
// input bytes and the four ids in _meta.
func TestToolsAndPinnedCall(t *testing.T) {
	for _, f := range flavors {
		t.Run(f.name, func(t *testing.T) {
			srv := newServer(t, f.o)
			tg := newTarget(t, mcp.Config{URL: srv.URL})
			ctx := context.Background()

			tools, err := tg.Tools(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			var motion mcp.RemoteTool
			for _, rt := range tools {
				names = append(names, rt.Name)
				if rt.Name == "file_motion" {
					motion = rt
				}
				if rt.SchemaSHA256 == "" || pin(t, string(rt.InputSchema)) != rt.SchemaSHA256 {
					t.Errorf("tool %s: schema hash %q does not match its schema %s", rt.Name, rt.SchemaSHA256, rt.InputSchema)
				}
			}
			if !slices.IsSorted(names) || !slices.Contains(names, "search") || len(names) < 10 {
				t.Fatalf("tools = %v, want every tool, sorted", names)
			}
			if motion.SchemaSHA256 != pin(t, motionSchema) || motion.Description != "the file_motion tool" {
				t.Fatalf("file_motion = %+v, want its schema's hash %s", motion, pin(t, motionSchema))
			}
			var ann map[string]any
			if err := json.Unmarshal(motion.Annotations, &ann); err != nil || ann["readOnlyHint"] != true || ann["destructiveHint"] != false {
				t.Fatalf("annotations = %s, want the server's hints as given", motion.Annotations)
			}

			// Characters a careless encoder would escape or re-spell.
			input := `{"matter_id":"matter-1","pages":12,"title":"<Motion> & \u2028 \"brief\""}`
			res, err := tg.Call(ctx, call("file_motion", motionSchema, input))
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Content) != `["filed"]` || res.IsError {
				t.Fatalf("result = %s (isError %v), want [\"filed\"]", res.Content, res.IsError)
			}
			got := srv.seen("file_motion")
			if len(got) != 1 {
				t.Fatalf("the server saw %d calls, want 1", len(got))
			}
			if string(got[0].Args) != input {
				t.Fatalf("the server got arguments %s, want exactly %s", got[0].Args, input)
			}
			if got := srv.spoke(); !slices.Equal(got, []string{f.name}) {
				t.Errorf("the client spoke %v, want %s", got, f.name)
			}
			for k, v := range map[string]string{agent.MetaEffectRef: "eff-0001", agent.MetaFirmID: "firm-1", agent.MetaRunID: "run-1", agent.MetaMatterID: "matter-1"} {
				if got[0].Meta[k] != v {
					t.Errorf("_meta[%q] = %v, want %q", k, got[0].Meta[k], v)
				}
			}
		})
	}
}

// A tool whose schema differs from the pin, or that the server does not
// list, is refused without a call.
func TestSchemaDriftRefused(t *testing.T) {
	srv := newServer(t, serverOptions{})
	tg := newTarget(t, mcp.Config{URL: srv.URL})
	ctx := context.Background()

	pinned := `{"type":"object","properties":{"matter_id":{"type":"string"}}}` // what the catalog signed
	_, err := tg.Call(ctx, call("file_motion", pinned, `{"matter_id":"m"}`))
	wantClass(t, err, "unreachable")
	var changed *mcp.ToolChangedError
	if !errors.As(err, &changed) || changed.Tool != "file_motion" || changed.Pinned != pin(t, pinned) || changed.Current != pin(t, motionSchema) {
		t.Fatalf("err = %#v, want a ToolChangedError with the pin and the server's hash", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `"file_motion"`) || !strings.Contains(msg, "changed") {
		t.Fatalf("message %q should name the tool and say the server changed it", msg)
	}

	_, err = tg.Call(ctx, call("archive_matter", anySchema, `{}`))
	wantClass(t, err, "unreachable")
	if !errors.As(err, &changed) || changed.Tool != "archive_matter" || changed.Current != "" {
		t.Fatalf("err = %v, want a ToolChangedError for a tool the server does not list", err)
	}
	if n := len(srv.seen("file_motion")); n != 0 {
		t.Fatalf("the drifted tool was called %d times, want 0", n)
	}
}

// A tool the server changes while a session is open is refused from then
// on: a legacy server's notifications/tools/list_changed, or the list's
// age, makes the target list again.
func TestToolChangedUnderASession(t *testing.T) {
	cases := []struct {
		name   string
		o      serverOptions
		maxAge time.Duration
	}{
		{"list_changed notification", serverOptions{versions: legacy}, time.Hour},
		{"list older than ToolsMaxAge", serverOptions{stateless: true}, time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.o)
			tg := newTarget(t, mcp.Config{URL: srv.URL, ToolsMaxAge: tc.maxAge})
			ctx := context.Background()
			c := call("file_motion", motionSchema, `{"matter_id":"m","title":"t"}`)
			if _, err := tg.Call(ctx, c); err != nil {
				t.Fatal(err)
			}
			srv.addTool("file_motion", `{"type":"object","properties":{"matter_id":{"type":"string"},"court":{"type":"string"}}}`, nil,
				func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					return text("filed elsewhere"), nil
				})
			deadline := time.Now().Add(5 * time.Second)
			for {
				_, err := tg.Call(ctx, c)
				if err != nil {
					var changed *mcp.ToolChangedError
					if !errors.As(err, &changed) {
						t.Fatalf("err = %v, want ToolChangedError", err)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the changed tool was still called after 5 s")
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

func TestResults(t *testing.T) {
	srv := newServer(t, serverOptions{})
	tg := newTarget(t, mcp.Config{URL: srv.URL})
	ctx := context.Background()
	cases := []struct {
		tool    string
		want    string
		isError bool
	}{
		{"bad_date", `["invalid date: must be in the future"]`, true},
		{"search", `{"hits":2,"ids":["d-1","d-2"]}`, false}, // structured content over the text block
		{"scan", `["page 1",{"type":"image","mimeType":"image/png","data":"cG5n"}]`, false},
	}
	for _, tc := range cases {
		res, err := tg.Call(ctx, call(tc.tool, anySchema, `{}`))
		if err != nil {
			t.Fatalf("%s: %v", tc.tool, err)
		}
		if string(res.Content) != tc.want || res.IsError != tc.isError {
			t.Errorf("%s: result %s (isError %v), want %s (isError %v)", tc.tool, res.Content, res.IsError, tc.want, tc.isError)
		}
	}
}

// The server runs the call, then the connection drops before its answer:
// outcome unknown, the effect recorded once, and the next call works on a
// new session.
func TestDroppedAfterTheCallRan(t *testing.T) {
	for _, f := range flavors {
		t.Run(f.name, func(t *testing.T) {
			srv := newServer(t, f.o)
			tg := newTarget(t, mcp.Config{URL: srv.URL})
			ctx := context.Background()

			_, err := tg.Call(ctx, call("drop", anySchema, `{"to":"court"}`))
			wantClass(t, err, "unknown")
			if n := len(srv.seen("drop")); n != 1 {
				t.Fatalf("the tool ran %d times, want once", n)
			}
			if _, err := tg.Call(ctx, call("file_motion", motionSchema, `{"matter_id":"m","title":"t"}`)); err != nil {
				t.Fatalf("the call after the drop: %v", err)
			}
		})
	}
}

// HTTP answers after the call was sent, a 5xx or a 4xx, are unknown; so is
// every JSON-RPC error, invalid params and an internal error alike: a
// tool's handler may answer either after it acted.
func TestHTTPAndJSONRPCErrors(t *testing.T) {
	srv := newServer(t, serverOptions{})
	tg := newTarget(t, mcp.Config{URL: srv.URL})
	ctx := context.Background()
	for _, tool := range []string{"gateway", "forbidden", "invalid_params", "internal_error"} {
		_, err := tg.Call(ctx, call(tool, anySchema, `{}`))
		if got := class(err); got != "unknown" {
			t.Errorf("%s: class %s, want unknown (%v)", tool, got, err)
		}
		if n := srv.arrivals(tool); n != 1 {
			t.Errorf("%s: arrived %d times, want once", tool, n)
		}
	}
}

func TestServerDown(t *testing.T) {
	srv := newServer(t, serverOptions{})
	url := srv.URL
	tg := newTarget(t, mcp.Config{URL: url})
	ctx := context.Background()
	c := call("file_motion", motionSchema, `{"matter_id":"m","title":"t"}`)
	if _, err := tg.Call(ctx, c); err != nil {
		t.Fatal(err)
	}
	srv.CloseClientConnections()
	srv.Close()

	// A session that was open, then connection refused.
	_, err := tg.Call(ctx, c)
	wantClass(t, err, "unreachable")
	// No server from the start.
	_, err = newTarget(t, mcp.Config{URL: url}).Call(ctx, c)
	wantClass(t, err, "unreachable")
}

// A server that forgot the session (a restart, an idle timeout) answers
// 404 to it. A list of the tools older than ToolsMaxAge, made before the
// call, is the first to hear it: the call, not yet sent, is made once on a
// new session. (A 404 to the tools/call itself is unknown:
// TestAnswersAfterSending.)
func TestSessionGone(t *testing.T) {
	srv := newServer(t, serverOptions{})
	tg := newTarget(t, mcp.Config{URL: srv.URL, ToolsMaxAge: time.Nanosecond})
	ctx := context.Background()
	c := call("file_motion", motionSchema, `{"matter_id":"m","title":"t"}`)
	if _, err := tg.Call(ctx, c); err != nil {
		t.Fatal(err)
	}
	srv.forget()
	if _, err := tg.Call(ctx, c); err != nil {
		t.Fatalf("the call after the server forgot the session: %v", err)
	}
	if n, a, s := len(srv.seen("file_motion")), srv.arrivals("file_motion"), srv.sessions.Load(); n != 2 || a != 2 || s != 2 {
		t.Fatalf("%d calls ran (%d arrived) on %d sessions, want 2 on 2", n, a, s)
	}
}

// A deadline that passes before the call leaves is unreachable; one that
// passes after it left, while the tool runs, is unknown.
func TestDeadline(t *testing.T) {
	srv := newServer(t, serverOptions{})
	tg := newTarget(t, mcp.Config{URL: srv.URL})
	c := call("slow", anySchema, `{}`)
	if _, err := tg.Tools(context.Background()); err != nil { // a session and a list in hand
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tg.Call(ctx, c)
	wantClass(t, err, "unreachable")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want it to match context.Canceled", err)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = tg.Call(ctx, c)
	wantClass(t, err, "unknown")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want it to match context.DeadlineExceeded", err)
	}
	if n := len(srv.seen("slow")); n != 1 {
		t.Fatalf("slow ran %d times, want once", n)
	}
	srv.unblock()

	// A token that cannot be had before the deadline: nothing leaves.
	blocked := &fakeSecrets{get: func(ctx context.Context, _ string) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}}
	tb := newTarget(t, mcp.Config{URL: srv.URL, Auth: mcp.Auth{Kind: mcp.AuthBearer, TokenSecretID: "mcp/docs"}, Secrets: blocked})
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = tb.Call(ctx, call("file_motion", motionSchema, `{"matter_id":"m","title":"t"}`))
	wantClass(t, err, "unreachable")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want it to match context.DeadlineExceeded", err)
	}
}

// The server's own requests are refused and reported by method; the call's
// result still comes back when the server carries on. The 2026-07-28 way
// of asking (input_required) is refused too, and answered as a tool error
// without a second tools/call.
func TestServerRequestsRefused(t *testing.T) {
	var mu sync.Mutex
	var methods []string
	hook := func(m string) {
		mu.Lock()
		defer mu.Unlock()
		methods = append(methods, m)
	}
	taken := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := methods
		methods = nil
		return out
	}
	ctx := context.Background()

	t.Run("requests on the call's stream", func(t *testing.T) {
		srv := newServer(t, serverOptions{versions: legacy, ignoreCaps: true})
		tg := newTarget(t, mcp.Config{URL: srv.URL, OnServerRequest: hook})
		res, err := tg.Call(ctx, call("asks", anySchema, `{}`))
		if err != nil || string(res.Content) != `["carried on"]` {
			t.Fatalf("result %s, err %v; want the server's answer after the refusals", res.Content, err)
		}
		if got, want := taken(), []string{"elicitation/create", "sampling/createMessage", "roots/list"}; !slices.Equal(got, want) {
			t.Fatalf("hook saw %v, want %v", got, want)
		}
		srv.mu.Lock()
		defer srv.mu.Unlock()
		for i, e := range srv.refusals {
			if e == nil {
				t.Errorf("server request %d was answered; want a refusal", i)
			}
		}
	})
	t.Run("input_required", func(t *testing.T) {
		srv := newServer(t, serverOptions{stateless: true}) // 2026-07-28
		tg := newTarget(t, mcp.Config{URL: srv.URL, OnServerRequest: hook})
		res, err := tg.Call(ctx, call("asks_again", anySchema, `{}`))
		if err != nil || !res.IsError || !strings.Contains(string(res.Content), "elicitation/create") {
			t.Fatalf("result %s (isError %v), err %v; want a tool error naming what was asked", res.Content, res.IsError, err)
		}
		if got, want := taken(), []string{"elicitation/create", "sampling/createMessage"}; !slices.Equal(got, want) {
			t.Fatalf("hook saw %v, want %v", got, want)
		}
		if n := len(srv.seen("asks_again")); n != 1 {
			t.Fatalf("asks_again was called %d times, want once (no retry with answers)", n)
		}
	})
}

func TestBearerAuth(t *testing.T) {
	srv := newServer(t, serverOptions{token: "tok-1"})
	var current = "tok-1\n" // as pasted from a file
	var mu sync.Mutex
	sec := &fakeSecrets{get: func(_ context.Context, id string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if id != "mcp/docs-token" {
			return "", fmt.Errorf("no secret %q", id)
		}
		return current, nil
	}}
	tg := newTarget(t, mcp.Config{URL: srv.URL, Auth: mcp.Auth{Kind: mcp.AuthBearer, TokenSecretID: "mcp/docs-token"}, Secrets: sec})
	ctx := context.Background()
	c := call("file_motion", motionSchema, `{"matter_id":"m","title":"t"}`)
	for range 3 {
		if _, err := tg.Call(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if n := sec.reads.Load(); n != 1 {
		t.Fatalf("the secret was read %d times for 3 calls, want once", n)
	}

	// Rotation: the server takes only the new token. Its 401 to the
	// tools/call drops the old one but the call is not made again (a
	// gateway may answer 401 after the server ran it): outcome unknown. The
	// next call reads the secret again and goes through.
	mu.Lock()
	current = "tok-2"
	mu.Unlock()
	srv.setToken("tok-2")
	_, err := tg.Call(ctx, c)
	wantClass(t, err, "unknown")
	if strings.Contains(err.Error(), "tok-1") {
		t.Fatalf("the error carries the token: %v", err)
	}
	if _, err := tg.Call(ctx, c); err != nil {
		t.Fatalf("the call after the 401: %v", err)
	}
	if n, reads := srv.arrivals("file_motion"), sec.reads.Load(); n != 5 || reads != 2 {
		t.Fatalf("%d tools/calls arrived and the secret was read %d times, want 5 (none sent again) and 2", n, reads)
	}

	// A wrong token, echoed back by the server when the session is opened,
	// stays out of the error; no tools/call is sent.
	mu.Lock()
	current = "tok-wrong-5ecret"
	mu.Unlock()
	_, err = newTarget(t, mcp.Config{URL: srv.URL, Auth: mcp.Auth{Kind: mcp.AuthBearer, TokenSecretID: "mcp/docs-token"}, Secrets: sec}).Call(ctx, c)
	wantClass(t, err, "unreachable")
	if strings.Contains(err.Error(), "5ecret") {
		t.Fatalf("the error carries the token: %v", err)
	}
	if n := len(srv.seen("file_motion")); n != 4 {
		t.Fatalf("the server ran %d calls, want 4", n)
	}
}

// tokenEndpoint is a fake OAuth token endpoint.
type tokenEndpoint struct {
	*httptest.Server
	mu       sync.Mutex
	requests int
	form     map[string]string
	fail     bool
}

func newTokenEndpoint(t *testing.T, clientSecret string) *tokenEndpoint {
	e := &tokenEndpoint{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		e.mu.Lock()
		e.requests++
		e.form = map[string]string{"grant_type": r.PostForm.Get("grant_type"), "scope": r.PostForm.Get("scope"), "resource": r.PostForm.Get("resource"), "client_id": id}
		fail := e.fail
		e.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if fail || secret != clientSecret {
			w.WriteHeader(http.StatusUnauthorized)
			// A careless endpoint echoes the secret and leaks a token.
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": "bad secret " + secret, "access_token": "at-leaked-5ecret"})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at-123", "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(e.Close)
	return e
}

func TestOAuthClientCredentials(t *testing.T) {
	const clientSecret = "cs-5ecret-value"
	srv := newServer(t, serverOptions{token: "at-123"})
	endpoint := newTokenEndpoint(t, clientSecret)
	sec := &fakeSecrets{get: func(context.Context, string) (string, error) { return clientSecret, nil }}
	auth := mcp.Auth{Kind: mcp.AuthOAuthClientCredentials, TokenURL: endpoint.URL, ClientID: "warrant", ClientSecretID: "mcp/docs-client", Scopes: []string{"tools.call", "tools.list"}}
	tg := newTarget(t, mcp.Config{URL: srv.URL, Auth: auth, Secrets: sec})
	ctx := context.Background()
	c := call("file_motion", motionSchema, `{"matter_id":"m","title":"t"}`)
	for range 3 {
		if _, err := tg.Call(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	endpoint.mu.Lock()
	requests, form := endpoint.requests, endpoint.form
	endpoint.mu.Unlock()
	if requests != 1 || sec.reads.Load() != 1 {
		t.Fatalf("%d token requests and %d secret reads for 3 calls, want 1 and 1 (the token is kept)", requests, sec.reads.Load())
	}
	want := map[string]string{"grant_type": "client_credentials", "scope": "tools.call tools.list", "resource": srv.URL, "client_id": "warrant"}
	for k, v := range want {
		if form[k] != v {
			t.Errorf("token request %s = %q, want %q", k, form[k], v)
		}
	}

	// The endpoint refuses: unreachable, and neither the secret nor what
	// the endpoint sent back is in the error.
	endpoint.mu.Lock()
	endpoint.fail = true
	endpoint.mu.Unlock()
	_, err := newTarget(t, mcp.Config{URL: srv.URL, Auth: auth, Secrets: sec}).Call(ctx, c)
	wantClass(t, err, "unreachable")
	if msg := err.Error(); strings.Contains(msg, "5ecret") || !strings.Contains(msg, "HTTP 401") || !strings.Contains(msg, "invalid_client") {
		t.Fatalf("error %q: want HTTP 401 and invalid_client, and no secret or token", msg)
	}
}

func TestNewRefuses(t *testing.T) {
	sec := &fakeSecrets{get: func(context.Context, string) (string, error) { return "x", nil }}
	none := mcp.Auth{Kind: mcp.AuthNone}
	bearer := mcp.Auth{Kind: mcp.AuthBearer, TokenSecretID: "mcp/t"}
	cases := []struct {
		url  string
		auth mcp.Auth
		ok   bool
	}{
		{"http://127.0.0.1:8080/mcp", none, true},
		{"http://127.9.9.9/mcp", none, true},
		{"http://[::1]:8080/mcp", none, true},
		{"http://localhost:8080/mcp", none, true},
		{"https://mcp.example.com/mcp", none, false},
		{"https://10.0.0.5/mcp", none, false},
		{"http://localhost.example.com/mcp", none, false},
		{"https://mcp.example.com/mcp", bearer, true},
		{"http://mcp.example.com/mcp", bearer, false}, // a token in the clear
		{"https://user:pw@mcp.example.com/mcp", bearer, false},
		{"ftp://mcp.example.com/mcp", bearer, false},
		{"https://mcp.example.com/mcp", mcp.Auth{Kind: "basic"}, false},
		{"https://mcp.example.com/mcp", mcp.Auth{}, false},
		{"https://mcp.example.com/mcp", mcp.Auth{Kind: mcp.AuthOAuthClientCredentials, TokenURL: "http://idp.example.com/token", ClientID: "c", ClientSecretID: "s"}, false},
	}
	for _, tc := range cases {
		_, err := mcp.New(mcp.Config{Name: "docs", URL: tc.url, Auth: tc.auth, Secrets: sec})
		if (err == nil) != tc.ok {
			t.Errorf("New(%s, %s): err = %v, want ok %v", tc.url, tc.auth.Kind, err, tc.ok)
		}
	}
	if _, err := mcp.New(mcp.Config{Name: "docs", URL: "https://mcp.example.com", Auth: bearer}); err == nil {
		t.Error("bearer auth without Secrets was accepted")
	}
	for _, n := range []int64{-1, mcp.MaxResponseBytesLimit + 1} {
		if _, err := mcp.New(mcp.Config{Name: "docs", URL: "https://mcp.example.com", Auth: bearer, Secrets: sec, MaxResponseBytes: n}); err == nil {
			t.Errorf("MaxResponseBytes %d was accepted", n)
		}
	}
}

// 64 calls at once share one session: one initialize reaches the server.
func TestConcurrentCalls(t *testing.T) {
	srv := newServer(t, serverOptions{versions: legacy})
	tg := newTarget(t, mcp.Config{URL: srv.URL})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			in := fmt.Sprintf(`{"matter_id":"m-%d","title":"t"}`, i)
			res, err := tg.Call(context.Background(), call("file_motion", motionSchema, in))
			if err == nil && string(res.Content) != `["filed"]` {
				err = fmt.Errorf("result %s", res.Content)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(srv.seen("file_motion")); n != 64 {
		t.Fatalf("the server ran %d calls, want 64", n)
	}
	if n := srv.sessions.Load(); n != 1 {
		t.Fatalf("%d sessions were opened, want 1", n)
	}
}

// A stateless server (no Mcp-Session-Id, no GET stream), as other SDKs
// serve one: the client needs no server session.
func TestStatelessServer(t *testing.T) {
	for _, f := range flavors[1:] {
		t.Run(f.name, func(t *testing.T) {
			srv := newServer(t, f.o)
			tg := newTarget(t, mcp.Config{URL: srv.URL})
			ctx := context.Background()
			if _, err := tg.Tools(ctx); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				res, err := tg.Call(ctx, call("file_motion", motionSchema, `{"matter_id":"m","title":"t"}`))
				if err != nil || string(res.Content) != `["filed"]` {
					t.Fatalf("result %s, err %v", res.Content, err)
				}
			}
			_, err := tg.Call(ctx, call("drop", anySchema, `{}`))
			wantClass(t, err, "unknown")
			srv.mu.Lock()
			defer srv.mu.Unlock()
			for _, r := range srv.requests {
				if r.Header.Get("Mcp-Session-Id") != "" {
					t.Fatalf("a %s request carried a session id on a stateless server", r.Method)
				}
			}
		})
	}
}
