package mcpserver_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/tools"
	"github.com/seed-f6d3920e/warrant/pkg/tools/mcpserver"
)

var now = func() time.Time { return time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC) }

// outbox is a test double of tools.Outbox: each write goes to record.
type outbox struct {
	record func(context.Context, warrant.Outbound) (bool, error)
	calls  atomic.Int64
}

func (o *outbox) RecordOutbound(ctx context.Context, e warrant.Outbound) (bool, error) {
	o.calls.Add(1)
	return o.record(ctx, e)
}

// store is a fresh table on minidyn, private to the test.
func store(t *testing.T) *dynamo.Store {
	t.Helper()
	ep := dynamotest.Minidyn(t)
	return dynamo.New(ep.Client, dynamotest.NewTable(t, ep))
}

// connect serves the reference tools over ob on loopback (Handler behind an
// httptest server) and returns an SDK client's session with it, and the
// server's log.
func connect(t *testing.T, ob tools.Outbox) (*mcp.ClientSession, *logBuffer) {
	t.Helper()
	log := &logBuffer{}
	srv, err := mcpserver.New(tools.Reference(ob, now), mcpserver.Options{
		Annotations: mcpserver.ReferenceAnnotations(), Logger: failure.NewLogger(log)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(mcpserver.Handler(srv))
	t.Cleanup(ts.Close)
	return dial(t, ts.URL), log
}

func dial(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpserver-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// logBuffer is the server's log, written by its handlers' goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type run struct{ firm, run, matter string }

func newRun() run { return run{uuid.NewString(), uuid.NewString(), uuid.NewString()} }

// meta is the _meta Warrant's client sends with a call.
func (r run) meta(effectRef string) mcp.Meta {
	return mcp.Meta{agent.MetaEffectRef: effectRef, agent.MetaFirmID: r.firm, agent.MetaRunID: r.run, agent.MetaMatterID: r.matter}
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any, meta mcp.Meta) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// canonical is RFC 8785 of v's JSON, and hash its hex SHA-256: what a client
// pinning a schema computes.
func canonical(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	c, err := contracts.Canonicalize(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func hash(t *testing.T, v any) string {
	sum := sha256.Sum256(canonical(t, v))
	return hex.EncodeToString(sum[:])
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("content has %d blocks, want 1", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

// wantRefused: the call is a tool error (isError) with exactly text.
func wantRefused(t *testing.T, res *mcp.CallToolResult, want string) {
	t.Helper()
	if !res.IsError || res.StructuredContent != nil {
		t.Fatalf("isError=%v structuredContent=%v, want a tool error", res.IsError, res.StructuredContent)
	}
	if got := text(t, res); got != want {
		t.Errorf("error text %q, want %q", got, want)
	}
}

func filing(matterID string) map[string]any {
	return map[string]any{"matter_id": matterID, "court": "Superior Court of California, County of San Francisco",
		"document_title": "Motion to Compel Discovery", "document_text": "PRIVILEGED-BODY Plaintiff moves to compel."}
}

// TestMetaKeysAreTheBrains: the server reads the keys pkg/agent's targets
// send (it keeps its own copy so as not to link the brain).
func TestMetaKeysAreTheBrains(t *testing.T) {
	for got, want := range map[string]string{mcpserver.MetaEffectRef: agent.MetaEffectRef, mcpserver.MetaFirmID: agent.MetaFirmID,
		mcpserver.MetaRunID: agent.MetaRunID, mcpserver.MetaMatterID: agent.MetaMatterID} {
		if got != want {
			t.Errorf("mcpserver has %q where pkg/agent has %q", got, want)
		}
	}
}

// TestListTools: tools/list offers exactly the six reference tools, each
// with pkg/tools' description and an input schema whose RFC 8785 SHA-256 is
// that of pkg/tools' schema (what a catalog pins), and honest annotations.
func TestListTools(t *testing.T) {
	cs, _ := connect(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]tools.Tool{}
	for _, tl := range tools.Reference(nil, nil) {
		want[tl.Name] = tl
	}
	got := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		got[tl.Name] = tl
	}
	if names := slices.Sorted(maps.Keys(got)); !slices.Equal(names, slices.Sorted(maps.Keys(want))) || len(res.Tools) != 6 {
		t.Fatalf("tools/list offers %v (%d), want the six reference tools", names, len(res.Tools))
	}
	annotations := mcpserver.ReferenceAnnotations()
	if len(annotations) != len(want) {
		t.Errorf("ReferenceAnnotations has %d entries, want one per reference tool", len(annotations))
	}
	for name, w := range want {
		g := got[name]
		if g.Description != w.Description {
			t.Errorf("%s: description %q, want %q", name, g.Description, w.Description)
		}
		var schema any
		if err := json.Unmarshal(w.Schema, &schema); err != nil {
			t.Fatal(err)
		}
		if hg, hw := hash(t, g.InputSchema), hash(t, schema); hg != hw {
			t.Errorf("%s: served schema hashes %s, pkg/tools' %s:\n%s", name, hg, hw, canonical(t, g.InputSchema))
		}
		a, ok := annotations[name]
		if !ok || g.Annotations == nil || !reflect.DeepEqual(*g.Annotations, a) {
			t.Errorf("%s: annotations %+v, want %+v", name, g.Annotations, a)
			continue
		}
		read := name == "search_matter_documents" || name == "get_matter_summary"
		if a.ReadOnlyHint != read {
			t.Errorf("%s: readOnlyHint %v", name, a.ReadOnlyHint)
		}
		if !read && (a.DestructiveHint == nil || *a.DestructiveHint != (name == "delete_matter_document")) {
			t.Errorf("%s: destructiveHint %v", name, a.DestructiveHint)
		}
	}
}

// TestSearch: a read with the run in _meta answers the fixture's hits as
// structuredContent, and the same JSON as its one text block.
func TestSearch(t *testing.T) {
	cs, _ := connect(t, nil)
	r := newRun()
	args := map[string]any{"matter_id": r.matter, "query": "compel"}
	res := call(t, cs, "search_matter_documents", args, r.meta(uuid.NewString()))
	if res.IsError {
		t.Fatalf("search failed: %s", text(t, res))
	}
	search := tools.Reference(nil, nil)[0]
	in, _ := json.Marshal(args)
	want, err := search.Execute(tools.NewContext(context.Background(), tools.Scope{FirmID: r.firm, RunID: r.run, MatterID: r.matter}), in, "")
	if err != nil {
		t.Fatal(err)
	}
	var hits struct {
		Documents []struct {
			DocumentID string `json:"document_id"`
		} `json:"documents"`
	}
	if err := json.Unmarshal(want, &hits); err != nil || len(hits.Documents) != 2 {
		t.Fatalf("the fixture answers %s; the test wants two hits", want)
	}
	if g, w := canonical(t, res.StructuredContent), canonical(t, json.RawMessage(want)); !bytes.Equal(g, w) {
		t.Errorf("structuredContent %s, want %s", g, w)
	}
	var fromText any
	if err := json.Unmarshal([]byte(text(t, res)), &fromText); err != nil {
		t.Fatalf("text block is not JSON: %v", err)
	}
	if g, w := canonical(t, fromText), canonical(t, json.RawMessage(want)); !bytes.Equal(g, w) {
		t.Errorf("text block %s, want %s", g, w)
	}
}

// TestEffectOnce: a filing with an effect_ref writes one OUT# row in the
// run's partition; the same call again (a retried delivery) answers the
// same and writes none; another effect_ref is another effect.
func TestEffectOnce(t *testing.T) {
	st := store(t)
	cs, log := connect(t, st)
	r := newRun()
	ref := uuid.NewString()
	ctx := context.Background()
	first := call(t, cs, "file_court_document", filing(r.matter), r.meta(ref))
	if first.IsError {
		t.Fatalf("filing failed: %s", text(t, first))
	}
	want := map[string]any{"filing_id": ref, "effect_ref": ref, "status": "submitted"}
	if g, w := canonical(t, first.StructuredContent), canonical(t, want); !bytes.Equal(g, w) {
		t.Errorf("structuredContent %s, want %s", g, w)
	}
	out, err := st.ListOutbound(ctx, r.firm, r.run)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].EffectRef != ref || out[0].Kind != "court_filing" || !out[0].CreatedAt.Equal(now()) {
		t.Fatalf("outbox after one filing: %+v", out)
	}
	var body map[string]any
	if err := json.Unmarshal(out[0].Body, &body); err != nil || !bytes.Equal(canonical(t, body), canonical(t, filing(r.matter))) {
		t.Errorf("recorded body %s, want the call's arguments", out[0].Body)
	}

	again := call(t, cs, "file_court_document", filing(r.matter), r.meta(ref))
	if again.IsError || !bytes.Equal(canonical(t, again.StructuredContent), canonical(t, want)) {
		t.Errorf("the repeat answered isError=%v %v", again.IsError, again.StructuredContent)
	}
	if out, _ := st.ListOutbound(ctx, r.firm, r.run); len(out) != 1 {
		t.Fatalf("the same effect_ref twice wrote %d rows, want 1", len(out))
	}

	call(t, cs, "file_court_document", filing(r.matter), r.meta(uuid.NewString()))
	if out, _ := st.ListOutbound(ctx, r.firm, r.run); len(out) != 2 {
		t.Errorf("another effect_ref wrote %d rows in all, want 2", len(out))
	}
	if strings.Contains(log.String(), "PRIVILEGED-BODY") || strings.Contains(log.String(), "submitted") {
		t.Errorf("the log carries an input or a result:\n%s", log)
	}
}

// TestConcurrentDeliveries: the same effect delivered 16 times at once
// (a client retrying over new connections) is answered alike each time and
// recorded once.
func TestConcurrentDeliveries(t *testing.T) {
	st := store(t)
	cs, _ := connect(t, st)
	r := newRun()
	ref := uuid.NewString()
	var wg sync.WaitGroup
	results := make([]*mcp.CallToolResult, 16)
	errs := make([]error, len(results))
	for i := range results {
		wg.Go(func() {
			results[i], errs[i] = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "send_client_email",
				Arguments: map[string]any{"matter_id": r.matter, "to": "client@ridgeway.example", "subject": "Update", "body": "b"},
				Meta:      r.meta(ref)})
		})
	}
	wg.Wait()
	for i, res := range results {
		if errs[i] != nil || res.IsError {
			t.Fatalf("delivery %d: %v %+v", i, errs[i], res)
		}
	}
	if out, _ := st.ListOutbound(context.Background(), r.firm, r.run); len(out) != 1 || out[0].Kind != "client_email" {
		t.Errorf("16 deliveries of one effect_ref recorded %+v", out)
	}
}

// TestRefusedWithoutRun: a call whose _meta lacks the effect_ref or any of
// the run's ids (or spells one other than as a lowercase UUID) is refused
// before the tool runs: nothing is written.
func TestRefusedWithoutRun(t *testing.T) {
	st := store(t)
	ob := &outbox{record: st.RecordOutbound}
	cs, _ := connect(t, ob)
	r := newRun()
	full := r.meta(uuid.NewString())
	cases := map[string]mcp.Meta{"no _meta": nil}
	for _, k := range []string{agent.MetaEffectRef, agent.MetaFirmID, agent.MetaRunID, agent.MetaMatterID} {
		without := maps.Clone(full)
		delete(without, k)
		cases["without "+k] = without
		empty := maps.Clone(full)
		empty[k] = ""
		cases["empty "+k] = empty
		upper := maps.Clone(full)
		upper[k] = strings.ToUpper(full[k].(string))
		cases["uppercase "+k] = upper
		number := maps.Clone(full)
		number[k] = 7
		cases["number "+k] = number
	}
	for name, meta := range cases {
		t.Run(name, func(t *testing.T) {
			wantRefused(t, call(t, cs, "file_court_document", filing(r.matter), meta), mcpserver.TextNoScope)
			wantRefused(t, call(t, cs, "search_matter_documents", map[string]any{"matter_id": r.matter, "query": "compel"}, meta), mcpserver.TextNoScope)
		})
	}
	if n := ob.calls.Load(); n != 0 {
		t.Errorf("the outbox was written %d times", n)
	}
	if out, _ := st.ListOutbound(context.Background(), r.firm, r.run); len(out) != 0 {
		t.Errorf("outbox rows: %+v", out)
	}
}

// TestOutOfScope: a call naming another matter than its run's, or a
// document not of the run's matter, is refused by the tool (the matter
// wall) and writes nothing.
func TestOutOfScope(t *testing.T) {
	st := store(t)
	cs, _ := connect(t, st)
	r := newRun()
	wantRefused(t, call(t, cs, "file_court_document", filing(uuid.NewString()), r.meta(uuid.NewString())), mcpserver.TextOutOfScope)
	wantRefused(t, call(t, cs, "get_matter_summary", map[string]any{"matter_id": uuid.NewString()}, r.meta(uuid.NewString())), mcpserver.TextOutOfScope)
	wantRefused(t, call(t, cs, "delete_matter_document", map[string]any{"matter_id": r.matter, "document_id": "DOC-999"},
		r.meta(uuid.NewString())), mcpserver.TextNotInMatter)
	if out, _ := st.ListOutbound(context.Background(), r.firm, r.run); len(out) != 0 {
		t.Errorf("outbox rows: %+v", out)
	}
}

// TestToolErrorSanitized: a tool whose own system fails (its store answers
// AWS's error text) may have acted before the answer was lost, so it is a
// protocol error (internal error, the fixed TextFailed), never an isError
// result that says it did not act; neither the answer nor the log carries
// the error's text or the call's input.
func TestToolErrorSanitized(t *testing.T) {
	const raw = "operation error DynamoDB: PutItem, https response error StatusCode: 400, RequestID: Q1, ResourceNotFoundException: Requested resource not found: secret-table"
	ob := &outbox{record: func(context.Context, warrant.Outbound) (bool, error) { return false, errors.New(raw) }}
	cs, log := connect(t, ob)
	r := newRun()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "file_court_document", Arguments: filing(r.matter), Meta: r.meta(uuid.NewString())})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInternalError || werr.Message != mcpserver.TextFailed {
		t.Fatalf("a failing tool answered %v, want an internal error with the fixed text", err)
	}
	for _, leak := range []string{"secret-table", "DynamoDB", "PRIVILEGED-BODY"} {
		if strings.Contains(err.Error(), leak) {
			t.Errorf("the answer carries %q: %v", leak, err)
		}
		if strings.Contains(log.String(), leak) {
			t.Errorf("the log carries %q:\n%s", leak, log)
		}
	}
	if !strings.Contains(log.String(), `"failure_stage":"tool_execute"`) || !strings.Contains(log.String(), r.run) {
		t.Errorf("the failure is not logged as an envelope of the run:\n%s", log)
	}
	if ob.calls.Load() != 1 {
		t.Errorf("the outbox was called %d times, want 1", ob.calls.Load())
	}
}

// TestInvalidArguments: arguments the tool's schema refuses are a tool error
// (the specification's input validation errors), say where they fail
// without echoing a value, and never reach the tool.
func TestInvalidArguments(t *testing.T) {
	ob := &outbox{record: func(context.Context, warrant.Outbound) (bool, error) { return true, nil }}
	cs, _ := connect(t, ob)
	r := newRun()
	missing := filing(r.matter)
	delete(missing, "court")
	badUUID := filing("SECRET-not-a-uuid")
	extra := filing(r.matter)
	extra["SECRET_extra"] = "x"
	for name, c := range map[string]struct {
		args any
		want string
	}{
		"missing court":  {missing, mcpserver.TextInvalidInput + ": / (required: court)"},
		"matter_id":      {badUUID, mcpserver.TextInvalidInput + ": /matter_id (format)"},
		"extra property": {extra, mcpserver.TextInvalidInput + ": / (additionalProperties)"},
		"no arguments":   {nil, mcpserver.TextInvalidInput + ": / (required: matter_id, court, document_title, document_text)"},
		"duplicate keys": {json.RawMessage(`{"matter_id":"` + r.matter + `","matter_id":"` + r.matter + `","court":"c","document_title":"t","document_text":"x"}`),
			mcpserver.TextInvalidInput + ": " + mcpserver.TextAmbiguous},
		"unsafe number": {json.RawMessage(`{"matter_id":"` + r.matter + `","court":"c","document_title":"t","document_text":"x","n":9007199254740993}`),
			mcpserver.TextInvalidInput + ": " + mcpserver.TextAmbiguous},
		"not an object": {[]string{"a"}, mcpserver.TextInvalidInput + ": / (type)"},
	} {
		t.Run(name, func(t *testing.T) {
			res := call(t, cs, "file_court_document", c.args, r.meta(uuid.NewString()))
			wantRefused(t, res, c.want)
		})
	}
	if n := ob.calls.Load(); n != 0 {
		t.Errorf("invalid arguments reached the outbox %d times", n)
	}
}

// TestUnknownTool: a tool the server does not offer is a protocol error
// (JSON-RPC), not a tool result.
func TestUnknownTool(t *testing.T) {
	cs, _ := connect(t, nil)
	r := newRun()
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wire_funds", Arguments: map[string]any{}, Meta: r.meta(uuid.NewString())})
	if err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("calling an unknown tool: %v", err)
	}
}

