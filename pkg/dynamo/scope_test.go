package dynamo_test

import (
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"

	"github.com/seed-f6d3920e/warrant"
)

// testFirmScoping: firm A's ids never reach firm B's items. Every read and
// write with firm A's id and firm B's run (or B's approval id under A's own
// run) finds nothing, and B's partitions are unchanged, item for item.
func testFirmScoping(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firmA, firmB := id(), id()
	ra := e.newRun(firmA)

	// Firm B: b1 held on an approved warrant (a resume would release it),
	// b2 held on a pending one, plus a claim, an outbox record and a
	// projection on b1.
	b1 := e.newHeld(firmB)
	_, err := e.decide(b1, warrant.DecisionApproved)
	must(t, err)
	b2 := e.newHeld(firmB)
	bTool := newToolCall(t, "send_email")
	claimed, _, err := e.store.ClaimToolEffectOnce(e.ctx, e.claimInput(b1.run, bTool, "b-owner"))
	if err != nil || !claimed {
		t.Fatalf("b claim: %v %v", claimed, err)
	}
	bRef := id()
	_, err = e.store.RecordOutbound(e.ctx, warrant.Outbound{FirmID: firmB, RunID: b1.id, EffectRef: bRef, Kind: "email"})
	must(t, err)
	must(t, e.store.UpdateProjection(e.ctx, firmB, b1.id, 0, warrant.Projection{LastSeq: 3, Status: "held"}))
	snap1, snap2 := e.partition(firmB, b1.id), e.partition(firmB, b2.id)

	// A chain that claims firm A and B's run id (what a forged request
	// would build), and A's own run's chain for B's approval ids.
	forged := func(runID string) *run { return &run{firm: firmA, id: runID, chain: contracts.NewChain(runID, firmA)} }
	fb1, fb2 := forged(b1.id), forged(b2.id)
	nf := func(err error, what string) { t.Helper(); wantErr(t, err, warrant.ErrNotFound, what) }

	for _, b := range []*held{b1, b2} {
		_, err := e.store.GetRun(e.ctx, firmA, b.id)
		nf(err, "GetRun")
		items, more, err := e.store.ReadLedger(e.ctx, firmA, b.id, 0, 0)
		if err != nil || len(items) != 0 || more {
			t.Errorf("ReadLedger: %d items, %v", len(items), err)
		}
		_, err = e.store.LastLine(e.ctx, firmA, b.id)
		nf(err, "LastLine")
		_, err = e.store.GetWarrant(e.ctx, firmA, b.id, b.approval)
		nf(err, "GetWarrant")
		_, err = e.store.GetWarrant(e.ctx, firmA, ra.id, b.approval)
		nf(err, "GetWarrant of B's approval under A's run")
		_, err = e.store.GetReleaseAuthorizedRequest(e.ctx, b.approval, firmA, b.id, b.matter)
		nf(err, "GetReleaseAuthorizedRequest")
		_, err = e.store.GetReleaseAuthorizedRequest(e.ctx, b.approval, firmA, ra.id, ra.matter)
		nf(err, "GetReleaseAuthorizedRequest of B's approval under A's run")
		_, err = e.store.GetEffect(e.ctx, firmA, b.id, warrant.EffectKey{ToolName: bTool.name, InputSHA256: bTool.hash})
		nf(err, "GetEffect")
		out, err := e.store.ListOutbound(e.ctx, firmA, b.id)
		if err != nil || len(out) != 0 {
			t.Errorf("ListOutbound: %v %v", out, err)
		}
	}
	pending, err := e.store.ListPendingWarrants(e.ctx, firmA, 0)
	if err != nil || len(pending) != 0 {
		t.Errorf("ListPendingWarrants(A) = %v %v", approvals(pending), err)
	}

	decision := warrant.CounselDecision{Decision: "approved", PresentedHash: b2.tool.hash, DecidedBy: "counsel-a"}
	decided := func(r *run) contracts.Line {
		return e.next(r, &contracts.ApprovalDecided{ApprovalRequestID: b2.approval, Decision: "approved",
			DecidedBy: "counsel-a", ToolInputHash: b2.tool.hash})
	}
	_, err = e.store.DecideWarrant(e.ctx, firmA, b2.id, b2.approval, decision, decided(fb2))
	nf(err, "DecideWarrant")
	_, err = e.store.DecideWarrant(e.ctx, firmA, ra.id, b2.approval, decision, decided(ra))
	nf(err, "DecideWarrant of B's approval under A's run")

	resume := func(r *run) (warrant.ResumeClaim, contracts.Line) {
		c := warrant.ResumeClaim{FirmID: firmA, RunID: r.id, ApprovalID: b1.approval, Decision: "approved",
			ToolName: b1.tool.name, InputSHA256: b1.tool.hash, EffectRef: id(), PickupBy: e.clock.Now().Add(time.Minute)}
		return c, e.next(r, &contracts.RunReleased{ApprovalRequestID: b1.approval, Decision: "approved", EffectRef: c.EffectRef})
	}
	c, l := resume(fb1)
	nf(e.store.ResumeClaim(e.ctx, c, l), "ResumeClaim")
	c, l = resume(ra)
	nf(e.store.ResumeClaim(e.ctx, c, l), "ResumeClaim of B's approval under A's run")

	nf(e.store.FinishRun(e.ctx, firmA, b1.id, warrant.RunAborted), "FinishRun")
	nf(e.store.UpdateProjection(e.ctx, firmA, b1.id, 0, warrant.Projection{LastSeq: 9}), "UpdateProjection")
	nf(e.store.UpdateProjection(e.ctx, firmA, b1.id, 3, warrant.Projection{LastSeq: 9}), "UpdateProjection at B's seq")
	done := warrant.Completion{State: warrant.ClaimCompleted, ToolStatus: "success"}
	nf(e.store.CompleteEffect(e.ctx, firmA, b1.id, warrant.EffectKey{ToolName: bTool.name, InputSHA256: bTool.hash}, "b-owner", done), "CompleteEffect")
	nf(e.store.FlagForReconciliation(e.ctx, firmA, b1.id, warrant.EffectKey{ToolName: bTool.name, InputSHA256: bTool.hash}), "FlagForReconciliation")
	w := e.warrant(b1)
	w.FirmID, w.ApprovalID = firmA, id()
	nf(e.store.CreateWarrantRequest(e.ctx, w, e.next(fb1, delta("x"))), "CreateWarrantRequest")

	// A ledger line needs its run item (it moves the run's signed head), and
	// firm A has no run with B's id: not found, nothing written.
	nf(e.store.AppendEvents(e.ctx, firmA, b1.id, e.line(fb1, delta("a's"))), "AppendEvents")
	// Writes that create items of their own (an effect claim, an outbox
	// record) land in FIRM#A#RUN#<b's id>: firm A's own key space, which
	// B's keys cannot share. They succeed there and touch nothing of B's;
	// B's claim on the same tool call does not even make A's a duplicate.
	claimed, _, err = e.store.ClaimToolEffectOnce(e.ctx, warrant.ClaimInput{FirmID: firmA, RunID: b1.id,
		ToolName: bTool.name, InputSHA256: bTool.hash, EffectRef: id(), Owner: "a", LeaseUntil: e.clock.Now().Add(time.Minute)})
	if err != nil || !claimed {
		t.Errorf("A's claim in its own key space: %v %v", claimed, err)
	}
	created, err := e.store.RecordOutbound(e.ctx, warrant.Outbound{FirmID: firmA, RunID: b1.id, EffectRef: bRef, Kind: "email"})
	if err != nil || !created {
		t.Errorf("A's outbox record in its own key space: %v %v", created, err)
	}

	e.unchanged(snap1, firmB, b1.id, "firm A's operations")
	e.unchanged(snap2, firmB, b2.id, "firm A's operations")
	pending, err = e.store.ListPendingWarrants(e.ctx, firmB, 0)
	if err != nil || len(pending) != 1 || pending[0].ApprovalID != b2.approval {
		t.Errorf("ListPendingWarrants(B) = %v %v", approvals(pending), err)
	}
}
