package dynamo_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"

	"github.com/seed-f6d3920e/warrant"
)

// BenchmarkGovernedToolCall: claim + tool.requested, then completion +
// tool.completed, on minidyn. Reports round trips per call.
func BenchmarkGovernedToolCall(b *testing.B) {
	ep := dynamotest.Minidyn(b)
	store := dynamo.New(ep.Client, dynamotest.NewTable(b, ep))
	ctx := context.Background()
	firm, runID := id(), id()
	chain := contracts.NewChain(runID, firm)
	first, err := chain.Append(&contracts.RunStarted{AgentKey: "a", Mode: "invoke", ModelID: "m", PromptVersion: "p",
		SchemaVersion: "1", CostCapUSD: "1.00", MaxTokens: 1, MatterID: id(), UserID: id(), History: []contracts.HistoryMessage{}})
	must(b, err)
	must(b, store.CreateRun(ctx, warrant.Run{FirmID: firm, RunID: runID}, first))
	calls := make([]toolCall, b.N)
	for i := range calls {
		calls[i] = newToolCall(b, "send_email")
	}
	ep.Counter.Reset()
	b.ResetTimer()
	for i := range b.N {
		tc := calls[i]
		ref := id()
		req, _ := chain.Append(requested(tc, "allow"))
		claimed, _, err := store.ClaimToolEffectOnce(ctx, warrant.ClaimInput{FirmID: firm, RunID: runID, ToolName: tc.name,
			InputSHA256: tc.hash, EffectRef: ref, Owner: "bench", LeaseUntil: time.Now().Add(time.Minute)}, req)
		if err != nil || !claimed {
			b.Fatal(claimed, err)
		}
		done, _ := chain.Append(completed(tc, ref))
		must(b, store.CompleteEffect(ctx, firm, runID, warrant.EffectKey{ToolName: tc.name, InputSHA256: tc.hash}, "bench",
			warrant.Completion{State: warrant.ClaimCompleted, ToolStatus: "success"}, done))
	}
	b.StopTimer()
	b.ReportMetric(float64(ep.Counter.Count())/float64(b.N), "round-trips/op")
}
