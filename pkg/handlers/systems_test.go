package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// serverCalls sees the tools/call requests that reach the MCP server,
// and may answer one itself (refuse, or run it and drop the answer).
type serverCalls struct {
	mu    sync.Mutex
	calls []string // tool names, in order
	// intercept, when set, handles a tools/call of a tool before (or
	// instead of) the server: it returns true when it answered.
	intercept func(tool string, n int, w http.ResponseWriter, r *http.Request, next http.Handler) bool
}

func (c *serverCalls) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tool := calledTool(r); tool != "" {
			c.mu.Lock()
			c.calls = append(c.calls, tool)
			n := 0
			for _, name := range c.calls {
				if name == tool {
					n++
				}
			}
			c.mu.Unlock()
			if c.intercept != nil && c.intercept(tool, n, w, r, next) {
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// calledTool is the tool a request calls: an HTTPS endpoint's path (under
// /https/), a Lambda payload's tool, or an MCP tools/call's name; "" for
// any other request.
func calledTool(r *http.Request) string {
	if tool, ok := strings.CutPrefix(r.URL.Path, "/https/"); ok && r.Method == http.MethodPost {
		return tool
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if strings.HasPrefix(r.URL.Path, "/2015-03-31/functions/") {
		var p struct {
			Tool string `json:"tool"`
		}
		_ = json.Unmarshal(body, &p) // the Lambda payload
		return p.Tool
	}
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
		return m.Params.Name
	}
	return ""
}

// systems are the kinds of firm system the tests below walk a run through.
var systems = []string{catalog.TargetMCP, catalog.TargetHTTPS, catalog.TargetLambda}

// forEachSystem runs test once a system, as a subtest named for it.
func forEachSystem(t *testing.T, test func(t *testing.T, system string)) {
	for _, sys := range systems {
		t.Run(sys, func(t *testing.T) { test(t, sys) })
	}
}

func (c *serverCalls) of(tool string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, name := range c.calls {
		if name == tool {
			n++
		}
	}
	return n
}

// Issues 18 and 19: the demo through the firm's system, an MCP server, an
// HTTPS endpoint or a Lambda function. The search runs on the system, the filing is held,
// counsel signs, and the filing reaches the system exactly once, with the
// effect_ref the ledger records (MCP's _meta, the Idempotency-Key, the
// Lambda payload; the
// system's outbox row is keyed by it).
func TestSystemFilingOnceWithItsEffectRef(t *testing.T) {
	forEachSystem(t, func(t *testing.T, system string) {
		calls := &serverCalls{}
		s := newStack(t, stackOptions{system: system, wrap: calls.wrap})
		h := s.completeRun(t)
		if v := s.view(h.runID); v.Status != "completed" {
			t.Fatalf("run %+v", v)
		}
		if calls.of("search_matter_documents") != 1 || calls.of("file_court_document") != 1 {
			t.Fatalf("the server saw %v", calls.calls)
		}
		out, err := s.store.ListOutbound(context.Background(), fixFirm, h.runID)
		if err != nil || len(out) != 1 {
			t.Fatalf("outbox %+v %v", out, err)
		}
		var ref string
		for _, l := range s.ledgerLines(h.runID) {
			if tc, ok := l.Event.(*contracts.ToolCompleted); ok && tc.ToolName == "file_court_document" {
				ref = tc.EffectRef
			}
		}
		if out[0].EffectRef != ref || ref == "" {
			t.Fatalf("the server recorded effect %q, the ledger %q", out[0].EffectRef, ref)
		}
		s.auditRun(h.runID)
	})
}

// Counsel's edit is what reaches the server.
func TestSystemEditedFilingRunsTheEdit(t *testing.T) {
	forEachSystem(t, func(t *testing.T, system string) {
		s := newStack(t, stackOptions{system: system})
		h := s.startHeld(t)
		if resp := s.call(approveEdited(t, h, filingEdit(fixMatter, "Amended Motion to Compel"))); resp.StatusCode != 200 {
			t.Fatalf("approve the edit: %d %s", resp.StatusCode, resp.Body)
		}
		if resp := s.call(resumeReq(t, h)); resp.StatusCode != 200 {
			t.Fatalf("resume: %d %s", resp.StatusCode, resp.Body)
		}
		out, err := s.store.ListOutbound(context.Background(), fixFirm, h.runID)
		if err != nil || len(out) != 1 || !strings.Contains(string(out[0].Body), "Amended Motion to Compel") {
			t.Fatalf("outbox %+v %v", out, err)
		}
	})
}

// A server that applies the filing and then drops the connection: the
// filing went out and its answer was lost, so the run ends
// effect_outcome_unknown, the filing is never sent again, and counsel
// reconciles it.
func TestSystemAnswerLostAfterTheFilingRan(t *testing.T) {
	forEachSystem(t, func(t *testing.T, system string) {
		calls := &serverCalls{intercept: func(tool string, _ int, w http.ResponseWriter, r *http.Request, next http.Handler) bool {
			if tool != "file_court_document" {
				return false
			}
			next.ServeHTTP(httptest.NewRecorder(), r) // the filing is made
			panic(http.ErrAbortHandler)               // and its answer never leaves
		}}
		s := newStack(t, stackOptions{system: system, wrap: calls.wrap})
		h := s.startHeld(t)
		if resp := s.call(approveReq(t, h, "approve", h.hash)); resp.StatusCode != 200 {
			t.Fatal(resp.Body)
		}
		resp := s.call(resumeReq(t, h))
		v := decode[handlers.RunView](t, resp)
		if v.Status != "failed" || v.Failure == nil || v.Failure.Kind != "effect_outcome_unknown" || len(v.UnreconciledEffects) != 1 {
			t.Fatalf("run %+v", v)
		}
		out, _ := s.store.ListOutbound(context.Background(), fixFirm, h.runID)
		if len(out) != 1 || calls.of("file_court_document") != 1 {
			t.Fatalf("%d filings recorded, %d sent", len(out), calls.of("file_court_document"))
		}
		rec := fixture(t, "reconcile-effect.json").runPath(h.runID, "").pathParam("effect_ref", v.UnreconciledEffects[0])
		if resp := s.call(rec); resp.StatusCode != 200 {
			t.Fatalf("reconcile: %d %s", resp.StatusCode, resp.Body)
		}
		if v := s.view(h.runID); len(v.UnreconciledEffects) != 0 {
			t.Fatalf("after reconciliation: %+v", v)
		}
	})
}

// 64 concurrent resumes of one warrant: one is accepted, and one filing
// reaches the server.
func TestSystemConcurrentResumesOneCall(t *testing.T) {
	forEachSystem(t, func(t *testing.T, system string) {
		calls := &serverCalls{}
		s := newStack(t, stackOptions{system: system, wrap: calls.wrap})
		h := s.startHeld(t)
		if resp := s.call(approveReq(t, h, "approve", h.hash)); resp.StatusCode != 200 {
			t.Fatal(resp.Body)
		}
		evs := make([]*event, 64)
		for i := range evs {
			evs[i] = resumeReq(t, h)
		}
		won := 0
		for _, resp := range s.callAll(evs) {
			if resp.StatusCode == 202 {
				won++
			}
		}
		s.drain()
		if won != 1 || calls.of("file_court_document") != 1 || s.view(h.runID).Status != "completed" {
			t.Fatalf("%d resumes won, %d filings reached the server, run %s", won, calls.of("file_court_document"), s.view(h.runID).Status)
		}
	})
}

// A read whose server answered 503 after the call was sent is tried again
// (a read may be); the run goes on with one answer in the ledger.
func TestSystemReadRetriedAfterATransientFailure(t *testing.T) {
	forEachSystem(t, func(t *testing.T, system string) {
		calls := &serverCalls{intercept: func(tool string, n int, w http.ResponseWriter, _ *http.Request, _ http.Handler) bool {
			if tool == "search_matter_documents" && n == 1 {
				http.Error(w, "the document system is restarting", http.StatusServiceUnavailable)
				return true
			}
			return false
		}}
		s := newStack(t, stackOptions{system: system, wrap: calls.wrap})
		h := s.startHeld(t)
		if calls.of("search_matter_documents") != 2 {
			t.Fatalf("the server saw %v", calls.calls)
		}
		n := 0
		for _, l := range s.ledgerLines(h.runID) {
			if tc, ok := l.Event.(*contracts.ToolCompleted); ok && tc.ToolName == "search_matter_documents" {
				n++
				if tc.Status != contracts.ToolSuccess {
					t.Fatalf("the search's answer: %+v", tc)
				}
			}
		}
		if n != 1 {
			t.Fatalf("%d search answers in the ledger", n)
		}
	})
}

// toolError answers a call as the system's own tool error, in its protocol:
// an MCP result with isError, an HTTPS 422 (the endpoint's 4xx are final),
// a Lambda function error.
func toolError(t *testing.T, system string, w http.ResponseWriter, r *http.Request) {
	t.Helper()
	switch system {
	case catalog.TargetMCP:
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("the tools/call: %v", err)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) +
			`,"result":{"content":[{"type":"text","text":"the index is being rebuilt: SECRET-INTERNAL-DETAIL"}],"isError":true}}`))
	case catalog.TargetHTTPS:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write([]byte(`{"error":"the index is being rebuilt: SECRET-INTERNAL-DETAIL"}`))
	case catalog.TargetLambda:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		_, _ = w.Write([]byte(`{"errorType":"Refusal","errorMessage":"the index is being rebuilt: SECRET-INTERNAL-DETAIL"}`))
	}
}

