package evidence_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
)

// Issue 25, item 4: an effect's receipt carries the SHA-256 of the metadata
// its decision was made on (as tool.requested records it), so the signed
// evidence names what the decision weighed beyond the input, and a
// rewritten record of it no longer matches the receipt.
func TestReceiptCarriesTheDecisionsMetadataHash(t *testing.T) {
	const firm, run, matter = "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b", "5b0c6a2e-7d4f-4c8e-9a51-0b8f2f3c1d01", "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"
	input := json.RawMessage(`{"matter_id":"` + matter + `","query":"motion"}`)
	hash, _ := contracts.InputHash(input)
	meta, metaSum, err := contracts.RecordMetadata(contracts.PolicyMetadata{FirmID: firm, MatterID: matter, AgentKey: "matter_assistant",
		FirmDomains: []string{"smith-law.example"}, ClientDomains: []string{"ridgeway-logistics.example"}})
	if err != nil {
		t.Fatal(err)
	}
	c := contracts.NewChain(run, firm)
	c.Now = func() time.Time { return time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC) }
	var lines []contracts.Line
	for _, e := range []contracts.Event{
		&contracts.RunStarted{AgentKey: "matter_assistant", Mode: contracts.ModeInvoke, ModelID: "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
			PromptVersion: "v1", SchemaVersion: contracts.SchemaVersion, CostCapUSD: "1.00", MaxTokens: 1024, MatterID: matter,
			UserID: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", History: []contracts.HistoryMessage{}},
		&contracts.ToolRequested{Turn: 1, ToolUseID: "t1", ToolName: "search_matter_documents", Input: input, InputSHA256: hash,
			RiskTier: "low", Action: "allow", Reason: "read", MatchedPolicy: "tools.search_matter_documents", PolicyVersion: "2026-12-03",
			PolicyMetadata: meta, PolicyMetadataSHA256: metaSum},
		&contracts.ToolCompleted{ToolUseID: "t1", ToolName: "search_matter_documents", InputSHA256: hash, Status: contracts.ToolSuccess,
			EffectRef: "1d2c3b4a-5e6f-4789-8abc-def012345678", Result: json.RawMessage(`{"hits":[]}`)},
	} {
		l, err := c.Append(e)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	rs, err := evidence.Derive(lines) // the run's start, then the effect
	if err != nil || len(rs) != 2 || rs[1].Kind != evidence.KindEffect {
		t.Fatalf("derive: %d receipts, %v", len(rs), err)
	}
	b, _ := json.Marshal(rs[1])
	var got map[string]any
	_ = json.Unmarshal(b, &got)
	if got["policy_metadata_sha256"] != metaSum {
		t.Fatalf("the effect's receipt names no policy_metadata_sha256 %s: %s", metaSum, b)
	}
}
