package handlers_test

// Requests that produce, through the real handlers, the answers
// docs/openapi.yaml documents and no other test of this package produces:
// the replay of a finished run (200), a body over the limit on approve and
// resume (413), counsel's reconciliation of an effect of unknown outcome
// (every answer of its route), a ledger forged behind the store's back (500
// ledger_corrupt on the routes that fold it) and a DynamoDB that is down or
// throttling (503 on every route). openapi_test.go holds the document to
// what this package's tests produced.

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/internal/wire"
	"github.com/seed-f6d3920e/warrant/pkg/anchor"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// A retried POST /v1/runs whose run has ended answers 200 with the run as it
// ended (a retry while it goes on is 202: TestInvokeIdempotencyKey).
func TestInvokeReplayOfFinishedRun(t *testing.T) {
	s := newStack(t, stackOptions{})
	const key = "0d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a"
	req := func() *event { return fixture(t, "invoke.json").set("headers.idempotency-key", key) }
	first := s.call(req())
	v := decode[handlers.RunView](t, first)
	if first.StatusCode != 200 || v.PendingApproval == nil {
		t.Fatalf("first: %d %s", first.StatusCode, first.Body)
	}
	h := held{runID: v.RunID, approvalID: v.PendingApproval.ApprovalRequestID, hash: v.PendingApproval.ToolInputHash}
	if resp := s.call(approveReq(t, h, "approve", h.hash)); resp.StatusCode != 200 {
		t.Fatalf("approve: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := s.call(resumeReq(t, h)); resp.StatusCode != 200 || decode[handlers.RunView](t, resp).Status != "completed" {
		t.Fatalf("resume: %d %s", resp.StatusCode, resp.Body)
	}
	before := s.scan()
	replay := s.post(req())
	got := decode[handlers.RunView](t, replay)
	if replay.StatusCode != 200 || got.RunID != h.runID || got.Status != "completed" || got.FinalText != bedrocktest.DemoFiledText {
		t.Fatalf("replay of a finished run: %d %s", replay.StatusCode, replay.Body)
	}
	if _, ok := replay.Headers["Location"]; ok {
		t.Errorf("a 200 replay carries Location %q", replay.Headers["Location"])
	}
	s.wantUnchanged("replay of a finished run", before)
	if n := len(s.queue.take()); n != 0 {
		t.Errorf("the replay of a finished run handed %d messages to the worker", n)
	}
}

// Every POST route refuses a body over 256 KiB (413) before it reads a
// member of it, and writes nothing (POST /v1/runs: TestBadRequests; the
// reconciliation: TestReconcile).
func TestBodyLimit(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.startHeld(t)
	big := strings.Repeat("n", 300<<10)
	for name, req := range map[string]*event{
		"approve": approveReq(t, h, "approve", h.hash).editBody(func(m map[string]any) { m["note"] = big }),
		"resume":  resumeReq(t, h).editBody(func(m map[string]any) { m["padding"] = big }),
	} {
		before := s.scan()
		if p := s.wantProblem(name+" with a 300 KiB body", s.call(req), 413); p.Kind != string(failure.KindPayloadTooLarge) {
			t.Errorf("%s: kind %q", name, p.Kind)
		}
		s.wantUnchanged(name+" with a 300 KiB body", before)
	}
}

// reconcileReq is counsel's POST .../effects/{effect_ref}/reconcile (built
// from events/approve.json, a counsel's request) with body v.
func reconcileReq(t *testing.T, runID, effectRef string, v any) *event {
	e := fixture(t, "approve.json")
	e.m["routeKey"] = handlers.ReconcileRoute
	e.obj("requestContext")["routeKey"] = handlers.ReconcileRoute
	e.set("pathParameters", map[string]any{"run_id": runID, "effect_ref": effectRef})
	path := "/v1/runs/" + runID + "/effects/" + effectRef + "/reconcile"
	e.m["rawPath"] = path
	e.obj("requestContext.http")["path"] = path
	e.bodyJSON(v)
	e.set("headers.content-length", strconv.Itoa(len(e.m["body"].(string))))
	return e
}

// lostEffect leaves a run failed with effect_outcome_unknown as production
// does: counsel approves, the resume is accepted (202), a worker takes the
// run and the warranted effect's claim and dies before it records the
// outcome; once its lease passed, the sweeper settles the run. It returns
// the run and the effect_ref awaiting reconciliation.
func (s *stack) lostEffect(t *testing.T) (held, string) {
	t.Helper()
	ctx := context.Background()
	h := s.startHeld(t)
	if resp := s.call(approveReq(t, h, "approve", h.hash)); resp.StatusCode != 200 {
		t.Fatalf("approve: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := s.post(resumeReq(t, h)); resp.StatusCode != 202 {
		t.Fatalf("resume: %d %s", resp.StatusCode, resp.Body)
	}
	// The worker that received the message: it leases the run, takes the
	// claim the resume reserved, and is gone. Its message is lost with it.
	const dead = "worker-that-died"
	lease := s.clock.Now().Add(time.Minute)
	if _, err := s.store.AcquireRun(ctx, fixFirm, h.runID, dead, lease); err != nil {
		t.Fatalf("acquire run: %v", err)
	}
	claim, err := s.store.LatestEffect(ctx, fixFirm, h.runID, bedrocktest.ToolFileCourtDocument, h.hash)
	if err != nil || claim == nil {
		t.Fatalf("the resume reserved no claim: %+v %v", claim, err)
	}
	if err := s.store.TakeClaim(ctx, fixFirm, h.runID, claim.Key(), dead, lease); err != nil {
		t.Fatalf("take claim: %v", err)
	}
	s.queue.take()

	s.clock.Advance(5 * time.Minute)
	out, err := lambdaHandler(s.sweeper.Handle).Invoke(ctx, []byte(`{}`))
	if err != nil {
		t.Fatalf("sweeper: %v", err)
	}
	var rep handlers.SweepReport
	if err := json.Unmarshal(out, &rep); err != nil || rep.OutcomeUnknown != 1 {
		t.Fatalf("sweep report %s (%v), want one effect_outcome_unknown", out, err)
	}
	v := s.view(h.runID)
	if v.Status != "failed" || v.Failure == nil || v.Failure.Kind != string(failure.KindEffectOutcomeUnknown) ||
		len(v.UnreconciledEffects) != 1 || v.UnreconciledEffects[0] != claim.EffectRef {
		t.Fatalf("after the sweep: %+v (failure %+v)", v, v.Failure)
	}
	if out, err := s.store.ListOutbound(ctx, fixFirm, h.runID); err != nil || len(out) != 0 {
		t.Fatalf("the lost effect was executed: %+v %v", out, err)
	}
	return h, claim.EffectRef
}

// TestReconcile: counsel records what happened to an effect whose outcome
// was lost with its worker (200, once: 409 after), and every refusal of
// POST /v1/runs/{run_id}/effects/{effect_ref}/reconcile writes nothing.
func TestReconcile(t *testing.T) {
	s := newStack(t, stackOptions{})
	h, ref := s.lostEffect(t)
	executed := map[string]any{"outcome": "executed", "external_ref": "COURT-2026-000417", "note": "Filed; clerk confirmed by phone."}

	for _, tc := range []struct {
		name   string
		req    *event
		status int
		kind   failure.Kind
	}{
		{"run_id not a UUID", reconcileReq(t, "run-1", ref, executed), 400, failure.KindInvalidRequest},
		{"effect_ref not a UUID", reconcileReq(t, h.runID, strings.ToUpper(ref), executed), 400, failure.KindInvalidRequest},
		{"empty body", reconcileReq(t, h.runID, ref, executed).set("body", nil), 400, failure.KindInvalidRequest},
		{"unknown field", reconcileReq(t, h.runID, ref, map[string]any{"outcome": "not_executed", "effect_ref": ref}), 400, failure.KindInvalidRequest},
		{"missing outcome", reconcileReq(t, h.runID, ref, map[string]any{"note": "?"}), 400, failure.KindInvalidRequest},
		{"outcome not closed", reconcileReq(t, h.runID, ref, map[string]any{"outcome": "unknown"}), 400, failure.KindInvalidRequest},
		{"executed without external_ref", reconcileReq(t, h.runID, ref, map[string]any{"outcome": "executed"}), 400, failure.KindInvalidRequest},
		{"not_executed with external_ref", reconcileReq(t, h.runID, ref, map[string]any{"outcome": "not_executed", "external_ref": "X-1"}), 400, failure.KindInvalidRequest},
		{"external_ref too long", reconcileReq(t, h.runID, ref, map[string]any{"outcome": "executed", "external_ref": strings.Repeat("r", 257)}), 400, failure.KindInvalidRequest},
		{"note too long", reconcileReq(t, h.runID, ref, map[string]any{"outcome": "not_executed", "note": strings.Repeat("n", 2001)}), 400, failure.KindInvalidRequest},
		{"body over 256 KiB", reconcileReq(t, h.runID, ref, map[string]any{"outcome": "not_executed", "note": strings.Repeat("n", 300<<10)}), 413, failure.KindPayloadTooLarge},
		{"no authorizer", reconcileReq(t, h.runID, ref, executed).set("requestContext.authorizer", nil), 401, failure.KindUnauthenticated},
		{"missing claims", reconcileReq(t, h.runID, ref, executed).set("requestContext.authorizer.jwt.claims", nil), 401, failure.KindUnauthenticated},
		{"not counsel", reconcileReq(t, h.runID, ref, executed).roles("associate"), 403, failure.KindForbidden},
		{"unknown run", reconcileReq(t, uuid.NewString(), ref, executed), 404, failure.KindNotFound},
		{"another firm's counsel", reconcileReq(t, h.runID, ref, executed).claim("firm_id", otherFirm), 404, failure.KindNotFound},
		{"unknown effect_ref", reconcileReq(t, h.runID, uuid.NewString(), executed), 404, failure.KindNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.scan()
			if p := s.wantProblem(tc.name, s.call(tc.req), tc.status); p.Kind != string(tc.kind) {
				t.Errorf("%s: kind %q, want %q", tc.name, p.Kind, tc.kind)
			}
			s.wantUnchanged(tc.name, before)
		})
	}

	// A run with no effect of unknown outcome: nothing to reconcile.
	done := s.completeRun(t)
	s.wantProblem("effect of a completed run", s.call(reconcileReq(t, done.runID, uuid.NewString(), executed)), 404)

	resp := s.call(reconcileReq(t, h.runID, ref, executed))
	if resp.StatusCode != 200 {
		t.Fatalf("reconcile: %d %s", resp.StatusCode, resp.Body)
	}
	rv := decode[handlers.ReconciliationView](t, resp)
	if rv.RunID != h.runID || rv.EffectRef != ref || rv.ToolName != bedrocktest.ToolFileCourtDocument || rv.InputSHA256 != h.hash ||
		rv.Outcome != "executed" || rv.ExternalRef != "COURT-2026-000417" || rv.ReconciledBy != fixCounsel {
		t.Fatalf("reconciliation %+v", rv)
	}
	if v := s.view(h.runID); len(v.UnreconciledEffects) != 0 || v.Status != "failed" {
		t.Fatalf("after the reconciliation: %+v", v)
	}
	// Once only: the same finding again, or another, is a conflict.
	before := s.scan()
	if p := s.wantProblem("reconcile again", s.call(reconcileReq(t, h.runID, ref, map[string]any{"outcome": "not_executed"})), 409); p.Kind != string(failure.KindConflict) {
		t.Errorf("reconcile again: kind %q", p.Kind)
	}
	s.wantUnchanged("reconcile again", before)
	if out, err := s.store.ListOutbound(context.Background(), fixFirm, h.runID); err != nil || len(out) != 0 {
		t.Fatalf("a reconciliation executed the effect: %+v %v", out, err)
	}
}

// forge rewrites run's ledger as a table writer without the ledger key
// could (every line re-chained, the head moved, its MAC left as it was):
// the summary counsel was shown of the held call now says something else.
func (s *stack) forge(t *testing.T, runID string) {
	t.Helper()
	forged := dynamotest.RechainSealedLedger(t, s.client, s.table, fixFirm, runID, s.runKey(t, runID), func(e contracts.Event) {
		if b, ok := e.(*contracts.RunBlocked); ok {
			b.Approval.HumanSummary = "Withdraw the motion to compel."
		}
	})
	last := forged.Lines[len(forged.Lines)-1]
	dynamotest.SetHead(t, s.client, s.table, fixFirm, runID, last.Seq, last.Hash)
}

// TestForgedLedgerIsRefused: every route that extends or reports a run from
// its folded ledger refuses one that does not match its signed head (500
// ledger_corrupt) and writes nothing; GET ?consistent=true is
// TestConsistentViewVerifiesTheLedger.
func TestForgedLedgerIsRefused(t *testing.T) {
	s := newStack(t, stackOptions{})
	const key = "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d"
	inv := func() *event { return fixture(t, "invoke.json").set("headers.idempotency-key", key) }
	resp := s.call(inv())
	v := decode[handlers.RunView](t, resp)
	if resp.StatusCode != 200 || v.PendingApproval == nil {
		t.Fatalf("invoke: %d %s", resp.StatusCode, resp.Body)
	}
	pending := held{runID: v.RunID, approvalID: v.PendingApproval.ApprovalRequestID, hash: v.PendingApproval.ToolInputHash}
	approved := s.startHeld(t)
	if resp := s.call(approveReq(t, approved, "approve", approved.hash)); resp.StatusCode != 200 {
		t.Fatalf("approve: %d %s", resp.StatusCode, resp.Body)
	}
	lost, ref := s.lostEffect(t)
	for _, h := range []held{pending, approved, lost} {
		s.forge(t, h.runID)
	}
	for _, tc := range []struct {
		name string
		req  *event
	}{
		{"invoke replay", inv()},
		{"approve", approveReq(t, pending, "approve", pending.hash)},
		{"resume", resumeReq(t, approved)},
		{"reconcile", reconcileReq(t, lost.runID, ref, map[string]any{"outcome": "not_executed"})},
		{"get run wait", fixture(t, "get-run.json").runPath(approved.runID, "").query(map[string]string{"wait": "1"})},
	} {
		before := s.scan()
		if p := s.wantProblem(tc.name+" of a forged ledger", s.post(tc.req), 500); p.Kind != string(failure.KindLedgerCorrupt) {
			t.Errorf("%s: kind %q, want ledger_corrupt", tc.name, p.Kind)
		}
		s.wantUnchanged(tc.name+" of a forged ledger", before)
	}
	if n := len(s.queue.take()); n != 0 {
		t.Errorf("%d worker messages for forged runs", n)
	}
}

// outage rewires the stack's HTTP handlers (the clock, queue, logs and
// configuration stay) over a store whose DynamoDB endpoint is url.
func (s *stack) outage(t *testing.T, url string) {
	t.Helper()
	key, err := anchor.Parse(s.cfg.LedgerKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := anchor.NewKeyring(key)
	opts := s.client.Options()
	opts.BaseEndpoint = aws.String(url)
	store := dynamo.New(dynamodb.New(opts), s.table, dynamo.WithClock(s.clock.Now), dynamo.WithHeadSigner(keys))
	d := wire.Deps{Config: s.cfg, Keys: keys, DataKeys: s.dataKeys, Store: store, Queue: s.queue, Logger: failure.NewLogger(s.logs), Now: s.clock.Now}
	if s.invoke, err = wire.Invoke(d); err != nil {
		t.Fatal(err)
	}
	if s.resume, err = wire.Resume(d); err != nil {
		t.Fatal(err)
	}
	if s.approve, err = wire.Approve(d); err != nil {
		t.Fatal(err)
	}
	dr := d
	dr.Config = s.runsCfg
	s.runs = wire.Runs(dr)
}

// hangUp is a DynamoDB endpoint that accepts connections and closes them
// without a word: the store never gets an answer.
func hangUp(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	})
	t.Cleanup(func() { _ = l.Close(); wg.Wait() })
	return "http://" + l.Addr().String()
}

