package dynamo_test

import (
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"

	"github.com/seed-f6d3920e/warrant"
)

// testRoundTrips counts HTTP round trips (dynamotest.Counter) of the calls
// the agent makes on its hot path.
func testRoundTrips(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	trips := func(what string, want int, fn func()) {
		t.Helper()
		ep.Counter.Reset()
		fn()
		if got := ep.Counter.Count(); got != want {
			t.Errorf("%s: %d round trips %v, want %d", what, got, ep.Counter.ByOp(), want)
		}
	}

	// A governed tool call: claim + tool.requested, then completion +
	// tool.completed. Two round trips in all.
	r := e.newRun(id())
	tc := newToolCall(t, "send_email")
	in := e.claimInput(r, tc, "owner")
	ep.Counter.Reset()
	trips("ClaimToolEffectOnce with the tool.requested line", 1, func() {
		claimed, _, err := e.store.ClaimToolEffectOnce(e.ctx, in, e.line(r, requested(tc, "allow")))
		if err != nil || !claimed {
			t.Fatalf("claim: %v %v", claimed, err)
		}
	})
	governed := ep.Counter.Count()
	trips("CompleteEffect with the tool.completed line", 1, func() {
		must(t, e.store.CompleteEffect(e.ctx, r.firm, r.id, warrant.EffectKey{ToolName: tc.name, InputSHA256: tc.hash}, "owner",
			warrant.Completion{State: warrant.ClaimCompleted, ToolStatus: "success"}, e.line(r, completed(tc, in.EffectRef))))
	})
	if governed += ep.Counter.Count(); governed != 2 {
		t.Errorf("governed tool call: %d round trips, want 2", governed)
	}

	// A losing claim reads the existing claim from ALL_OLD where the
	// endpoint returns it; minidyn (LenientPutAllOld) needs a GetItem.
	wantLose := 1
	if ep.IsLenient(dynamotest.LenientPutAllOld) {
		wantLose = 2
	}
	trips("losing ClaimToolEffectOnce with a line", wantLose, func() {
		claimed, existing, err := e.store.ClaimToolEffectOnce(e.ctx, e.claimInput(r, tc, "other"), e.next(r, requested(tc, "allow")))
		if err != nil || claimed || existing == nil {
			t.Fatalf("losing claim: %v %v %v", claimed, existing, err)
		}
	})
	other := newToolCall(t, "send_email")
	trips("ClaimToolEffectOnce without lines", 1, func() {
		claimed, _, err := e.store.ClaimToolEffectOnce(e.ctx, e.claimInput(r, other, "owner"))
		if err != nil || !claimed {
			t.Fatalf("claim: %v %v", claimed, err)
		}
	})
	if ep.Counter.ByOp()["PutItem"] != 1 {
		t.Errorf("claim without lines used %v, want one PutItem", ep.Counter.ByOp())
	}
	trips("AppendEvents of one line", 1, func() { must(t, e.store.AppendEvents(e.ctx, r.firm, r.id, e.line(r, delta("x")))) })

	// The resume critical section is one transaction. Its refusal adds one
	// consistent read of the released line's seq (is this a repeat of our
	// own committed resume?); the warrant's old image comes back with the
	// cancellation, so telling why costs nothing more.
	h := e.newHeld(id())
	_, err := e.decide(h, warrant.DecisionApproved)
	must(t, err)
	c, l := e.resume(h, warrant.DecisionApproved)
	trips("ResumeClaim", 1, func() { must(t, e.store.ResumeClaim(e.ctx, c, l)) })
	h.chain.Advance(l)
	c, l = e.resume(h, warrant.DecisionApproved)
	trips("refused ResumeClaim", 2, func() {
		wantErr(t, e.store.ResumeClaim(e.ctx, c, l), warrant.ErrWarrantConsumed, "second resume")
	})
}

// testRoundTripsOfRetriedReads: the counting cases hold when the SDK sends
// every read twice, the endpoint answering both (dynamotest's RetryReads;
// net/http and the SDK do it now and then on a busy machine, which once
// made WarrantEditedBig count 3 GetItem round trips for 2): a round trip is
// one call of the store's, however many times the SDK sent it.
func testRoundTripsOfRetriedReads(t *testing.T, ep *dynamotest.Endpoint) {
	ep.Faults.RetryReads(true)
	t.Cleanup(func() { ep.Faults.RetryReads(false) })
	before := ep.Faults.CutAnswers()
	for name, fn := range map[string]func(*testing.T, *dynamotest.Endpoint){
		"WarrantEditedBig": testWarrantEditedBig, "RoundTrips": testRoundTrips, "BudgetRoundTrips": testBudgetRoundTrips,
	} {
		t.Run(name, func(t *testing.T) { fn(t, ep) })
	}
	if ep.Faults.CutAnswers() == before {
		t.Fatal("no read was sent twice: the case tested nothing")
	}
}
