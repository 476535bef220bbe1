package agent

import (
	"bytes"
	"context"
	"errors"
	"slices"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"

	"github.com/seed-f6d3920e/warrant"
)

// ResumeRequest names the held run and its warrant. Firm and user come from the
// caller's JWT claims.
type ResumeRequest struct {
	FirmID, RunID, ApprovalID, UserID, CorrelationID string
}

// PrepareResume releases a held run under its decided warrant, for a
// worker to continue (Continue). Only the warrant's exact tool + input hash
// may run under it: the effect is reserved (or, declined, claimed declined),
// the warrant burned and the run released in one transaction, so of N
// concurrent resumes exactly one proceeds and the rest get a conflict. It
// executes nothing and calls no model.
//
// An approved warrant's call (counsel's edit, if any) is decided again by
// the risk policy running now; if it denies it, the warrant is refused and
// the run fails with policy_changed, in one transaction, and nothing runs.
//
// Errors (failure kinds): not_found (no such run or warrant in this firm),
// conflict (warrant pending or consumed, run not held on it, effect already
// claimed, warrant not matching the ledger), expired (warrant past expires_at),
// policy_changed (the policy now denies the call: recorded, never executed),
// unknown_agent (the run's agent is no longer registered), ledger_corrupt.
func (b *Brain) PrepareResume(ctx context.Context, r ResumeRequest) (Result, error) {
	run, err := b.store.GetRun(ctx, r.FirmID, r.RunID)
	if err != nil {
		return Result{}, err
	}
	if !run.ContentDestroyedAt.IsZero() {
		return Result{}, warrant.ErrContentDestroyed
	}
	w, err := b.store.GetReleaseAuthorizedRequest(ctx, r.ApprovalID, r.FirmID, r.RunID, run.MatterID)
	if err != nil {
		return Result{}, err
	}
	if run.Status != warrant.RunHeld || run.HeldOn != w.ApprovalID {
		return Result{}, failure.New(failure.KindConflict, "the run is not held on this warrant")
	}
	// The ledger must be the one the store signed: a rewritten, re-chained
	// ledger (or one cut short) does not fold, so nothing below acts on it.
	rk := newRunKey(b.cfg.Keys)
	defer rk.close()
	folded, err := reducer.Fold(ctx, b.store, r.FirmID, r.RunID, reducer.FoldOptions{KeepLines: true, Keys: b.cfg.Heads, Open: rk.open})
	if err != nil {
		return Result{}, err
	}
	state, lines, run := folded.State, folded.Lines, folded.Run
	sealer, err := rk.sealer(ctx, run)
	if err != nil {
		return Result{}, err
	}
	// The warrant's content opened, its input held to the hash counsel
	// signed, before anything compares or runs it.
	if w, err = OpenWarrant(rk.key, w); err != nil {
		return Result{}, err
	}
	if state.Status != warrant.RunHeld || state.HeldOn != w.ApprovalID || run.Status != warrant.RunHeld || run.HeldOn != w.ApprovalID {
		return Result{}, failure.New(failure.KindConflict, "the run's ledger is not held on this warrant")
	}
	view, err := rebuild(lines)
	if err != nil {
		return Result{}, failure.Wrap(failure.KindLedgerCorrupt, "the run's transcript cannot be rebuilt", err)
	}
	if _, err := b.tamperCheck(w, view); err != nil {
		return Result{}, err
	}
	if err := editCheck(w, lines); err != nil {
		return Result{}, err
	}
	def, ok := b.agents[view.started.AgentKey]
	if !ok {
		return Result{}, failure.New(failure.KindUnknownAgent, "the run's agent is no longer registered")
	}
	if _, ok := b.tools[w.ToolName]; !ok || !slices.Contains(def.Tools, w.ToolName) {
		return Result{}, failure.New(failure.KindConflict, "the warranted tool is no longer available to the run's agent")
	}
	meta := contracts.InvokeMeta{RunID: r.RunID, FirmID: r.FirmID, UserID: view.started.UserID,
		MatterID: view.started.MatterID, CorrelationID: r.CorrelationID}
	s := b.newSession(ctx, def, meta)
	s.roles, s.userName = view.started.UserRoles, view.started.UserName
	s.chain = contracts.ChainAfter(lines[len(lines)-1])
	s.chain.Now, s.chain.Sealer, s.key = b.cfg.Now, sealer, rk.key
	s.state = state
	execInput, execHash := w.Executes()
	released := &contracts.RunReleased{ApprovalRequestID: w.ApprovalID, Decision: w.Decision}
	if w.Decision == warrant.DecisionApproved {
		// Re-check at dispatch: the policy running now decides the call the
		// warrant lets run. If it denies it (a rule added or an overlay
		// changed since the hold, or the matter's client domains since
		// counsel signed), the warrant is refused, the run fails with
		// policy_changed, and nothing executes. Either way the line records
		// the decision and what it was made on.
		pm, err := s.policyMeta(ctx)
		if err != nil {
			return Result{}, err
		}
		var steps reducer.Sources
		for _, l := range lines {
			steps.Fold(l)
		}
		matter, unread := b.matterSteps(ctx, r.FirmID, run.MatterID, r.RunID, w.ToolName)
		d := b.decideSigned(w.ToolName, execInput, pm, steps.History(), matter)
		check, err := policyCheck(w.ToolName, execHash, d, pm)
		if err != nil {
			return Result{}, err
		}
		check.MatterSteps, check.MatterUnread = matterRecord(d, unread)
		if d.Action == toolpolicy.ActionDeny {
			return Result{}, s.refuse(ctx, w, d, check)
		}
		released.PolicyCheck = check
	}
	// A declined warrant claims its call too, as declined: every copy of the
	// call, in this step or a later turn, is then answered "declined" and
	// nothing can execute it in this run. An approved one is reserved for the
	// worker that continues the run.
	claim := warrant.ResumeClaim{FirmID: r.FirmID, RunID: r.RunID, ApprovalID: w.ApprovalID, Decision: w.Decision,
		ToolName: w.ToolName, InputSHA256: execHash, Attempt: w.Attempt, PickupBy: b.cfg.Now().Add(b.cfg.Pickup).UTC()}
	if w.Decision == warrant.DecisionApproved {
		claim.EffectRef = b.cfg.NewID()
		released.EffectRef = claim.EffectRef
	}
	if err := s.commit(ctx, func(ls []contracts.Line) error { return b.store.ResumeClaim(ctx, claim, ls[0]) }, released); err != nil {
		return Result{}, err
	}
	run.Status, run.HeldOn = warrant.RunRunning, ""
	return s.result(run), nil
}

