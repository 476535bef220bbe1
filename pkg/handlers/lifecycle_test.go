package handlers_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
)

// lose drops every queued worker message: a hand-over that never reached a
// worker, or a worker that died with it.
func (s *stack) lose() int { return len(s.queue.take()) }

// auditRun folds the run's ledger against its signed head and audits it.
func (s *stack) auditRun(runID string) reducer.RunState {
	s.t.Helper()
	ctx := context.Background()
	folded, err := reducer.Fold(ctx, s.store, fixFirm, runID, reducer.FoldOptions{KeepLines: true, Keys: s.runs.Keys})
	if err != nil {
		s.t.Fatalf("the ledger does not verify: %v", err)
	}
	if _, err := reducer.Audit(folded.Lines); err != nil {
		s.t.Fatalf("the ledger does not audit: %v", err)
	}
	return folded.State
}

// TestSweeperRestartsARunNoWorkerTook: the hand-over of a new run is lost;
// once its pickup deadline passed, one sweeper pass hands it to a worker
// again, and the run goes on to its warrant.
func TestSweeperRestartsARunNoWorkerTook(t *testing.T) {
	s := newStack(t, stackOptions{})
	resp := s.post(fixture(t, "invoke.json"))
	if resp.StatusCode != 202 {
		t.Fatalf("invoke: %d %s", resp.StatusCode, resp.Body)
	}
	runID := decode[handlers.RunView](t, resp).RunID
	if n := s.lose(); n != 1 {
		t.Fatalf("%d messages, want 1", n)
	}
	if rep := s.sweep(); rep.Expired != 0 {
		t.Fatalf("a sweep before the pickup deadline: %+v", rep)
	}
	s.clock.Advance(6 * time.Minute)
	if rep := s.sweep(); rep.Restarted != 1 || rep.Errors != 0 {
		t.Fatalf("sweep: %+v, want one restart", rep)
	}
	msgs := s.queue.take()
	if len(msgs) != 1 || msgs[0].Reason != contracts.ReasonRestarted || msgs[0].RunID != runID {
		t.Fatalf("messages %+v", msgs)
	}
	if f := s.work(msgs[0], 1); len(f) != 0 {
		t.Fatal(f)
	}
	if v := s.view(runID); v.Status != "held" {
		t.Fatalf("after the restart: %+v", v)
	}
	s.auditRun(runID)
}

// TestSweeperWorkerLost: a run whose every hand-over is lost is restarted
// at most twice, then fails with worker_lost; nothing was pending, so
// nothing is in doubt.
func TestSweeperWorkerLost(t *testing.T) {
	s := newStack(t, stackOptions{})
	resp := s.post(fixture(t, "invoke.json"))
	runID := decode[handlers.RunView](t, resp).RunID
	s.lose()
	for i := range 2 {
		s.clock.Advance(6 * time.Minute)
		if rep := s.sweep(); rep.Restarted != 1 {
			t.Fatalf("pass %d: %+v", i+1, rep)
		}
		s.lose()
	}
	s.clock.Advance(6 * time.Minute)
	if rep := s.sweep(); rep.WorkerLost != 1 {
		t.Fatalf("third pass: %+v", rep)
	}
	v := s.view(runID)
	if v.Status != "failed" || v.Failure == nil || v.Failure.Kind != "worker_lost" || v.Failure.Stage != "sweep" {
		t.Fatalf("view %+v", v)
	}
	if rep := s.sweep(); rep.Expired != 0 {
		t.Fatalf("a failed run is still swept: %+v", rep)
	}
	s.auditRun(runID)
}

// TestSweeperExpiresAHeldRun: a warrant nobody used expires with its run
// (held -> failed, warrant_expired), and can no longer be decided or used.
func TestSweeperExpiresAHeldRun(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.startHeld(t)
	s.clock.Advance(23 * time.Hour)
	if rep := s.sweep(); rep.Expired != 0 {
		t.Fatalf("a sweep before the warrant expired: %+v", rep)
	}
	s.clock.Advance(2 * time.Hour)
	if rep := s.sweep(); rep.WarrantExpired != 1 {
		t.Fatalf("sweep: %+v", rep)
	}
	v := s.view(h.runID)
	if v.Status != "failed" || v.Failure == nil || v.Failure.Kind != "warrant_expired" || v.PendingApproval != nil {
		t.Fatalf("view %+v", v)
	}
	w, err := s.store.GetWarrant(context.Background(), fixFirm, h.runID, h.approvalID)
	if err != nil || w.Status != warrant.WarrantExpired {
		t.Fatalf("warrant %+v %v", w, err)
	}
	before := s.scan()
	s.wantProblem("approve an expired warrant", s.call(approveReq(t, h, "approve", h.hash)), 409)
	s.wantProblem("resume on an expired warrant", s.call(resumeReq(t, h)), 410)
	s.wantUnchanged("after expiry", before)
	if got := listApprovals(t, s); len(got) != 0 {
		t.Fatalf("an expired warrant is still listed: %+v", got)
	}
	s.auditRun(h.runID)
}

