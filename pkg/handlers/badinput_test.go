package handlers_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// secret is a value some bad requests carry; no response may echo it.
const secret = "s3cr3t-Privileged-Memo"

// world is the state the bad requests run against: run A held on a pending
// warrant, run B held on an approved (not yet used) warrant, and run C of
// another firm, held.
type world struct {
	s       *stack
	a, b, c held
}

func newWorld(t *testing.T) *world {
	s := newStack(t, stackOptions{})
	w := &world{s: s, a: s.startHeld(t), b: s.startHeld(t)}
	if resp := s.call(approveReq(t, w.b, "approve", w.b.hash)); resp.StatusCode != 200 {
		t.Fatalf("approve B: %d %s", resp.StatusCode, resp.Body)
	}
	resp := s.call(fixture(t, "invoke.json").claim("firm_id", otherFirm))
	if resp.StatusCode != 200 {
		t.Fatalf("invoke C: %d %s", resp.StatusCode, resp.Body)
	}
	v := decode[handlers.RunView](t, resp)
	w.c = held{runID: v.RunID, approvalID: v.PendingApproval.ApprovalRequestID, hash: v.PendingApproval.ToolInputHash}
	return w
}

type badCase struct {
	name   string
	req    func(t *testing.T, w *world) *event
	status int
}

// Request builders: each starts from an events/ fixture.
func inv(t *testing.T, _ *world) *event { return fixture(t, "invoke.json") }

// invBody replaces the invoke fixture's body with fn of it.
func invBody(fn func(body string) string) func(*testing.T, *world) *event {
	return func(t *testing.T, w *world) *event {
		e := inv(t, w)
		return e.body(fn(e.m["body"].(string)))
	}
}

func invEdit(fn func(m map[string]any)) func(*testing.T, *world) *event {
	return func(t *testing.T, w *world) *event { return inv(t, w).editBody(fn) }
}

func rawBody(s string) func(string) string { return func(string) string { return s } }

// apr is events/approve.json aimed at run A's pending warrant with its hash.
func apr(t *testing.T, w *world) *event { return approveReq(t, w.a, "approve", w.a.hash) }

func aprEdit(fn func(m map[string]any)) func(*testing.T, *world) *event {
	return func(t *testing.T, w *world) *event { return apr(t, w).editBody(fn) }
}

func aprBody(fn func(body string) string) func(*testing.T, *world) *event {
	return func(t *testing.T, w *world) *event {
		e := apr(t, w)
		return e.body(fn(e.m["body"].(string)))
	}
}

// res is events/resume.json aimed at run A (whose warrant is pending).
func res(t *testing.T, w *world) *event { return resumeReq(t, w.a) }

func resEdit(fn func(m map[string]any)) func(*testing.T, *world) *event {
	return func(t *testing.T, w *world) *event { return res(t, w).editBody(fn) }
}

func getRun(t *testing.T, w *world) *event {
	return fixture(t, "get-run.json").runPath(w.a.runID, "")
}

func getEvents(t *testing.T, w *world) *event {
	return fixture(t, "get-run-events.json").runPath(w.a.runID, "")
}

func listApr(t *testing.T, _ *world) *event { return fixture(t, "list-approvals.json") }

func getEvidence(t *testing.T, w *world) *event {
	return getRoute(t, "GET /v1/runs/{run_id}/evidence", "/v1/runs/"+w.a.runID+"/evidence", map[string]string{"run_id": w.a.runID}, nil)
}

func getReceipts(t *testing.T, w *world) *event {
	return getRoute(t, "GET /v1/runs/{run_id}/receipts", "/v1/runs/"+w.a.runID+"/receipts", map[string]string{"run_id": w.a.runID}, nil)
}

func getFirmLog(t *testing.T, _ *world) *event {
	return getRoute(t, "GET /v1/evidence/log", "/v1/evidence/log", nil, nil)
}

func getKeys(t *testing.T, _ *world) *event { return getRoute(t, "GET /v1/keys", "/v1/keys", nil, nil) }

func with(base func(*testing.T, *world) *event, fn func(e *event, w *world)) func(*testing.T, *world) *event {
	return func(t *testing.T, w *world) *event {
		e := base(t, w)
		fn(e, w)
		return e
	}
}

