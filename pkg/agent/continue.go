package agent

import (
	"context"
	"errors"
	"slices"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// Continue is the worker's step: it leases the run (one worker at a time),
// folds its ledger against the signed head, and carries on from exactly where
// the ledger stands until the run completes, fails or holds:
//
//   - a run.released last: the warranted call of that warrant (approved: the
//     worker takes the reserved claim and executes the warrant's own input;
//     declined: "declined by counsel"), then the rest of that turn;
//   - a turn whose tool calls are not all answered (a worker lost mid-turn):
//     a call already claimed is answered from its claim, or, if its claim
//     never reported an outcome, the run fails with effect_outcome_unknown
//     and the claim is flagged; nothing is executed twice;
//   - a final turn without its run.completed: the run completes;
//   - a model call whose usage is settled and whose answer (its turn) is
//     not on the ledger: the run fails model_answer_lost; a call that was
//     paid for is never made again;
//   - otherwise the next model call.
//
// A run that is not running (held, finished) is left as it is: its Result
// says where it stands. Another worker's live lease is warrant.ErrLeaseHeld
// (a duplicate delivery: nothing to do). Other errors are the store's or
// ledger_corrupt.
func (b *Brain) Continue(ctx context.Context, firm, runID, correlationID string) (Result, error) {
	owner := b.cfg.NewID()
	lease := b.leaseUntil(ctx)
	run, err := b.store.AcquireRun(ctx, firm, runID, owner, lease)
	if errors.Is(err, warrant.ErrRunNotInState) {
		return b.standing(ctx, firm, runID)
	}
	if err != nil {
		return Result{}, err
	}
	// Every write of this invocation is fenced by the lease it took: once
	// another worker or the sweeper takes the run over, nothing of it is
	// this worker's to write (warrant.ErrLeaseHeld).
	ctx = warrant.NewFenceContext(ctx, warrant.Fence{Owner: owner, Epoch: run.Lease.Epoch})
	// The steps a matter-scoped prior asks about are recorded for the
	// run's matter with the lines that complete them.
	ctx = b.matterContext(ctx, firm, runID, run.MatterID)
	rk := newRunKey(b.cfg.Keys)
	defer rk.close()
	folded, err := reducer.Fold(ctx, b.store, firm, runID, reducer.FoldOptions{KeepLines: true, Keys: b.cfg.Heads, Open: rk.open})
	if err != nil {
		return Result{}, err
	}
	run = folded.Run
	sealer, err := rk.sealer(ctx, run)
	if err != nil {
		return Result{}, err
	}
	lines := folded.Lines
	view, err := rebuild(lines)
	if err != nil {
		return Result{}, failure.Wrap(failure.KindLedgerCorrupt, "the run's transcript cannot be rebuilt", err)
	}
	def, ok := b.agents[view.started.AgentKey]
	if !ok {
		return Result{}, failure.New(failure.KindUnknownAgent, "the run's agent is no longer registered")
	}
	def.ModelID = view.started.ModelID // a run keeps the model (and price) it started with
	meta := contracts.InvokeMeta{RunID: runID, FirmID: firm, UserID: view.started.UserID,
		MatterID: view.started.MatterID, CorrelationID: correlationID}
	s := b.newSession(ctx, def, meta)
	s.owner, s.lease, s.roles, s.userName, s.restarts = owner, lease, view.started.UserRoles, view.started.UserName, run.Restarts
	s.chain = contracts.ChainAfter(lines[len(lines)-1])
	s.chain.Now, s.chain.Sealer, s.key = b.cfg.Now, sealer, rk.key
	s.state, s.msgs = folded.State, view.msgs
	for _, l := range lines {
		s.sources.Fold(l)
	}
	if s.state.Status != warrant.RunRunning {
		return s.result(run), nil
	}
	if view.unanswered != nil {
		// The call was made and paid for, and its answer is gone: making
		// it again would pay for it twice (and could answer differently
		// from the answer a lost worker may already have acted on).
		s.fail(ctx, failure.New(failure.KindModelAnswerLost, "the answer of a model call that was paid for was not recorded"), failure.StageResume)
		return s.result(run), nil
	}

	done := maps(view.done)
	if rel, ok := lines[len(lines)-1].Event.(*contracts.RunReleased); ok {
		tc, err := s.releasedCall(ctx, rel, lines, view)
		if errors.Is(err, warrant.ErrLeaseHeld) {
			// This worker's lease passed and another holds the run now:
			// nothing of the run is this worker's to write.
			return s.result(run), err
		}
		if err != nil {
			s.fail(ctx, err, stageOf(err))
			return s.result(run), nil
		}
		if tc != nil {
			done[tc.ToolUseID] = tc
		}
	}
	switch t := view.lastTurn; {
	case t == nil:
		s.loop(ctx)
	case !hasToolUse(t):
		// The final turn is stored; only its run.completed was lost.
		if err := s.commit(ctx, nil, &contracts.RunCompleted{StopReason: t.StopReason, FinalText: t.Text}); err != nil {
			s.fail(ctx, err, failure.StageLedgerWrite)
		}
	default:
		// Calls of the turn that a lost worker requested but never
		// answered are answered from their claims, never executed again.
		for id, req := range view.requested {
			if _, ok := done[id]; ok {
				continue
			}
			tc, err := s.inFlight(ctx, req, view.claimedHash(req))
			if err != nil {
				s.fail(ctx, err, stageOf(err))
				return s.result(run), nil
			}
			done[id] = tc
		}
		if s.runTools(ctx, t.Turn, t.Content, done) {
			s.loop(ctx)
		}
	}
	return s.result(run), nil
}

// standing is the Result of a run Continue had nothing to do for.
func (b *Brain) standing(ctx context.Context, firm, runID string) (Result, error) {
	rk := newRunKey(b.cfg.Keys)
	defer rk.close()
	folded, err := reducer.Fold(ctx, b.store, firm, runID, reducer.FoldOptions{Keys: b.cfg.Heads, Open: rk.open})
	if err != nil {
		return Result{}, err
	}
	return Result{State: folded.State, Run: folded.Run}, nil
}

// releasedCall answers the call a just-released warrant decided. The
// warrant is read from the ledger (run.blocked carries the exact input
// counsel was shown, tied to tool.requested by its hash; approval.decided
// carries counsel's edit, if any); an approved one runs under the claim the
// resume reserved, which this worker takes first. A claim someone else
// already took is an effect of unknown outcome.
func (s *session) releasedCall(ctx context.Context, rel *contracts.RunReleased, lines []contracts.Line, view ledgerView) (*contracts.ToolCompleted, error) {
	var blocked *contracts.BlockedApproval
	var decided *contracts.ApprovalDecided
	for _, l := range lines {
		switch e := l.Event.(type) {
		case *contracts.RunBlocked:
			if e.Approval.ApprovalRequestID == rel.ApprovalRequestID {
				a := e.Approval
				blocked = &a
			}
		case *contracts.ApprovalDecided:
			if e.ApprovalRequestID == rel.ApprovalRequestID {
				decided = e
			}
		}
	}
	if blocked == nil {
		return nil, failure.New(failure.KindLedgerCorrupt, "the released warrant was never asked for")
	}
	req, ok := view.requested[blocked.ToolUseID]
	if !ok || req.ToolName != blocked.ToolName || req.InputSHA256 != blocked.ToolInputHash {
		return nil, failure.New(failure.KindLedgerCorrupt, "the released warrant does not match the call it held")
	}
	s.allow = &warrant.Warrant{ApprovalID: rel.ApprovalRequestID, ToolName: blocked.ToolName, ToolUseID: blocked.ToolUseID,
		ToolInputHash: blocked.ToolInputHash, Attempt: int(max(blocked.Attempt, 1)), Input: blocked.ToolInput, Decision: rel.Decision}
	if rel.Decision != warrant.DecisionApproved {
		tc := &contracts.ToolCompleted{ToolUseID: req.ToolUseID, ToolName: req.ToolName, InputSHA256: req.InputSHA256,
			Status: contracts.ToolDeclined, Result: errorResult(ReasonDeclinedByCounsel)}
		return tc, s.commit(ctx, nil, tc)
	}
	tool, ok := s.b.tools[blocked.ToolName]
	if !ok || !slices.Contains(s.def.Tools, blocked.ToolName) {
		return nil, staged(failure.StageResume, failure.New(failure.KindConflict, "the warranted tool is no longer available to the run's agent"))
	}
	// The call that runs is the one counsel signed: the requested input, or
	// counsel's edit of it as approval.decided recorded it (its hash was
	// checked when the line was parsed, and the resume claimed it).
	input, hash, edited := blocked.ToolInput, blocked.ToolInputHash, ""
	if decided != nil && decided.EditedInputSHA256 != "" {
		input, hash, edited = decided.EditedInput, decided.EditedInputSHA256, decided.EditedInputSHA256
	}
	key := warrant.EffectKey{ToolName: blocked.ToolName, InputSHA256: hash, Attempt: s.allow.Attempt}
	if err := s.timeForEffect(ctx, tool.Timeout); err != nil {
		return nil, err
	}
	// A signed call whose tool changed since is refused before its claim is
	// taken: the reservation stays untaken (nothing ran), the run ends.
	if changed := s.pinChanged(ctx, tool); changed != nil {
		return nil, s.toolChanged(ctx, failure.StageResume, req, tool, changed, rel.ApprovalRequestID, nil)
	}
	// The call counsel signed is counted by the policy's limits in the
	// take's own write, without their bounds: counsel's signature is not
	// held to a limit.
	var counters []warrant.Counter
	if s.b.policy.HasLimits(blocked.ToolName) {
		meta, err := s.policyMeta(ctx)
		if err != nil {
			return nil, staged(failure.StageEffectClaim, err)
		}
		matter, _ := s.b.matterSteps(ctx, s.meta.FirmID, s.meta.MatterID, s.meta.RunID, blocked.ToolName)
		counters = s.counters(s.b.decideSigned(blocked.ToolName, input, meta, s.sources.History(), matter).Limits, false)
	}
	if err := s.b.store.TakeClaim(ctx, s.meta.FirmID, s.meta.RunID, key, s.owner, s.lease, counters...); err != nil {
		if errors.Is(err, warrant.ErrEffectClaimed) {
			return nil, s.unknownOutcome(ctx, req, rel.EffectRef, key, whyNoOutcome)
		}
		return nil, staged(failure.StageEffectClaim, err)
	}
	// The warrant's own input runs: the bytes counsel was shown (or wrote)
	// and signed.
	tc, _, err := s.run(ctx, req, tool, input, key, rel.EffectRef, edited)
	return tc, err
}

// inFlight answers a call a lost worker requested and never answered, from
// its claim: the stored result when it completed, a re-run for a replayable
// read, otherwise (taken, no outcome) the end of the run with
// effect_outcome_unknown. The tool.requested line is already stored.
func (s *session) inFlight(ctx context.Context, req *contracts.ToolRequested, claimed string) (*contracts.ToolCompleted, error) {
	c, err := s.b.store.LatestEffect(ctx, s.meta.FirmID, s.meta.RunID, req.ToolName, claimed)
	if err != nil {
		return nil, staged(failure.StageEffectClaim, err)
	}
	if c == nil {
		// Requested, never claimed: a call that was denied or held is
		// stored with its answer in one write, and an allowed one with its
		// claim, so the ledger and the claims disagree.
		return nil, staged(failure.StageEffectClaim, failure.New(failure.KindLedgerCorrupt, "a requested call has no claim"))
	}
	tc, _, err := s.reuse(ctx, req, s.b.tools[req.ToolName], c, s.replayable(ctx, req, false))
	return tc, err
}

// unknownOutcome ends the run because an effect's executor was lost before
// it recorded whether the effect happened: tool.completed with status
// unknown, the claim flagged for reconciliation, run.failed
// (effect_outcome_unknown), in one transaction. Nothing is executed. The
// write is conditioned as sw says (zero: on this session's lease).
func (s *session) unknownOutcome(ctx context.Context, req *contracts.ToolRequested, effectRef string, key warrant.EffectKey, why string, sw ...warrant.SweepFailure) error {
	reason := failure.New(failure.KindEffectOutcomeUnknown, why+"; it is flagged for reconciliation")
	component, cond := "agent", warrant.SweepFailure{Owner: s.owner}
	if len(sw) > 0 {
		component, cond = "sweeper", sw[0]
	}
	env := failure.Build(reason, failure.StageEffectClaim, component, s.scope())
	s.b.logger.Log(ctx, env)
	tc := &contracts.ToolCompleted{ToolUseID: req.ToolUseID, ToolName: req.ToolName, InputSHA256: req.InputSHA256,
		Status: contracts.ToolUnknown, EffectRef: effectRef, Result: errorResult("outcome unknown: flagged for reconciliation")}
	if key.InputSHA256 != req.InputSHA256 {
		tc.ExecutedInputSHA256 = key.InputSHA256 // counsel's edit was what may have run
	}
	cond.FirmID, cond.RunID, cond.Flag = s.meta.FirmID, s.meta.RunID, &key
	err := s.commit(ctx, func(ls []contracts.Line) error { return s.b.store.SweepFail(ctx, cond, ls...) }, tc, runFailed(reason, env))
	if err != nil {
		return staged(failure.StageLedgerWrite, err)
	}
	return errRunEnded
}

// Why an effect's outcome is unknown, as run.failed says it.
const (
	whyNoOutcome  = "an earlier attempt at this effect did not report its outcome"
	whyAnswerLost = "the effect's call left for its system and the answer was lost"
	whyUnrecorded = "the effect ran and its outcome could not be recorded"
)

// errRunEnded says the run was ended on purpose: nothing more to record.
var errRunEnded = errors.New("agent: the run was ended")

func hasToolUse(t *contracts.TurnCompleted) bool {
	for _, b := range t.Content {
		if b.Type == contracts.BlockToolUse {
			return true
		}
	}
	return false
}

func maps(m map[string]*contracts.ToolCompleted) map[string]*contracts.ToolCompleted {
	out := make(map[string]*contracts.ToolCompleted, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