// TestUnknownOutcomeAndReconciliation: the worker that took the warranted
// effect dies without recording its outcome. The sweeper fails the run with
// effect_outcome_unknown, answers the call "unknown" and flags the claim,
// never executing it; counsel then records what happened (once), and the
// ledger audits.
// loseWarrantedEffect approves and resumes h, then loses the worker after it
// took the reserved claim (it may have filed) and sweeps once its lease
// passed: the run fails effect_outcome_unknown. It answers the effect's key.
func (s *stack) loseWarrantedEffect(t *testing.T, h held) warrant.EffectKey {
	t.Helper()
	if resp := s.call(approveReq(t, h, "approve", h.hash)); resp.StatusCode != 200 {
		t.Fatal(resp.Body)
	}
	if resp := s.post(resumeReq(t, h)); resp.StatusCode != 202 {
		t.Fatal(resp.Body)
	}
	s.lose()
	ctx := context.Background()
	w, err := s.store.GetWarrant(ctx, fixFirm, h.runID, h.approvalID)
	if err != nil {
		t.Fatal(err)
	}
	key := warrant.EffectKey{ToolName: w.ToolName, InputSHA256: w.ToolInputHash, Attempt: w.Attempt}
	if _, err := s.store.AcquireRun(ctx, fixFirm, h.runID, "a-worker-that-died", s.clock.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.store.TakeClaim(ctx, fixFirm, h.runID, key, "a-worker-that-died", s.clock.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	s.clock.Advance(6 * time.Minute)
	if rep := s.sweep(); rep.OutcomeUnknown != 1 {
		t.Fatalf("sweep: %+v", rep)
	}
	return key
}

func TestUnknownOutcomeAndReconciliation(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.startHeld(t)
	key := s.loseWarrantedEffect(t, h)
	ctx := context.Background()
	v := s.view(h.runID)
	if v.Status != "failed" || v.Failure == nil || v.Failure.Kind != "effect_outcome_unknown" || len(v.UnreconciledEffects) != 1 {
		t.Fatalf("view %+v", v)
	}
	if out, _ := s.store.ListOutbound(ctx, fixFirm, h.runID); len(out) != 0 {
		t.Fatalf("the sweeper executed the effect: %+v", out)
	}
	ref := v.UnreconciledEffects[0]
	claim, err := s.store.GetEffect(ctx, fixFirm, h.runID, key)
	if err != nil || !claim.NeedsReconciliation || claim.EffectRef != ref {
		t.Fatalf("claim %+v %v", claim, err)
	}

	before := s.scan()
	s.wantProblem("not counsel", s.call(reconcileReq(t, h.runID, ref, map[string]any{"outcome": "not_executed"}).
		roles("associate")), 403)
	s.wantProblem("executed without a reference", s.call(reconcileReq(t, h.runID, ref, map[string]any{"outcome": "executed"})), 400)
	s.wantProblem("unknown outcome word", s.call(reconcileReq(t, h.runID, ref, map[string]any{"outcome": "maybe"})), 400)
	s.wantProblem("another effect", s.call(reconcileReq(t, h.runID, h.approvalID, map[string]any{"outcome": "not_executed"})), 404)
	s.wantUnchanged("rejected reconciliations", before)

	resp := s.call(reconcileReq(t, h.runID, ref, map[string]any{"outcome": "executed", "external_ref": "SF-2026-118734", "note": "Clerk confirmed."}))
	if resp.StatusCode != 200 {
		t.Fatalf("reconcile: %d %s", resp.StatusCode, resp.Body)
	}
	r := decode[handlers.ReconciliationView](t, resp)
	if r.Outcome != "executed" || r.ExternalRef != "SF-2026-118734" || r.ReconciledBy != fixCounsel || r.EffectRef != ref {
		t.Fatalf("reconciliation %+v", r)
	}
	s.wantProblem("reconcile twice", s.call(reconcileReq(t, h.runID, ref, map[string]any{"outcome": "not_executed"})), 409)
	if v := s.view(h.runID); len(v.UnreconciledEffects) != 0 || v.Status != "failed" {
		t.Fatalf("after reconciliation: %+v", v)
	}
	if out, _ := s.store.ListOutbound(ctx, fixFirm, h.runID); len(out) != 0 {
		t.Fatalf("an executed reconciliation re-ran the tool: %+v", out)
	}
	s.auditRun(h.runID)
}

// TestWaitLongPolls: GET /v1/runs/{id}?wait=N answers as soon as the run
// stops running (here: held, once the worker ran), with the consistent view;
// a wait over 20 s is a 400.
func TestWaitLongPolls(t *testing.T) {
	s := newStack(t, stackOptions{})
	resp := s.post(fixture(t, "invoke.json"))
	runID := decode[handlers.RunView](t, resp).RunID
	go func() {
		time.Sleep(50 * time.Millisecond)
		s.drain()
	}()
	got := s.post(fixture(t, "get-run.json").runPath(runID, "").query(map[string]string{"wait": "10"}))
	v := decode[handlers.RunView](t, got)
	if got.StatusCode != 200 || v.Status != "held" || v.Ledger == nil || !v.Ledger.Verified {
		t.Fatalf("wait: %d %+v", got.StatusCode, v)
	}
	s.wantProblem("wait too long", s.post(fixture(t, "get-run.json").runPath(runID, "").query(map[string]string{"wait": "21"})), 400)
	s.wantProblem("wait not a number", s.post(fixture(t, "get-run.json").runPath(runID, "").query(map[string]string{"wait": "soon"})), 400)
}

// TestWorkerRedelivery: SQS delivers every worker message of a run three
// times. The second and third deliveries of each change nothing: the ledger
// stays byte for byte what the first delivery left, and the filing happens
// once.
func TestWorkerRedelivery(t *testing.T) {
	s := newStack(t, stackOptions{})
	ledger := func(runID string) string {
		resp := s.post(fixture(t, "get-run-events.json").runPath(runID, "").query(map[string]string{"head": "true"}))
		if resp.StatusCode != 200 {
			t.Fatalf("events: %d %s", resp.StatusCode, resp.Body)
		}
		return resp.Body
	}
	deliver3 := func(runID string) {
		for _, m := range s.queue.take() {
			if f := s.work(m, 1); len(f) > 0 {
				t.Fatal(f)
			}
			after := ledger(runID)
			for n := 2; n <= 3; n++ {
				if f := s.work(m, n); len(f) > 0 {
					t.Fatalf("delivery %d: %v", n, f)
				}
				if got := ledger(runID); got != after {
					t.Fatalf("delivery %d of %s changed the ledger", n, m.Reason)
				}
			}
		}
	}
	resp := s.post(fixture(t, "invoke.json"))
	runID := decode[handlers.RunView](t, resp).RunID
	deliver3(runID)
	v := s.view(runID)
	if v.Status != "held" {
		t.Fatalf("after the started message: %+v", v)
	}
	h := held{runID: runID, approvalID: v.PendingApproval.ApprovalRequestID, hash: v.PendingApproval.ToolInputHash}
	if resp := s.call(approveReq(t, h, "approve", h.hash)); resp.StatusCode != 200 {
		t.Fatal(resp.Body)
	}
	if resp := s.post(resumeReq(t, h)); resp.StatusCode != 202 {
		t.Fatal(resp.Body)
	}
	deliver3(runID)
	if v := s.view(runID); v.Status != "completed" {
		t.Fatalf("after the resumed message: %+v", v)
	}
	if out, _ := s.store.ListOutbound(context.Background(), fixFirm, runID); len(out) != 1 {
		t.Fatalf("%d effects", len(out))
	}
	s.auditRun(runID)
}

// ledgerLines is the run's stored ledger, parsed (not held to its head).
func (s *stack) ledgerLines(runID string) []contracts.Line {
	s.t.Helper()
	items, _, err := s.store.ReadLedger(context.Background(), fixFirm, runID, 0, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	// Sealed lines opened with the run's data key (Raw and Hash stay the
	// stored form's).
	var key *seal.RunKey
	out := make([]contracts.Line, 0, len(items))
	for _, it := range items {
		l, err := contracts.ParseEventLine(it.Raw)
		if err != nil {
			s.t.Fatal(err)
		}
		if l.Sealed {
			if key == nil {
				key = s.runKey(s.t, runID)
			}
			if l, err = contracts.OpenLine(l, key); err != nil {
				s.t.Fatal(err)
			}
		}
		out = append(out, l)
	}
	return out
}