func noAuthorizer(e *event, _ *world) { e.set("requestContext.authorizer", nil) }
func noClaims(e *event, _ *world)     { e.set("requestContext.authorizer.jwt.claims", nil) }
func query(kv map[string]string) func(e *event, _ *world) {
	return func(e *event, _ *world) { e.query(kv) }
}
func b64(e *event, _ *world) {
	e.m["body"] = base64.StdEncoding.EncodeToString([]byte(e.m["body"].(string)))
	e.m["isBase64Encoded"] = true
}

var badCases = []badCase{
	// POST /v1/runs
	{"invoke/empty body", with(inv, func(e *event, _ *world) { e.set("body", nil) }), 400},
	{"invoke/whitespace body", invBody(rawBody(" \n ")), 400},
	{"invoke/not JSON", invBody(rawBody(`{"agent_key":`)), 400},
	{"invoke/array body", invBody(rawBody(`[]`)), 400},
	{"invoke/null body", invBody(rawBody(`null`)), 400},
	{"invoke/duplicate key", invBody(func(b string) string {
		return strings.Replace(b, `{"agent_key":"matter_assistant"`, `{"agent_key":"matter_assistant","agent_key":"matter_assistant"`, 1)
	}), 400},
	{"invoke/duplicate key inside history", invBody(func(b string) string {
		return strings.Replace(b, `{"agent_key"`, `{"history":[{"role":"user","role":"assistant","content":"hi"}],"agent_key"`, 1)
	}), 400},
	{"invoke/case-variant Agent_Key", invBody(func(b string) string { return strings.Replace(b, `"agent_key"`, `"Agent_Key"`, 1) }), 400},
	{"invoke/case-variant MATTER_ID", invBody(func(b string) string { return strings.Replace(b, `"matter_id"`, `"MATTER_ID"`, 1) }), 400},
	{"invoke/unknown field firm_id", invEdit(func(m map[string]any) { m["firm_id"] = otherFirm }), 400},
	{"invoke/unknown field user_id", invEdit(func(m map[string]any) { m["user_id"] = fixCounsel }), 400},
	{"invoke/approval_request_id", invEdit(func(m map[string]any) { m["approval_request_id"] = fixApproval }), 400},
	{"invoke/approval", invEdit(func(m map[string]any) {
		m["approval"] = map[string]any{"approval_request_id": fixApproval, "decision": "approved"}
	}), 400},
	{"invoke/trailing object", invBody(func(b string) string { return b + `{}` }), 400},
	{"invoke/trailing garbage", invBody(func(b string) string { return b + ` x` }), 400},
	{"invoke/agent_key number", invEdit(func(m map[string]any) { m["agent_key"] = 5 }), 400},
	{"invoke/agent_key null", invEdit(func(m map[string]any) { m["agent_key"] = nil }), 400},
	{"invoke/history string", invEdit(func(m map[string]any) { m["history"] = secret }), 400},
	{"invoke/cost_cap_usd number", invEdit(func(m map[string]any) { m["cost_cap_usd"] = 0.5 }), 400},
	{"invoke/missing agent_key", invEdit(func(m map[string]any) { delete(m, "agent_key") }), 400},
	{"invoke/missing matter_id", invEdit(func(m map[string]any) { delete(m, "matter_id") }), 400},
	{"invoke/matter_id not a UUID", invEdit(func(m map[string]any) { m["matter_id"] = secret }), 400},
	{"invoke/matter_id upper case", invEdit(func(m map[string]any) { m["matter_id"] = strings.ToUpper(fixMatter) }), 400},
	{"invoke/correlation_id not a UUID", invEdit(func(m map[string]any) { m["correlation_id"] = secret }), 400},
	{"invoke/300 KiB body", invEdit(func(m map[string]any) { m["counsel_message"] = strings.Repeat("a", 300<<10) }), 413},
	{"invoke/300 KiB base64 body", with(invEdit(func(m map[string]any) { m["counsel_message"] = strings.Repeat("a", 300<<10) }), b64), 413},
	{"invoke/invalid base64", with(inv, func(e *event, _ *world) { e.m["isBase64Encoded"] = true }), 400},
	{"invoke/base64 of invalid UTF-8", with(inv, func(e *event, _ *world) {
		e.m["body"] = base64.StdEncoding.EncodeToString([]byte("{\"agent_key\":\"\xff\xfe\",\"matter_id\":\"" + fixMatter + "\"}"))
		e.m["isBase64Encoded"] = true
	}), 400},
	{"invoke/content-type text/plain", with(inv, func(e *event, _ *world) { e.set("headers.content-type", "text/plain") }), 400},
	{"invoke/content-type latin1", with(inv, func(e *event, _ *world) { e.set("headers.content-type", "application/json; charset=iso-8859-1") }), 400},
	{"invoke/unknown agent", invEdit(func(m map[string]any) { m["agent_key"] = "tax_assistant" }), 422},
	{"invoke/cost_cap_usd above max", invEdit(func(m map[string]any) { m["cost_cap_usd"] = "10.01" }), 400},
	{"invoke/cost_cap_usd negative", invEdit(func(m map[string]any) { m["cost_cap_usd"] = "-1.00" }), 400},
	{"invoke/cost_cap_usd zero", invEdit(func(m map[string]any) { m["cost_cap_usd"] = "0" }), 400},
	{"invoke/cost_cap_usd not decimal", invEdit(func(m map[string]any) { m["cost_cap_usd"] = secret }), 400},
	{"invoke/nil authorizer", with(inv, noAuthorizer), 401},
	{"invoke/missing claims", with(inv, noClaims), 401},
	{"invoke/firm claim not a UUID", with(inv, func(e *event, _ *world) { e.claim("firm_id", secret) }), 401},
	{"invoke/sub missing", with(inv, func(e *event, _ *world) { e.set("requestContext.authorizer.jwt.claims.sub", nil) }), 401},
	{"invoke/roles malformed", with(inv, func(e *event, _ *world) { e.tokenMember("roles", "associate") }), 401},
	{"invoke/token of another user", with(inv, func(e *event, _ *world) { e.tokenMember("sub", fixCounsel) }), 401},
	{"invoke/no bearer token", with(inv, func(e *event, _ *world) { e.set("headers.authorization", nil) }), 401},

	// POST /v1/runs/{run_id}/approvals/{approval_id}
	{"approve/not counsel", with(apr, func(e *event, _ *world) { e.roles("associate", "paralegal") }), 403},
	{"approve/no roles claim", with(apr, func(e *event, _ *world) {
		e.set("requestContext.authorizer.jwt.claims.roles", nil).tokenMember("roles", nil)
	}), 403},
	// "Counsel" is not a role token: the claim is malformed, so nobody is
	// authenticated by it, let alone counsel (issue 11, item 4).
	{"approve/role case variant", with(apr, func(e *event, _ *world) { e.roles("Counsel") }), 403},
	{"approve/multi-word role containing counsel", with(apr, func(e *event, _ *world) { e.roles("of counsel") }), 401},
	{"approve/title made of role words", with(apr, func(e *event, _ *world) { e.roles("associate counsel") }), 401},
	{"approve/bracketed role name", with(apr, func(e *event, _ *world) { e.roles("[not counsel]") }), 401},
	{"approve/flattened claim says counsel, the token does not", with(apr, func(e *event, _ *world) {
		e.roles("associate").set("requestContext.authorizer.jwt.claims.roles", "[counsel]")
	}), 403},
	{"approve/another counsel's token", with(apr, func(e *event, _ *world) { e.tokenMember("sub", fixUser) }), 401},
	{"approve/nil authorizer", with(apr, noAuthorizer), 401},
	{"approve/missing claims", with(apr, noClaims), 401},
	{"approve/run_id not a UUID", with(apr, func(e *event, _ *world) { e.pathParam("run_id", secret) }), 400},
	{"approve/approval_id not a UUID", with(apr, func(e *event, _ *world) { e.pathParam("approval_id", "APR-1") }), 400},
	{"approve/approval_id upper case", with(apr, func(e *event, w *world) { e.pathParam("approval_id", strings.ToUpper(w.a.approvalID)) }), 400},
	{"approve/no path parameters", with(apr, func(e *event, _ *world) { e.set("pathParameters", nil) }), 400},
	{"approve/decision approved", aprEdit(func(m map[string]any) { m["decision"] = "approved" }), 400},
	{"approve/decision APPROVE", aprEdit(func(m map[string]any) { m["decision"] = "APPROVE" }), 400},
	{"approve/decision empty", aprEdit(func(m map[string]any) { m["decision"] = "" }), 400},
	{"approve/missing decision", aprEdit(func(m map[string]any) { delete(m, "decision") }), 400},
	{"approve/missing hash", aprEdit(func(m map[string]any) { delete(m, "tool_input_hash") }), 400},
	{"approve/hash not hex", aprEdit(func(m map[string]any) { m["tool_input_hash"] = secret }), 400},
	{"approve/hash upper case", aprEdit(func(m map[string]any) { m["tool_input_hash"] = strings.ToUpper(m["tool_input_hash"].(string)) }), 400},
	{"approve/hash number", aprEdit(func(m map[string]any) { m["tool_input_hash"] = 42 }), 400},
	{"approve/unknown field decided_by", aprEdit(func(m map[string]any) { m["decided_by"] = fixCounsel }), 400},
	{"approve/case-variant Decision", aprBody(func(b string) string { return strings.Replace(b, `"decision"`, `"Decision"`, 1) }), 400},
	{"approve/duplicate key", aprBody(func(b string) string {
		return strings.Replace(b, `{"decision":"approve"`, `{"decision":"deny","decision":"approve"`, 1)
	}), 400},
	{"approve/trailing data", aprBody(func(b string) string { return b + `]` }), 400},
	{"approve/empty body", with(apr, func(e *event, _ *world) { e.set("body", nil) }), 400},
	{"approve/note too long", aprEdit(func(m map[string]any) { m["note"] = strings.Repeat("n", 2001) }), 400},
	{"approve/wrong hash", aprEdit(func(m map[string]any) { m["tool_input_hash"] = strings.Repeat("ab", 32) }), 409},
	{"approve/another firm's counsel", with(apr, func(e *event, _ *world) { e.claim("firm_id", otherFirm) }), 404},
	{"approve/another firm's run and warrant", func(t *testing.T, w *world) *event { return approveReq(t, w.c, "approve", w.c.hash) }, 404},
	{"approve/unknown warrant", with(apr, func(e *event, w *world) { e.runPath(w.a.runID, uuid.NewString()) }), 404},
	{"approve/unknown run", with(apr, func(e *event, w *world) { e.runPath(uuid.NewString(), w.a.approvalID) }), 404},
	{"approve/warrant of another run", with(apr, func(e *event, w *world) { e.runPath(w.a.runID, w.b.approvalID) }), 404},
	{"approve/decision after decision", func(t *testing.T, w *world) *event { return approveReq(t, w.b, "deny", w.b.hash) }, 409},
	{"approve/same decision again", func(t *testing.T, w *world) *event { return approveReq(t, w.b, "approve", w.b.hash) }, 409},

	// POST /v1/runs/{run_id}/resume
	{"resume/pending warrant", res, 409},
	{"resume/approval_request_id not a UUID", resEdit(func(m map[string]any) { m["approval_request_id"] = secret }), 400},
	{"resume/approval_request_id number", resEdit(func(m map[string]any) { m["approval_request_id"] = 7 }), 400},
	{"resume/missing approval_request_id", resEdit(func(m map[string]any) { delete(m, "approval_request_id") }), 400},
	{"resume/unknown field tool_input_hash", resEdit(func(m map[string]any) { m["tool_input_hash"] = strings.Repeat("0", 64) }), 400},
	{"resume/case-variant Approval_Request_ID", with(res, func(e *event, w *world) {
		e.body(`{"Approval_Request_ID":"` + w.a.approvalID + `"}`)
	}), 400},
	{"resume/trailing data", with(res, func(e *event, _ *world) { e.m["body"] = e.m["body"].(string) + "\n{}" }), 400},
	{"resume/empty body", with(res, func(e *event, _ *world) { e.set("body", nil) }), 400},
	{"resume/invalid base64", with(res, func(e *event, _ *world) { e.m["body"] = "e30=!"; e.m["isBase64Encoded"] = true }), 400},
	{"resume/run_id not a UUID", with(res, func(e *event, _ *world) { e.pathParam("run_id", "run-1") }), 400},
	{"resume/another firm's caller", with(res, func(e *event, _ *world) { e.claim("firm_id", otherFirm) }), 404},
	{"resume/another firm's run and warrant", func(t *testing.T, w *world) *event { return resumeReq(t, w.c) }, 404},
	{"resume/unknown warrant", resEdit(func(m map[string]any) { m["approval_request_id"] = uuid.NewString() }), 404},
	{"resume/warrant of another run", with(res, func(e *event, w *world) {
		e.editBody(func(m map[string]any) { m["approval_request_id"] = w.b.approvalID })
	}), 404},
	{"resume/missing claims", with(res, noClaims), 401},
	{"resume/nil authorizer", with(res, noAuthorizer), 401},

	// GET /v1/runs/{run_id}
	{"get run/run_id not a UUID", with(getRun, func(e *event, _ *world) { e.pathParam("run_id", secret) }), 400},
	{"get run/unknown query", with(getRun, query(map[string]string{"verbose": "1"})), 400},
	{"get run/consistent=yes", with(getRun, query(map[string]string{"consistent": "yes"})), 400},
	{"get run/another firm's run", with(getRun, func(e *event, w *world) { e.runPath(w.c.runID, "") }), 404},
	{"get run/unknown run", with(getRun, func(e *event, _ *world) { e.runPath(uuid.NewString(), "") }), 404},
	{"get run/missing claims", with(getRun, noClaims), 401},
	// GET /v1/runs/{run_id}/events
	{"events/after_seq negative", with(getEvents, query(map[string]string{"after_seq": "-1"})), 400},
	{"events/after_seq not a number", with(getEvents, query(map[string]string{"after_seq": "abc"})), 400},
	{"events/after_seq leading zero", with(getEvents, query(map[string]string{"after_seq": "007"})), 400},
	{"events/after_seq repeated", with(getEvents, query(map[string]string{"after_seq": "1,2"})), 400},
	{"events/after_seq plus sign", with(getEvents, query(map[string]string{"after_seq": "+1"})), 400},
	{"events/limit zero", with(getEvents, query(map[string]string{"limit": "0"})), 400},
	{"events/limit too large", with(getEvents, query(map[string]string{"limit": "1001"})), 400},
	{"events/unknown query limt", with(getEvents, query(map[string]string{"limt": "5"})), 400},
	{"events/another firm's run", with(getEvents, func(e *event, w *world) { e.runPath(w.c.runID, "") }), 404},
	{"events/run_id not a UUID", with(getEvents, func(e *event, _ *world) { e.pathParam("run_id", "5b0c6a2e") }), 400},
	{"events/nil authorizer", with(getEvents, noAuthorizer), 401},
	// GET /v1/approvals
	{"approvals/status=approved", with(listApr, query(map[string]string{"status": "approved"})), 400},
	{"approvals/unknown query", with(listApr, query(map[string]string{"firm_id": otherFirm})), 400},
	{"approvals/limit too large", with(listApr, query(map[string]string{"limit": "501"})), 400},
	{"approvals/missing claims", with(listApr, noClaims), 401},
	// GET /v1/runs/{run_id}/evidence, .../receipts, /v1/evidence/log, /v1/keys
	{"evidence/run_id not a UUID", with(getEvidence, func(e *event, _ *world) { e.pathParam("run_id", secret) }), 400},
	{"evidence/checkpoint zero", with(getEvidence, query(map[string]string{"checkpoint": "0"})), 400},
	{"evidence/unknown query", with(getEvidence, query(map[string]string{"verify": "true"})), 400},
	{"evidence/checkpoint not yet signed", with(getEvidence, query(map[string]string{"checkpoint": "99"})), 404},
	{"evidence/another firm's run", with(getEvidence, func(e *event, w *world) { e.pathParam("run_id", w.c.runID) }), 404},
	{"evidence/missing claims", with(getEvidence, noClaims), 401},
	{"receipts/unknown query", with(getReceipts, query(map[string]string{"checkpoint": "1"})), 400},
	{"receipts/run_id not a UUID", with(getReceipts, func(e *event, _ *world) { e.pathParam("run_id", "run-1") }), 400},
	{"receipts/another firm's run", with(getReceipts, func(e *event, w *world) { e.pathParam("run_id", w.c.runID) }), 404},
	{"receipts/missing claims", with(getReceipts, noClaims), 401},
	{"firm log/from zero", with(getFirmLog, query(map[string]string{"from": "0"})), 400},
	{"firm log/unknown query", with(getFirmLog, query(map[string]string{"firm_id": otherFirm})), 400},
	{"firm log/checkpoint not yet signed", with(getFirmLog, query(map[string]string{"checkpoint": "3"})), 404},
	{"firm log/nil authorizer", with(getFirmLog, noAuthorizer), 401},
	{"keys/unknown query", with(getKeys, query(map[string]string{"key_id": "x"})), 400},
	{"keys/missing claims", with(getKeys, noClaims), 401},
	{"runs/unknown route", with(listApr, func(e *event, _ *world) { e.m["routeKey"] = "GET /v1/admin" }), 404},
}

