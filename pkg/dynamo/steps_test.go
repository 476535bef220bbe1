package dynamo_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
)

// Issue 29, the matter's runs: a tool.completed line of a tool the context
// names is copied to the matter's record in the transaction that stores
// it (no extra round trip), and MatterSteps reads it back by matter and
// tool; a write refused stores no copy, and another matter, firm or run
// gets none.
func testMatterSteps(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm, matter := id(), id()
	r := e.newRunOf(firm, matter)
	ctx := warrant.NewMatterStepsContext(e.ctx, warrant.MatterSteps{FirmID: firm, RunID: r.id, MatterID: matter, Tools: []string{"check_conflicts"}})

	check := newToolCall(t, "check_conflicts")
	in := e.claimInput(r, check, "owner")
	if claimed, _, err := e.store.ClaimToolEffectOnce(ctx, in, e.line(r, requested(check, "allow"))); err != nil || !claimed {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	done := completed(check, in.EffectRef)
	done.Result = json.RawMessage(`{"conflict":false}`)
	ok := e.line(r, done)
	ep.Counter.Reset()
	must(t, e.store.CompleteEffect(ctx, r.firm, r.id, warrant.EffectKey{ToolName: check.name, InputSHA256: check.hash}, "owner",
		warrant.Completion{State: warrant.ClaimCompleted, ToolStatus: "success"}, ok))
	if n := ep.Counter.Count(); n != 1 {
		t.Errorf("CompleteEffect with the matter's record: %d round trips %v, want 1", n, ep.Counter.ByOp())
	}
	// Another tool's step is not recorded; a failed check is.
	other := newToolCall(t, "draft_document")
	failed := newToolCall(t, "check_conflicts")
	fc := completed(failed, "")
	fc.Status, fc.EffectRef, fc.Result = contracts.ToolError, "", json.RawMessage(`{"error":"tool failed"}`)
	od := completed(other, "")
	od.EffectRef = ""
	lines := []contracts.Line{e.line(r, od), e.line(r, fc)}
	must(t, e.store.AppendEvents(ctx, r.firm, r.id, lines...))

	steps, err := e.store.MatterSteps(e.ctx, firm, matter, "check_conflicts")
	must(t, err)
	if len(steps) != 2 || steps[0].RunID != r.id || steps[0].Seq != ok.Seq || steps[0].Status != "success" || !bytes.Equal(steps[0].Line, ok.Raw) ||
		steps[1].Seq != lines[1].Seq || steps[1].Status != "error" || !bytes.Equal(steps[1].Line, lines[1].Raw) {
		t.Fatalf("MatterSteps = %+v", steps)
	}
	for _, q := range []struct{ firm, matter, tool string }{{firm, id(), "check_conflicts"}, {id(), matter, "check_conflicts"}, {firm, matter, "draft_document"}} {
		if got, err := e.store.MatterSteps(e.ctx, q.firm, q.matter, q.tool); err != nil || len(got) != 0 {
			t.Errorf("MatterSteps%v = %+v, %v; want none", q, got, err)
		}
	}
	// A write refused (its seq taken) stores no copy.
	late := newToolCall(t, "check_conflicts")
	lc := completed(late, "")
	lc.EffectRef = ""
	fork := *r.chain
	must(t, e.store.AppendEvents(e.ctx, r.firm, r.id, e.line(r, delta("first"))))
	taken, err := fork.Append(lc)
	must(t, err)
	err = e.store.AppendEvents(ctx, r.firm, r.id, taken)
	var st *dynamo.SeqTakenError
	if !errors.As(err, &st) {
		t.Fatalf("append over a taken seq: %v", err)
	}
	r2 := e.newRunOf(firm, matter)
	// A context naming another run records nothing of this one.
	c2 := newToolCall(t, "check_conflicts")
	l2 := completed(c2, "")
	l2.EffectRef = ""
	must(t, e.store.AppendEvents(ctx, r2.firm, r2.id, e.line(r2, l2)))
	if steps, err := e.store.MatterSteps(e.ctx, firm, matter, "check_conflicts"); err != nil || len(steps) != 2 {
		t.Fatalf("after a refused write and another run's: %+v, %v", steps, err)
	}
	if _, err := e.store.MatterSteps(e.ctx, firm, "not-a-uuid", "check_conflicts"); err == nil {
		t.Error("MatterSteps of a malformed matter id: no error")
	}
}
