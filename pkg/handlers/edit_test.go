package handlers_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy/policytest"
)

// filingEdit is the demo filing, as counsel edits it.
func filingEdit(matter, title string) map[string]any {
	return map[string]any{"matter_id": matter, "court": "Superior Court of California, County of San Francisco",
		"document_title": title, "document_text": "Plaintiff moves to compel production."}
}

func approveEdited(t *testing.T, h held, edit any) *event {
	return approveReq(t, h, "approve", h.hash).editBody(func(m map[string]any) { m["edited_input"] = edit })
}

// Counsel approves an edited call through the API: bad edits are 400, an
// edit the policy denies is 422, none writes anything; a good one is
// recorded, shown and is the call that runs.
func TestApproveEditedInput(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.startHeld(t)
	if p := h.view.PendingApproval; p.PolicyVersion == "" || !slices.ContainsFunc(p.FiredRules, func(r handlers.FiredRuleView) bool {
		return r.ID == "court.filing_requires_warrant" && r.Effect == "raise:high" && r.Reason != ""
	}) {
		t.Fatalf("the held run's warrant shows no fired rules: %+v", p)
	}
	before := s.scan()
	for _, c := range []struct {
		name   string
		edit   any
		status int
		kind   string
		detail string
	}{
		{"schema", map[string]any{"matter_id": fixMatter}, 400, "invalid_request", "edited_input"},
		{"as requested", nil, 400, "invalid_request", "is the call as requested"},
		{"not an object", []string{"x"}, 400, "invalid_request", "edited_input"},
		{"matter wall", filingEdit("9e8d7c6b-5a49-4382-b1f0-e9d8c7b6a5f4", "Motion"), 422, "policy_denied", "matter.wall"},
	} {
		ev := approveEdited(t, h, c.edit)
		if c.edit == nil {
			ev = approveEdited(t, h, h.view.PendingApproval.ToolInput)
		}
		p := s.wantProblem(c.name, s.call(ev), c.status)
		if p.Kind != c.kind || !strings.Contains(p.Detail, c.detail) {
			t.Errorf("%s: problem %+v, want %s naming %q", c.name, p, c.kind, c.detail)
		}
	}
	// A denial with an edit is refused, not half-applied.
	deny := approveReq(t, h, "deny", h.hash).editBody(func(m map[string]any) { m["edited_input"] = filingEdit(fixMatter, "x") })
	if p := s.wantProblem("deny with an edit", s.call(deny), 400); !strings.Contains(p.Detail, "edited_input") {
		t.Errorf("deny with an edit: %+v", p)
	}
	s.wantUnchanged("refused edits", before)

	resp := s.call(approveEdited(t, h, filingEdit(fixMatter, "Amended Motion to Compel")))
	if resp.StatusCode != 200 {
		t.Fatalf("approve edited: %d %s", resp.StatusCode, resp.Body)
	}
	w := decode[handlers.WarrantView](t, resp)
	raw, _ := json.Marshal(filingEdit(fixMatter, "Amended Motion to Compel"))
	canonical, hash, _ := contracts.CanonicalInput(raw)
	if w.Status != "approved" || w.ToolInputHash != h.hash || w.EditedInputHash != hash || string(w.EditedInput) != string(canonical) {
		t.Fatalf("warrant view %+v", w)
	}
	resp = s.call(resumeReq(t, h))
	if resp.StatusCode != 200 {
		t.Fatalf("resume: %d %s", resp.StatusCode, resp.Body)
	}
	if v := decode[handlers.RunView](t, resp); v.Status != "completed" || v.FinalText != bedrocktest.DemoFiledText {
		t.Fatalf("after resume: %+v", v)
	}
	out, err := s.store.ListOutbound(context.Background(), fixFirm, h.runID)
	if err != nil || len(out) != 1 || !strings.Contains(string(out[0].Body), "Amended Motion to Compel") {
		t.Fatalf("outbound %+v %v", out, err)
	}
}

// A resume under a policy that now denies the warranted call is a 409
// policy_changed; the run shows the failure and nothing was filed.
func TestResumePolicyChanged(t *testing.T) {
	s := newStack(t, stackOptions{resumePolicy: policytest.Denying(t, "2026-12-04", "court.filing_requires_warrant")})
	h := s.startHeld(t)
	if resp := s.call(approveReq(t, h, "approve", h.hash)); resp.StatusCode != 200 {
		t.Fatalf("approve: %d %s", resp.StatusCode, resp.Body)
	}
	p := s.wantProblem("resume", s.call(resumeReq(t, h)), 409)
	if p.Kind != "policy_changed" || !strings.Contains(p.Detail, "court.filing_requires_warrant") {
		t.Fatalf("problem %+v", p)
	}
	if v := s.view(h.runID); v.Status != "failed" || v.Failure == nil || v.Failure.Kind != "policy_changed" {
		t.Fatalf("run view %+v", v)
	}
	out, err := s.store.ListOutbound(context.Background(), fixFirm, h.runID)
	if err != nil || len(out) != 0 {
		t.Fatalf("outbound %+v %v", out, err)
	}
	before := s.scan()
	s.wantProblem("resume again", s.call(resumeReq(t, h)), 409)
	s.wantUnchanged("resume again", before)
}
