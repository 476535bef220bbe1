package dynamo_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"

	"github.com/seed-f6d3920e/warrant"
)

func TestLeaseGuards(t *testing.T) {
	for _, ep := range dynamotest.All(t) {
		t.Run(ep.Name, func(t *testing.T) {
			t.Run("RestartRunMaxZero", func(t *testing.T) { testRestartRunMaxZero(t, ep) })
			t.Run("SweepFailOwnerNone", func(t *testing.T) { testSweepFailOwnerNone(t, ep) })
			t.Run("ClaimOwnerNone", func(t *testing.T) { testClaimOwnerNone(t, ep) })
			t.Run("CompleteOwnerNone", func(t *testing.T) { testCompleteOwnerNone(t, ep) })
			t.Run("ReconcileLineMismatch", func(t *testing.T) { testReconcileLineMismatch(t, ep) })
			t.Run("TakeClaimNeedsTheRunLease", func(t *testing.T) { testTakeClaimNeedsTheRunLease(t, ep) })
			t.Run("FencedWorkerWritesNothingAfterItsLease", func(t *testing.T) { testFencedWorker(t, ep) })
		})
	}
}

// RestartRun(max = 0) must never restart: "its restarts count goes up, at
// most to max".
func testRestartRunMaxZero(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	r := e.newRun(id())
	e.clock.Advance(10 * time.Minute) // the pickup deadline passed
	before := e.partition(r.firm, r.id)
	err := e.store.RestartRun(e.ctx, r.firm, r.id, e.clock.Now().Add(5*time.Minute), 0)
	if err == nil {
		t.Errorf("RestartRun(max 0) restarted a run never restarted: restarts now %d > max 0", e.getRun(r).Restarts)
	}
	wantErr(t, err, warrant.ErrRunNotInState, "restart with max 0")
	e.unchanged(before, r.firm, r.id, "restart with max 0")
}

// The Owner shape is a worker that holds the lease; "none" is the store's
// own word for nobody, which AcquireRun and TakeClaim refuse as an owner.
func testSweepFailOwnerNone(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	r := e.newRun(id()) // waiting for its first worker, lease live
	before := e.partition(r.firm, r.id)
	err := e.store.SweepFail(e.ctx, warrant.SweepFailure{FirmID: r.firm, RunID: r.id, Owner: "none"}, e.next(r, runFailed("worker_lost")))
	if err == nil {
		t.Errorf("SweepFail{Owner: \"none\"} ended a live run nobody holds: status %s", e.getRun(r).Status)
	}
	wantInvalid(t, err, "sweep by owner none")
	e.unchanged(before, r.firm, r.id, "sweep by owner none")
}

// A claim created with Owner "none" reads as reserved (nobody took it), and
// TakeClaim hands it to a second executor.
func testClaimOwnerNone(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	r := e.newRun(id())
	tc := newToolCall(t, "file_court_document")
	claimed, _, err := e.store.ClaimToolEffectOnce(e.ctx, e.claimInput(r, tc, "none"))
	if err == nil && claimed {
		k := warrant.EffectKey{ToolName: tc.name, InputSHA256: tc.hash}
		terr := e.store.TakeClaim(e.ctx, r.firm, r.id, k, "worker-b", e.clock.Now().Add(time.Minute))
		t.Errorf("ClaimToolEffectOnce accepted owner \"none\" (its creator executes); TakeClaim by another worker then: %v", terr)
	}
	wantInvalid(t, err, "claim by owner none")
}

// A reserved claim (owner none, nobody took it) is completed by owner
// "none": an outcome recorded for an effect nobody executed.
func testCompleteOwnerNone(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	h, c, key := e.released(id())
	before := e.partition(h.firm, h.id)
	err := e.store.CompleteEffect(e.ctx, h.firm, h.id, key, "none",
		warrant.Completion{State: warrant.ClaimCompleted, ToolStatus: contracts.ToolSuccess}, e.next(h.run, completed(h.tool, c.EffectRef)))
	if err == nil {
		got, _ := e.store.GetEffect(e.ctx, h.firm, h.id, key)
		t.Errorf("CompleteEffect(owner \"none\") completed a reserved claim nobody took: %s", got.State)
	}
	e.unchanged(before, h.firm, h.id, "completion by owner none")
}