// throttling is a DynamoDB endpoint that answers every request as DynamoDB
// answers one over the table's throughput: 400 ThrottlingException.
func throttling(t *testing.T) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-ErrorType", "ThrottlingException")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}`)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestStoreOutage: with DynamoDB unreachable (store_unavailable) or
// throttling (store_throttled), every route answers 503 with Retry-After,
// and a request that was valid stays one to retry.
func TestStoreOutage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint func(*testing.T) string
		kind     failure.Kind
	}{
		{"unreachable", hangUp, failure.KindStoreUnavailable},
		{"throttling", throttling, failure.KindStoreThrottled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, stackOptions{})
			pending := s.startHeld(t)
			approved := s.startHeld(t)
			if resp := s.call(approveReq(t, approved, "approve", approved.hash)); resp.StatusCode != 200 {
				t.Fatalf("approve: %d %s", resp.StatusCode, resp.Body)
			}
			s.outage(t, tc.endpoint(t))
			for _, r := range []struct {
				name string
				req  *event
			}{
				{"invoke", fixture(t, "invoke.json")},
				{"approve", approveReq(t, pending, "approve", pending.hash)},
				{"resume", resumeReq(t, approved)},
				{"reconcile", reconcileReq(t, approved.runID, uuid.NewString(), map[string]any{"outcome": "not_executed"})},
				{"get run", fixture(t, "get-run.json").runPath(pending.runID, "")},
				{"get run events", fixture(t, "get-run-events.json").runPath(pending.runID, "")},
				{"list approvals", fixture(t, "list-approvals.json")},
				{"get budget", fixture(t, "get-budget.json")},
			} {
				resp := s.post(r.req)
				p := s.wantProblem(r.name, resp, 503)
				if p.Kind != string(tc.kind) {
					t.Errorf("%s: kind %q, want %q", r.name, p.Kind, tc.kind)
				}
				if n, err := strconv.Atoi(resp.Headers["Retry-After"]); err != nil || n < 1 {
					t.Errorf("%s: Retry-After %q", r.name, resp.Headers["Retry-After"])
				}
				var retryable struct {
					Retryable bool `json:"retryable"`
				}
				if json.Unmarshal([]byte(resp.Body), &retryable) != nil || !retryable.Retryable {
					t.Errorf("%s: a 503 that is not retryable: %s", r.name, resp.Body)
				}
			}
			if n := len(s.queue.take()); n != 0 {
				t.Errorf("%d worker messages during the outage", n)
			}
		})
	}
}
