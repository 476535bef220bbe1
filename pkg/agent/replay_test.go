package agent_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// okTarget answers every call with {"ok":true}.
func okTarget() *fakeTarget {
	return &fakeTarget{answer: func(agent.TargetCall, int) (agent.TargetResult, error) {
		return agent.TargetResult{Content: json.RawMessage(`{"ok":true}`)}, nil
	}}
}

// Issue 31, item 12: a model that repeats an allowed effect in one session
// (the same tool, the same input, in its next turn) gets the first answer:
// the effect runs once, and the second answer carries the first effect_ref,
// marked reused. The session's second claim has the same owner and a fresh
// effect_ref, so the store must not take it for the session's own claim.
//
// Checked: with ClaimToolEffectOnce's "our own claim" condition reduced to
// existing.Owner == c.Owner (the effect_ref dropped), this test fails with
// "the system saw 2 filings, want 1"; without that bug it passes.
func TestRepeatedAllowedEffectRunsOnce(t *testing.T) {
	file := func(*harness) []bedrocktest.ToolUse {
		return []bedrocktest.ToolUse{{Name: "dms_file", Input: json.RawMessage(`{"title":"Motion"}`)}}
	}
	h := newHarness(t, thenAgain(file, file), options{})
	target := okTarget()
	brain := h.dmsBrainOn(h.store, target, `{"dms_search":{"tier":"low","reason":"reads","replayable":true},
		"dms_file":{"tier":"medium","reason":"files, audited"}}`)
	res := h.startWith(brain, "File the motion.")
	files := target.of("file")
	if len(files) != 1 {
		t.Fatalf("the system saw %d filings, want 1", len(files))
	}
	if res.State.Status != warrant.RunCompleted {
		t.Fatalf("run %+v", res.State)
	}
	var answers []*contracts.ToolCompleted
	for _, tc := range h.completions(res.State.RunID) {
		if tc.ToolName == "dms_file" {
			answers = append(answers, tc)
		}
	}
	if len(answers) != 2 || answers[0].Status != contracts.ToolSuccess || answers[0].Reused || answers[0].EffectRef != files[0].EffectRef {
		t.Fatalf("answers %+v, want the first a success under the sent effect_ref %s", answers, files[0].EffectRef)
	}
	if second := answers[1]; second.Status != contracts.ToolSuccess || !second.Reused || second.EffectRef != answers[0].EffectRef ||
		second.InputSHA256 != answers[0].InputSHA256 || string(second.Result) != string(answers[0].Result) {
		t.Fatalf("the repeat's answer %+v, want the first's (effect_ref %s), reused", second, answers[0].EffectRef)
	}
	claim, err := h.store.LatestEffect(context.Background(), h.firm, res.State.RunID, "dms_file", answers[0].InputSHA256)
	if err != nil || claim == nil || claim.State != warrant.ClaimCompleted || claim.EffectRef != answers[0].EffectRef {
		t.Fatalf("claim %+v %v", claim, err)
	}
}

// diesAfterSend is the store of a worker that dies once its tool call was
// sent (dead set by the target): from then on it writes nothing, so the
// call's claim stays taken with no outcome, as a lost Lambda leaves it.
type diesAfterSend struct {
	agent.Store
	dead atomic.Bool
}

var errWorkerDied = failure.New(failure.KindInternal, "injected: the worker died")

func (s *diesAfterSend) CompleteEffect(ctx context.Context, firm, run string, k warrant.EffectKey, owner string, c warrant.Completion, lines ...contracts.Line) error {
	if s.dead.Load() {
		return errWorkerDied
	}
	return s.Store.CompleteEffect(ctx, firm, run, k, owner, c, lines...)
}

func (s *diesAfterSend) SweepFail(ctx context.Context, sw warrant.SweepFailure, lines ...contracts.Line) error {
	if s.dead.Load() {
		return errWorkerDied
	}
	return s.Store.SweepFail(ctx, sw, lines...)
}

func (s *diesAfterSend) AppendEvents(ctx context.Context, firm, run string, lines ...contracts.Line) error {
	if s.dead.Load() {
		return errWorkerDied
	}
	return s.Store.AppendEvents(ctx, firm, run, lines...)
}

func (s *diesAfterSend) FinishRun(ctx context.Context, firm, run string, to warrant.RunStatus, lines ...contracts.Line) error {
	if s.dead.Load() {
		return errWorkerDied
	}
	return s.Store.FinishRun(ctx, firm, run, to, lines...)
}

func (s *diesAfterSend) HandOverRun(ctx context.Context, firm, run, owner string, pickupBy time.Time) error {
	if s.dead.Load() {
		return errWorkerDied
	}
	return s.Store.HandOverRun(ctx, firm, run, owner, pickupBy)
}

func (s *diesAfterSend) SettleUsage(ctx context.Context, r warrant.Reservation, finish warrant.RunStatus, line contracts.Line) error {
	if s.dead.Load() {
		return errWorkerDied
	}
	return s.Store.SettleUsage(ctx, r, finish, line)
}

