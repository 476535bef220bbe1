package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// lostWhileEditRuns approves counsel's edit of the demo e-mail, releases the
// run and has its worker die after the edited e-mail went out and before its
// outcome was written (the process stops at that write); the worker's lease
// is then made to have passed (restarts is what the run item says of the
// sweeper's earlier hand-overs). It returns the held result and the edit's
// hash.
func (h *harness) lostWhileEditRuns(restarts int) (agent.Result, string) {
	h.t.Helper()
	ctx := context.Background()
	res := h.start("Please e-mail the client an update.", "")
	if res.State.PendingApproval == nil || res.State.PendingApproval.ToolName != "send_client_email" {
		h.t.Fatalf("not held on the e-mail: %+v", res.State)
	}
	w, err := h.decideEdit(res, warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: h.emailEdit()})
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.brain.PrepareResume(ctx, agent.ResumeRequest{FirmID: h.firm, RunID: res.State.RunID,
		ApprovalID: res.State.PendingApproval.ApprovalRequestID, UserID: h.user}); err != nil {
		h.t.Fatal(err)
	}
	// The worker's writes: its lease, the reserved claim taken, the
	// e-mail's outbox record (the effect), then its outcome, where it dies.
	h.ep.Faults.Arm(4, dynamotest.FaultFail)
	_, _ = h.brain.Continue(ctx, h.firm, res.State.RunID, "")
	fired := h.ep.Faults.Fired()
	h.ep.Faults.Revive()
	if !fired || len(h.outbound(res.State.RunID)) != 1 {
		h.t.Fatalf("the worker must die after the edited e-mail went out: fired %v, %d effects", fired, len(h.outbound(res.State.RunID)))
	}
	c, err := h.store.GetEffect(ctx, h.firm, res.State.RunID, warrant.EffectKey{ToolName: "send_client_email", InputSHA256: w.EditedHash})
	if err != nil || !c.Taken() {
		h.t.Fatalf("the edited call's claim: %+v %v, want taken and open", c, err)
	}
	past := time.Now().Add(-time.Hour).UTC().Format("2006-01-02T15:04:05.000000000Z")
	dynamotest.Update(h.t, h.ep.Client, h.table, dynamo.RunKey(h.firm, res.State.RunID), "RUN",
		"SET lease_until = :past, restarts = :r", nil, map[string]any{":past": past, ":r": restarts})
	return res, w.EditedHash
}

// Issue 17, item 2: an effect counsel edited is claimed under the edit's
// hash; every recovery path looks it up by the hash that was claimed. A
// worker lost while the edited e-mail ran leaves it flagged
// effect_outcome_unknown (never restarted, never worker_lost with "nothing
// was sent"), the unknown line names the executed input, and counsel can
// reconcile it.
func TestLostEditedEffectIsRecovered(t *testing.T) {
	for _, restarts := range []int{0, 2} {
		h := newHarness(t, demo, options{})
		res, edited := h.lostWhileEditRuns(restarts)
		ctx := context.Background()
		runID := res.State.RunID
		action, err := h.brain.Sweep(ctx, h.firm, runID)
		if err != nil || action != agent.SweepOutcomeUnknown {
			t.Fatalf("restarts %d: sweep %s, %v; want effect_outcome_unknown", restarts, action, err)
		}
		if n := len(h.outbound(runID)); n != 1 {
			t.Fatalf("restarts %d: %d effects after the sweep", restarts, n)
		}
		tcs := h.completions(runID)
		last := tcs[len(tcs)-1]
		if last.Status != contracts.ToolUnknown || last.ExecutedInputSHA256 != edited || last.InputSHA256 != res.State.PendingApproval.ToolInputHash {
			t.Fatalf("restarts %d: unknown line %+v, want executed_input_sha256 %s", restarts, last, edited)
		}
		c, err := h.store.GetEffect(ctx, h.firm, runID, warrant.EffectKey{ToolName: "send_client_email", InputSHA256: edited})
		if err != nil || !c.NeedsReconciliation {
			t.Fatalf("restarts %d: the edited claim is not flagged: %+v %v", restarts, c, err)
		}
		st, err := h.brain.Continue(ctx, h.firm, runID, "")
		if err != nil || st.State.FailureKind != string(failure.KindEffectOutcomeUnknown) {
			t.Fatalf("restarts %d: run %+v %v", restarts, st.State, err)
		}
		rec, err := agent.Reconciler{Store: h.store, Heads: h.keys, Keys: h.dataKeys}.Reconcile(ctx, h.firm, runID, last.EffectRef,
			warrant.Reconciliation{Outcome: warrant.OutcomeExecuted, ExternalRef: "MSG-1", By: uuid.NewString()})
		if err != nil || rec.InputSHA256 != edited {
			t.Fatalf("restarts %d: reconcile: %+v %v", restarts, rec, err)
		}
		if c, _ := h.store.GetEffect(ctx, h.firm, runID, warrant.EffectKey{ToolName: "send_client_email", InputSHA256: edited}); c.State != warrant.ClaimReconciled {
			t.Fatalf("restarts %d: claim after reconcile %+v", restarts, c)
		}
	}
}

