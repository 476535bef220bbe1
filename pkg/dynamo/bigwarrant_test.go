package dynamo_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// bigInput is a filing's canonical input of about n bytes.
func bigInput(t testing.TB, title string, n int) (json.RawMessage, string) {
	t.Helper()
	raw, _ := json.Marshal(map[string]string{"court": "Superior Court", "document_title": title,
		"document_text": strings.Repeat("Plaintiff moves to compel. ", n/27+1)[:n]})
	in, hash, err := contracts.CanonicalInput(raw)
	if err != nil {
		t.Fatal(err)
	}
	return in, hash
}

// newHeldWith is newHeld with the call's input chosen.
func (e *env) newHeldWith(firm string, input json.RawMessage, hash string) *held {
	e.t.Helper()
	r := e.newRun(firm)
	h := &held{run: r, approval: id(), tool: toolCall{name: "file_court_document", useID: "tu_" + id()[:8], input: input, hash: hash},
		expires: e.clock.Now().Add(warrant.DefaultWarrantTTL)}
	req := e.line(r, requested(h.tool, "require_approval"))
	blocked := e.line(r, &contracts.RunBlocked{Approval: contracts.BlockedApproval{
		ApprovalRequestID: h.approval, ToolUseID: h.tool.useID, ToolName: h.tool.name, ToolInput: h.tool.input, ToolInputHash: h.tool.hash,
		RiskTier: "high", Reason: "files with a court", HumanSummary: "File the motion", ExpiresAt: contracts.FormatTime(h.expires),
	}})
	must(e.t, e.store.CreateWarrantRequest(e.ctx, e.warrant(h), req, blocked))
	return h
}

// testWarrantEditedBig: a warrant holds a requested input and counsel's
// edit that are together more than one DynamoDB item can (each near the
// API body's 256 KiB): the edit is stored beside the warrant, read back
// with it, and the resume claims it.
func testWarrantEditedBig(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	in, hash := bigInput(t, "Motion to Compel", 250_000)
	h := e.newHeldWith(id(), in, hash)
	edited, eh := bigInput(t, "Amended Motion to Compel", 250_000)
	d := warrant.CounselDecision{Decision: warrant.DecisionApproved, PresentedHash: hash, DecidedBy: "counsel-1",
		EditedInput: edited, EditedHash: eh, Note: "Amended."}
	l := e.next(h.run, &contracts.ApprovalDecided{ApprovalRequestID: h.approval, Decision: warrant.DecisionApproved, DecidedBy: "counsel-1",
		ToolInputHash: hash, EditedInput: edited, EditedInputSHA256: eh, EditedRiskTier: "high", Note: "Amended."})
	w, err := e.store.DecideWarrant(e.ctx, h.firm, h.id, h.approval, d, l)
	must(t, err)
	h.chain.Advance(l)
	if !bytes.Equal(w.EditedInput, edited) || w.EditedHash != eh {
		t.Fatalf("decided warrant carries edit %d bytes, hash %s", len(w.EditedInput), w.EditedHash)
	}
	// The same decision again answers the decided warrant, its edit too.
	again, err := e.store.DecideWarrant(e.ctx, h.firm, h.id, h.approval, d, l)
	if err != nil || !bytes.Equal(again.EditedInput, edited) {
		t.Fatalf("the decision repeated: %v, edit of %d bytes", err, len(again.EditedInput))
	}
	// An edited warrant is read in two round trips: the warrant, its edit.
	ep.Counter.Reset()
	_, err = e.store.GetReleaseAuthorizedRequest(e.ctx, h.approval, h.firm, h.id, h.matter)
	must(t, err)
	if n := ep.Counter.Count(); n != 2 {
		t.Errorf("reading an edited warrant took %d round trips %v, want 2", n, ep.Counter.ByOp())
	}
	for what, read := range map[string]func() (warrant.Warrant, error){
		"GetWarrant": func() (warrant.Warrant, error) { return e.store.GetWarrant(e.ctx, h.firm, h.id, h.approval) },
		"GetReleaseAuthorizedRequest": func() (warrant.Warrant, error) {
			return e.store.GetReleaseAuthorizedRequest(e.ctx, h.approval, h.firm, h.id, h.matter)
		},
	} {
		got, err := read()
		must(t, err)
		if x, xh := got.Executes(); !bytes.Equal(x, edited) || xh != eh || !bytes.Equal(got.Input, in) {
			t.Fatalf("%s: input %d bytes, executes %d bytes %s", what, len(got.Input), len(x), xh)
		}
	}
	c, rl := e.resume(h, warrant.DecisionApproved)
	c.InputSHA256 = eh
	must(t, e.store.ResumeClaim(e.ctx, c, rl))
	if claim, err := e.store.LatestEffect(e.ctx, h.firm, h.id, h.tool.name, eh); err != nil || claim == nil {
		t.Fatalf("the edited call's claim: %+v %v", claim, err)
	}
}

// testWarrantDecisionTooLarge: a decision whose warrant item would pass
// DynamoDB's 400 KB (a note beside an input near the ledger line's limit) is
// refused as too large, writing nothing; the warrant can still be decided.
func testWarrantDecisionTooLarge(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	in, hash := bigInput(t, "Motion to Compel", contracts.MaxLineBytes-2048)
	h := e.newHeldWith(id(), in, hash)
	note := strings.Repeat("𝄞", 2000) // 8,000 bytes
	decide := func(note string) (warrant.Warrant, error) {
		l := e.next(h.run, &contracts.ApprovalDecided{ApprovalRequestID: h.approval, Decision: warrant.DecisionApproved,
			DecidedBy: "counsel-1", ToolInputHash: hash, Note: note})
		w, err := e.store.DecideWarrant(e.ctx, h.firm, h.id, h.approval,
			warrant.CounselDecision{Decision: warrant.DecisionApproved, PresentedHash: hash, DecidedBy: "counsel-1", Note: note}, l)
		if err == nil {
			h.chain.Advance(l)
		}
		return w, err
	}
	before := e.partition(h.firm, h.id)
	_, err := decide(note)
	if !errors.Is(err, warrant.ErrTooLarge) {
		t.Fatalf("a note past the item limit: %v, want ErrTooLarge", err)
	}
	if kind, _, _ := failure.Classify(err); kind != failure.KindPayloadTooLarge {
		t.Errorf("kind %s, want payload_too_large", kind)
	}
	e.unchanged(before, h.firm, h.id, "a decision too large")
	if w, err := decide("Approved."); err != nil || w.Status != warrant.WarrantApproved {
		t.Fatalf("the same decision with a short note: %+v %v", w.Status, err)
	}
}