// Issue 31, item 13: a call whose worker died after sending it is re-run
// by the worker's successor only when it is replayable, which takes both
// the policy (replayable) and the catalog (class read). An effect that a
// policy wrongly marks replayable is sent exactly once: the sweep flags it,
// the run ends effect_outcome_unknown. A read the policy does not mark
// replayable is flagged the same way, not read again.
//
// Checked: with Brain.replayable's "d.Replayable && t.Class ==
// catalog.ClassRead" turned into "||", both cases fail with "the system
// saw 2 calls of file (of search), want 1" (the sweep restarts the run and
// the next worker sends the call again); without that bug they pass.
//
// The runs are sealed (issue 26) and the sweep runs as the sweeper does,
// without the data key: it decides on the recorded decision, not the
// input. A read that policy and catalog mark replayable is still read
// again (the third case); with session.replayable answering false for
// every sealed call it fails "the system saw 1 calls of search, want 2".
func TestLostWorkersCallIsReplayedOnlyIfReplayable(t *testing.T) {
	for _, tc := range []struct {
		name, tool, sent, policy string
		replay                   bool
	}{
		{"an effect the policy marks replayable", "dms_file", "file",
			`{"dms_search":{"tier":"low","reason":"reads","replayable":true},"dms_file":{"tier":"low","reason":"wrongly low","replayable":true}}`, false},
		{"a read the policy does not mark replayable", "dms_search", "search",
			`{"dms_search":{"tier":"low","reason":"reads"},"dms_file":{"tier":"high","reason":"files with a court"}}`, false},
		{"a replayable read", "dms_search", "search",
			`{"dms_search":{"tier":"low","reason":"reads","replayable":true},"dms_file":{"tier":"high","reason":"files with a court"}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			input := json.RawMessage(`{"title":"Motion"}`)
			if tc.tool == "dms_search" {
				input = json.RawMessage(`{"query":"deposition"}`)
			}
			h := newHarness(t, thenAgain(func(*harness) []bedrocktest.ToolUse {
				return []bedrocktest.ToolUse{{Name: tc.tool, Input: input}}
			}, nil), options{})
			ctx := context.Background()
			dying := &diesAfterSend{Store: h.store}
			target := &fakeTarget{answer: func(c agent.TargetCall, _ int) (agent.TargetResult, error) {
				if c.Tool == tc.sent {
					dying.dead.Store(true) // sent; the worker dies before it records anything
				}
				return agent.TargetResult{Content: json.RawMessage(`{"ok":true}`)}, nil
			}}
			runID := newID()
			inv := h.invoke(runID, "Go.")
			inv.AgentKey = "dms_assistant"
			_, _ = h.dmsBrainOn(dying, target, tc.policy).Run(ctx, inv, agent.StartOptions{CostCapUSD: "1.00"})
			if !dying.dead.Load() {
				t.Fatalf("the call was never sent")
			}
			var req *contracts.ToolRequested
			for _, l := range h.ledger(runID) {
				switch e := l.Event.(type) {
				case *contracts.ToolRequested:
					req = e
				case *contracts.ToolCompleted:
					t.Fatalf("the dead worker recorded an answer: %+v", e)
				}
			}
			if req == nil || req.ToolName != tc.tool || req.Action != "allow" {
				t.Fatalf("the dead worker's request: %+v", req)
			}
			// Its lease passes; the sweeper, then a worker (a restart's or
			// a duplicate message's), each in a process of its own.
			h.expireLease(runID)
			live := h.dmsBrainOn(h.store, target, tc.policy)
			sweeper := h.dmsBrainKeys(h.store, target, tc.policy, nil)
			action, err := sweeper.Sweep(ctx, h.firm, runID)
			if err != nil {
				t.Fatal(err)
			}
			res, err := live.Continue(ctx, h.firm, runID, "")
			if err != nil {
				t.Fatal(err)
			}
			if tc.replay {
				if n := len(target.of(tc.sent)); n != 2 || action != agent.SweepRestarted || res.State.Status != warrant.RunCompleted {
					t.Fatalf("the system saw %d calls of %s, want 2; sweep %s, run %s", n, tc.sent, action, res.State.Status)
				}
				return
			}
			if n := len(target.of(tc.sent)); n != 1 {
				t.Fatalf("the system saw %d calls of %s, want 1 (sweep: %s)", n, tc.sent, action)
			}
			if action != agent.SweepOutcomeUnknown || res.State.Status != warrant.RunFailed || res.State.FailureKind != string(failure.KindEffectOutcomeUnknown) {
				t.Fatalf("sweep %s, run %s (%s): want effect_outcome_unknown", action, res.State.Status, res.State.FailureKind)
			}
			c := completionOf(h, res, tc.tool)
			claim, err := h.store.LatestEffect(ctx, h.firm, runID, tc.tool, req.InputSHA256)
			if c.Status != contracts.ToolUnknown || err != nil || claim == nil || !claim.Taken() || !claim.NeedsReconciliation || c.EffectRef != claim.EffectRef {
				t.Fatalf("answer %+v, claim %+v %v: want unknown, the claim taken and flagged", c, claim, err)
			}
		})
	}
}
