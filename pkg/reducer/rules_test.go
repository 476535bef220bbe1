package reducer_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"

	"github.com/seed-f6d3920e/warrant"
)

// TestRuleViolations folds a valid prefix, then offers one bad line. Apply must
// refuse it with the named rule and sentinel and hand back the state unchanged.
func TestRuleViolations(t *testing.T) {
	completed := []contracts.Event{started("1.00"), &contracts.RunCompleted{StopReason: "end_turn", FinalText: "Done."}}
	held := []contracts.Event{started("1.00"), toolTurn(1, "Filing.", filing), filing.requested(1), filing.blocked()}
	running := []contracts.Event{started("1.00")}
	released := &contracts.RunReleased{ApprovalRequestID: approvalID, Decision: warrant.DecisionApproved, EffectRef: effectID}
	decided := &contracts.ApprovalDecided{ApprovalRequestID: approvalID, Decision: warrant.DecisionApproved,
		DecidedBy: counselID, ToolInputHash: filing.hash()}

	tests := []struct {
		name   string
		prefix []contracts.Event
		// bad makes the offending line from the chain the prefix was built on.
		bad     func(t *testing.T, c *contracts.Chain) contracts.Line
		rule    string
		wantErr error // matched with errors.Is; nil means a *contracts.LinkError
	}{
		{"seq gap", running, func(t *testing.T, c *contracts.Chain) contracts.Line {
			c.Seq++
			return appendOne(t, c, toolTurn(1, "x", search))
		}, reducer.RuleLink, nil},
		{"seq replayed", []contracts.Event{started("1.00"), endTurn(1, "x")}, func(t *testing.T, c *contracts.Chain) contracts.Line {
			c.Seq--
			return appendOne(t, c, endTurn(1, "x"))
		}, reducer.RuleLink, nil},
		{"broken prev_hash", running, func(t *testing.T, c *contracts.Chain) contracts.Line {
			c.Head = strings.Repeat("ab", 32)
			return appendOne(t, c, endTurn(1, "x"))
		}, reducer.RuleLink, nil},
		{"line of another run", running, func(t *testing.T, c *contracts.Chain) contracts.Line {
			c.RunID = otherID
			return appendOne(t, c, endTurn(1, "x"))
		}, reducer.RuleLink, nil},
		{"first line not run.started", nil, func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, endTurn(1, "x"))
		}, reducer.RuleFirstLine, reducer.ErrNotStarted},
		{"second run.started", running, func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, started("1.00"))
		}, reducer.RuleFirstLine, reducer.ErrRestarted},
		{"cost cap finer than a nano-dollar", nil, func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, started("0.0000000001"))
		}, reducer.RuleMoney, nil},
		{"event after completed", completed, func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, endTurn(2, "more"))
		}, reducer.RuleTerminal, reducer.ErrTerminal},
		{"run.failed after completed", completed, func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, &contracts.RunFailed{FailureKind: "internal", FailureStage: "invoke"})
		}, reducer.RuleTerminal, reducer.ErrTerminal},
		{"event after failed", []contracts.Event{started("1.00"), &contracts.RunFailed{FailureKind: "internal", FailureStage: "invoke"}},
			func(t *testing.T, c *contracts.Chain) contracts.Line {
				return appendOne(t, c, &contracts.RunCompleted{StopReason: "end_turn"})
			}, reducer.RuleTerminal, reducer.ErrTerminal},
		{"event after aborted", []contracts.Event{started("0.001"), usage(1, 1200, 350, 0, "0.009735")},
			func(t *testing.T, c *contracts.Chain) contracts.Line {
				return appendOne(t, c, usage(2, 1, 1, 0, "0.000001"))
			}, reducer.RuleTerminal, reducer.ErrTerminal},
		{"release naming another approval", held, func(t *testing.T, c *contracts.Chain) contracts.Line {
			r := *released
			r.ApprovalRequestID = otherID
			return appendOne(t, c, &r)
		}, reducer.RuleApproval, reducer.ErrWrongApproval},
		{"decision naming another approval", held, func(t *testing.T, c *contracts.Chain) contracts.Line {
			d := *decided
			d.ApprovalRequestID = otherID
			return appendOne(t, c, &d)
		}, reducer.RuleApproval, reducer.ErrWrongApproval},
		{"decision over another input", held, func(t *testing.T, c *contracts.Chain) contracts.Line {
			d := *decided
			d.ToolInputHash = search.hash()
			return appendOne(t, c, &d)
		}, reducer.RuleApproval, reducer.ErrWrongApproval},
		{"self-approval under separation of duties", held, func(t *testing.T, c *contracts.Chain) contracts.Line {
			d := *decided
			d.DecidedBy = userID
			return appendOne(t, c, &d)
		}, reducer.RuleApproval, reducer.ErrSelfApproval},
		{"requested_by is not the run's user", held, func(t *testing.T, c *contracts.Chain) contracts.Line {
			d := *decided
			d.RequestedBy = otherID
			return appendOne(t, c, &d)
		}, reducer.RuleApproval, reducer.ErrWrongApproval},
		{"self-reconciliation under separation of duties", []contracts.Event{started("1.00"), toolTurn(1, "x", filing),
			filing.requested(1), filing.completed(contracts.ToolUnknown, effectID, `{"error":"outcome unknown"}`),
			&contracts.RunFailed{FailureKind: "effect_outcome_unknown", FailureStage: "sweep"}}, func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, &contracts.EffectReconciled{EffectRef: effectID, ToolName: filing.name, InputSHA256: filing.hash(),
				Outcome: "not_executed", ReconciledBy: userID})
		}, reducer.RuleApproval, reducer.ErrSelfApproval},
		{"release before counsel decided", held, func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, released)
		}, reducer.RuleApproval, reducer.ErrNotDecided},
		{"release under another decision", append(append([]contracts.Event{}, held...), decided), func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, &contracts.RunReleased{ApprovalRequestID: approvalID, Decision: warrant.DecisionDenied})
		}, reducer.RuleApproval, reducer.ErrWrongApproval},
		{"second decision", append(append([]contracts.Event{}, held...), decided), func(t *testing.T, c *contracts.Chain) contracts.Line {
			d := *decided
			d.Decision = warrant.DecisionDenied
			return appendOne(t, c, &d)
		}, reducer.RuleApproval, reducer.ErrDecided},
		{"release while running", running, func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, released)
		}, reducer.RuleLifecycle, reducer.ErrNotHeld},
		{"decision while running", running, func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, decided)
		}, reducer.RuleLifecycle, reducer.ErrNotHeld},
		{"second block while held", held, func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, filing.blocked())
		}, reducer.RuleLifecycle, reducer.ErrHeld},
		{"tool.requested while held", held, func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, search.requested(1))
		}, reducer.RuleLifecycle, reducer.ErrHeld},
		{"tool.completed while held", held, func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, filing.completed(contracts.ToolSuccess, effectID, `{}`))
		}, reducer.RuleLifecycle, reducer.ErrHeld},
		{"model.usage while held", held, func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, usage(2, 1, 1, 0, "0.00002"))
		}, reducer.RuleLifecycle, reducer.ErrHeld},
		{"turn.delta while held", held, func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, &contracts.TurnDelta{Turn: 2, Text: "x"})
		}, reducer.RuleLifecycle, reducer.ErrHeld},
		{"turn.completed while held", held, func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, endTurn(2, "x"))
		}, reducer.RuleLifecycle, reducer.ErrHeld},
		{"run.completed while held", held, func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, &contracts.RunCompleted{StopReason: "end_turn"})
		}, reducer.RuleLifecycle, reducer.ErrHeld},
		{"content.destroyed while running", running, func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, destroyed())
		}, reducer.RuleLifecycle, reducer.ErrNotEnded},
		{"content.destroyed while held", held, func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, destroyed())
		}, reducer.RuleLifecycle, reducer.ErrNotEnded},
		{"content.destroyed twice", append(append([]contracts.Event{}, completed...), destroyed()), func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, destroyed())
		}, reducer.RuleLifecycle, reducer.ErrDestroyed},
		{"content.destroyed of another matter", completed, func(t *testing.T, c *contracts.Chain) contracts.Line {
			d := destroyed()
			d.MatterID = otherID
			return appendOne(t, c, d)
		}, reducer.RuleDestruction, reducer.ErrWrongMatter},
		{"content.destroyed whose backups end before it", completed, func(t *testing.T, c *contracts.Chain) contracts.Line {
			d := destroyed()
			d.BackupsUntil = "2026-12-01T10:00:00.000Z"
			return appendOne(t, c, d)
		}, reducer.RuleDestruction, reducer.ErrBackupsWindow},
		{"event after content.destroyed", append(append([]contracts.Event{}, completed...), destroyed()), func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, &contracts.RunFailed{FailureKind: "internal", FailureStage: "invoke"})
		}, reducer.RuleTerminal, reducer.ErrTerminal},
		{"cost finer than a nano-dollar", running, func(t *testing.T, c *contracts.Chain) contracts.Line {
			return appendOne(t, c, usage(1, 1, 1, 0, "0.0000000001"))
		}, reducer.RuleMoney, nil},
		{"token count overflows", []contracts.Event{started("1.00"), usage(1, 1<<62, 0, 0, "0.01")},
			func(t *testing.T, c *contracts.Chain) contracts.Line {
				return appendOne(t, c, usage(2, 1<<62, 0, 0, "0.01"))
			}, reducer.RuleMoney, reducer.ErrOverflow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := fixedChain(runID)
			prefix := buildLines(t, c, tc.prefix...)
			before, err := reducer.ReduceAgentRun(prefix)
			if len(prefix) > 0 && err != nil {
				t.Fatalf("prefix: %v", err)
			}
			line := tc.bad(t, c)

			after, err := reducer.Apply(before, line)
			var re *reducer.RuleError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want a *RuleError", err)
			}
			if re.Rule != tc.rule || re.Seq != line.Seq {
				t.Fatalf("got rule %q at seq %d, want %q at seq %d (%v)", re.Rule, re.Seq, tc.rule, line.Seq, err)
			}
			switch {
			case tc.rule == reducer.RuleLink:
				var le *contracts.LinkError
				if !errors.As(err, &le) {
					t.Fatalf("err = %v, want a *contracts.LinkError inside", err)
				}
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if !equalState(after, before) {
				t.Fatalf("a refused line changed the state:\n got: %+v\nwant: %+v", after, before)
			}

			// ReduceAgentRun stops at the same line and keeps the state before it.
			got, err := reducer.ReduceAgentRun(append(prefix, line))
			if !errors.As(err, &re) || re.Seq != line.Seq || !strings.Contains(err.Error(), "seq ") {
				t.Fatalf("ReduceAgentRun err = %v, want a RuleError at seq %d", err, line.Seq)
			}
			if !equalState(got, before) {
				t.Fatalf("ReduceAgentRun returned %+v, want the state before the bad line", got)
			}
		})
	}
}

