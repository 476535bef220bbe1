package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// recordsCatalog is a firm's records system whose schemas leave the
// matter's type open (a record or an id, as some servers do): a search
// carrying the matter at /matter/id and a note carrying it at /matter.
// Only the matter wall stands between such a schema and a call that
// escapes it.
func recordsCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	schema := func(field string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":{"matter":{"description":"The matter: its record or its id."},"` +
			field + `":{"type":"string","minLength":1}},"required":["` + field + `"]}`)
	}
	tool := func(field, pointer, remote string) map[string]any {
		return map[string]any{"description": "Records " + remote + ".", "input_schema": schema(field),
			"summary": "Records " + remote + ".", "matter_field": pointer, "class": "read", "timeout": "5s",
			"target": map[string]any{"kind": "mcp", "server": "records", "tool": remote, "schema_sha256": mustHash(t, schema(field))}}
	}
	doc, _ := json.Marshal(map[string]any{
		"servers": map[string]any{"records": map[string]any{"kind": "mcp", "url": "http://127.0.0.1:9/mcp", "auth": map[string]any{"kind": "none"}}},
		"tools": map[string]any{
			"records_search": tool("query", "/matter/id", "search"),
			"records_note":   tool("note", "/matter", "note"),
		},
	})
	c, err := catalog.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Issue 25, G (third part): the matter wall fails closed. A call whose
