package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/remote"
)

// Target calls the tools of one MCP server. It opens its client session on
// first use and shares it among concurrent calls; a session that failed is
// replaced (the calls still using it finish on it first). It is safe for
// concurrent use.
type Target struct {
	name   string
	url    string
	hook   func(string)
	maxAge time.Duration
	limit  int64              // MaxResponseBytes
	auth   remote.Credentials // nil: none
	http   *http.Client
	client *sdk.Client

	mu      sync.Mutex
	cur     *session
	dialing chan struct{} // closed when the session being opened is ready or failed
	closed  bool
	closing sync.WaitGroup // sessions being closed in the background
}

// RemoteTool is a tool as the server lists it.
type RemoteTool struct {
	Name string
	// Title is the server's name of the tool for people (its title, else
	// its annotations' title; "" when it gives none).
	Title       string
	Description string
	// InputSchema is the tool's input schema in its RFC 8785 canonical
	// form; SchemaSHA256 is its hash, the value a catalog pins. Both are
	// empty when the schema is not canonicalizable JSON.
	InputSchema  json.RawMessage
	SchemaSHA256 string
	// Annotations are the server's hints (readOnlyHint, destructiveHint,
	// ...) as it gave them: untrusted, for display only. Warrant decides
	// nothing on them; the catalog and the policy do.
	Annotations json.RawMessage
}

// session is one client session and what it learned of the server's tools.
type session struct {
	cs *sdk.ClientSession

	refs   int  // calls using it; Target.mu
	stale  bool // it failed: no new call takes it; Target.mu
	closed bool // Target.mu

	changed atomic.Bool   // the server said its tools changed
	listing chan struct{} // one tools/list at a time; guards the fields below
	tools   map[string]RemoteTool
	listed  time.Time
}

// New returns the target for the server cfg describes. It checks cfg and
// opens no connection: the first Call or Tools does.
func New(cfg Config) (*Target, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	origin, _ := url.Parse(cfg.URL) // validate parsed it
	base := remote.TransportOf(cfg.HTTPClient)
	t := &Target{
		name:   cfg.Name,
		url:    cfg.URL,
		hook:   cfg.OnServerRequest,
		maxAge: cfg.ToolsMaxAge,
	}
	if t.maxAge == 0 {
		t.maxAge = time.Minute
	}
	if t.limit = cfg.MaxResponseBytes; t.limit == 0 {
		t.limit = DefaultMaxResponseBytes
	}
	caps := &sdk.ClientCapabilities{} // no roots, sampling or elicitation
	t.auth = remote.NewCredentials(cfg.Auth, cfg.URL, cfg.Secrets, base)
	if cfg.Auth.Kind == AuthOAuthClientCredentials {
		caps.Extensions = map[string]any{"io.modelcontextprotocol/oauth-client-credentials": map[string]any{}}
	}
	t.http = &http.Client{
		Transport:     &remote.Transport{Base: base, Origin: origin, Auth: t.auth, MaxResponseBytes: t.limit},
		CheckRedirect: remote.NoRedirect,
	}
	t.client = sdk.NewClient(&sdk.Implementation{Name: "warrant", Version: "1"}, &sdk.ClientOptions{
		Capabilities: caps,
		// An input_required result is answered by Call (refused), never
		// by the SDK's handlers and a second tools/call.
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
	})
	t.client.AddReceivingMiddleware(t.refuseServerRequests)
	return t, nil
}

// Call runs c on the server (see agent.Target for what its errors mean).
// It refuses, without calling, a tool the server does not list with the
// schema c pins (ToolChangedError): an effect's (c.Effect) as listed for
// this call, a read's as listed at most ToolsMaxAge ago. Arguments are
// c.Input as they are; _meta carries the effect's and the run's ids. The
// tools/call is sent once at most.
//
// Its errors match warrant.ErrTargetUnreachable when the tools/call never
// left (no session, no token, a refused connection, a write that failed part
// way, the tool changed): only then is it tried again, once, on a new
// session, when the session was one kept from before. Once the request was
// sent, every answer but a result is warrant.ErrTargetOutcomeUnknown: an
// HTTP 3xx, 4xx (401 and a 404 on a session included) or 5xx, no answer,
// an answer too large or that does not decode, and every JSON-RPC error,
// none of which proves the tool did not run (see the package doc). A server
// that asks for input to finish (MCP's input_required) is refused and
// answered as a tool error.
func (t *Target) Call(ctx context.Context, c agent.TargetCall) (agent.TargetResult, error) {
	if err := checkCall(c); err != nil {
		return agent.TargetResult{}, t.fail(ctx, warrant.ErrTargetUnreachable, "invalid call", err)
	}
	for attempt := 0; ; attempt++ {
		s, fresh, err := t.acquire(ctx)
		if err != nil {
			return agent.TargetResult{}, err
		}
		res, o := t.callOn(ctx, s, c)
		t.release(s, o.broken)
		// A session kept from before may have died meanwhile (a server
		// restart, an idle timeout): if the call did not leave, nothing
		// happened, and it is tried once on a new session.
		if o.err != nil && o.again && !fresh && attempt == 0 && ctx.Err() == nil {
			continue
		}
		return res, o.err
	}
}