// TestNewRefuses: a name offered twice and a schema that is not an object
// schema (or does not compile) are New's errors, not the SDK's panics.
func TestNewRefuses(t *testing.T) {
	ref := tools.Reference(nil, nil)
	if _, err := mcpserver.New(append(ref, ref[0]), mcpserver.Options{}); err == nil {
		t.Error("a tool offered twice was accepted")
	}
	for _, schema := range []string{`{"type":"string"}`, `[]`, `{"type":"object","properties":{"a":{"type":"nope"}}}`, `{`} {
		bad := ref[0]
		bad.Schema = json.RawMessage(schema)
		if _, err := mcpserver.New([]tools.Tool{bad}, mcpserver.Options{}); err == nil {
			t.Errorf("schema %s was accepted", schema)
		}
	}
}

// TestHandlerRefusesBrowsersAndRebinding: the handler is stateless and
// answers one JSON body; a loopback request naming a foreign Host (DNS
// rebinding) or a browser's cross-site request is refused.
func TestHandlerRefusesBrowsersAndRebinding(t *testing.T) {
	srv, err := mcpserver.New(tools.Reference(nil, nil), mcpserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(mcpserver.Handler(srv))
	defer ts.Close()
	post := func(edit func(*http.Request)) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		edit(req)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(res.Body)
		return res, b.String()
	}
	res, body := post(func(*http.Request) {})
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") ||
		res.Header.Get("Mcp-Session-Id") != "" || !strings.Contains(body, `"name":"`+mcpserver.Name+`"`) {
		t.Errorf("initialize: %d %q session %q: %s", res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Mcp-Session-Id"), body)
	}
	if res, _ := post(func(r *http.Request) { r.Host = "evil.example" }); res.StatusCode != http.StatusForbidden {
		t.Errorf("a foreign Host was answered %d", res.StatusCode)
	}
	if res, _ := post(func(r *http.Request) {
		r.Header.Set("Origin", "https://evil.example")
		r.Header.Set("Sec-Fetch-Site", "cross-site")
	}); res.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site browser request was answered %d", res.StatusCode)
	}
}
