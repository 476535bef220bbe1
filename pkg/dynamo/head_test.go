package dynamo_test

import (
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
)

// testLedgerHead: every write that stores lines moves the run's head to its
// last line, signed, in the same transaction; a write refused for any reason
// leaves the head where it was, and a head another writer moved refuses the
// write (issue 11, item 2).
func testLedgerHead(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	check := func(what string, r *run) warrant.LedgerHead {
		t.Helper()
		got, err := e.store.GetRun(e.ctx, r.firm, r.id)
		must(t, err)
		h := got.Head
		if h.Seq != r.chain.Seq || h.Hash != r.chain.Head || h.KeyID != e.ring.KeyID() {
			t.Fatalf("%s: head %+v, want seq %d hash %s", what, h, r.chain.Seq, r.chain.Head)
		}
		if err := e.ring.VerifyHead(e.ctx, r.firm, r.id, h.Seq, h.Hash, h.MAC, h.KeyID); err != nil {
			t.Fatalf("%s: the head does not verify: %v", what, err)
		}
		return h
	}
	r := e.newRun(id())
	check("create", r)
	must(t, e.store.AppendEvents(e.ctx, r.firm, r.id, e.line(r, delta("one"))))
	check("one line", r)
	many := make([]contracts.Line, 0, 150)
	for range 150 {
		many = append(many, e.line(r, delta("x")))
	}
	must(t, e.store.AppendEvents(e.ctx, r.firm, r.id, many...))
	before := check("150 lines in two chunks", r)

	// A racer that extends the same head: its seq is taken, the head stays.
	racer := *r.chain
	racer.Seq, racer.Head = many[len(many)-2].Seq, many[len(many)-2].Hash
	stale, err := racer.Append(delta("stale"))
	must(t, err)
	wantErr(t, e.store.AppendEvents(e.ctx, r.firm, r.id, stale), warrant.ErrSeqTaken, "append from a stale head")
	if got, _ := e.store.GetRun(e.ctx, r.firm, r.id); got.Head != before {
		t.Fatalf("a refused append moved the head: %+v", got.Head)
	}

	// Lines no one stored yet, but the head says another writer is past
	// them: refused, nothing written. (A line item deleted under the head
	// looks like this; so does a run item written back from a backup.)
	gap := *r.chain
	gap.Seq, gap.Head = 1000, r.chain.Head
	ahead, err := gap.Append(delta("after a gap"))
	must(t, err)
	wantErr(t, e.store.AppendEvents(e.ctx, r.firm, r.id, ahead), warrant.ErrSeqTaken, "append past the head")
	if got, _ := e.store.GetRun(e.ctx, r.firm, r.id); got.Head != before {
		t.Fatalf("a refused append moved the head: %+v", got.Head)
	}

	h := e.newHeld(r.firm)
	check("hold", h.run)
	_, err = e.decide(h, warrant.DecisionApproved)
	must(t, err)
	check("decision", h.run)
	c, l := e.resume(h, warrant.DecisionApproved)
	must(t, e.store.ResumeClaim(e.ctx, c, l))
	h.chain.Advance(l)
	check("release", h.run)
	must(t, e.store.CompleteEffect(e.ctx, h.firm, h.id, warrant.EffectKey{ToolName: h.tool.name, InputSHA256: h.tool.hash},
		e.take(c), warrant.Completion{State: warrant.ClaimCompleted, ToolStatus: contracts.ToolSuccess},
		e.line(h.run, completed(h.tool, c.EffectRef))))
	check("completion", h.run)
	must(t, e.store.FinishRun(e.ctx, h.firm, h.id, warrant.RunCompleted,
		e.line(h.run, &contracts.RunCompleted{StopReason: "end_turn", FinalText: "Filed."})))
	check("finish", h.run)
}
