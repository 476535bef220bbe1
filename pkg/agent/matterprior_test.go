package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// summaryInMatter is the embedded policy with a matter-scoped history rule:
// a court filing is denied unless a run of the matter (this one or
// another) looked at the matter's summary and it said the matter is in
// discovery (the catalog's stand-in for a conflicts check).
func summaryInMatter(t *testing.T) *toolpolicy.Policy {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(toolpolicy.EmbeddedDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	doc["version"] = "test-matter-prior-1"
	doc["rules"] = append(doc["rules"].([]any), map[string]any{
		"id": "court.summary_in_matter", "tools": []string{"file_court_document"}, "then": "deny",
		"reason": "A filing follows a look at the matter's summary, in discovery, in some run of the matter.",
		"when": []any{map[string]any{"not": map[string]any{"prior": map[string]any{"tool": "get_matter_summary", "scope": "matter",
			"where": []any{map[string]any{"input": "/status", "op": "equals", "value": "discovery"}}}}}},
	})
	raw, _ := json.Marshal(doc)
	p, err := toolpolicy.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// filingRequest is the run's tool.requested of the court filing.
func filingRequest(t *testing.T, h *harness, runID string) *contracts.ToolRequested {
	t.Helper()
	for _, l := range h.ledger(runID) {
		if e, ok := l.Event.(*contracts.ToolRequested); ok && e.ToolName == bedrocktest.ToolFileCourtDocument {
			return e
		}
	}
	t.Fatalf("run %s requested no filing", runID)
	return nil
}

// failingSteps is the store whose matter's record cannot be read.
type failingSteps struct{ agent.Store }

func (failingSteps) MatterSteps(context.Context, string, string, string) ([]warrant.MatterStep, error) {
	return nil, failure.New(failure.KindStoreUnavailable, "injected")
}

// Issue 29 item 2, the matter's runs: a filing is denied until a run of the
// same matter looked at its summary; a summary in another run of the
// matter lets it through (held for counsel, as a filing is), and
// tool.requested names that run's step; another matter's or firm's run
// does not count; a record that cannot be read, or a step whose run's
// content was destroyed, fails closed.
func TestPriorStepInTheMatter(t *testing.T) {
	p := summaryInMatter(t)
	h := newHarness(t, demo, options{policy: p})
	const ruleID = "court.summary_in_matter"
	denied := func(runID, why string) *contracts.ToolRequested {
		t.Helper()
		req := filingRequest(t, h, runID)
		if req.Action != "deny" || !slices.Contains(firedIDs(req.FiredRules), ruleID) {
			t.Fatalf("%s: the filing was %s, fired %v; want denied by %s", why, req.Action, firedIDs(req.FiredRules), ruleID)
		}
		return req
	}

	first := h.start("Please file the motion.", "")
	if req := denied(first.State.RunID, "no summary in the matter"); len(req.MatterSteps) != 0 || req.MatterUnread {
		t.Fatalf("nothing read, recorded %+v unread %v", req.MatterSteps, req.MatterUnread)
	}

	summary := h.start("What is the status of the matter?", "")
	if got := statusOf(h.completions(summary.State.RunID)); !slices.Equal(got, []string{"get_matter_summary:success"}) {
		t.Fatalf("the summary run completed %v", got)
	}
	var summarySeq int64
	var summaryHash string
	for _, l := range h.storedLedger(summary.State.RunID) {
		if l.Type == contracts.TypeToolCompleted {
			summarySeq, summaryHash = l.Seq, l.Hash
		}
	}
	recs, err := h.store.MatterSteps(context.Background(), h.firm, h.matter, "get_matter_summary")
	if err != nil || len(recs) != 1 || recs[0].RunID != summary.State.RunID || recs[0].Seq != summarySeq {
		t.Fatalf("the matter's record: %+v, %v", recs, err)
	}
	if strings.Contains(string(recs[0].Line), "discovery") {
		t.Fatal("the matter's record holds the sealed result in the clear")
	}

	held := h.start("Please file the motion.", "")
	if held.State.Status != warrant.RunHeld || held.State.PendingApproval.ToolName != bedrocktest.ToolFileCourtDocument {
		t.Fatalf("the filing after another run's summary: %s, want held for counsel", held.State.Status)
	}
	req := filingRequest(t, h, held.State.RunID)
	want := []contracts.MatterStep{{RunID: summary.State.RunID, Seq: summarySeq, Hash: summaryHash, Tool: "get_matter_summary", Status: "success"}}
	if slices.Contains(firedIDs(req.FiredRules), ruleID) || !slices.Equal(req.MatterSteps, want) {
		t.Fatalf("fired %v, matter steps %+v; want none fired and %+v", firedIDs(req.FiredRules), req.MatterSteps, want)
	}

	t.Run("counsel's edit and the resume decide on the same steps; the audit checks them in the other run's export", func(t *testing.T) {
		edit, _ := json.Marshal(h.filing("Motion to Compel (as edited)"))
		if _, err := h.decideEdit(held, warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: edit}); err != nil {
			t.Fatalf("counsel's edit: %v", err)
		}
		res, err := h.resume(held)
		if err != nil || res.State.Status != warrant.RunCompleted {
			t.Fatalf("resume: %v, %+v", err, res.State)
		}
		lines := h.ledger(held.State.RunID)
		for _, l := range lines {
			switch e := l.Event.(type) {
			case *contracts.ApprovalDecided:
				if !slices.Equal(e.EditedMatterSteps, want) || slices.Contains(firedIDs(e.EditedFiredRules), ruleID) {
					t.Fatalf("the edit's decision read %+v, fired %v", e.EditedMatterSteps, firedIDs(e.EditedFiredRules))
				}
			case *contracts.RunReleased:
				if e.PolicyCheck == nil || !slices.Equal(e.PolicyCheck.MatterSteps, want) {
					t.Fatalf("the resume's decision: %+v", e.PolicyCheck)
				}
			}
		}
		// Without the summary run's export the audit says what it needs.
		_, err = reducer.Rederive(lines, p)
		var missing *reducer.MatterStepError
		if !errors.As(err, &missing) || !missing.Missing || missing.Step.RunID != summary.State.RunID ||
			!strings.Contains(err.Error(), "give that run's export") {
			t.Fatalf("audit without the other run's export: %v", err)
		}
		other := h.ledger(summary.State.RunID)
		ds, err := reducer.RederiveWith(lines, reducer.RederiveOptions{Matter: map[string][]contracts.Line{summary.State.RunID: other}}, p)
		if err != nil {
			t.Fatalf("audit with it: %v", err)
		}
		checked := 0
		for _, d := range ds {
			if slices.Equal(d.MatterSteps, want) && !d.Sealed {
				checked++
			}
		}
		if checked != 3 { // the model's call, counsel's edit, the resume
			t.Fatalf("%d decisions re-derived on the other run's step, want 3: %+v", checked, ds)
		}
		// An export of another run given as the summary run's, or one whose
		// line differs, is refused, not passed.
		_, err = reducer.RederiveWith(lines, reducer.RederiveOptions{Matter: map[string][]contracts.Line{summary.State.RunID: h.ledger(first.State.RunID)}}, p)
		if !errors.As(err, &missing) || missing.Missing {
			t.Fatalf("audit with another run's export: %v", err)
		}
		forged := slices.Clone(other)
		for i, l := range forged {
			if l.Seq == summarySeq {
				l.Hash = strings.Repeat("0", 64)
				forged[i] = l
			}
		}
		_, err = reducer.RederiveWith(lines, reducer.RederiveOptions{Matter: map[string][]contracts.Line{summary.State.RunID: forged}}, p)
		if !errors.As(err, &missing) || missing.Missing || !strings.Contains(err.Error(), "hash") {
			t.Fatalf("audit with a line that differs: %v", err)
		}
	})

	t.Run("another matter's or firm's summary does not count", func(t *testing.T) {
		matter, firm := h.matter, h.firm
		defer func() { h.matter, h.firm = matter, firm }()
		h.matter = newID()
		denied(h.start("Please file the motion.", "").State.RunID, "another matter")
		h.firm = newID()
		h.matter = matter
		denied(h.start("Please file the motion.", "").State.RunID, "another firm")
	})

	t.Run("the record cannot be read: fails closed", func(t *testing.T) {
		brain, err := agent.New(failingSteps{h.store}, h.model, p, h.cfg.Prices, failure.NewLogger(h.logs),
			agent.Config{ModelID: testModel, Keys: h.dataKeys, FirmBudget: h.cfg.DefaultFirmBudget(), Heads: h.keys},
			h.reference(), agent.MatterAssistant)
		if err != nil {
			t.Fatal(err)
		}
		res, err := brain.Run(context.Background(), h.invoke(newID(), "Please file the motion."), agent.StartOptions{CostCapUSD: "1.00"})
		if err != nil {
			t.Fatal(err)
		}
		req := denied(res.State.RunID, "the record unread")
		if !req.MatterUnread || len(req.MatterSteps) != 0 || !strings.Contains(req.FiredRules[len(req.FiredRules)-1].Reason, "not known") {
			t.Fatalf("unread %v, steps %+v, fired %+v", req.MatterUnread, req.MatterSteps, req.FiredRules)
		}
		if _, err := reducer.Rederive(h.ledger(res.State.RunID), p); err != nil {
			t.Fatalf("audit: %v", err)
		}
	})

	t.Run("the summary's content destroyed: fails closed", func(t *testing.T) {
		h.destroy(summary.State.RunID)
		res := h.start("Please file the motion.", "")
		req := denied(res.State.RunID, "the summary destroyed")
		want := []contracts.MatterStep{{RunID: summary.State.RunID, Seq: summarySeq, Hash: summaryHash, Tool: "get_matter_summary", Status: "success", Unread: true}}
		if !slices.Equal(req.MatterSteps, want) {
			t.Fatalf("matter steps %+v, want %+v", req.MatterSteps, want)
		}
		if !strings.Contains(req.FiredRules[len(req.FiredRules)-1].Reason, "cannot be read") {
			t.Fatalf("fired %+v", req.FiredRules)
		}
		// The audit re-derives it without the destroyed run's export: the
		// step was recorded unread.
		if _, err := reducer.Rederive(h.ledger(res.State.RunID), p); err != nil {
			t.Fatalf("audit: %v", err)
		}
	})
}
