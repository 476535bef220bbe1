package handlers_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// Counsel signs a hash of the exact input, so every view of a warrant shows
// that input in full, canonical, and hashing to the hash counsel presents:
// the 202 answer, GET /v1/approvals and the decision's answer (issue 11,
// item 3). The filing's text is not in the summary; it must be in the view.
func TestCounselSeesTheWholeInput(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.startHeld(t)
	// listed: GET /v1/approvals carries the input once, as
	// tool_input_canonical; the other views carry tool_input too, the same
	// bytes.
	check := func(where string, v *handlers.WarrantView, listed bool) {
		t.Helper()
		if v == nil {
			t.Fatalf("%s: no warrant", where)
		}
		input := v.ToolInput
		switch {
		case listed && len(input) != 0:
			t.Fatalf("%s: tool_input beside tool_input_canonical: each input once", where)
		case listed:
			input = json.RawMessage(v.ToolInputCanonical)
		case len(input) == 0 || string(input) != v.ToolInputCanonical:
			t.Fatalf("%s: tool_input %.100s is not tool_input_canonical %.100s", where, input, v.ToolInputCanonical)
		}
		canonical, err := contracts.Canonicalize(input)
		if err != nil || !bytes.Equal(canonical, input) {
			t.Fatalf("%s: the input is not canonical: %s", where, input)
		}
		if hash, _ := contracts.InputHash(input); hash != h.hash || v.ToolInputHash != h.hash {
			t.Fatalf("%s: the input hashes to %s, warrant hash %s, shown %s", where, hash, h.hash, v.ToolInputHash)
		}
		var in map[string]string
		if err := json.Unmarshal(input, &in); err != nil || !strings.HasPrefix(in["document_text"], "Plaintiff moves to compel") {
			t.Fatalf("%s: the filing's text is missing from %s", where, input)
		}
	}
	check("202 answer", h.view.PendingApproval, false)
	list := listApprovals(t, s)
	if len(list) != 1 {
		t.Fatalf("approvals: %+v", list)
	}
	check("GET /v1/approvals", &list[0], true)
	resp := s.call(approveReq(t, h, "approve", h.hash))
	if resp.StatusCode != 200 {
		t.Fatalf("approve: %d %s", resp.StatusCode, resp.Body)
	}
	decided := decode[handlers.WarrantView](t, resp)
	check("approve answer", &decided, false)
}

// A title cannot spoof what counsel reads: control characters and Unicode
// bidi controls in the summary are shown as escapes, while tool_input keeps
// the exact text that will be filed.
func TestSummaryShowsControlAndBidiCharacters(t *testing.T) {
	const spoof = "Motion to Compel\u202e\u2066 fdp.exe\u2069\x07"
	script := bedrocktest.DemoScript()
	for i := range script.Rules {
		if script.Rules[i].Name != "file-after-search" {
			continue
		}
		orig := script.Rules[i].Reply.ToolUses[0].InputFunc
		script.Rules[i].Reply.ToolUses[0].InputFunc = func(c bedrocktest.Conversation) json.RawMessage {
			var m map[string]string
			_ = json.Unmarshal(orig(c), &m)
			m["document_title"] = spoof
			m["court"] = "Superior Court\u200f\u061c"
			b, _ := json.Marshal(m)
			return b
		}
	}
	s := newStack(t, stackOptions{script: &script})
	h := s.startHeld(t)
	summary := h.view.PendingApproval.HumanSummary
	for _, r := range summary {
		if r == 0x7 || r == 0x202e || r == 0x2066 || r == 0x2069 || r == 0x200f || r == 0x061c {
			t.Fatalf("summary carries U+%04X raw: %q", r, summary)
		}
	}
	for _, want := range []string{`\u202E`, `\u2066`, `\u2069`, `\u0007`, `\u200F`, `\u061C`} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary %q does not show %s", summary, want)
		}
	}
	var in map[string]string
	if err := json.Unmarshal(h.view.PendingApproval.ToolInput, &in); err != nil || in["document_title"] != spoof {
		t.Fatalf("tool_input must keep the exact title: %q", in["document_title"])
	}
	if list := listApprovals(t, s); len(list) != 1 || list[0].HumanSummary != summary {
		t.Fatalf("approvals list summary differs: %+v", list)
	}
}