func TestReduceAgentRunEmpty(t *testing.T) {
	if _, err := reducer.ReduceAgentRun(nil); !errors.Is(err, reducer.ErrNotStarted) {
		t.Fatalf("err = %v, want ErrNotStarted", err)
	}
}

// A warrant can expire or its resume can fail while the run is held; the run
// must then fail and stop claiming to wait.
func TestFailWhileHeldClearsHold(t *testing.T) {
	lines := buildLines(t, fixedChain(runID), started("1.00"), toolTurn(1, "Filing.", filing), filing.requested(1), filing.blocked(),
		&contracts.RunFailed{FailureKind: "expired", FailureStage: "approval"})
	s, err := reducer.ReduceAgentRun(lines)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != warrant.RunFailed || s.HeldOn != "" || s.PendingApproval != nil || s.FailureKind != "expired" {
		t.Fatalf("got %+v", s)
	}
}

// The agent's pre-flight fails a run before the cap is crossed; that is a
// failure the agent reports, not the reducer's abort.
func TestAgentCostCapFailureIsFailed(t *testing.T) {
	lines := buildLines(t, fixedChain(runID), started("0.01"), usage(1, 1200, 350, 0, "0.009735"),
		&contracts.RunFailed{FailureKind: "cost_cap_exceeded", FailureStage: "model_call"})
	s, err := reducer.ReduceAgentRun(lines)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != warrant.RunFailed || s.FailureKind != "cost_cap_exceeded" {
		t.Fatalf("got status %s kind %s", s.Status, s.FailureKind)
	}
}