// Tools lists the server's tools now (for `warrant tools check`), sorted by
// name. Its errors match warrant.ErrTargetUnreachable.
func (t *Target) Tools(ctx context.Context) ([]RemoteTool, error) {
	tools, err := t.listNow(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]RemoteTool, 0, len(tools))
	for _, rt := range tools {
		out = append(out, rt)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// CheckPin reports whether the server offers c's tool with the schema c
// pins, from a tools/list made now (agent.PinChecker): nil when it does, a
// *ToolChangedError when it lists the tool with another schema or not at
// all, and an error matching warrant.ErrTargetUnreachable when the server
// could not be asked. It calls nothing; the new list is the session's from
// then on.
func (t *Target) CheckPin(ctx context.Context, c agent.TargetCall) error {
	if c.Tool == "" || !contracts.IsHash(c.SchemaSHA256) {
		return t.fail(ctx, warrant.ErrTargetUnreachable, "invalid pin check", errors.New("a pin check names a tool and its schema's lowercase hex SHA-256"))
	}
	tools, err := t.listNow(ctx)
	if err != nil {
		return err
	}
	if rt, ok := tools[c.Tool]; !ok || rt.SchemaSHA256 != c.SchemaSHA256 {
		return &ToolChangedError{Server: t.name, Tool: c.Tool, Pinned: c.SchemaSHA256, Current: rt.SchemaSHA256}
	}
	return nil
}

// listNow lists the server's tools now, on the current session, or once
// more on a new one when a session kept from before failed.
func (t *Target) listNow(ctx context.Context) (map[string]RemoteTool, error) {
	for attempt := 0; ; attempt++ {
		s, fresh, err := t.acquire(ctx)
		if err != nil {
			return nil, err
		}
		tools, err := t.listTools(ctx, s, true)
		t.release(s, err != nil)
		if err != nil {
			if !fresh && attempt == 0 && ctx.Err() == nil {
				continue
			}
			return nil, err
		}
		return tools, nil
	}
}

// Close ends the target's sessions. A call still running on one ends as
// the session's closing makes it end: once sent, outcome unknown.
func (t *Target) Close() error {
	t.mu.Lock()
	t.closed = true
	var now []*session
	if s := t.cur; s != nil {
		t.cur = nil
		s.stale = true
		if s.refs == 0 && !s.closed {
			s.closed = true
			now = append(now, s)
		}
	}
	t.mu.Unlock()
	var errs []error
	for _, s := range now {
		errs = append(errs, s.cs.Close())
	}
	t.closing.Wait()
	return errors.Join(errs...)
}

// outcome is how one attempt of a call ended.
type outcome struct {
	err    error
	broken bool // the session gave no answer: replace it
	again  bool // the call never left, and a new session may get through
}

func (t *Target) callOn(ctx context.Context, s *session, c agent.TargetCall) (agent.TargetResult, outcome) {
	if o, ok := t.checkPin(ctx, s, c); !ok {
		return agent.TargetResult{}, o
	}
	what := fmt.Sprintf("tools/call %q", c.Tool)
	p := &remote.Probe{}
	res, err := s.cs.CallTool(remote.WithProbe(ctx, p), &sdk.CallToolParams{
		Meta: sdk.Meta{
			agent.MetaEffectRef: c.EffectRef,
			agent.MetaFirmID:    c.FirmID,
			agent.MetaRunID:     c.RunID,
			agent.MetaMatterID:  c.MatterID,
		},
		Name:      c.Tool,
		Arguments: json.RawMessage(c.Input),
	})
	v := p.Seal()
	sent, status := v.Sent, v.Status
	unknown := func(why string, broken bool) (agent.TargetResult, outcome) {
		return agent.TargetResult{}, outcome{err: t.fail(ctx, warrant.ErrTargetOutcomeUnknown, what+": "+why, err), broken: broken}
	}
	switch {
	case err == nil:
		return t.result(ctx, what, res)
	case !sent:
		return agent.TargetResult{}, outcome{err: t.fail(ctx, warrant.ErrTargetUnreachable, what+": not sent", err), broken: true, again: true}
	case status >= 300 || (status != 0 && status < 200):
		// Whoever answered (the server, a gateway after the server acted)
		// had the call: a redirect, a 401 (its token is dropped: the next
		// call gets a fresh one), a 404 on a session (a server that forgot
		// it; a gateway's after a run reads the same), a 4xx with a
		// JSON-RPC error from inside the tool, a 5xx.
		return unknown(fmt.Sprintf("HTTP %d after the call was sent", status), true)
	case status == 0:
		return unknown("no answer after the call was sent", true)
	case v.TooLarge:
		return unknown(fmt.Sprintf("HTTP %d, an answer larger than %d bytes, not read further: the call ran and its answer is lost", status, t.limit), true)
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		if rpcErr.Code == sdk.CodeURLElicitationRequired {
			t.refused("elicitation/create")
		}
		// No code proves the tool did not run: a tool's handler answers
		// any code it likes (invalid params among them) after acting.
		return unknown(fmt.Sprintf("JSON-RPC error %d after the call was sent", rpcErr.Code), false)
	}
	return unknown("the answer was lost after the call was sent", true)
}

// checkPin refuses c unless the server lists its tool with the pinned
// schema. An effect's pin is checked against a list made for it; a read's
// may be checked against the session's list (at most ToolsMaxAge old). A
// refusal from a kept list is checked against a new one first: the server
// may have changed the tool back, or the list be old.
func (t *Target) checkPin(ctx context.Context, s *session, c agent.TargetCall) (outcome, bool) {
	for force := c.Effect; ; force = true {
		tools, err := t.listTools(ctx, s, force)
		if err != nil {
			return outcome{err: err, broken: true, again: true}, false
		}
		rt, ok := tools[c.Tool]
		if ok && rt.SchemaSHA256 == c.SchemaSHA256 {
			return outcome{}, true
		}
		if force {
			return outcome{err: &ToolChangedError{Server: t.name, Tool: c.Tool, Pinned: c.SchemaSHA256, Current: rt.SchemaSHA256}}, false
		}
	}
}

// listTools returns the session's tools, listing them when force is set,
// when it never did, when the server said they changed, or when the list is
// older than ToolsMaxAge.
func (t *Target) listTools(ctx context.Context, s *session, force bool) (map[string]RemoteTool, error) {
	select {
	case s.listing <- struct{}{}:
	case <-ctx.Done():
		return nil, t.fail(ctx, warrant.ErrTargetUnreachable, "tools/list", ctx.Err())
	}
	defer func() { <-s.listing }()
	if !force && s.tools != nil && !s.changed.Load() && time.Since(s.listed) < t.maxAge {
		return s.tools, nil
	}
	s.changed.Store(false)
	tools := make(map[string]RemoteTool)
	twice := make(map[string]bool)
	for tool, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			s.changed.Store(true) // whatever was listed is not trusted
			return nil, t.fail(ctx, warrant.ErrTargetUnreachable, "tools/list", err)
		}
		if _, ok := tools[tool.Name]; ok {
			twice[tool.Name] = true
		}
		tools[tool.Name] = remoteTool(tool)
	}
	// A name listed twice is not one tool: no pin matches it.
	for name := range twice {
		rt := tools[name]
		rt.InputSchema, rt.SchemaSHA256 = nil, ""
		tools[name] = rt
	}
	s.tools, s.listed = tools, time.Now()
	return tools, nil
}