// The line must be the effect.reconciled of this effect and outcome (as
// DecideWarrant and ResumeClaim check theirs): otherwise the claim and the
// ledger disagree about what happened.
func testReconcileLineMismatch(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	r := e.newRun(id())
	tc := newToolCall(t, "send_email")
	in := e.claimInput(r, tc, "worker-x")
	claimed, _, err := e.store.ClaimToolEffectOnce(e.ctx, in)
	if err != nil || !claimed {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	k := warrant.EffectKey{ToolName: tc.name, InputSHA256: tc.hash}
	must(t, e.store.FlagForReconciliation(e.ctx, r.firm, r.id, k))
	before := e.partition(r.firm, r.id)
	// Counsel says executed; the line says not executed.
	l := e.next(r, &contracts.EffectReconciled{EffectRef: in.EffectRef, ToolName: tc.name, InputSHA256: tc.hash,
		Outcome: warrant.OutcomeNotExecuted, ReconciledBy: "counsel-1"})
	err = e.store.ReconcileEffect(e.ctx, r.firm, r.id, k, warrant.Reconciliation{Outcome: warrant.OutcomeExecuted, ExternalRef: "X-1", By: "counsel-1"}, l)
	if err == nil {
		got, _ := e.store.GetEffect(e.ctx, r.firm, r.id, k)
		t.Errorf("ReconcileEffect stored outcome %q on the claim with a line saying %q", got.Reconciled, warrant.OutcomeNotExecuted)
	}
	wantInvalid(t, err, "reconcile with a line of another outcome")
	e.unchanged(before, r.firm, r.id, "reconcile with a line of another outcome")
}

// Only the worker that holds the run's lease takes the run's reserved
// claim: a worker whose lease passed (the sweeper may already have failed
// the run and flagged nothing, since nobody took the claim) cannot start
// executing the effect afterwards.
func testTakeClaimNeedsTheRunLease(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	h, _, key := e.released(id())
	until := e.clock.Now().Add(time.Minute)
	before := e.partition(h.firm, h.id)
	wantErr(t, e.store.TakeClaim(e.ctx, h.firm, h.id, key, "worker-without-the-lease", until), warrant.ErrLeaseHeld, "take without the run's lease")
	e.unchanged(before, h.firm, h.id, "take without the run's lease")

	_, err := e.store.AcquireRun(e.ctx, h.firm, h.id, "worker-a", until)
	must(t, err)
	wantErr(t, e.store.TakeClaim(e.ctx, h.firm, h.id, key, "worker-b", until), warrant.ErrLeaseHeld, "take under another's lease")
	must(t, e.store.TakeClaim(e.ctx, h.firm, h.id, key, "worker-a", until))
	got, err := e.store.GetEffect(e.ctx, h.firm, h.id, key)
	if err != nil || got.Owner != "worker-a" || !got.Taken() {
		t.Fatalf("claim %+v %v", got, err)
	}
}

// Issue 17, item 1: a worker's writes are fenced by its lease (owner and
// epoch), not by the head alone. Worker 1 takes the run, makes a claim and
// a reservation; its lease passes and worker 2 takes the run over, having
// written nothing yet (so the head alone would still let worker 1 extend
// the ledger). Every write worker 1 then makes under its fence is
// ErrLeaseHeld (or, for its own unknown-outcome end, not in state) and
// writes nothing; worker 2 writes. A worker that takes the run again under
// the same owner id is a new epoch: the old fence is still refused.
func testFencedWorker(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	r := e.newRun(id())
	lease := func(owner string) warrant.Fence {
		run, err := e.store.AcquireRun(e.ctx, r.firm, r.id, owner, e.clock.Now().Add(time.Minute))
		must(t, err)
		if run.Lease.Owner != owner || run.Lease.Epoch < 1 {
			t.Fatalf("lease %+v, want %s with an epoch", run.Lease, owner)
		}
		return warrant.Fence{Owner: owner, Epoch: run.Lease.Epoch}
	}
	f1 := lease("worker-1")
	ctx1 := warrant.NewFenceContext(e.ctx, f1)
	// Worker 1's claim (with its tool.requested line) and reservation,
	// while it holds the lease.
	tc := newToolCall(t, "send_email")
	in := e.claimInput(r, tc, "worker-1")
	claimed, _, err := e.store.ClaimToolEffectOnce(ctx1, in, e.line(r, requested(tc, "allow")))
	if err != nil || !claimed {
		t.Fatalf("claim under the lease: %v %v", claimed, err)
	}
	res, err := e.store.Reserve(ctx1, e.reservation(r, "worker-1", 1000), warrant.BudgetLimit{Nano: 1_000_000})
	must(t, err)

	e.clock.Advance(2 * time.Minute)
	f2 := lease("worker-2")
	before := e.partition(r.firm, r.id)
	k := warrant.EffectKey{ToolName: tc.name, InputSHA256: tc.hash}
	other := newToolCall(t, "file_court_document")
	zombie := map[string]error{
		"append": e.store.AppendEvents(ctx1, r.firm, r.id, e.next(r, delta("late"))),
		"finish": e.store.FinishRun(ctx1, r.firm, r.id, warrant.RunCompleted, e.next(r, &contracts.RunCompleted{StopReason: "end_turn", FinalText: "x"})),
		"complete": e.store.CompleteEffect(ctx1, r.firm, r.id, k, "worker-1",
			warrant.Completion{State: warrant.ClaimCompleted, ToolStatus: contracts.ToolSuccess, Result: json.RawMessage(`{}`)}, e.next(r, completed(tc, in.EffectRef))),
		"settle": e.store.SettleUsage(ctx1, res, "", e.usageLine(r, 10)),
	}
	_, _, zombie["claim"] = e.store.ClaimToolEffectOnce(ctx1, e.claimInput(r, other, "worker-1"), e.next(r, requested(other, "allow")))
	hw := e.warrant(&held{run: r, approval: id(), tool: other, expires: e.clock.Now().Add(time.Hour)})
	zombie["hold"] = e.store.CreateWarrantRequest(ctx1, hw, e.next(r, requested(other, "require_approval")))
	for what, err := range zombie {
		wantErr(t, err, warrant.ErrLeaseHeld, "worker 1 after its lease: "+what)
	}
	wantErr(t, e.store.SweepFail(ctx1, warrant.SweepFailure{FirmID: r.firm, RunID: r.id, Owner: "worker-1", Flag: &k},
		e.next(r, unknownOutcome(tc, in.EffectRef))), warrant.ErrRunNotInState, "worker 1's unknown-outcome end after its lease")
	e.unchanged(before, r.firm, r.id, "worker 1 after its lease")

	must(t, e.store.AppendEvents(warrant.NewFenceContext(e.ctx, f2), r.firm, r.id, e.line(r, delta("worker 2"))))
	// The same owner id taking the run again is a new epoch.
	e.clock.Advance(2 * time.Minute)
	f3 := lease("worker-2")
	if f3.Epoch <= f2.Epoch {
		t.Fatalf("epoch %d after %d", f3.Epoch, f2.Epoch)
	}
	wantErr(t, e.store.AppendEvents(warrant.NewFenceContext(e.ctx, f2), r.firm, r.id, e.next(r, delta("stale epoch"))),
		warrant.ErrLeaseHeld, "an older epoch of the same owner")
	must(t, e.store.AppendEvents(warrant.NewFenceContext(e.ctx, f3), r.firm, r.id, e.line(r, delta("worker 2 again"))))
}