// Reaching the cap exactly is allowed; only crossing it aborts.
func TestCostAtCapKeepsRunning(t *testing.T) {
	lines := buildLines(t, fixedChain(runID), started("0.009735"), usage(1, 1200, 350, 0, "0.009735"))
	s, err := reducer.ReduceAgentRun(lines)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != warrant.RunRunning {
		t.Fatalf("status %s at exactly the cap, want running", s.Status)
	}
}

// Apply must not alias the event: a caller reusing or mutating its Line after
// the fold must not rewrite the state.
func TestPendingApprovalIsACopy(t *testing.T) {
	c := fixedChain(runID)
	lines := buildLines(t, c, started("1.00"), filing.blocked())
	s, err := reducer.ReduceAgentRun(lines)
	if err != nil {
		t.Fatal(err)
	}
	lines[1].Event.(*contracts.RunBlocked).Approval.ToolName = "changed"
	if s.PendingApproval.ToolName != filing.name {
		t.Fatal("state aliases the event's approval")
	}
}

func TestApplyRejectsLineWithoutEvent(t *testing.T) {
	lines := buildLines(t, fixedChain(runID), started("1.00"), endTurn(1, "x"))
	s, err := reducer.Apply(reducer.RunState{}, lines[0])
	if err != nil {
		t.Fatal(err)
	}
	bad := lines[1]
	bad.Event = nil
	if _, err := reducer.Apply(s, bad); !errors.Is(err, contracts.ErrUnknownEvent) {
		t.Fatalf("err = %v, want ErrUnknownEvent", err)
	}
}

