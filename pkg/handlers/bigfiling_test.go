package handlers_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// Big inputs against DynamoDB's 400 KB item limit (docs/DECISIONS.md, "Big
// inputs: what is stored where"). minidyn does not enforce the limit
// (dynamotest.LenientItemSize), so these run on moto too, which does.

// filingText is n characters of a filing: pattern repeated and cut.
func filingText(pattern string, n int) string {
	r := []rune(strings.Repeat(pattern, n/len([]rune(pattern))+1))
	return string(r[:n])
}

// bigFiling is a court filing of the fixture's matter whose document_text
// is text.
func bigFiling(title, text string) map[string]any {
	return map[string]any{"matter_id": fixMatter, "court": "Superior Court of California, County of San Francisco",
		"document_title": title, "document_text": text}
}

// canonicalSize is the bytes of v's canonical JSON (as the ledger and the
// warrant store it).
func canonicalSize(t *testing.T, v any) int {
	t.Helper()
	raw, _ := json.Marshal(v)
	c, _, err := contracts.CanonicalInput(raw)
	if err != nil {
		t.Fatal(err)
	}
	return len(c)
}

// bigFilingScript proposes filing, then reports it filed.
func bigFilingScript(filing map[string]any) *bedrocktest.Script {
	raw, _ := json.Marshal(filing)
	return &bedrocktest.Script{Rules: []bedrocktest.Rule{
		{Name: "file-big", When: func(c bedrocktest.Conversation) bool { return len(c.LastToolResults()) == 0 },
			Reply: bedrocktest.Reply{ToolUses: []bedrocktest.ToolUse{{Name: bedrocktest.ToolFileCourtDocument, Input: raw}}}},
		{Name: "filed", When: bedrocktest.AfterToolResultFrom(bedrocktest.ToolFileCourtDocument, ""),
			Reply: bedrocktest.Reply{Text: bedrocktest.DemoFiledText}},
	}}
}

// startBig starts a run whose model proposes filing, with a cap that its
// next call's worst case fits.
func (s *stack) startBig(t *testing.T) handlers.RunView {
	t.Helper()
	resp := s.call(fixture(t, "invoke.json").editBody(func(m map[string]any) { m["cost_cap_usd"] = "10.00" }))
	if resp.StatusCode != 200 {
		t.Fatalf("invoke: %d %s", resp.StatusCode, resp.Body)
	}
	return decode[handlers.RunView](t, resp)
}

func heldOn(t *testing.T, v handlers.RunView) held {
	t.Helper()
	if v.Status != "held" || v.PendingApproval == nil {
		t.Fatalf("not held: %+v", v)
	}
	return held{runID: v.RunID, approvalID: v.PendingApproval.ApprovalRequestID, hash: v.PendingApproval.ToolInputHash, view: v}
}

// TestBigFilingWithABigEdit: a filing of over 200 KiB, held, and counsel's
// edit of it of over 200 KiB: together more than one DynamoDB item holds.
// The edit is approved, the run resumes, the edit is what is filed, and
// the ledger verifies.
func TestBigFilingWithABigEdit(t *testing.T) {
	// 200,000 characters (the tool's maxLength), lines of a filing: the
	// escapes of its quotes and newlines, and its section signs, take the
	// canonical input past 200 KiB.
	filing := bigFiling("Motion to Compel", filingText("Plaintiff moves to compel \"Exhibit A\" under § 2031.\n", 200_000))
	edit := bigFiling("Amended Motion to Compel", filingText("Plaintiff moves to compel \"Exhibit B\" under § 2031.\n", 200_000))
	if a, b := canonicalSize(t, filing), canonicalSize(t, edit); a < 200<<10 || b < 200<<10 || a+b <= 400<<10 {
		t.Fatalf("the filing (%d bytes) and the edit (%d) are not each over 200 KiB", a, b)
	}
	for _, ep := range dynamotest.All(t) {
		t.Run(ep.Name, func(t *testing.T) {
			s := newStack(t, stackOptions{endpoint: ep, script: bigFilingScript(filing)})
			h := heldOn(t, s.startBig(t))
			resp := s.call(approveEdited(t, h, edit))
			if resp.StatusCode != 200 {
				t.Fatalf("approve the edit: %d %.400s", resp.StatusCode, resp.Body)
			}
			if w := decode[handlers.WarrantView](t, resp); w.Status != "approved" || w.EditedInputHash == "" {
				t.Fatalf("warrant %+v", w)
			}
			resp = s.call(resumeReq(t, h))
			if v := decode[handlers.RunView](t, resp); resp.StatusCode != 200 || v.Status != "completed" {
				t.Fatalf("resume: %d %.400s", resp.StatusCode, resp.Body)
			}
			out, err := s.store.ListOutbound(context.Background(), fixFirm, h.runID)
			if err != nil || len(out) != 1 || !strings.Contains(string(out[0].Body), "Exhibit B") || strings.Contains(string(out[0].Body), "Exhibit A") {
				t.Fatalf("filed %d effects (%v): not the edit", len(out), err)
			}
			if st := s.auditRun(h.runID); st.Status != "completed" {
				t.Fatalf("audited: %+v", st)
			}
		})
	}
}

