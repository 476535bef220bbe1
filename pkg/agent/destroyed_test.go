package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// destroy destroys a finished run's content through the store, on
// instruction, as the API will: the content.destroyed line extends the
// ledger as folded without the key.
func (h *harness) destroy(runID string) contracts.Line {
	h.t.Helper()
	ctx := context.Background()
	folded, err := reducer.Fold(ctx, h.store, h.firm, runID, reducer.FoldOptions{Keys: h.keys})
	if err != nil {
		h.t.Fatal(err)
	}
	l, err := contracts.ChainAfter(folded.Last).Next(&contracts.ContentDestroyed{MatterID: h.matter, Reason: contracts.DestroyedInstruction,
		RequestedBy: uuid.NewString(), ConfirmedBy: uuid.NewString(), BackupsUntil: contracts.FormatTime(time.Now().Add(warrant.BackupWindow + time.Hour))})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.store.DestroyContent(ctx, h.firm, runID, l); err != nil {
		h.t.Fatalf("destroy: %v", err)
	}
	return l
}

// storedLedger is the run's ledger as stored, parsed (sealed lines left
// sealed).
func (h *harness) storedLedger(runID string) []contracts.Line {
	h.t.Helper()
	items, _, err := h.store.ReadLedger(context.Background(), h.firm, runID, 0, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	out := make([]contracts.Line, len(items))
	for i, it := range items {
		if out[i], err = contracts.ParseEventLine(it.Raw); err != nil {
			h.t.Fatalf("seq %d does not parse: %v", it.Seq, err)
		}
	}
	return out
}

func wantDestroyed(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, warrant.ErrContentDestroyed) || failureKind(err) != failure.KindConflict || !strings.Contains(err.Error(), "the run's content was destroyed") {
		t.Errorf("%s: %v, want conflict: the run's content was destroyed", what, err)
	}
}

// Issue 26, items 5 and 7: once a run's content is destroyed (its wrapped
// key removed from the run item), nothing opens it and nothing is written
// to it, sealed or in the clear: the worker, a resume and counsel's
// decision are refused with warrant.ErrContentDestroyed before they write,
// and a reader asking for the key is told the content was destroyed. The
// stored ledger still parses line by line and folds against its signed
// head without the key, its state (status, cost, decisions) as before and
// the destruction on it; the wrapped key is in no item of the run.
//
// Checked: with runKey.get's destroyed case taken out, the worker fails
// ledger_corrupt ("sealed ... holds no data key"), counsel's decision is
// made as a line in the clear and reaches the store (refused there only
// because the warrant was used: "not pending"), and OpenContent answers a
// nil key, as for a run whose content was never sealed.
func TestDestroyedRunIsNeverOpenedNorWritten(t *testing.T) {
	h := newHarness(t, demo, options{})
	ctx := context.Background()
	res := h.start("Please e-mail the client an update on the motion (privileged: strategy).", "")
	p := res.State.PendingApproval
	if p == nil {
		t.Fatalf("not held: %+v", res.State)
	}
	if _, err := (agent.Decider{Store: h.store, Heads: h.keys, Keys: h.dataKeys}).Decide(ctx, h.firm, res.State.RunID, p.ApprovalRequestID,
		warrant.CounselDecision{Decision: warrant.DecisionApproved, PresentedHash: p.ToolInputHash, DecidedBy: uuid.NewString(), DecidedAs: contracts.RoleCounsel}); err != nil {
		t.Fatal(err)
	}
	done, err := h.resume(res)
	if err != nil || done.State.Status != warrant.RunCompleted {
		t.Fatalf("resume: %+v %v", done.State, err)
	}
	runID := res.State.RunID
	before, err := h.store.GetRun(ctx, h.firm, runID)
	if err != nil || len(before.DataKey) == 0 {
		t.Fatalf("the run holds no data key: %v", err)
	}
	line := h.destroy(runID)
	n := len(h.storedLedger(runID))

	_, err = h.brain.Continue(ctx, h.firm, runID, "")
	wantDestroyed(t, err, "the worker")
	_, err = h.brain.PrepareResume(ctx, agent.ResumeRequest{FirmID: h.firm, RunID: runID, ApprovalID: p.ApprovalRequestID, UserID: h.user})
	wantDestroyed(t, err, "a resume")
	_, err = agent.Decider{Store: h.store, Heads: h.keys, Keys: h.dataKeys}.Decide(ctx, h.firm, runID, p.ApprovalRequestID,
		warrant.CounselDecision{Decision: warrant.DecisionApproved, PresentedHash: p.ToolInputHash, DecidedBy: uuid.NewString()})
	wantDestroyed(t, err, "counsel's decision")
	run, err := h.store.GetRun(ctx, h.firm, runID)
	if err != nil {
		t.Fatal(err)
	}
	key, err := agent.OpenContent(ctx, h.dataKeys, run)
	wantDestroyed(t, err, "a reader's key")
	if key != nil {
		t.Error("a key was handed out for a destroyed run")
	}

	lines := h.storedLedger(runID)
	if len(lines) != n {
		t.Fatalf("%d lines written after the destruction", len(lines)-n)
	}
	if last := lines[len(lines)-1]; last.Hash != line.Hash || last.Type != contracts.TypeContentDestroyed || last.Sealed {
		t.Fatalf("the last line is %s (sealed %v), want the content.destroyed", last.Type, last.Sealed)
	}
	sealed := 0
	for _, l := range lines {
		if l.Sealed {
			sealed++
			if _, err := contracts.OpenLine(l, nil); !errors.Is(err, contracts.ErrNotOpened) {
				t.Errorf("seq %d opened without a key: %v", l.Seq, err)
			}
		}
	}
	if sealed == 0 {
		t.Fatal("the run's ledger was not sealed")
	}
	folded, err := reducer.Fold(ctx, h.store, h.firm, runID, reducer.FoldOptions{Keys: h.keys})
	if err != nil {
		t.Fatalf("the ledger does not fold without the key: %v", err)
	}
	st := folded.State
	if st.Status != warrant.RunCompleted || st.Cost != done.State.Cost || st.ToolsSucceeded != done.State.ToolsSucceeded ||
		st.ContentDestroyed == nil || st.ContentDestroyed.Reason != contracts.DestroyedInstruction || st.ContentDestroyed.At != line.CreatedAt {
		t.Fatalf("state after destruction %+v (destroyed %+v)", st, st.ContentDestroyed)
	}
	if _, err := reducer.Audit(lines); err != nil {
		t.Fatalf("audit: %v", err)
	}
	if !run.ContentDestroyedAt.Equal(mustTime(t, line.CreatedAt)) || len(run.DataKey) != 0 {
		t.Fatalf("run item: destroyed at %v, key %q", run.ContentDestroyedAt, run.DataKey)
	}
	for sk, text := range h.rawItems(runID) {
		if strings.Contains(text, string(before.DataKey)) {
			t.Errorf("item %s still holds the wrapped key", sk)
		}
	}
}

