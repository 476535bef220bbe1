package dynamo_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"

	"github.com/seed-f6d3920e/warrant"
)

// Races go through the real SDK and HTTP, n goroutines released together.
// On moto the harness serializes requests (dynamotest.LenientSerialized):
// the server sees them one at a time, so there the race checks the store's
// answers, not the server's isolation.
func race(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	close(start)
	wg.Wait()
}

func testRaceClaim(t *testing.T, ep *dynamotest.Endpoint) {
	const n = 64
	e := newEnv(t, ep)
	r := e.newRun(id())
	tc := newToolCall(t, "file_court_document")
	ins := make([]warrant.ClaimInput, n)
	lines := make([]contracts.Line, n)
	for i := range n {
		ins[i] = e.claimInput(r, tc, fmt.Sprintf("lambda-%d", i))
		rq := requested(tc, "allow")
		rq.ToolUseID = fmt.Sprintf("tu_%d", i) // distinct bytes per racer
		lines[i] = e.next(r, rq)
	}
	claimed := make([]bool, n)
	existing := make([]*warrant.Claim, n)
	errs := make([]error, n)
	race(n, func(i int) { claimed[i], existing[i], errs[i] = e.store.ClaimToolEffectOnce(e.ctx, ins[i], lines[i]) })

	winner := -1
	for i := range n {
		if errs[i] != nil {
			t.Errorf("racer %d: %v", i, errs[i])
			continue
		}
		if claimed[i] {
			if winner >= 0 {
				t.Fatalf("racers %d and %d both claimed the effect", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("nobody claimed the effect")
	}
	for i := range n {
		if i != winner && (existing[i] == nil || existing[i].EffectRef != ins[winner].EffectRef) {
			t.Errorf("racer %d: existing %+v, want the winner's effect_ref", i, existing[i])
		}
	}
	got, err := e.store.GetEffect(e.ctx, r.firm, r.id, warrant.EffectKey{ToolName: tc.name, InputSHA256: tc.hash})
	must(t, err)
	last, err := e.store.LastLine(e.ctx, r.firm, r.id)
	must(t, err)
	if got.EffectRef != ins[winner].EffectRef || string(last.Raw) != string(lines[winner].Raw) {
		t.Error("stored claim or line is not the winner's")
	}
}

func testRaceResume(t *testing.T, ep *dynamotest.Endpoint) {
	const n = 64
	e := newEnv(t, ep)
	h := e.newHeld(id())
	_, err := e.decide(h, warrant.DecisionApproved)
	must(t, err)
	claims := make([]warrant.ResumeClaim, n)
	lines := make([]contracts.Line, n)
	for i := range n {
		claims[i], lines[i] = e.resume(h, warrant.DecisionApproved)
	}
	errs := make([]error, n)
	race(n, func(i int) { errs[i] = e.store.ResumeClaim(e.ctx, claims[i], lines[i]) })

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("racers %d and %d both resumed", winner, i)
			}
			winner = i
		case errors.Is(err, warrant.ErrWarrantConsumed), errors.Is(err, warrant.ErrRunNotInState),
			errors.Is(err, warrant.ErrEffectClaimed), errors.Is(err, warrant.ErrSeqTaken):
		default:
			t.Errorf("racer %d: untyped conflict %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("nobody resumed")
	}
	w, err := e.store.GetWarrant(e.ctx, h.firm, h.id, h.approval)
	must(t, err)
	r, err := e.store.GetRun(e.ctx, h.firm, h.id)
	must(t, err)
	c, err := e.store.GetEffect(e.ctx, h.firm, h.id, warrant.EffectKey{ToolName: h.tool.name, InputSHA256: h.tool.hash})
	must(t, err)
	last, err := e.store.LastLine(e.ctx, h.firm, h.id)
	must(t, err)
	if w.Status != warrant.WarrantConsumed || r.Status != warrant.RunRunning || c.EffectRef != claims[winner].EffectRef ||
		string(last.Raw) != string(lines[winner].Raw) {
		t.Errorf("after the race: warrant %s, run %s, claim %s, winner's line stored %v",
			w.Status, r.Status, c.EffectRef, string(last.Raw) == string(lines[winner].Raw))
	}
}

func testRaceSeq(t *testing.T, ep *dynamotest.Endpoint) {
	const n = 16
	e := newEnv(t, ep)
	r := e.newRun(id())
	lines := make([]contracts.Line, n)
	for i := range n {
		lines[i] = e.next(r, delta(fmt.Sprintf("writer %d", i)))
	}
	errs := make([]error, n)
	race(n, func(i int) { errs[i] = e.store.AppendEvents(e.ctx, r.firm, r.id, lines[i]) })
	winner := -1
	for i, err := range errs {
		var st *dynamo.SeqTakenError
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("writers %d and %d both wrote seq 2", winner, i)
			}
			winner = i
		case errors.As(err, &st) && st.Seq == 2:
		default:
			t.Errorf("writer %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("nobody wrote seq 2")
	}
	if l := e.ledger(r); len(l) != 2 || string(l[1].Raw) != string(lines[winner].Raw) {
		t.Error("stored line is not the winner's bytes")
	}
}

func testRaceDecide(t *testing.T, ep *dynamotest.Endpoint) {
	const n = 8
	e := newEnv(t, ep)
	h := e.newHeld(id())
	lines := make([]contracts.Line, n)
	decisions := make([]warrant.CounselDecision, n)
	for i := range n {
		d := []warrant.Decision{warrant.DecisionApproved, warrant.DecisionDenied}[i%2]
		decisions[i] = warrant.CounselDecision{Decision: d, PresentedHash: h.tool.hash, DecidedBy: fmt.Sprintf("counsel-%d", i)}
		lines[i] = e.next(h.run, &contracts.ApprovalDecided{ApprovalRequestID: h.approval, Decision: d,
			DecidedBy: decisions[i].DecidedBy, ToolInputHash: h.tool.hash})
	}
	results := make([]warrant.Warrant, n)
	errs := make([]error, n)
	race(n, func(i int) {
		results[i], errs[i] = e.store.DecideWarrant(e.ctx, h.firm, h.id, h.approval, decisions[i], lines[i])
	})
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("counsel %d and %d both decided", winner, i)
			}
			winner = i
		case errors.Is(err, warrant.ErrWarrantNotPending):
		default:
			t.Errorf("counsel %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("nobody decided")
	}
	w, err := e.store.GetWarrant(e.ctx, h.firm, h.id, h.approval)
	must(t, err)
	if w.DecidedBy != decisions[winner].DecidedBy || w.Decision != decisions[winner].Decision {
		t.Errorf("stored decision %s by %s, winner %+v", w.Decision, w.DecidedBy, decisions[winner])
	}
}