// TestFilingTooLargeToPutBeforeCounsel: a filing whose canonical input
// passes agent.MaxToolInputBytes (it fits a ledger line, sealed, but counsel
// could not send an edit of it in one request) is not held: the model is told
// the input is too large, with its size and the limit, and nothing is held
// or filed. (The store still refuses a decided warrant too large for its
// note, 413 naming the note: pkg/dynamo's WarrantDecisionTooLarge.)
func TestFilingTooLargeToPutBeforeCounsel(t *testing.T) {
	// A sealed value is base64: a line holds 3/4 as much content sealed.
	filing := bigFiling("Motion to Compel", filingText(strings.Repeat("é", 197)+"———", 131_000))
	if n := canonicalSize(t, filing); n <= agent.MaxToolInputBytes || n > (contracts.MaxLineBytes-2048)*3/4 {
		t.Fatalf("the filing is %d bytes", n)
	}
	for _, ep := range dynamotest.All(t) {
		t.Run(ep.Name, func(t *testing.T) {
			s := newStack(t, stackOptions{endpoint: ep, script: bigFilingScript(filing)})
			v := s.startBig(t)
			if v.Status == "held" || v.PendingApproval != nil {
				t.Fatalf("a call too large to edit was put before counsel: %+v", v)
			}
			var answer *contracts.ToolCompleted
			for _, l := range s.ledgerLines(v.RunID) {
				if tc, ok := l.Event.(*contracts.ToolCompleted); ok && tc.ToolName == "file_court_document" {
					answer = tc
				}
			}
			if answer == nil || answer.Status != contracts.ToolError || !strings.Contains(string(answer.Result), "input too large") {
				t.Fatalf("the model's answer: %+v", answer)
			}
			if out, err := s.store.ListOutbound(context.Background(), fixFirm, v.RunID); err != nil || len(out) != 0 {
				t.Errorf("filed %d (%v)", len(out), err)
			}
			s.auditRun(v.RunID)
		})
	}
}

// TestEditOverTheBodyLimit: an edit whose request passes the API's body
// limit (256 KiB) is 413 and writes nothing.
func TestEditOverTheBodyLimit(t *testing.T) {
	filing := bigFiling("Motion to Compel", "Plaintiff moves to compel.")
	s := newStack(t, stackOptions{script: bigFilingScript(filing)})
	h := heldOn(t, s.startBig(t))
	before := s.scan()
	ev := approveEdited(t, h, bigFiling("Amended Motion to Compel", filingText("ééé", 140_000)))
	if n := len(ev.m["body"].(string)); n <= 256<<10 {
		t.Fatalf("the request body is %d bytes", n)
	}
	if p := s.wantProblem("edit over the body limit", s.call(ev), 413); p.Kind != "payload_too_large" {
		t.Errorf("problem %+v", p)
	}
	s.wantUnchanged("edit over the body limit", before)
}

// TestFilingTooLargeForALine: the model proposes a filing within the tool's
// 200,000 characters whose canonical input (600 KB of three-byte
// characters) no ledger line can hold. Its turn cannot be recorded: the run
// fails, with the paid call counted, nothing held and nothing filed, and
// the ledger verifies; the failure says what happened (payload_too_large).
func TestFilingTooLargeForALine(t *testing.T) {
	filing := bigFiling("Motion to Compel", filingText("—", 200_000))
	if n := canonicalSize(t, filing); n <= contracts.MaxLineBytes {
		t.Fatalf("the filing is %d bytes", n)
	}
	for _, ep := range dynamotest.All(t) {
		t.Run(ep.Name, func(t *testing.T) {
			s := newStack(t, stackOptions{endpoint: ep, script: bigFilingScript(filing)})
			v := s.startBig(t)
			if v.Status != "failed" || v.PendingApproval != nil || v.Failure == nil || v.Failure.Kind != "payload_too_large" {
				t.Fatalf("run %+v", v)
			}
			st := s.auditRun(v.RunID)
			if st.ModelCalls != 1 || st.Cost == 0 {
				t.Errorf("the paid call is not counted: %+v", st)
			}
			if out, err := s.store.ListOutbound(context.Background(), fixFirm, v.RunID); err != nil || len(out) != 0 {
				t.Errorf("filed %d (%v)", len(out), err)
			}
		})
	}
}