func remoteTool(tool *sdk.Tool) RemoteTool {
	rt := RemoteTool{Name: tool.Name, Title: tool.Title, Description: tool.Description}
	if rt.Title == "" && tool.Annotations != nil {
		rt.Title = tool.Annotations.Title
	}
	if raw, err := json.Marshal(tool.InputSchema); err == nil {
		if c, err := canonicalSchema(raw); err == nil {
			rt.InputSchema, rt.SchemaSHA256 = c, hashOf(c)
		}
	}
	if tool.Annotations != nil {
		rt.Annotations, _ = json.Marshal(tool.Annotations)
	}
	return rt
}

// result turns the server's answer into the target's: its structured
// content when it gave one, else its content blocks (a text block as its
// text, any other as the SDK writes it).
func (t *Target) result(ctx context.Context, what string, r *sdk.CallToolResult) (agent.TargetResult, outcome) {
	if r.NeedsInput() {
		// MCP's multi round-trip: the server wants input to finish. The
		// client declared no capability to give any, and never retries.
		keys := make([]string, 0, len(r.InputRequests))
		for k := range r.InputRequests {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var methods []string
		for _, k := range keys {
			m := inputMethod(r.InputRequests[k])
			t.refused(m)
			methods = append(methods, m)
		}
		text := "the server asked for input to finish the call, which Warrant does not give"
		if len(methods) > 0 {
			text += " (" + strings.Join(methods, ", ") + ")"
		}
		content, _ := json.Marshal([]string{text})
		return agent.TargetResult{Content: content, IsError: true}, outcome{}
	}
	var v any = r.StructuredContent
	if v == nil {
		blocks := make([]any, 0, len(r.Content))
		for _, b := range r.Content {
			if tc, ok := b.(*sdk.TextContent); ok {
				blocks = append(blocks, tc.Text)
			} else {
				blocks = append(blocks, b)
			}
		}
		v = blocks
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// It ran, but its answer cannot be carried: as lost.
		return agent.TargetResult{}, outcome{err: t.fail(ctx, warrant.ErrTargetOutcomeUnknown, what+": the answer could not be encoded", err)}
	}
	// A careless server echoes the token: it reaches neither the model nor
	// the ledger.
	content := remote.RedactJSON(bytes.TrimRight(buf.Bytes(), "\n"), t.auth)
	return agent.TargetResult{Content: content, IsError: r.IsError}, outcome{}
}

func inputMethod(ir sdk.InputRequest) string {
	switch ir.(type) {
	case *sdk.ElicitParams:
		return "elicitation/create"
	case *sdk.CreateMessageParams, *sdk.CreateMessageWithToolsParams:
		return "sampling/createMessage"
	case *sdk.ListRootsParams:
		return "roots/list"
	}
	return "unknown"
}

// refuseServerRequests answers every request the server makes of the
// client (elicitation, sampling, roots, anything but ping) with a JSON-RPC
// error, and tells OnServerRequest its method. Notifications pass; one that
// says the tools changed makes the next call list them again.
func (t *Target) refuseServerRequests(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch {
		case method == "notifications/tools/list_changed":
			t.toolsChanged(req.GetSession())
			return next(ctx, method, req)
		case method == "ping", strings.HasPrefix(method, "notifications/"):
			return next(ctx, method, req)
		}
		t.refused(method)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "refused: Warrant answers no requests from MCP servers"}
	}
}

