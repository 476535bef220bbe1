package agent_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// summaryFirst is the embedded policy with a history rule: an e-mail to the
// client is denied unless the run looked at the matter's summary first and
// it said the matter is in discovery.
func summaryFirst(t *testing.T) (string, *toolpolicy.Policy) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(toolpolicy.EmbeddedDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	doc["version"] = "test-prior-1"
	doc["rules"] = append(doc["rules"].([]any), map[string]any{
		"id": "email.summary_first", "tools": []string{"send_client_email"}, "then": "deny",
		"reason": "An e-mail to the client follows a look at the matter's summary, in discovery.",
		"when": []any{map[string]any{"not": map[string]any{"prior": map[string]any{"tool": "get_matter_summary",
			"where": []any{map[string]any{"input": "/status", "op": "equals", "value": "discovery"}}}}}},
	})
	raw, _ := json.Marshal(doc)
	p, err := toolpolicy.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, p
}

// Issue 29 item 2: a rule may require a prior step of the run. Without the
// summary, the model's e-mail is denied by the rule; after it, the e-mail
// is held for counsel as usual, counsel's edit is decided on the run's
// steps (not denied), the resume decides it again on them, and the audit
// re-derives every decision from the ledger alone.
func TestPriorStepRule(t *testing.T) {
	path, p := summaryFirst(t)
	email := map[string]any{"to": bedrocktest.DemoClientAddress, "subject": "Update", "body": "Discovery is open."}
	script := func(first bool) func(h *harness) bedrocktest.Script {
		return func(h *harness) bedrocktest.Script {
			in := map[string]any{"matter_id": h.matter}
			for k, v := range email {
				in[k] = v
			}
			noResults := func(c bedrocktest.Conversation) bool { return len(c.LastToolResults()) == 0 }
			rules := []bedrocktest.Rule{}
			if first {
				rules = append(rules, bedrocktest.Rule{Name: "summary", When: noResults, Reply: bedrocktest.Reply{ToolUses: []bedrocktest.ToolUse{
					toolUse(bedrocktest.ToolGetMatterSummary, map[string]any{"matter_id": h.matter})}}},
					bedrocktest.Rule{Name: "email", When: bedrocktest.AfterToolResultFrom(bedrocktest.ToolGetMatterSummary, ""), Reply: bedrocktest.Reply{
						ToolUses: []bedrocktest.ToolUse{toolUse(bedrocktest.ToolSendClientEmail, in)}}})
			} else {
				rules = append(rules, bedrocktest.Rule{Name: "email", When: noResults, Reply: bedrocktest.Reply{
					ToolUses: []bedrocktest.ToolUse{toolUse(bedrocktest.ToolSendClientEmail, in)}}})
			}
			return bedrocktest.Script{Rules: append(rules, bedrocktest.Rule{Name: "done", When: bedrocktest.Always, Reply: bedrocktest.Reply{Text: "Done."}})}
		}
	}

	t.Run("no summary first: denied", func(t *testing.T) {
		h := newHarness(t, script(false), options{env: map[string]string{"TOOL_POLICY": "file:" + path}})
		putMatter(t, h, []string{"ridgeway-logistics.example"})
		res := h.start("Tell the client discovery is open.", "")
		if res.State.Status != warrant.RunCompleted {
			t.Fatalf("run %s, want completed with the e-mail denied", res.State.Status)
		}
		if got := statusOf(h.completions(res.State.RunID)); !slices.Equal(got, []string{"send_client_email:denied"}) {
			t.Fatalf("completions %v", got)
		}
		for _, l := range h.ledger(res.State.RunID) {
			if e, ok := l.Event.(*contracts.ToolRequested); ok && !slices.Contains(firedIDs(e.FiredRules), "email.summary_first") {
				t.Fatalf("tool.requested fired %v", firedIDs(e.FiredRules))
			}
		}
		if _, err := reducer.Rederive(h.ledger(res.State.RunID), p); err != nil {
			t.Fatalf("audit: %v", err)
		}
	})

	t.Run("summary first: held, edited, released, sent", func(t *testing.T) {
		h := newHarness(t, script(true), options{env: map[string]string{"TOOL_POLICY": "file:" + path}})
		putMatter(t, h, []string{"ridgeway-logistics.example"})
		res := h.start("Look at the matter, then tell the client.", "")
		if res.State.Status != warrant.RunHeld || res.State.PendingApproval.ToolName != bedrocktest.ToolSendClientEmail {
			t.Fatalf("not held on the e-mail: %+v", res.State)
		}
		if slices.Contains(firedIDs(res.State.PendingApproval.FiredRules), "email.summary_first") {
			t.Fatalf("the rule fired though the summary came first: %v", firedIDs(res.State.PendingApproval.FiredRules))
		}
		edit, _ := json.Marshal(map[string]any{"matter_id": h.matter, "to": bedrocktest.DemoClientAddress, "subject": "Update", "body": "Discovery is open; more soon."})
		if _, err := h.decideEdit(res, warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: edit}); err != nil {
			t.Fatalf("counsel's edit: %v", err)
		}
		res, err := h.resume(res)
		if err != nil {
			t.Fatal(err)
		}
		if res.State.Status != warrant.RunCompleted {
			t.Fatalf("run %s after the resume", res.State.Status)
		}
		if got := statusOf(h.completions(res.State.RunID)); !slices.Equal(got, []string{"get_matter_summary:success", "send_client_email:success"}) {
			t.Fatalf("completions %v", got)
		}
		ds, err := reducer.Rederive(h.ledger(res.State.RunID), p)
		if err != nil {
			t.Fatalf("audit: %v", err)
		}
		var types []contracts.EventType
		for _, d := range ds {
			types = append(types, d.Type)
		}
		want := []contracts.EventType{contracts.TypeToolRequested, contracts.TypeToolRequested, contracts.TypeApprovalDecided, contracts.TypeRunReleased}
		if !slices.Equal(types, want) {
			t.Fatalf("re-derived %v, want %v", types, want)
		}
	})
}
