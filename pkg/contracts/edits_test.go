package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/seed-f6d3920e/warrant"
)

// approvedWithEdit is an approval.decided in which counsel edited the call.
func approvedWithEdit(t *testing.T) *ApprovalDecided {
	t.Helper()
	orig := json.RawMessage(`{"body":"Hi","matter_id":"` + uMatter + `","subject":"Update","to":"gc@client.example"}`)
	edited := json.RawMessage(`{"body":"Hello","matter_id":"` + uMatter + `","subject":"Update","to":"gc@client.example"}`)
	oh, _ := InputHash(orig)
	eh, _ := InputHash(edited)
	return &ApprovalDecided{ApprovalRequestID: uApprove, Decision: warrant.DecisionApproved, DecidedBy: "counsel-1",
		ToolInputHash: oh, EditedInput: edited, EditedInputSHA256: eh, EditedRiskTier: "high",
		EditedFiredRules: []FiredRule{{ID: "email.recipient_is_client", Effect: "record", Reason: "privileged"}}}
}

// Counsel's edit is in the ledger as bytes that hash to the recorded
// edited hash: a resealed line whose edit was rewritten does not parse, and
// an edit only rides on an approval that changed the call.
func TestApprovalEditMustHashToItsDigest(t *testing.T) {
	good, err := fixedChain().Append(approvedWithEdit(t))
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	if _, err := ParseEventLine(good.Raw); err != nil {
		t.Fatalf("parse: %v", err)
	}
	forged := reseal(t, bytes.Replace(good.Raw, []byte(`"Hello"`), []byte(`"Goodbye"`), 1))
	var fe *FieldError
	if _, err := ParseEventLine(forged); !errors.As(err, &fe) || fe.Path != "payload.edited_input_sha256" {
		t.Fatalf("a rewritten edit parsed: %v", err)
	}
	for name, edit := range map[string]func(*ApprovalDecided){
		"denied with an edit":          func(a *ApprovalDecided) { a.Decision = warrant.DecisionDenied },
		"an edit that changes nothing": func(a *ApprovalDecided) { a.EditedInput, a.EditedInputSHA256 = nil, a.ToolInputHash },
		"no tier for the edit":         func(a *ApprovalDecided) { a.EditedRiskTier = "" },
		"a tier without an edit":       func(a *ApprovalDecided) { a.EditedInput, a.EditedInputSHA256 = nil, "" },
		"a rule of no effect":          func(a *ApprovalDecided) { a.EditedFiredRules[0].Effect = "lower:low" },
	} {
		a := approvedWithEdit(t)
		edit(a)
		if _, err := fixedChain().Append(a); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
}

// Fired rules on tool.requested are named, closed in effect and explained.
func TestToolRequestedFiredRules(t *testing.T) {
	req := *sampleLedger(t)[4].Event.(*ToolRequested)
	req.PolicyVersion = "2026-12-03"
	req.FiredRules = []FiredRule{{ID: "matter.wall", Effect: "deny", Reason: "another matter"}}
	l, err := fixedChain().Append(&req)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	back, err := ParseEventLine(l.Raw)
	if err != nil || back.Event.(*ToolRequested).FiredRules[0].ID != "matter.wall" {
		t.Fatalf("round trip: %v", err)
	}
	for _, bad := range []FiredRule{{Effect: "deny", Reason: "r"}, {ID: "x", Effect: "allow", Reason: "r"}, {ID: "x", Effect: "deny"}} {
		req.FiredRules = []FiredRule{bad}
		if _, err := fixedChain().Append(&req); err == nil {
			t.Errorf("fired rule %+v encoded", bad)
		}
	}
}
