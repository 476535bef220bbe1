package agent_test

import (
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"

	"github.com/seed-f6d3920e/warrant"
)

// TestLongStreamedAnswer: an answer streamed in 300 fragments (far more than
// one 100-item transaction holds) completes, its fragments coalesced into at
// most agent.MaxDeltaLines turn.delta lines whose text is the answer, and its
// model.usage is counted: the money spent is in the ledger.
func TestLongStreamedAnswer(t *testing.T) {
	text := strings.Repeat("The court granted the motion in part. ", 120)
	script := func(*harness) bedrocktest.Script {
		return bedrocktest.Script{Fallback: &bedrocktest.Reply{Text: text, StreamChunks: 300,
			Usage: bedrocktest.Usage{InputTokens: 900, OutputTokens: 1200}}}
	}
	h := newHarness(t, script, options{stream: true})
	res := h.start("Summarize the ruling at length.", "")
	if res.State.Status != warrant.RunCompleted || res.State.FinalText != text {
		t.Fatalf("state = %+v", res.State)
	}
	lines := h.ledger(res.State.RunID)
	var deltas []string
	usage := 0
	for _, l := range lines {
		switch e := l.Event.(type) {
		case *contracts.TurnDelta:
			deltas = append(deltas, e.Text)
		case *contracts.ModelUsage:
			usage++
		}
	}
	if len(deltas) == 0 || len(deltas) > agent.MaxDeltaLines || strings.Join(deltas, "") != text {
		t.Fatalf("%d turn.delta lines (at most %d) joining to the answer: %v", len(deltas), agent.MaxDeltaLines,
			strings.Join(deltas, "") == text)
	}
	if usage != 1 || res.State.OutputTokens != 1200 || res.State.Cost <= 0 {
		t.Fatalf("usage lines %d, state %+v", usage, res.State)
	}
	folded, err := reducer.ReduceAgentRun(lines)
	if err != nil || folded.Cost != res.State.Cost {
		t.Fatalf("folded %+v, %v", folded, err)
	}
}