// A state read back from a store may be inconsistent; Apply must refuse, not
// panic, when a held state lost its pending approval.
func TestHeldStateWithoutPendingApproval(t *testing.T) {
	c := fixedChain(runID)
	lines := buildLines(t, c, started("1.00"), filing.blocked())
	s, err := reducer.ReduceAgentRun(lines)
	if err != nil {
		t.Fatal(err)
	}
	s.PendingApproval = nil
	line := appendOne(t, c, &contracts.ApprovalDecided{ApprovalRequestID: approvalID, Decision: warrant.DecisionApproved,
		DecidedBy: userID, ToolInputHash: filing.hash()})
	if _, err := reducer.Apply(s, line); !errors.Is(err, reducer.ErrWrongApproval) {
		t.Fatalf("err = %v, want ErrWrongApproval", err)
	}
}

func appendOne(t *testing.T, c *contracts.Chain, e contracts.Event) contracts.Line {
	t.Helper()
	return buildLines(t, c, e)[0]
}

// Issue 26: a finished run's content is destroyed once, as content.destroyed
// records: accepted after the run completed, failed or was aborted, it
// sets ContentDestroyed (the line's time, why, until when backups hold the
// key) and changes nothing else; effect.reconciled is still taken after it.
func TestContentDestroyedAfterTheEnd(t *testing.T) {
	for name, prefix := range map[string][]contracts.Event{
		"completed": {started("1.00"), &contracts.RunCompleted{StopReason: "end_turn", FinalText: "Done."}},
		"failed":    {started("1.00"), &contracts.RunFailed{FailureKind: "internal", FailureStage: "invoke"}},
		"aborted":   {started("0.001"), usage(1, 1200, 350, 0, "0.009735")},
	} {
		t.Run(name, func(t *testing.T) {
			c := fixedChain(runID)
			before, err := reducer.ReduceAgentRun(buildLines(t, c, prefix...))
			if err != nil || !before.Status.Terminal() {
				t.Fatalf("prefix: %s %v", before.Status, err)
			}
			line := appendOne(t, c, destroyed())
			after, err := reducer.Apply(before, line)
			if err != nil {
				t.Fatal(err)
			}
			want := before
			want.LastSeq, want.HeadHash = line.Seq, line.Hash
			want.ContentDestroyed = &reducer.Destruction{At: line.CreatedAt, Reason: contracts.DestroyedRetention, BackupsUntil: "2027-01-06T10:00:00.123Z"}
			if !equalState(after, want) {
				t.Fatalf("after content.destroyed:\n got %+v\nwant %+v", after, want)
			}
			if before.ContentDestroyed != nil {
				t.Fatal("Apply changed the state it was given")
			}
		})
	}

	// The golden ledger: its effect reconciled after its content was
	// destroyed; the state says both.
	for _, sc := range scenarios {
		if sc.name != "destroyed-then-reconciled" {
			continue
		}
		lines := buildLines(t, fixedChain(runID), sc.events()...)
		s, err := reducer.Verify(bytes.NewReader(ndjson(lines)))
		if err != nil {
			t.Fatalf("verify: %v", err)
		}
		if _, err := reducer.Audit(lines); err != nil {
			t.Fatalf("audit: %v", err)
		}
		if s.Status != warrant.RunFailed || s.ContentDestroyed == nil || s.ContentDestroyed.Reason != contracts.DestroyedRetention || len(s.Unreconciled) != 0 {
			t.Fatalf("state %+v", s)
		}
	}
}