// A read the system answers with its own tool error: the model is told the
// tool failed (never the system's words), the ledger records an error, the
// call is not retried (the system answered), and the run goes on.
func TestSystemToolError(t *testing.T) {
	forEachSystem(t, func(t *testing.T, system string) {
		calls := &serverCalls{intercept: func(tool string, _ int, w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
			if tool != "search_matter_documents" {
				return false
			}
			toolError(t, system, w, r)
			return true
		}}
		s := newStack(t, stackOptions{system: system, wrap: calls.wrap})
		h := s.startHeld(t)
		if calls.of("search_matter_documents") != 1 {
			t.Fatalf("the system saw %v: a tool error is an answer, not retried", calls.calls)
		}
		var status string
		for _, l := range s.ledgerLines(h.runID) {
			if tc, ok := l.Event.(*contracts.ToolCompleted); ok && tc.ToolName == "search_matter_documents" {
				status = tc.Status
			}
			if strings.Contains(string(l.Raw), "SECRET-INTERNAL-DETAIL") {
				t.Fatalf("the system's words reached the ledger: %s", l.Raw)
			}
		}
		if status != contracts.ToolError {
			t.Fatalf("the search's answer is %q, want %q", status, contracts.ToolError)
		}
		if strings.Contains(s.logs.String(), "SECRET-INTERNAL-DETAIL") {
			t.Fatalf("the system's words reached the log")
		}
		told := false
		for _, r := range s.fake.Requests() {
			if strings.Contains(string(r.Body), "SECRET-INTERNAL-DETAIL") {
				t.Fatalf("the system's words reached the model: %s", r.Body)
			}
			told = told || strings.Contains(string(r.Body), "tool failed")
		}
		if !told {
			t.Fatal("the model was not told the tool failed")
		}
	})
}
