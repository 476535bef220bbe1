package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// pinningTarget is a fakeTarget whose system publishes its schemas: check
// answers CheckPin (nil: as pinned); checks counts the questions.
type pinningTarget struct {
	fakeTarget
	check  func(c agent.TargetCall) error
	checks atomic.Int32
}

func (p *pinningTarget) CheckPin(_ context.Context, c agent.TargetCall) error {
	p.checks.Add(1)
	if p.check == nil {
		return nil
	}
	return p.check(c)
}

var _ agent.PinChecker = (*pinningTarget)(nil)

// Issue 25 item 1: a system that cannot be asked whether the tool is still
// as pinned does not stop the hold (the pin is checked again before the
// call is sent); a read is sent as a read, an effect as an effect, so the
// target knows whose pin it must check against a list made for the call.
func TestPinCheckUnreachableStillHolds(t *testing.T) {
	h := newHarness(t, searchThenFile(func(*harness) string { return "" }), options{})
	target := &pinningTarget{check: func(agent.TargetCall) error { return warrant.ErrTargetUnreachable }}
	target.answer = func(agent.TargetCall, int) (agent.TargetResult, error) {
		return agent.TargetResult{Content: json.RawMessage(`{"ok":true}`)}, nil
	}
	res := h.startWith(h.dmsBrain(target), "File the motion.")
	if res.State.Status != warrant.RunHeld || target.checks.Load() != 1 {
		t.Fatalf("run %+v after %d pin checks, want held after one", res.State, target.checks.Load())
	}
	if s := target.of("search"); len(s) != 1 || s[0].Effect {
		t.Fatalf("the search reached its system as %+v, want a read", s)
	}
}

// Issue 25 item 1: the tool changes between the worker's check and the
// call (the target's own check refuses it): the claim the worker took is
// completed failed, the run fails tool_changed naming the warrant and both
// hashes, and no tool.completed says the filing ran.
func TestToolChangedBetweenTheCheckAndTheCall(t *testing.T) {
	h := newHarness(t, searchThenFile(func(*harness) string { return "" }), options{})
	current := strings.Repeat("c3", 32)
	target := &pinningTarget{}
	target.answer = func(c agent.TargetCall, _ int) (agent.TargetResult, error) {
		if c.Tool == "file" {
			if !c.Effect {
				t.Errorf("the filing was sent as a read")
			}
			return agent.TargetResult{}, &agent.ToolChangedError{Server: "dms", Tool: "file", Pinned: c.SchemaSHA256, Current: current}
		}
		return agent.TargetResult{Content: json.RawMessage(`{"ok":true}`)}, nil
	}
	brain := h.dmsBrain(target)
	res := h.startWith(brain, "File the motion.")
	p := res.State.PendingApproval
	if p == nil {
		t.Fatalf("not held: %+v", res.State)
	}
	h.decide(res, warrant.DecisionApproved)
	done, err := brain.Resume(context.Background(), agent.ResumeRequest{FirmID: h.firm, RunID: res.State.RunID, ApprovalID: p.ApprovalRequestID, UserID: h.user})
	if err != nil {
		t.Fatal(err)
	}
	pin := dmsCatalog(t).Tools["dms_file"].Target.SchemaSHA256
	want := failure.ToolChange{Tool: "dms_file", Server: "dms", PinnedSchemaSHA256: pin, CurrentSchemaSHA256: current, ApprovalRequestID: p.ApprovalRequestID}
	if done.State.Status != warrant.RunFailed || done.State.FailureKind != string(failure.KindToolChanged) ||
		done.State.ToolChange == nil || *done.State.ToolChange != want {
		t.Fatalf("run %+v (change %+v), want failed tool_changed with %+v", done.State, done.State.ToolChange, want)
	}
	for _, c := range h.completions(res.State.RunID) {
		if c.ToolName == "dms_file" {
			t.Fatalf("the refused filing has an answer: %+v", c)
		}
	}
	claim, err := h.store.LatestEffect(context.Background(), h.firm, res.State.RunID, "dms_file", p.ToolInputHash)
	if err != nil || claim == nil || claim.State != warrant.ClaimFailed || claim.NeedsReconciliation {
		t.Fatalf("the filing's claim %+v %v, want failed (nothing sent), not flagged", claim, err)
	}
	if target.checks.Load() != 2 {
		t.Fatalf("%d pin checks, want 2 (the hold's, the worker's)", target.checks.Load())
	}
}