// Issue 17, item 7: when the model later proposes exactly counsel's edit,
// the call is answered from the edit's claim (its input is what ran), and
// the audit counts it as a reuse of that effect, not as an effect without
// provenance.
func TestModelRepeatingCounselsEditIsAReuse(t *testing.T) {
	email := func(h *harness, edited bool) []bedrocktest.ToolUse {
		if edited {
			return []bedrocktest.ToolUse{{Name: "send_client_email", Input: h.emailEdit()}}
		}
		return []bedrocktest.ToolUse{toolUse("send_client_email", map[string]any{"matter_id": h.matter, "to": bedrocktest.DemoClientAddress,
			"cc": []string{bedrocktest.DemoCopyAddress}, "subject": "Discovery update", "body": "We moved to compel."})}
	}
	h := newHarness(t, thenAgain(func(h *harness) []bedrocktest.ToolUse { return email(h, false) },
		func(h *harness) []bedrocktest.ToolUse { return email(h, true) }), options{})
	res := h.start("E-mail the client.", "")
	if _, err := h.decideEdit(res, warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: h.emailEdit()}); err != nil {
		t.Fatal(err)
	}
	done := h.mustResume(res)
	if done.State.Status != warrant.RunCompleted {
		t.Fatalf("run %+v", done.State)
	}
	if n := len(h.outbound(res.State.RunID)); n != 1 {
		t.Fatalf("%d e-mails sent, want the edit once", n)
	}
	prov, err := reducer.Audit(h.ledger(res.State.RunID))
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	if len(prov) != 1 || prov[0].Reuses != 1 || prov[0].ExecutedInputSHA256 != mustHash(t, h.emailEdit()) {
		t.Fatalf("provenance %+v", prov)
	}
}

// Issue 17, item 8: the same edit approved on a second warrant could never
// run (its claim exists: the edit was executed in this run) and used to
// wedge the run until the warrant expired. It is refused at decision time,
// 409, and nothing is written.
func TestSameEditOnASecondWarrantIsRefused(t *testing.T) {
	email := func(body string) func(h *harness) []bedrocktest.ToolUse {
		return func(h *harness) []bedrocktest.ToolUse {
			return []bedrocktest.ToolUse{toolUse("send_client_email", map[string]any{"matter_id": h.matter, "to": bedrocktest.DemoClientAddress,
				"cc": []string{bedrocktest.DemoCopyAddress}, "subject": "Discovery update", "body": body})}
		}
	}
	h := newHarness(t, thenAgain(email("We moved to compel."), email("A second update.")), options{})
	res := h.start("E-mail the client.", "")
	if _, err := h.decideEdit(res, warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: h.emailEdit()}); err != nil {
		t.Fatal(err)
	}
	second := h.mustResume(res)
	if second.State.Status != warrant.RunHeld || second.State.PendingApproval == nil {
		t.Fatalf("the second e-mail is not held: %+v", second.State)
	}
	before := len(h.ledger(res.State.RunID))
	_, err := h.decideEdit(second, warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: h.emailEdit()})
	if failureKind(err) != failure.KindConflict {
		t.Fatalf("the same edit on a second warrant: %v, want conflict", err)
	}
	if after := len(h.ledger(res.State.RunID)); after != before {
		t.Fatalf("a refused decision wrote %d lines", after-before)
	}
	w, err := h.store.GetWarrant(context.Background(), h.firm, res.State.RunID, second.State.PendingApproval.ApprovalRequestID)
	if err != nil || w.Status != warrant.WarrantPending {
		t.Fatalf("the second warrant after the refusal: %s %v", w.Status, err)
	}
}

// Issue 17, item 11: reconciliation follows the firm's separation of
// duties. The user who started the run, holding counsel, cannot record
// what became of its effect (403 self_approval, nothing written); where the
// firm waived separation, the line says so.
//
// Checked (issue 31 item 14): with the Reconciler's own check removed this
// fails with "invalid_request: field payload.reconciled_by: ..., want
// self_approval" (the contract refuses the line, nothing is written; before
// it did, with "<nil>": the self-reconciliation was stored).
func TestReconciliationSeparationOfDuties(t *testing.T) {
	h := newHarness(t, demo, options{})
	res, _ := h.lostWhileEditRuns(0)
	ctx := context.Background()
	runID := res.State.RunID
	if action, err := h.brain.Sweep(ctx, h.firm, runID); err != nil || action != agent.SweepOutcomeUnknown {
		t.Fatalf("sweep %s %v", action, err)
	}
	tcs := h.completions(runID)
	ref := tcs[len(tcs)-1].EffectRef
	rc := agent.Reconciler{Store: h.store, Heads: h.keys, Keys: h.dataKeys}
	before := len(h.ledger(runID))
	_, err := rc.Reconcile(ctx, h.firm, runID, ref, warrant.Reconciliation{Outcome: warrant.OutcomeNotExecuted, By: h.user})
	if failureKind(err) != failure.KindSelfApproval {
		t.Fatalf("the requester reconciling its own run's effect: %v, want self_approval", err)
	}
	if n := len(h.ledger(runID)); n != before {
		t.Fatalf("a refused reconciliation wrote %d lines", n-before)
	}
	if err := h.store.PutFirmSettings(ctx, warrant.FirmSettings{FirmID: h.firm, SeparationOfDuties: false}); err != nil {
		t.Fatal(err)
	}
	ev, err := rc.Reconcile(ctx, h.firm, runID, ref, warrant.Reconciliation{Outcome: warrant.OutcomeExecuted, ExternalRef: "MSG-7", By: h.user})
	if err != nil || ev.Separation != contracts.SeparationWaived || ev.RequestedBy != h.user {
		t.Fatalf("reconciled where the firm waived separation: %+v %v", ev, err)
	}
	if _, err := reducer.Audit(h.ledger(runID)); err != nil {
		t.Fatalf("audit: %v", err)
	}
}
