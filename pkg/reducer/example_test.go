package reducer_test

import (
	"fmt"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

func ExampleReduceAgentRun() {
	chain := contracts.NewChain("5b0c6a2e-7d4f-4c8e-9a51-0b8f2f3c1d01", "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b")
	chain.Now = func() time.Time { return time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC) }
	var lines []contracts.Line
	for _, e := range []contracts.Event{
		&contracts.RunStarted{AgentKey: "matter_assistant", Mode: contracts.ModeInvoke,
			ModelID: "us.anthropic.claude-sonnet-4-5-20250929-v1:0", PromptVersion: "v1",
			SchemaVersion: contracts.SchemaVersion, CostCapUSD: "1.00", MaxTokens: 1024,
			MatterID: "7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", UserID: "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f"},
		&contracts.TurnCompleted{Turn: 1, Text: "The hearing is on 5 January.", StopReason: "end_turn"},
		&contracts.ModelUsage{Turn: 1, ModelID: "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
			Usage: contracts.Usage{InputTokens: 1200, OutputTokens: 350}, CostUSD: "0.009735"},
		&contracts.RunCompleted{StopReason: "end_turn", FinalText: "The hearing is on 5 January."},
	} {
		l, err := chain.Append(e)
		if err != nil {
			fmt.Println(err)
			return
		}
		lines = append(lines, l)
	}

	state, err := reducer.ReduceAgentRun(lines)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(state.Status, state.Cost, "of", state.CostCap)
	// Output: completed 0.009735 of 1.00
}
