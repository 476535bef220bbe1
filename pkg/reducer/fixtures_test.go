package reducer_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// Fixed ids and clock so the generated ledgers are byte-for-byte reproducible.
const (
	runID      = "5b0c6a2e-7d4f-4c8e-9a51-0b8f2f3c1d01"
	firmID     = "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b"
	matterID   = "7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	userID     = "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f"
	counselID  = "c0c0c0c0-1111-4222-8333-444455556666"
	approvalID = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"
	otherID    = "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e"
	effectID   = "1d2c3b4a-5e6f-4789-8abc-def012345678"
	modelID    = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
)

func fixedChain(run string) *contracts.Chain {
	c := contracts.NewChain(run, firmID)
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 123e6, time.UTC)
	n := 0
	c.Now = func() time.Time { n++; return t0.Add(time.Duration(n) * time.Second) }
	return c
}

func started(costCap string) *contracts.RunStarted {
	return &contracts.RunStarted{AgentKey: "matter_assistant", Mode: contracts.ModeInvoke, ModelID: modelID,
		PromptVersion: "v1", SchemaVersion: contracts.SchemaVersion, CostCapUSD: costCap, MaxTokens: 4096,
		MatterID: matterID, UserID: userID,
		History: []contracts.HistoryMessage{{Role: contracts.RoleUser, Text: "Summarise the matter and file the motion."}}}
}

// call is one tool call as the model, the policy and the runtime record it.
type call struct {
	id, name, tier, action string
	input                  json.RawMessage
}

func (c call) hash() string {
	h, err := contracts.InputHash(c.input)
	if err != nil {
		panic(err) // fixture inputs are literals
	}
	return h
}

func (c call) block() contracts.ContentBlock {
	return contracts.ContentBlock{Type: contracts.BlockToolUse, ToolUseID: c.id, Name: c.name, Input: c.input}
}

func (c call) requested(turn int64) *contracts.ToolRequested {
	return &contracts.ToolRequested{Turn: turn, ToolUseID: c.id, ToolName: c.name, Input: c.input, InputSHA256: c.hash(),
		RiskTier: c.tier, Action: c.action, Reason: "policy reason for " + c.name, MatchedPolicy: "tools." + c.name}
}

func (c call) completed(status, effectRef string, result string) *contracts.ToolCompleted {
	return &contracts.ToolCompleted{ToolUseID: c.id, ToolName: c.name, InputSHA256: c.hash(), Status: status,
		EffectRef: effectRef, Result: json.RawMessage(result)}
}

func (c call) blocked() *contracts.RunBlocked {
	return &contracts.RunBlocked{Approval: contracts.BlockedApproval{ApprovalRequestID: approvalID, ToolUseID: c.id,
		ToolName: c.name, ToolInput: c.input, ToolInputHash: c.hash(), RiskTier: c.tier, Reason: "needs a lawyer's warrant",
		HumanSummary: "File the motion to compel", ExpiresAt: "2026-12-03T10:00:00.123Z"}}
}

var (
	search = call{"tooluse_search", "search_matter_documents", "low", "allow",
		json.RawMessage(`{"matter_id":"` + matterID + `","query":"deposition schedule"}`)}
	summary = call{"tooluse_summary", "get_matter_summary", "low", "allow",
		json.RawMessage(`{"matter_id":"` + matterID + `"}`)}
	filing = call{"tooluse_filing", "file_court_document", "high", "require_approval",
		json.RawMessage(`{"matter_id":"` + matterID + `","court":"SF Superior","title":"Motion to compel"}`)}
	deletion = call{"tooluse_delete", "delete_matter_document", "prohibited", "deny",
		json.RawMessage(`{"matter_id":"` + matterID + `","document_id":"D-17"}`)}
)

func toolTurn(turn int64, text string, calls ...call) *contracts.TurnCompleted {
	blocks := []contracts.ContentBlock{{Type: contracts.BlockText, Text: text}}
	for _, c := range calls {
		blocks = append(blocks, c.block())
	}
	return &contracts.TurnCompleted{Turn: turn, Text: text, StopReason: "tool_use", Content: blocks}
}

func endTurn(turn int64, text string) *contracts.TurnCompleted {
	return &contracts.TurnCompleted{Turn: turn, Text: text, StopReason: "end_turn",
		Content: []contracts.ContentBlock{{Type: contracts.BlockText, Text: text}}}
}

// destroyed is the content.destroyed of the run's matter under the firm's
// retention, with backups holding its key until 2027-01-06.
func destroyed() *contracts.ContentDestroyed {
	return &contracts.ContentDestroyed{MatterID: matterID, Reason: contracts.DestroyedRetention, RetentionDays: 30,
		RetentionSource: contracts.RetentionOfFirm, BackupsUntil: "2027-01-06T10:00:00.123Z"}
}

// The costs are what pkg/pricing charged for these token counts when the
// fixtures were written; the reducer only adds the strings, so the fixtures do
// not change when prices do.
func usage(turn, in, out, cacheRead int64, cost string) *contracts.ModelUsage {
	return &contracts.ModelUsage{Turn: turn, ModelID: modelID, CostUSD: cost,
		Usage: contracts.Usage{InputTokens: in, OutputTokens: out, CacheReadInputTokens: cacheRead}}
}

