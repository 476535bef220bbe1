package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// Issue 25, item 5: an agent's tool list is enforced. The model of an
// agent that lists only get_matter_summary calls catalog tools the policy
// allows (a read, and a medium write that runs without a warrant): each
// call is denied with ReasonToolUnavailable and the model is told so;
// nothing executes and no effect is claimed. (Without the list check in
// toolCall both would run.)
func TestToolTheAgentDoesNotListIsDenied(t *testing.T) {
	for _, tool := range []string{"search_matter_documents", "draft_document"} {
		t.Run(tool, func(t *testing.T) {
			h := newHarness(t, func(h *harness) bedrocktest.Script {
				raw, _ := json.Marshal(map[string]any{"matter_id": h.matter, "title": "Letter", "body": "Dear client,"})
				if tool == "search_matter_documents" {
					raw, _ = json.Marshal(map[string]any{"matter_id": h.matter, "query": "motion"})
				}
				return bedrocktest.Script{Rules: []bedrocktest.Rule{
					{Name: "done", When: bedrocktest.AfterToolResult(""), Reply: bedrocktest.Reply{Text: "Done."}},
					{Name: "unlisted", When: bedrocktest.Always, Reply: bedrocktest.Reply{ToolUses: []bedrocktest.ToolUse{{Name: tool, Input: raw}}}},
				}}
			}, options{})
			var executed atomic.Int32
			set := h.reference()
			for i := range set {
				if set[i].Name == tool {
					run := set[i].Execute
					set[i].Execute = func(ctx context.Context, in json.RawMessage, ref string) (json.RawMessage, error) {
						executed.Add(1)
						return run(ctx, in, ref)
					}
				}
			}
			narrow := agent.MatterAssistant
			narrow.Key, narrow.Tools = "summary_only", []string{"get_matter_summary"}
			policy, _ := toolpolicy.Embedded()
			brain, err := agent.New(h.store, h.model, policy, h.cfg.Prices, failure.NewLogger(h.logs),
				agent.Config{ModelID: testModel, Keys: h.dataKeys, FirmBudget: h.cfg.DefaultFirmBudget(), Heads: h.keys}, set, narrow)
			if err != nil {
				t.Fatal(err)
			}
			inv := h.invoke(newID(), "Look into the motion.")
			inv.AgentKey = narrow.Key
			res, err := brain.Run(context.Background(), inv, agent.StartOptions{CostCapUSD: "1.00"})
			if err != nil || res.State.Status != warrant.RunCompleted {
				t.Fatalf("run %+v %v", res.State, err)
			}
			runID := res.State.RunID
			tcs := h.completions(runID)
			if len(tcs) != 1 || tcs[0].ToolName != tool || tcs[0].Status != contracts.ToolDenied || resultMessage(tcs[0]) != agent.ReasonToolUnavailable {
				t.Fatalf("the call's answer: %v %+v", statusOf(tcs), tcs)
			}
			if n := executed.Load(); n != 0 {
				t.Fatalf("%s executed %d time(s)", tool, n)
			}
			if c, err := h.store.LatestEffect(context.Background(), h.firm, runID, tool, tcs[0].InputSHA256); err != nil || c != nil {
				t.Fatalf("a claim of the denied call: %+v %v", c, err)
			}
			if n := len(h.outbound(runID)); n != 0 {
				t.Fatalf("%d effects", n)
			}
			reqs := h.fake.Requests()
			if slices.Contains(reqs[0].ToolNames, tool) {
				t.Fatalf("the model was offered %s: %v", tool, reqs[0].ToolNames)
			}
			if !lastRequestHasToolResult(reqs[len(reqs)-1], "error", agent.ReasonToolUnavailable) {
				t.Fatal("the model was not told the tool is unavailable")
			}
		})
	}
}