func TestBadRequests(t *testing.T) {
	if len(badCases) < 50 {
		t.Fatalf("only %d bad requests", len(badCases))
	}
	w := newWorld(t)
	s := w.s
	for _, tc := range badCases {
		t.Run(tc.name, func(t *testing.T) {
			parent := s.t
			s.t = t // report through the subtest
			defer func() { s.t = parent }()
			req := tc.req(t, w)
			before := s.scan()
			logged := len(s.logs.String())
			resp := s.call(req)
			s.wantProblem(tc.name, resp, tc.status)
			if strings.Contains(resp.Body, secret) || strings.Contains(resp.Headers["X-Correlation-Id"], secret) {
				t.Errorf("response echoes a request value: %s", resp.Body)
			}
			// The failure envelope is logged; it holds ids and fixed texts only.
			if l := s.logs.String()[logged:]; strings.Contains(l, secret) {
				t.Errorf("the failure log echoes a request value: %s", l)
			} else if !strings.Contains(l, `"failure_kind"`) {
				t.Errorf("no failure envelope logged")
			}
			s.wantUnchanged(tc.name, before)
		})
	}
	t.Logf("%d bad requests", len(badCases))
}

// TestBase64Body: a base64 body (API Gateway sends one for some clients) is
// decoded and accepted like a plain one.
func TestBase64Body(t *testing.T) {
	s := newStack(t, stackOptions{})
	resp := s.call(with(inv, b64)(t, nil))
	if resp.StatusCode != 200 || decode[handlers.RunView](t, resp).PendingApproval == nil {
		t.Fatalf("base64 invoke: %d %s", resp.StatusCode, resp.Body)
	}
	h := held{}
	v := decode[handlers.RunView](t, resp)
	h.runID, h.approvalID, h.hash = v.RunID, v.PendingApproval.ApprovalRequestID, v.PendingApproval.ToolInputHash
	e := approveReq(t, h, "approve", h.hash)
	b64(e, nil)
	if resp := s.call(e); resp.StatusCode != 200 {
		t.Fatalf("base64 approve: %d %s", resp.StatusCode, resp.Body)
	}
	e = resumeReq(t, h)
	b64(e, nil)
	if resp := s.call(e); resp.StatusCode != 200 || decode[handlers.RunView](t, resp).Status != "completed" {
		t.Fatalf("base64 resume: %d %s", resp.StatusCode, resp.Body)
	}
}