// Issue 26: what became of an effect is never lost with the content. After
// the destruction counsel still reconciles an effect whose outcome was
// unknown: the effect.reconciled line is written in the clear (schema 1:
// there is no key to seal under, and it carries no content); a note, which
// would be content, is refused (invalid_request naming the field) and
// nothing is written.
func TestReconcileAfterDestruction(t *testing.T) {
	h := newHarness(t, demo, options{})
	res, edited := h.lostWhileEditRuns(0)
	ctx := context.Background()
	runID := res.State.RunID
	if action, err := h.brain.Sweep(ctx, h.firm, runID); err != nil || action != agent.SweepOutcomeUnknown {
		t.Fatalf("sweep %s %v", action, err)
	}
	tcs := h.completions(runID)
	ref := tcs[len(tcs)-1].EffectRef
	h.destroy(runID)
	n := len(h.storedLedger(runID))

	rc := agent.Reconciler{Store: h.store, Heads: h.keys, Keys: h.dataKeys}
	counsel := uuid.NewString()
	_, err := rc.Reconcile(ctx, h.firm, runID, ref, warrant.Reconciliation{Outcome: warrant.OutcomeExecuted, ExternalRef: "MSG-1", By: counsel,
		Note: "The client confirmed receipt."})
	if failureKind(err) != failure.KindInvalidRequest || !strings.Contains(err.Error(), "field note") || !errors.Is(err, warrant.ErrContentDestroyed) {
		t.Fatalf("a note after the destruction: %v, want invalid_request on field note", err)
	}
	if got := len(h.storedLedger(runID)); got != n {
		t.Fatalf("a refused reconciliation wrote %d lines", got-n)
	}

	ev, err := rc.Reconcile(ctx, h.firm, runID, ref, warrant.Reconciliation{Outcome: warrant.OutcomeExecuted, ExternalRef: "MSG-1", By: counsel})
	if err != nil || ev.InputSHA256 != edited {
		t.Fatalf("reconcile after the destruction: %+v %v", ev, err)
	}
	lines := h.storedLedger(runID)
	last := lines[len(lines)-1]
	if last.Type != contracts.TypeEffectReconciled || last.SchemaVersion != contracts.SchemaVersion || last.Sealed {
		t.Fatalf("the reconciliation is %s schema %s (sealed %v), want effect.reconciled in the clear", last.Type, last.SchemaVersion, last.Sealed)
	}
	if c, err := h.store.GetEffect(ctx, h.firm, runID, warrant.EffectKey{ToolName: "send_client_email", InputSHA256: edited}); err != nil || c.State != warrant.ClaimReconciled {
		t.Fatalf("claim after the reconciliation: %+v %v", c, err)
	}
	folded, err := reducer.Fold(ctx, h.store, h.firm, runID, reducer.FoldOptions{Keys: h.keys})
	if err != nil || len(folded.State.Unreconciled) != 0 || folded.State.ContentDestroyed == nil {
		t.Fatalf("fold after the reconciliation: %+v %v", folded.State, err)
	}
	if _, err := reducer.Audit(lines); err != nil {
		t.Fatalf("audit: %v", err)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(contracts.TimeLayout, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
