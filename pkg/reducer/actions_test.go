package reducer_test

import (
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// Issue 27 item 1: what became of a run's actions is read from the ledger,
// never from the model's words. A warranted filing whose system was down
// ended the run "completed" with the model saying it was filed: the state
// says the action failed, unreachable, and counts it not done; a declined
// one, one the run ended before it ran (the warrant expired; the tool
// changed at dispatch), a policy denial and a repeat answered from its
// record are each what they are.
func TestActionsSayWhatHappened(t *testing.T) {
	approved := func() []contracts.Event {
		return []contracts.Event{
			started("1.00"),
			toolTurn(1, "I will file the motion.", filing),
			usage(1, 1200, 350, 0, "0.009735"),
			filing.requested(1),
			filing.blocked(),
			&contracts.ApprovalDecided{ApprovalRequestID: approvalID, Decision: warrant.DecisionApproved,
				DecidedBy: counselID, ToolInputHash: filing.hash(), RequestedBy: userID, Separation: contracts.SeparationEnforced,
				DecidedAs: contracts.RoleCounsel},
			&contracts.RunReleased{ApprovalRequestID: approvalID, Decision: warrant.DecisionApproved, EffectRef: effectID},
		}
	}
	failedFiling := filing.completed(contracts.ToolError, effectID, `{"error":"tool failed"}`)
	failedFiling.ErrorKind = contracts.ToolErrUnreachable
	repeat := filing.completed(contracts.ToolSuccess, effectID, `{"filing_id":"F-1"}`)
	repeat.ToolUseID, repeat.Reused = "tooluse_again", true
	for _, tc := range []struct {
		name    string
		events  []contracts.Event
		want    reducer.Action
		notDone int
	}{
		{"failed, unreachable, under a completed run", append(approved(), failedFiling, endTurn(2, "The motion has been filed."),
			usage(2, 900, 120, 0, "0.005742"), &contracts.RunCompleted{StopReason: "end_turn", FinalText: "The motion has been filed."}),
			reducer.Action{ToolUseID: filing.id, ToolName: filing.name, Seq: 8, Outcome: reducer.ActionFailed, Why: contracts.ToolErrUnreachable,
				EffectRef: effectID, ApprovalID: approvalID}, 1},
		{"done, then a repeat answered from its record", append(approved(), filing.completed(contracts.ToolSuccess, effectID, `{"filing_id":"F-1"}`),
			repeat, endTurn(2, "Filed."), usage(2, 900, 120, 0, "0.005742"), &contracts.RunCompleted{StopReason: "end_turn", FinalText: "Filed."}),
			reducer.Action{ToolUseID: filing.id, ToolName: filing.name, Seq: 8, Outcome: reducer.ActionDone, EffectRef: effectID, ApprovalID: approvalID}, 0},
		{"the warrant expired", []contracts.Event{started("1.00"), toolTurn(1, "I will file the motion.", filing), usage(1, 1200, 350, 0, "0.009735"),
			filing.requested(1), filing.blocked(),
			&contracts.RunFailed{FailureKind: string(failure.KindWarrantExpired), FailureStage: string(failure.StageSweep)}},
			reducer.Action{ToolUseID: filing.id, ToolName: filing.name, Seq: 6, Outcome: reducer.ActionNotRun, Why: string(failure.KindWarrantExpired),
				ApprovalID: approvalID}, 1},
		{"refused at dispatch: the policy changed", append(approved(),
			&contracts.RunFailed{FailureKind: string(failure.KindPolicyChanged), FailureStage: string(failure.StageToolExecute)}),
			reducer.Action{ToolUseID: filing.id, ToolName: filing.name, Seq: 8, Outcome: reducer.ActionNotRun, Why: string(failure.KindPolicyChanged),
				ApprovalID: approvalID}, 1},
		{"denied by the policy", []contracts.Event{started("1.00"), toolTurn(1, "Deleting.", deletion), usage(1, 1200, 350, 0, "0.009735"),
			deletion.requested(1), deletion.completed(contracts.ToolDenied, "", `{"error":"denied"}`), endTurn(2, "Deleted."),
			usage(2, 900, 120, 0, "0.005742"), &contracts.RunCompleted{StopReason: "end_turn", FinalText: "Deleted."}},
			reducer.Action{ToolUseID: deletion.id, ToolName: deletion.name, Seq: 5, Outcome: reducer.ActionDenied}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := reducer.ReduceAgentRun(buildLines(t, fixedChain(runID), tc.events...))
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Actions) != 1 || st.Actions[0] != tc.want || st.NotDone() != tc.notDone {
				t.Fatalf("actions %+v (not done %d), want [%+v] (not done %d)", st.Actions, st.NotDone(), tc.want, tc.notDone)
			}
		})
	}
	// A read that ran is not an action.
	st, err := reducer.ReduceAgentRun(readLines(t))
	if err != nil || len(st.Actions) != 0 {
		t.Fatalf("a run of reads: %+v %v", st.Actions, err)
	}
}

func readLines(t *testing.T) []contracts.Line {
	for _, sc := range scenarios {
		if sc.name == "completed" {
			return buildLines(t, fixedChain(runID), sc.events()...)
		}
	}
	t.Fatal("no completed scenario")
	return nil
}
