package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
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