// TestExpired: a warrant past its TTL can be neither decided nor used (410),
// and the refusal writes nothing.
func TestExpired(t *testing.T) {
	s := newStack(t, stackOptions{})
	decided := s.startHeld(t)
	if resp := s.call(approveReq(t, decided, "approve", decided.hash)); resp.StatusCode != 200 {
		t.Fatalf("approve: %d %s", resp.StatusCode, resp.Body)
	}
	pending := s.startHeld(t)
	s.clock.Advance(s.cfg.WarrantTTL + time.Minute)

	before := s.scan()
	s.wantProblem("approve expired", s.call(approveReq(t, pending, "approve", pending.hash)), 410)
	s.wantUnchanged("approve expired", before)
	s.wantProblem("deny expired", s.call(approveReq(t, pending, "deny", pending.hash)), 410)
	s.wantUnchanged("deny expired", before)
	s.wantProblem("resume expired", s.call(resumeReq(t, decided)), 410)
	s.wantUnchanged("resume expired", before)
	// An expired warrant is no longer offered for signing.
	if list := listApprovals(t, s); len(list) != 0 {
		t.Errorf("pending approvals after expiry: %+v", list)
	}
}

// TestApprovalsFirmScoped: the listing holds the caller's firm's pending
// warrants only: not another firm's, not a decided one.
func TestApprovalsFirmScoped(t *testing.T) {
	w := newWorld(t)
	ids := func(firm string) []string {
		resp := w.s.call(fixture(t, "list-approvals.json").claim("firm_id", firm))
		if resp.StatusCode != 200 {
			t.Fatalf("list: %d %s", resp.StatusCode, resp.Body)
		}
		var out []string
		for _, a := range decode[struct {
			Approvals []handlers.WarrantView `json:"approvals"`
		}](t, resp).Approvals {
			out = append(out, a.RunID+"/"+a.ApprovalRequestID)
		}
		return out
	}
	if got := ids(fixFirm); len(got) != 1 || got[0] != w.a.runID+"/"+w.a.approvalID {
		t.Errorf("firm's pending approvals %v, want only run A's", got)
	}
	if got := ids(otherFirm); len(got) != 1 || got[0] != w.c.runID+"/"+w.c.approvalID {
		t.Errorf("other firm's pending approvals %v, want only run C's", got)
	}
	if got := ids(uuid.NewString()); len(got) != 0 {
		t.Errorf("a firm with no runs lists %v", got)
	}
}