// Resume is PrepareResume and Continue in this process: the resumed step runs
// (the warranted effect executes once) and the loop goes on until the run
// ends or holds again. The API hands the run to the worker instead.
func (b *Brain) Resume(ctx context.Context, r ResumeRequest) (Result, error) {
	if _, err := b.PrepareResume(ctx, r); err != nil {
		return Result{}, err
	}
	return b.Continue(ctx, r.FirmID, r.RunID, r.CorrelationID)
}

// refuse records that the running policy denies a warrant's call at
// dispatch: the warrant becomes refused and the run fails (policy_changed)
// with its run.failed line, in one transaction. The caller gets the same
// kind.
func (s *session) refuse(ctx context.Context, w warrant.Warrant, d toolpolicy.Decision, check *contracts.PolicyCheck) error {
	msg := "the risk policy (version " + d.PolicyVersion + ") now denies the warranted call"
	if ids := ruleIDs(firedRules(d.FiredRules)); ids != "" {
		msg += " (fired rules: " + ids + ")"
	}
	reason := failure.New(failure.KindPolicyChanged, msg+"; the warrant was refused and nothing was executed")
	env := failure.Build(reason, failure.StageResume, "agent", s.scope())
	s.b.logger.Log(ctx, env)
	sw := warrant.SweepFailure{FirmID: s.meta.FirmID, RunID: s.meta.RunID, RefuseApproval: w.ApprovalID}
	failed := runFailed(reason, env)
	failed.PolicyCheck = check
	if err := s.commit(ctx, func(ls []contracts.Line) error { return s.b.store.SweepFail(ctx, sw, ls...) }, failed); err != nil {
		if errors.Is(err, warrant.ErrRunNotInState) {
			return failure.New(failure.KindConflict, "the run is not held on this warrant")
		}
		return err
	}
	return reason
}

// editCheck holds a warrant's edit to the ledger: the approval.decided line
// of this warrant must carry exactly the edit the warrant item does (or
// neither carries one), and the edit must hash to its recorded hash, so a
// rewritten warrant item can neither add, drop nor change counsel's edit.
func editCheck(w warrant.Warrant, lines []contracts.Line) error {
	mismatch := failure.New(failure.KindConflict, "the warrant's edit does not match the run's ledger")
	var decided *contracts.ApprovalDecided
	for _, l := range lines {
		if d, ok := l.Event.(*contracts.ApprovalDecided); ok && d.ApprovalRequestID == w.ApprovalID {
			decided = d
		}
	}
	if decided == nil {
		return mismatch
	}
	if decided.EditedInputSHA256 != w.EditedHash || !bytes.Equal(decided.EditedInput, w.EditedInput) {
		return mismatch
	}
	if w.EditedHash != "" {
		if h, err := contracts.InputHash(w.EditedInput); err != nil || h != w.EditedHash || w.Decision != warrant.DecisionApproved {
			return mismatch
		}
	}
	return nil
}

// tamperCheck re-hashes the warrant's stored input and requires it to match the
// warrant's hash, the ledger's tool.requested line and the model's own tool use
// (with the run's matter put in as the brain put it: withMatter), so an edited
// warrant item cannot smuggle in a different effect.
func (b *Brain) tamperCheck(w warrant.Warrant, v ledgerView) (*contracts.ToolRequested, error) {
	mismatch := failure.New(failure.KindConflict, "the warrant does not match the run's ledger")
	h, err := contracts.InputHash(w.Input)
	if err != nil || h != w.ToolInputHash {
		return nil, mismatch
	}
	req, ok := v.requested[w.ToolUseID]
	if !ok || req.ToolName != w.ToolName || req.InputSHA256 != h {
		return nil, mismatch
	}
	if v.lastTurn == nil {
		return nil, mismatch
	}
	for _, blk := range v.lastTurn.Content {
		if blk.Type == contracts.BlockToolUse && blk.ToolUseID == w.ToolUseID {
			in, _ := b.withMatter(blk.Name, blk.Input, v.started.MatterID)
			if bh, err := contracts.InputHash(in); err != nil || bh != h || blk.Name != w.ToolName {
				return nil, mismatch
			}
			return req, nil
		}
	}
	return nil, mismatch
}
