package dynamo_test

import (
	"encoding/json"
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
)

// testWarrantEdited: counsel approves an edited call. The warrant then
// covers the edit (Executes), the line must carry the same edit, an edit
// rides only on an approval, and the resume claims the edited call's key;
// the requested call's key stays unclaimed.
func testWarrantEdited(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	h := e.newHeld(id())
	edited := json.RawMessage(`{"court":"Superior Court","document_text":"Amended text.","document_title":"Motion to Compel","matter_id":"` + h.matter + `"}`)
	eh, err := contracts.InputHash(edited)
	must(t, err)
	line := func(ev *contracts.ApprovalDecided) contracts.Line { return e.next(h.run, ev) }
	approve := &contracts.ApprovalDecided{ApprovalRequestID: h.approval, Decision: warrant.DecisionApproved, DecidedBy: "counsel-1",
		ToolInputHash: h.tool.hash, EditedInput: edited, EditedInputSHA256: eh, EditedRiskTier: "high"}
	d := warrant.CounselDecision{Decision: warrant.DecisionApproved, PresentedHash: h.tool.hash, DecidedBy: "counsel-1",
		EditedInput: edited, EditedHash: eh}

	before := e.partition(h.firm, h.id)
	// The line and the decision must say the same edit.
	plain := *approve
	plain.EditedInput, plain.EditedInputSHA256, plain.EditedRiskTier = nil, "", ""
	_, err = e.store.DecideWarrant(e.ctx, h.firm, h.id, h.approval, d, line(&plain))
	wantInvalid(t, err, "an edit without it in the line")
	denied := d
	denied.Decision = warrant.DecisionDenied
	_, err = e.store.DecideWarrant(e.ctx, h.firm, h.id, h.approval, denied, line(approve))
	wantInvalid(t, err, "a denial with an edit")
	e.unchanged(before, h.firm, h.id, "refused edits")

	l := line(approve)
	w, err := e.store.DecideWarrant(e.ctx, h.firm, h.id, h.approval, d, l)
	must(t, err)
	h.chain.Advance(l)
	in, hash := w.Executes()
	if w.EditedHash != eh || hash != eh || string(in) != string(edited) || w.ToolInputHash != h.tool.hash {
		t.Fatalf("decided warrant %+v executes %s", w, hash)
	}
	got, err := e.store.GetReleaseAuthorizedRequest(e.ctx, h.approval, h.firm, h.id, h.matter)
	must(t, err)
	if _, hash := got.Executes(); hash != eh {
		t.Fatalf("the release sees %s, want the edit %s", hash, eh)
	}
	c, rl := e.resume(h, warrant.DecisionApproved)
	c.InputSHA256 = hash
	must(t, e.store.ResumeClaim(e.ctx, c, rl))
	if claim, err := e.store.LatestEffect(e.ctx, h.firm, h.id, h.tool.name, eh); err != nil || claim == nil || claim.EffectRef != c.EffectRef {
		t.Fatalf("the edited call's claim: %+v %v", claim, err)
	}
	if claim, err := e.store.LatestEffect(e.ctx, h.firm, h.id, h.tool.name, h.tool.hash); err != nil || claim != nil {
		t.Fatalf("the requested call was claimed: %+v %v", claim, err)
	}
}
