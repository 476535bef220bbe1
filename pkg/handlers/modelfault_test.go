package handlers_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// Issue 25, item 3, through the functions' JSON paths: a Bedrock throttle
// that outlasts the SDK's retries does not fail the run. The worker gives
// the run back (its message done, nothing for SQS to redeliver) and the
// sweeper hands it to a new worker only once its backoff passed (a minute,
// then two: the second wait is longer), each time a restart; when the
// model answers again the run goes on to its warrant, its ledger verifies,
// and the firm's budget holds nothing for the calls that failed.
func TestModelOutageWaitsForTheSweeper(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	script := bedrocktest.DemoScript()
	script.Rules = append([]bedrocktest.Rule{{Name: "fault", When: func(bedrocktest.Conversation) bool { return failing.Load() },
		Reply: bedrocktest.Reply{Fault: bedrocktest.FaultThrottle}}}, script.Rules...)
	s := newStack(t, stackOptions{script: &script})
	resp := s.post(fixture(t, "invoke.json"))
	if resp.StatusCode != 202 {
		t.Fatalf("invoke: %d %s", resp.StatusCode, resp.Body)
	}
	runID := decode[handlers.RunView](t, resp).RunID
	s.drain()
	for i, backoff := range []time.Duration{time.Minute, 2 * time.Minute} {
		if v := s.view(runID); v.Status != "running" || v.Failure != nil {
			t.Fatalf("after outage %d: %+v", i+1, v)
		}
		run, err := s.store.GetRun(context.Background(), fixFirm, runID)
		if err != nil || run.Lease.Owner != "" || run.Restarts != i {
			t.Fatalf("the run given back: %+v %v", run, err)
		}
		// Not before its backoff (and the sweeper's grace) passed.
		s.clock.Advance(backoff / 2)
		if rep := s.sweep(); rep.Restarted != 0 || rep.Errors != 0 {
			t.Fatalf("a sweep before the backoff: %+v", rep)
		}
		s.clock.Advance(backoff)
		if rep := s.sweep(); rep.Restarted != 1 || rep.Errors != 0 {
			t.Fatalf("a sweep after the backoff: %+v", rep)
		}
		if i == 1 {
			failing.Store(false)
		}
		msgs := s.queue.take()
		if len(msgs) != 1 || msgs[0].Reason != contracts.ReasonRestarted {
			t.Fatalf("messages %+v", msgs)
		}
		if f := s.work(msgs[0], 1); len(f) != 0 {
			t.Fatalf("the worker reported %v", f)
		}
	}
	if v := s.view(runID); v.Status != "held" {
		t.Fatalf("once the model answered: %+v", v)
	}
	s.auditRun(runID)
	b, err := s.store.GetBudget(context.Background(), fixFirm, warrant.MonthOf(s.clock.Now()), 100)
	if spent, _ := s.usageCost(fixFirm, runID); err != nil || b.SpentNano != int64(spent) || b.ReservedNano != 0 || len(b.Open) != 0 {
		t.Fatalf("budget %+v (%v), usage lines %s", b, err, spent)
	}
}