// matter field cannot hold the run's matter (a nested field's parent made
// a string, an array or null; a matter that is not a string at the leaf)
// is denied and the model told why; nothing reaches the system and nothing
// is claimed. A matter field left out is filled from the run, a parent
// object is filled in, and the run's own matter passes.
func TestMatterWallFailsClosed(t *testing.T) {
	const deny, other = agent.ReasonMatterFieldInvalid, agent.ReasonOtherMatter
	cases := []struct {
		tool, input string // input: "M" stands for the run's matter
		sent        string // the input that reaches the system ("": none)
		reason      string // the denial the model is given
	}{
		{"records_search", `{"matter":"x","query":"q"}`, "", deny},
		{"records_search", `{"matter":"M","query":"q"}`, "", deny},
		{"records_search", `{"matter":["x"],"query":"q"}`, "", deny},
		{"records_search", `{"matter":null,"query":"q"}`, "", deny},
		{"records_search", `{"matter":7,"query":"q"}`, "", deny},
		{"records_search", `{"matter":{"id":7},"query":"q"}`, "", deny},
		{"records_search", `{"matter":{"id":{"id":"M"}},"query":"q"}`, "", deny},
		{"records_search", `{"matter":{"id":null},"query":"q"}`, "", deny},
		{"records_search", `{"matter":{"id":"x"},"query":"q"}`, "", other},
		{"records_search", `{"query":"q"}`, `{"matter":{"id":"M"},"query":"q"}`, ""},
		{"records_search", `{"matter":{"name":"Acme"},"query":"q"}`, `{"matter":{"id":"M","name":"Acme"},"query":"q"}`, ""},
		{"records_search", `{"matter":{"id":"M"},"query":"q"}`, `{"matter":{"id":"M"},"query":"q"}`, ""},
		{"records_note", `{"matter":7,"note":"n"}`, "", deny},
		{"records_note", `{"matter":{"id":"M"},"note":"n"}`, "", deny},
		{"records_note", `{"matter":["M"],"note":"n"}`, "", deny},
		{"records_note", `{"matter":null,"note":"n"}`, "", deny},
		{"records_note", `{"matter":true,"note":"n"}`, "", deny},
		{"records_note", `{"matter":"x","note":"n"}`, "", other},
		{"records_note", `{"note":"n"}`, `{"matter":"M","note":"n"}`, ""},
	}
	label := func(i int) string { return fmt.Sprintf("[case %02d]", i) }
	noToolResults := func(c bedrocktest.Conversation) bool { return len(c.LastToolResults()) == 0 }
	h := newHarness(t, func(h *harness) bedrocktest.Script {
		rules := []bedrocktest.Rule{{Name: "done", When: bedrocktest.AfterToolResult(""), Reply: bedrocktest.Reply{Text: "Done."}}}
		for i, c := range cases {
			rules = append(rules, bedrocktest.Rule{Name: label(i), When: bedrocktest.And(bedrocktest.LastUserTextContains(label(i)), noToolResults),
				Reply: bedrocktest.Reply{ToolUses: []bedrocktest.ToolUse{{Name: c.tool, Input: json.RawMessage(strings.ReplaceAll(c.input, `"M"`, `"`+h.matter+`"`))}}}})
		}
		return bedrocktest.Script{Rules: rules}
	}, options{})
	target := &fakeTarget{answer: func(agent.TargetCall, int) (agent.TargetResult, error) {
		return agent.TargetResult{Content: json.RawMessage(`{"ok":true}`)}, nil
	}}
	cat := recordsCatalog(t)
	policy, err := toolpolicy.LoadDocument([]byte(`{"version":"records-1","default":{"tier":"prohibited","reason":"unlisted"},
		"tools":{"records_search":{"tier":"low","reason":"reads","replayable":true},"records_note":{"tier":"low","reason":"reads","replayable":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var set []agent.Tool
	for _, name := range cat.Names() {
		set = append(set, agent.Tool{Tool: cat.Tools[name], System: target, Server: "records"})
	}
	def := agent.Definition{Key: "records_assistant", SystemPrompt: "You keep records.", PromptVersion: "records/1", Tools: cat.Names()}
	brain, err := agent.New(h.store, h.model, policy, h.cfg.Prices, failure.NewLogger(h.logs),
		agent.Config{ModelID: testModel, Keys: h.dataKeys, FirmBudget: h.cfg.DefaultFirmBudget(), Heads: h.keys}, set, def)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		t.Run(label(i)+" "+c.tool+" "+c.input, func(t *testing.T) {
			inv := h.invoke(newID(), "Go. "+label(i))
			inv.AgentKey = def.Key
			res, err := brain.Run(context.Background(), inv, agent.StartOptions{CostCapUSD: "1.00"})
			if err != nil || res.State.Status != warrant.RunCompleted {
				t.Fatalf("run %+v %v", res.State, err)
			}
			runID := res.State.RunID
			var sent []string
			target.mu.Lock()
			for _, call := range target.calls {
				if call.RunID == runID {
					sent = append(sent, string(call.Input))
				}
			}
			target.mu.Unlock()
			tcs := h.completions(runID)
			if len(tcs) != 1 {
				t.Fatalf("%d answers: %v", len(tcs), statusOf(tcs))
			}
			if c.sent != "" {
				if want := strings.ReplaceAll(c.sent, `"M"`, `"`+h.matter+`"`); len(sent) != 1 || sent[0] != want || tcs[0].Status != contracts.ToolSuccess {
					t.Fatalf("sent %q (answer %s), want %s", sent, tcs[0].Status, want)
				}
				return
			}
			if len(sent) != 0 || tcs[0].Status != contracts.ToolDenied || resultMessage(tcs[0]) != c.reason {
				t.Fatalf("sent %q; the answer %s %q, want denied %q", sent, tcs[0].Status, resultMessage(tcs[0]), c.reason)
			}
			if claim, err := h.store.LatestEffect(context.Background(), h.firm, runID, c.tool, tcs[0].InputSHA256); err != nil || claim != nil {
				t.Fatalf("a claim of the denied call: %+v %v", claim, err)
			}
			told := false
			for _, r := range h.fake.Requests() {
				told = told || (strings.Contains(r.LastUserText(), label(i)) && lastRequestHasToolResult(r, "error", c.reason))
			}
			if !told {
				t.Fatalf("the model was not told %q", c.reason)
			}
		})
	}
}

// Counsel's edit is held to the catalog's matter wall as the model's call
// is: an edit that names another matter, or whose matter field cannot hold
// the run's, is denied (the policy of this catalog has no matter rule of
// its own), and one that leaves the matter out is refused, since the run's
// matter cannot be filled in without changing the bytes counsel signs.
func TestCounselEditHeldToTheMatterWall(t *testing.T) {
	h := newHarness(t, func(h *harness) bedrocktest.Script { return bedrocktest.Script{} }, options{})
	cat := recordsCatalog(t)
	policy, err := toolpolicy.LoadDocument([]byte(`{"version":"records-1","default":{"tier":"prohibited","reason":"unlisted"},
		"tools":{"records_search":{"tier":"high","reason":"asks counsel"},"records_note":{"tier":"high","reason":"asks counsel"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var set []agent.Tool
	for _, name := range cat.Names() {
		set = append(set, agent.Tool{Tool: cat.Tools[name], System: &fakeTarget{}, Server: "records"})
	}
	def := agent.Definition{Key: "records_assistant", SystemPrompt: "You keep records.", PromptVersion: "records/1", Tools: cat.Names()}
	brain, err := agent.New(h.store, h.model, policy, h.cfg.Prices, failure.NewLogger(h.logs),
		agent.Config{ModelID: testModel, Keys: h.dataKeys, FirmBudget: h.cfg.DefaultFirmBudget(), Heads: h.keys}, set, def)
	if err != nil {
		t.Fatal(err)
	}
	run := reducer.RunState{FirmID: h.firm, MatterID: h.matter, AgentKey: def.Key, UserID: newID()}
	for _, c := range []struct {
		tool, edit string
		kind       failure.Kind // "": accepted
	}{
		{"records_note", `{"matter":"M","note":"n"}`, ""},
		{"records_search", `{"matter":{"id":"M"},"query":"q"}`, ""},
		{"records_note", `{"matter":"other","note":"n"}`, failure.KindPolicyDenied},
		{"records_search", `{"matter":{"id":"other"},"query":"q"}`, failure.KindPolicyDenied},
		{"records_note", `{"matter":7,"note":"n"}`, failure.KindPolicyDenied},
		{"records_search", `{"matter":"M","query":"q"}`, failure.KindPolicyDenied},
		{"records_note", `{"note":"n"}`, failure.KindInvalidRequest},
		{"records_search", `{"query":"q"}`, failure.KindInvalidRequest},
	} {
		edit := json.RawMessage(strings.ReplaceAll(c.edit, `"M"`, `"`+h.matter+`"`))
		_, err := brain.CheckEdit(context.Background(), run, []toolpolicy.Step{}, c.tool, edit)
		if k, _, _ := failure.Classify(err); (err == nil) != (c.kind == "") || (err != nil && k != c.kind) {
			t.Errorf("%s %s: %v, want kind %q", c.tool, c.edit, err, c.kind)
		}
	}
}