func (t *Target) refused(method string) {
	if t.hook != nil {
		t.hook(method)
	}
}

func (t *Target) toolsChanged(from sdk.Session) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.cur; s != nil && sdk.Session(s.cs) == from {
		s.changed.Store(true)
	}
}

// acquire returns the current session, opening one if there is none (one
// opener at a time; the others wait for it). fresh: opened for this caller.
func (t *Target) acquire(ctx context.Context) (s *session, fresh bool, err error) {
	for {
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return nil, false, t.fail(ctx, warrant.ErrTargetUnreachable, "the target is closed", nil)
		}
		if s := t.cur; s != nil {
			s.refs++
			t.mu.Unlock()
			return s, false, nil
		}
		if w := t.dialing; w != nil {
			t.mu.Unlock()
			select {
			case <-w:
				continue
			case <-ctx.Done():
				return nil, false, t.fail(ctx, warrant.ErrTargetUnreachable, "waiting for a session", ctx.Err())
			}
		}
		w := make(chan struct{})
		t.dialing = w
		t.mu.Unlock()

		cs, err := t.client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: t.url, HTTPClient: t.http, MaxEventSize: int(t.limit)}, nil)

		t.mu.Lock()
		t.dialing = nil
		close(w)
		if err != nil {
			t.mu.Unlock()
			return nil, false, t.fail(ctx, warrant.ErrTargetUnreachable, "could not open a session", err)
		}
		s = &session{cs: cs, refs: 1, listing: make(chan struct{}, 1)}
		if t.closed {
			t.mu.Unlock()
			cs.Close()
			return nil, false, t.fail(ctx, warrant.ErrTargetUnreachable, "the target is closed", nil)
		}
		t.cur = s
		t.mu.Unlock()
		return s, true, nil
	}
}

// release gives s back; broken retires it, and the last call to leave a
// retired session closes it.
func (t *Target) release(s *session, broken bool) {
	t.mu.Lock()
	s.refs--
	if broken && !s.stale {
		s.stale = true
		if t.cur == s {
			t.cur = nil
		}
	}
	if !s.stale || s.refs > 0 || s.closed {
		t.mu.Unlock()
		return
	}
	s.closed = true
	if t.closed {
		t.mu.Unlock()
		s.cs.Close()
		return
	}
	t.closing.Add(1)
	t.mu.Unlock()
	// Closing may send a DELETE (bounded by the SDK): not on the call's time.
	go func() {
		defer t.closing.Done()
		s.cs.Close()
	}()
}

// checkCall refuses a call that could not be what counsel signed.
func checkCall(c agent.TargetCall) error {
	switch {
	case c.Tool == "":
		return errors.New("no tool name")
	case !contracts.IsHash(c.SchemaSHA256):
		return errors.New("the schema pin is not a lowercase hex SHA-256")
	case !json.Valid(c.Input) || !bytes.HasPrefix(bytes.TrimLeft(c.Input, " \t\r\n"), []byte("{")):
		return errors.New("the input is not a JSON object")
	}
	return nil
}
