package agent

import (
	"context"
	"errors"
	"time"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// SweepAction is what a sweep did to one run.
type SweepAction string

// Sweep actions (closed).
const (
	// SweepNone: nothing to do (the lease has not passed, the run moved on
	// or finished meanwhile).
	SweepNone SweepAction = "none"
	// SweepRestarted: the run was handed to a new worker (the caller sends
	// the worker message with reason restarted).
	SweepRestarted SweepAction = "restarted"
	// SweepWorkerLost: the run failed with worker_lost.
	SweepWorkerLost SweepAction = "worker_lost"
	// SweepOutcomeUnknown: the run failed with effect_outcome_unknown, its
	// open effect answered "unknown" and flagged for reconciliation.
	SweepOutcomeUnknown SweepAction = "effect_outcome_unknown"
	// SweepWarrantExpired: a held run's warrant expired; it and the run
	// failed with warrant_expired.
	SweepWarrantExpired SweepAction = "warrant_expired"
)

// Sweep settles one run whose lease passed (the sweeper finds them by the
// lease index; the index is eventually consistent, so the run item is read
// again here and every write is conditioned on the lease it saw):
//
//   - held, its warrant past expiry: the warrant expires and the run fails
//     with warrant_expired (held -> failed), in one transaction;
//   - running, with an effect its lost worker took and never completed:
//     tool.completed "unknown", the claim flagged for reconciliation and
//     run.failed effect_outcome_unknown, in one transaction; the effect is
//     never executed again;
//   - running with nothing irreversible pending (the worker was lost
//     between steps, never picked the run up, or gave it back after a
//     store or model fault): handed to a new worker, at most
//     Config.MaxRestarts times; after that run.failed worker_lost.
//
// Errors are the store's or ledger_corrupt; a run that changed meanwhile is
// SweepNone.
func (b *Brain) Sweep(ctx context.Context, firm, runID string) (SweepAction, error) {
	now := b.cfg.Now().UTC()
	run, err := b.store.GetRun(ctx, firm, runID)
	if err != nil {
		return SweepNone, err
	}
	if run.Lease.Until.IsZero() || !run.Lease.Until.Before(now) {
		return SweepNone, nil
	}
	if run.Status != warrant.RunHeld && run.Status != warrant.RunRunning {
		return SweepNone, nil
	}
	folded, err := reducer.Fold(ctx, b.store, firm, runID, reducer.FoldOptions{KeepLines: true, Keys: b.cfg.Heads})
	if err != nil {
		return SweepNone, err
	}
	// What the sweep acts on is the run as read after its ledger: the
	// state the ledger's signed head ends at.
	run = folded.Run
	if run.Lease.Until.IsZero() || !run.Lease.Until.Before(now) {
		return SweepNone, nil
	}
	view, err := rebuild(folded.Lines)
	if err != nil {
		return SweepNone, failure.Wrap(failure.KindLedgerCorrupt, "the run's transcript cannot be rebuilt", err)
	}
	s := b.newSession(ctx, Definition{Key: view.started.AgentKey, ModelID: view.started.ModelID},
		contracts.InvokeMeta{RunID: runID, FirmID: firm, UserID: view.started.UserID, MatterID: view.started.MatterID,
			CorrelationID: view.started.CorrelationID})
	s.roles, s.userName = view.started.UserRoles, view.started.UserName
	s.chain = contracts.ChainAfter(folded.Last)
	s.chain.Now = b.cfg.Now
	s.state = folded.State
	if s.state.Status != run.Status {
		return SweepNone, nil // the item and the ledger disagree only mid-write: next pass
	}
	var action SweepAction
	if run.Status == warrant.RunHeld {
		action, err = s.expire(ctx, run)
	} else {
		action, err = s.sweepRunning(ctx, run, view, now)
	}
	if errors.Is(err, warrant.ErrRunNotInState) {
		return SweepNone, nil
	}
	return action, err
}

// expire ends a held run whose warrant passed its expiry.
func (s *session) expire(ctx context.Context, run warrant.Run) (SweepAction, error) {
	reason := failure.New(failure.KindWarrantExpired, "the warrant the run was held on expired before it was used")
	err := s.end(ctx, warrant.SweepFailure{ExpireApproval: run.HeldOn}, reason, failure.StageSweep)
	return SweepWarrantExpired, err
}

// sweepRunning settles a running run whose worker's lease passed.
func (s *session) sweepRunning(ctx context.Context, run warrant.Run, view ledgerView, now time.Time) (SweepAction, error) {
	req, claim, err := s.openEffect(ctx, view)
	if err != nil {
		return SweepNone, err
	}
	if claim != nil {
		err := s.unknownOutcome(ctx, req, claim.EffectRef, claim.Key(), whyNoOutcome, warrant.SweepFailure{LeaseExpiredBy: now})
		if errors.Is(err, errRunEnded) {
			err = nil
		}
		return SweepOutcomeUnknown, err
	}
	err = s.b.store.RestartRun(ctx, s.meta.FirmID, s.meta.RunID, now.Add(s.b.cfg.Pickup), s.b.cfg.MaxRestarts)
	if err == nil {
		return SweepRestarted, nil
	}
	if !errors.Is(err, warrant.ErrRunNotInState) {
		return SweepNone, err
	}
	// Not restartable: either a worker came back (its lease moved: the
	// condition below fails and nothing is written) or the restarts ran out.
	reason := failure.New(failure.KindWorkerLost, "the run's worker stopped and its restarts ran out")
	return SweepWorkerLost, s.end(ctx, warrant.SweepFailure{LeaseExpiredBy: now}, reason, failure.StageSweep)
}

// openEffect finds the effect a lost worker may have executed: a call of
// the last turn requested and not answered, or the call a warrant released,
// whose claim an executor took and never completed (a replayable read is
// not an effect). nil: nothing irreversible is pending.
func (s *session) openEffect(ctx context.Context, view ledgerView) (*contracts.ToolRequested, *warrant.Claim, error) {
	var open []*contracts.ToolRequested
	for id, req := range view.requested {
		if _, ok := view.done[id]; !ok {
			open = append(open, req)
		}
	}
	for _, req := range open {
		c, err := s.b.store.LatestEffect(ctx, s.meta.FirmID, s.meta.RunID, req.ToolName, view.claimedHash(req))
		if err != nil {
			return nil, nil, err
		}
		// A replayable read's claim is no effect: a new worker reads again.
		// A sealed run's input is not read here (the sweeper has no key):
		// see session.replayable.
		if c != nil && c.Taken() && !s.replayable(ctx, req, view.sealed) {
			return req, c, nil
		}
	}
	return nil, nil, nil
}

// end records why a run cannot go on (run.failed with reason's kind) with
// the sweep's write.
func (s *session) end(ctx context.Context, sw warrant.SweepFailure, reason error, stage failure.Stage) error {
	env := failure.Build(reason, stage, "sweeper", s.scope())
	s.b.logger.Log(ctx, env)
	sw.FirmID, sw.RunID = s.meta.FirmID, s.meta.RunID
	return s.commit(ctx, func(ls []contracts.Line) error { return s.b.store.SweepFail(ctx, sw, ls...) }, runFailed(reason, env))
}
