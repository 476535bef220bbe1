package handlers_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// completeEvidence checks that the run's evidence bundle verifies offline,
// every receipt under a checkpoint, the last of kind last.
func (s *stack) completeEvidence(t *testing.T, runID, last, when string) {
	t.Helper()
	rep, err := evidence.Verify(s.bundle(runID, nil), s.trusted())
	if err != nil {
		t.Fatalf("%s: the bundle does not verify: %v", when, err)
	}
	if !rep.Complete || len(rep.Receipts) == 0 || rep.Receipts[len(rep.Receipts)-1].Kind != last {
		t.Fatalf("%s: want complete evidence ending in a %s receipt, got %+v", when, last, rep)
	}
}

// A stream record the mapping gave up on (five retries, then the DLQ)
// leaves a finished run's projection behind its ledger, and with no later
// line nothing brings it up: the run's receipts were never issued, so its
// evidence never completes. The sweeper catches such a run up once the
// stream had its time (handlers.ReduceGrace): the same fold, receipts and
// notices a record would have brought, and this pass's checkpoint covers
// them.
func TestSweeperCatchesUpALostStreamRecord(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.completedFiling(t) // no stream record is ever delivered
	ctx := context.Background()
	if rep := s.sweep(); rep.ProjectionsCaughtUp != 0 || rep.ProjectionsWaiting != 1 {
		t.Fatalf("a sweep at once leaves the run to the stream: %+v", rep)
	}
	if run, err := s.store.GetRun(ctx, fixFirm, h.runID); err != nil || run.Projection.LastSeq != 0 {
		t.Fatalf("the sweeper projected within the stream's grace: %+v %v", run.Projection, err)
	}
	s.clock.Advance(handlers.ReduceGrace + time.Second)
	rep := s.sweep()
	if rep.ProjectionsCaughtUp != 1 || rep.Checkpoints != 1 || rep.RetentionErrors != 0 {
		t.Fatalf("past the grace: %+v\n%s", rep, s.logs.String())
	}
	run, err := s.store.GetRun(ctx, fixFirm, h.runID)
	if err != nil || run.Projection.LastSeq != run.Head.Seq || run.Projection.Status != "completed" {
		t.Fatalf("the projection was not caught up: %+v (head %d) %v", run.Projection, run.Head.Seq, err)
	}
	s.completeEvidence(t, h.runID, evidence.KindRun, "after the catch-up")
	if rep := s.sweep(); rep.ProjectionsCaughtUp != 0 || rep.ProjectionsWaiting != 0 {
		t.Fatalf("a sweep after the catch-up: %+v", rep)
	}
}

// The sweeper's retention pass destroys a run's content and its own
// checkpoint, in the same pass, commits to the destruction's receipt: the
// client's certificate does not wait on (or get lost with) a stream record.
func TestRetentionDestructionIsCertifiedWithoutTheStream(t *testing.T) {
	s := newStack(t, stackOptions{})
	s.setFirmRetention(t, 1)
	h := s.completedFiling(t)
	s.settle(h.runID)
	s.clock.Advance(2 * 24 * time.Hour)
	rep := s.sweep()
	if rep.ContentDestroyed != 1 || rep.ProjectionsCaughtUp != 1 || rep.Checkpoints != 1 || rep.RetentionErrors != 0 {
		t.Fatalf("the retention sweep: %+v\n%s", rep, s.logs.String())
	}
	s.completeEvidence(t, h.runID, evidence.KindDestruction, "after the retention sweep, with no stream record")
}

// A destruction written elsewhere (the destroy API's confirming call) puts
// the run back before the retention pass, so a lost stream record of its
// content.destroyed line is caught up too, by the next pass: the
// destruction's certificate does not wait out the stream's grace.
func TestLostDestructionRecordIsCaughtUp(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.completedFiling(t)
	s.settle(h.runID)
	s.destroy(t, h.runID)
	if rep := s.sweep(); rep.ProjectionsCaughtUp != 1 || rep.ProjectionsWaiting != 0 || rep.Checkpoints != 1 {
		t.Fatalf("the next sweep: %+v\n%s", rep, s.logs.String())
	}
	s.completeEvidence(t, h.runID, evidence.KindDestruction, "after the catch-up")
	if rep := s.sweep(); rep.ProjectionsCaughtUp != 0 || rep.ProjectionsWaiting != 0 || rep.ContentDestroyed != 0 {
		t.Fatalf("a sweep after the catch-up: %+v", rep)
	}
}

// A projection still in flight (the stream's record not yet delivered,
// within handlers.ReduceGrace) must not postpone a retention that falls
// due: the look the stream's grace asks for is at most as late as the one
// the retention asks for, and a run due now is destroyed now, the
// destruction's own catch-up folding the lines the stream has not brought
// yet. (The local stack's two-second day met this: a run's first look came
// before its record, and its destruction waited out the grace.)
func TestRetentionIsNotPostponedByAProjectionInFlight(t *testing.T) {
	for _, delivered := range []bool{true, false} {
		s := newStack(t, stackOptions{env: map[string]string{"RETENTION_DAY": "2s"}})
		s.setFirmRetention(t, 1)
		h := s.completedFiling(t)
		if rep := s.sweep(); rep.ContentDestroyed != 0 || rep.RetentionErrors != 0 {
			t.Fatalf("a sweep within the run's retention: %+v\n%s", rep, s.logs.String())
		}
		if delivered { // the stream's record comes before the retention passes
			if resp := s.deliver(s.records(fixFirm, h.runID, 0)); len(resp.BatchItemFailures) > 0 {
				t.Fatalf("stream-reduce failed: %+v\n%s", resp, s.logs.String())
			}
		}
		s.clock.Advance(3 * time.Second)
		rep := s.sweep()
		if rep.ContentDestroyed != 1 || rep.Checkpoints != 1 || rep.RetentionErrors != 0 {
			t.Fatalf("record delivered %v: the sweep once the retention passed: %+v\n%s", delivered, rep, s.logs.String())
		}
		s.completeEvidence(t, h.runID, evidence.KindDestruction, "after the retention sweep")
	}
}

func (s *stack) setFirmRetention(t *testing.T, days int) {
	t.Helper()
	ctx := context.Background()
	fs, err := s.store.GetFirmSettings(ctx, fixFirm)
	if err != nil {
		t.Fatal(err)
	}
	fs.RetentionDays = &days
	if err := s.store.PutFirmSettings(ctx, fs); err != nil {
		t.Fatal(err)
	}
}
