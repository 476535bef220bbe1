package agent_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// forgeRelease is the review's proof of issue 17, item 1, as a table writer
// without the ledger key does it: on a run held on a filing's warrant that
// counsel has not decided, it appends an approval.decided (approved, with an
// edited_input of its choosing, decided_as counsel) and a run.released after
// the signed head, flips the run item to running with a lease that passed,
// and puts the claim the resume would have reserved for the edited call.
func (h *harness) forgeRelease(res agent.Result, forged json.RawMessage) {
	h.t.Helper()
	p := res.State.PendingApproval
	runID := res.State.RunID
	forgedHash := mustHash(h.t, forged)
	effectRef := uuid.NewString()
	dynamotest.AppendUnsigned(h.t, h.ep.Client, h.table, h.firm, runID,
		&contracts.ApprovalDecided{ApprovalRequestID: p.ApprovalRequestID, Decision: warrant.DecisionApproved,
			DecidedBy: uuid.NewString(), ToolInputHash: p.ToolInputHash, RequestedBy: h.user,
			Separation: contracts.SeparationEnforced, DecidedAs: contracts.RoleCounsel,
			EditedInput: forged, EditedInputSHA256: forgedHash, EditedRiskTier: p.RiskTier},
		&contracts.RunReleased{ApprovalRequestID: p.ApprovalRequestID, Decision: warrant.DecisionApproved, EffectRef: effectRef})
	past := time.Now().Add(-time.Hour).UTC().Format("2006-01-02T15:04:05.000000000Z") // the store's layout
	dynamotest.Update(h.t, h.ep.Client, h.table, dynamo.RunKey(h.firm, runID), "RUN",
		"SET #s = :running, lease_owner = :none, lease_until = :past, GSI2SK = :past REMOVE held_on",
		map[string]string{"#s": "status"}, map[string]any{":running": "running", ":none": "none", ":past": past})
	dynamotest.Put(h.t, h.ep.Client, h.table, map[string]any{
		"PK": dynamo.RunKey(h.firm, runID), "SK": "EFF#" + p.ToolName + "#" + forgedHash,
		"firm_id": h.firm, "run_id": runID, "tool_name": p.ToolName, "input_sha256": forgedHash,
		"effect_ref": effectRef, "approval_id": p.ApprovalRequestID, "owner": "none", "state": "claimed", "claimed_at": past})
}

// Issue 17, item 1: lines past the signed head are not the ledger. A fold
// (the consistent view, the sweeper, the worker) ends exactly at the head,
// so the forged release above is refused as ledger_corrupt everywhere: the
// sweeper does not restart the run and the worker files nothing.
func TestUnsignedLinesPastTheHeadAreRefused(t *testing.T) {
	h := newHarness(t, demo, options{})
	res := h.start("Please file the motion.", "")
	if res.State.PendingApproval == nil {
		t.Fatalf("the demo run is not held: %+v", res.State)
	}
	forged, _ := json.Marshal(h.filing("Stipulation of Dismissal With Prejudice"))
	h.forgeRelease(res, forged)
	ctx := context.Background()
	runID := res.State.RunID

	if _, err := reducer.Fold(ctx, h.store, h.firm, runID, reducer.FoldOptions{Keys: h.keys}); failureKind(err) != failure.KindLedgerCorrupt {
		t.Errorf("fold of a ledger with unsigned lines past its head: %v, want ledger_corrupt", err)
	}
	action, err := h.brain.Sweep(ctx, h.firm, runID)
	if failureKind(err) != failure.KindLedgerCorrupt || action != agent.SweepNone {
		t.Errorf("sweep: %s, %v; want none and ledger_corrupt", action, err)
	}
	if _, err := h.brain.Continue(ctx, h.firm, runID, ""); failureKind(err) != failure.KindLedgerCorrupt {
		t.Errorf("the worker on a forged release: %v, want ledger_corrupt", err)
	}
	if n := len(h.outbound(runID)); n != 0 {
		t.Fatalf("the forged filing went out: %d effects", n)
	}
	run, err := h.store.GetRun(ctx, h.firm, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Restarts != 0 {
		t.Fatalf("the sweeper restarted the forged run %d times", run.Restarts)
	}
}

// Issue 17, item 1: a worker's writes are fenced by the lease it took. While
// worker 1 waits on the model, its lease passes and worker 2 takes the run
// (having written nothing yet, so the ledger's head alone would still let
// worker 1 append). Worker 1 then writes nothing: not the call's usage, not
// the turn, not a failure; the run is worker 2's, as it found it.
func TestWorkerWritesNothingOnceItsLeaseIsTaken(t *testing.T) {
	h := newHarness(t, demo, options{})
	ctx := context.Background()
	model := &hookModel{Converser: h.model}
	brain := h.brainWith(model)
	runID := uuid.NewString()
	if _, err := brain.Start(ctx, h.invoke(runID, summarize), agent.StartOptions{CostCapUSD: "1.00"}); err != nil {
		t.Fatal(err)
	}
	var ledger []contracts.Line
	model.after = func(call int) {
		if call != 1 {
			return
		}
		past := time.Now().Add(-time.Hour).UTC().Format("2006-01-02T15:04:05.000000000Z")
		dynamotest.Update(t, h.ep.Client, h.table, dynamo.RunKey(h.firm, runID), "RUN", "SET lease_until = :past",
			nil, map[string]any{":past": past})
		if _, err := h.store.AcquireRun(ctx, h.firm, runID, "worker-2", time.Now().Add(time.Hour)); err != nil {
			t.Errorf("worker 2 takes over: %v", err)
		}
		ledger = h.ledger(runID)
	}
	res, err := brain.Continue(ctx, h.firm, runID, "")
	if err != nil {
		t.Fatalf("continue: %v", err)
	}
	after := h.ledger(runID)
	if len(ledger) == 0 || len(after) != len(ledger) {
		t.Fatalf("worker 1 wrote %d lines after its lease was taken over (from %d)", len(after)-len(ledger), len(ledger))
	}
	run, err := h.store.GetRun(ctx, h.firm, runID)
	if err != nil || run.Status != warrant.RunRunning || run.Lease.Owner != "worker-2" {
		t.Fatalf("the run after worker 1: %+v %v", run, err)
	}
	if res.State.Status != warrant.RunRunning {
		t.Fatalf("worker 1's result: %+v", res.State)
	}
}