// scenarios are the golden ledgers: testdata/<name>.ndjson folds to
// testdata/<name>.state.json.
var scenarios = []struct {
	name   string
	events func() []contracts.Event
}{
	{"completed", func() []contracts.Event {
		return []contracts.Event{
			started("1.00"),
			&contracts.TurnDelta{Turn: 1, Text: "Let me look"},
			toolTurn(1, "Let me look at the matter.", search, summary),
			usage(1, 1200, 350, 0, "0.009735"),
			search.requested(1),
			search.completed(contracts.ToolSuccess, "", `{"hits":[{"document_id":"D-3","title":"Deposition schedule"}]}`),
			summary.requested(1),
			summary.completed(contracts.ToolSuccess, "", `{"summary":"Discovery dispute over deposition dates."}`),
			&contracts.TurnDelta{Turn: 2, Text: "The depositions"},
			endTurn(2, "The depositions are set for January."),
			usage(2, 2100, 180, 1000, "0.01023"),
			&contracts.RunCompleted{StopReason: "end_turn", FinalText: "The depositions are set for January."},
		}
	}},
	{"held-released", func() []contracts.Event {
		return []contracts.Event{
			started("1.00"),
			toolTurn(1, "I will file the motion.", filing),
			usage(1, 1200, 350, 0, "0.009735"),
			filing.requested(1),
			filing.blocked(),
			&contracts.ApprovalDecided{ApprovalRequestID: approvalID, Decision: warrant.DecisionApproved,
				DecidedBy: counselID, ToolInputHash: filing.hash(), Note: "Approved as drafted.",
				RequestedBy: userID, Separation: contracts.SeparationEnforced, DecidedAs: contracts.RoleCounsel},
			&contracts.RunReleased{ApprovalRequestID: approvalID, Decision: warrant.DecisionApproved, EffectRef: effectID},
			filing.completed(contracts.ToolSuccess, effectID, `{"filing_id":"F-1"}`),
			endTurn(2, "The motion is filed."),
			usage(2, 900, 120, 2400, "0.005742"),
			&contracts.RunCompleted{StopReason: "end_turn", FinalText: "The motion is filed."},
		}
	}},
	{"held-declined", func() []contracts.Event {
		return []contracts.Event{
			started("1.00"),
			toolTurn(1, "I will file the motion.", filing),
			usage(1, 1200, 350, 0, "0.009735"),
			filing.requested(1),
			filing.blocked(),
			&contracts.ApprovalDecided{ApprovalRequestID: approvalID, Decision: warrant.DecisionDenied,
				DecidedBy: counselID, ToolInputHash: filing.hash(), RequestedBy: userID, Separation: contracts.SeparationEnforced,
				DecidedAs: contracts.RoleCounsel},
			&contracts.RunReleased{ApprovalRequestID: approvalID, Decision: warrant.DecisionDenied},
			filing.completed(contracts.ToolDeclined, "", `{"error":"counsel declined the filing"}`),
			endTurn(2, "Counsel declined; nothing was filed."),
			usage(2, 900, 120, 2400, "0.005742"),
			&contracts.RunCompleted{StopReason: "end_turn", FinalText: "Counsel declined; nothing was filed."},
		}
	}},
	{"failed", func() []contracts.Event {
		return []contracts.Event{
			started("1.00"),
			toolTurn(1, "I will remove the duplicate.", deletion),
			usage(1, 1200, 350, 0, "0.009735"),
			deletion.requested(1),
			deletion.completed(contracts.ToolDenied, "", `{"error":"the risk policy prohibits this tool"}`),
			&contracts.RunFailed{ErrorClass: "ThrottlingException", ErrorMessage: "model call throttled",
				FailureStage: "model_call", FailureKind: "model_throttled", Failure: json.RawMessage(`{"failure_kind":"model_throttled"}`)},
		}
	}},
	{"destroyed-then-reconciled", func() []contracts.Event {
		return []contracts.Event{
			started("1.00"),
			toolTurn(1, "I will file the motion.", filing),
			usage(1, 1200, 350, 0, "0.009735"),
			filing.requested(1),
			filing.completed(contracts.ToolUnknown, effectID, `{"error":"the filing's outcome was lost with its worker"}`),
			&contracts.RunFailed{ErrorClass: "EffectOutcomeUnknown", ErrorMessage: "the filing's outcome is unknown",
				FailureStage: "sweep", FailureKind: "effect_outcome_unknown", Failure: json.RawMessage(`{"failure_kind":"effect_outcome_unknown"}`)},
			destroyed(),
			&contracts.EffectReconciled{EffectRef: effectID, ToolName: filing.name, InputSHA256: filing.hash(), Outcome: "executed",
				ExternalRef: "F-1", ReconciledBy: counselID, RequestedBy: userID, Separation: contracts.SeparationEnforced},
		}
	}},
	{"aborted-by-cap", func() []contracts.Event {
		return []contracts.Event{
			started("0.015"),
			toolTurn(1, "Let me look at the matter.", search),
			usage(1, 1200, 350, 0, "0.009735"),
			search.requested(1),
			search.completed(contracts.ToolSuccess, "", `{"hits":[]}`),
			endTurn(2, "Nothing on file yet."),
			usage(2, 2100, 180, 1000, "0.01023"),
		}
	}},
}

func buildLines(t testing.TB, c *contracts.Chain, events ...contracts.Event) []contracts.Line {
	t.Helper()
	var lines []contracts.Line
	for _, e := range events {
		l, err := c.Append(e)
		if err != nil {
			t.Fatalf("append %s: %v", e.EventType(), err)
		}
		lines = append(lines, l)
	}
	return lines
}

func ndjson(lines []contracts.Line) []byte {
	var b []byte
	for _, l := range lines {
		b = append(b, l.Raw...)
		b = append(b, '\n')
	}
	return b
}
