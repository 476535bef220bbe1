package agent_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// rehash gives a ledger line's bytes edited after it was made a hash that
// matches them again, as a writer that skipped the contract would.
func rehash(t *testing.T, raw []byte) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "hash")
	unsigned, _ := json.Marshal(m)
	c, err := contracts.Canonicalize(unsigned)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(c)
	m["hash"], _ = json.Marshal(hex.EncodeToString(sum[:]))
	out, _ := json.Marshal(m)
	if out, err = contracts.Canonicalize(out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Issue 31 item 14: a self-reconciliation is refused below the Reconciler's
// own check, as a self-approval is: the effect.reconciled line that says
// separation was enforced and is recorded by the user who started the run
// cannot be made (contracts), and the store refuses such a line handed to
// it with a good hash. Nothing is written, the effect stays flagged for
// reconciliation, and another counsel then reconciles it.
// (TestReconciliationSeparationOfDuties pins the Reconciler's own answer,
// 403 self_approval.)
//
// Checked: with the refusal taken out of EffectReconciled.validate, this
// fails with "the line of a self-reconciliation was made" and "the store
// accepted a self-reconciliation"; with the Reconciler's check taken out
// as well, it also fails with "the Reconciler wrote a self-reconciliation"
// (the mutation: before the contract refused it, the store took
// it, 200, and only a later fold rejected it).
func TestSelfReconciliationRefusedBelowTheReconciler(t *testing.T) {
	h := newHarness(t, demo, options{})
	res, _ := h.lostWhileEditRuns(0)
	ctx := context.Background()
	runID := res.State.RunID
	if action, err := h.brain.Sweep(ctx, h.firm, runID); err != nil || action != agent.SweepOutcomeUnknown {
		t.Fatalf("sweep %s %v", action, err)
	}
	lines := h.ledger(runID)
	tcs := h.completions(runID)
	unknown := tcs[len(tcs)-1]
	if unknown.Status != contracts.ToolUnknown {
		t.Fatalf("the last completion is %s, want unknown", unknown.Status)
	}
	key := warrant.EffectKey{ToolName: unknown.ToolName, InputSHA256: unknown.InputSHA256}
	if unknown.ExecutedInputSHA256 != "" {
		key.InputSHA256 = unknown.ExecutedInputSHA256
	}
	flagged := func(what string) {
		t.Helper()
		if n := len(h.ledger(runID)); n != len(lines) {
			t.Errorf("%s: %d lines written, want none", what, n-len(lines))
		}
		if c, err := h.store.GetEffect(ctx, h.firm, runID, key); err != nil || !c.NeedsReconciliation || c.State != warrant.ClaimClaimed {
			t.Errorf("%s: the claim is %+v (%v), want it still flagged for reconciliation", what, c, err)
		}
	}

	// Through the Reconciler: refused, whichever check refuses it.
	rc := agent.Reconciler{Store: h.store, Heads: h.keys, Keys: h.dataKeys}
	if _, err := rc.Reconcile(ctx, h.firm, runID, unknown.EffectRef, warrant.Reconciliation{Outcome: warrant.OutcomeNotExecuted, By: h.user}); err == nil {
		t.Error("the Reconciler wrote a self-reconciliation")
	}
	flagged("the Reconciler")

	// The line itself cannot be made.
	self := contracts.EffectReconciled{EffectRef: unknown.EffectRef, ToolName: key.ToolName, InputSHA256: key.InputSHA256,
		Outcome: warrant.OutcomeNotExecuted, ReconciledBy: h.user, RequestedBy: h.user, Separation: contracts.SeparationEnforced}
	last := lines[len(lines)-1]
	if _, err := contracts.ChainAfter(last).Next(&self); err == nil {
		t.Error("the line of a self-reconciliation was made")
	}

	// Made for another counsel, then edited to the requester with its hash
	// made good: the store refuses it.
	other := self
	other.ReconciledBy = uuid.NewString()
	l, err := contracts.ChainAfter(last).Next(&other)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rehash(t, l.Raw), l.Raw) {
		t.Fatal("rehash does not give an honest line its own bytes back")
	}
	edited := bytes.Replace(l.Raw, []byte(`"reconciled_by":"`+other.ReconciledBy+`"`), []byte(`"reconciled_by":"`+h.user+`"`), 1)
	if bytes.Equal(edited, l.Raw) {
		t.Fatal("the edit changed nothing")
	}
	l.Raw = rehash(t, edited)
	if err := h.store.ReconcileEffect(ctx, h.firm, runID, key, warrant.Reconciliation{Outcome: warrant.OutcomeNotExecuted, By: h.user}, l); err == nil {
		t.Error("the store accepted a self-reconciliation")
	} else if !strings.Contains(err.Error(), "payload.reconciled_by") {
		t.Errorf("the store refused a self-reconciliation for another reason: %v", err)
	}
	if t.Failed() {
		return
	}
	flagged("the store")

	// The effect is still there to reconcile, by another counsel.
	counsel := uuid.NewString()
	ev, err := rc.Reconcile(ctx, h.firm, runID, unknown.EffectRef, warrant.Reconciliation{Outcome: warrant.OutcomeNotExecuted, By: counsel})
	if err != nil || ev.ReconciledBy != counsel || ev.Separation != contracts.SeparationEnforced {
		t.Fatalf("another counsel's reconciliation: %+v %v", ev, err)
	}
}
