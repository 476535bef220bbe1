package agent

import (
	"context"
	"errors"
	"slices"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// ResumeRequest names the held run and its warrant. Firm and user come from the
// caller's JWT claims.
type ResumeRequest struct {
	FirmID, RunID, ApprovalID, UserID, CorrelationID string
}

// Resume continues a held run under its decided warrant. Only the warrant's exact
// tool + input hash may run under it; the effect is claimed, the warrant burned
// and the run released in one transaction, so of N concurrent resumes exactly one
// proceeds and the rest get a conflict. A declined warrant resumes too: the model
// is told the call was declined by counsel.
//
// Errors (failure kinds): not_found (no such run or warrant in this firm),
// conflict (warrant pending or consumed, run not held on it, effect already
// claimed, warrant not matching the ledger), expired (warrant past expires_at),
// unknown_agent (the run's agent is no longer registered).
func (b *Brain) Resume(ctx context.Context, r ResumeRequest) (Result, error) {
	run, err := b.store.GetRun(ctx, r.FirmID, r.RunID)
	if err != nil {
		return Result{}, storeError(err)
	}
	w, err := b.store.GetReleaseAuthorizedRequest(ctx, r.ApprovalID, r.FirmID, r.RunID, run.MatterID)
	if err != nil {
		return Result{}, storeError(err)
	}
	if string(run.Status) != string(reducer.StatusHeld) || run.HeldOn != w.ApprovalID {
		return Result{}, failure.New(failure.KindConflict, "the run is not held on this warrant")
	}
	lines, err := b.readLedger(ctx, r.FirmID, r.RunID)
	if err != nil {
		return Result{}, err
	}
	state, err := reducer.ReduceAgentRun(lines)
	if err != nil {
		return Result{}, failure.Wrap(failure.KindLedgerCorrupt, "the run's ledger does not verify", err)
	}
	if state.Status != reducer.StatusHeld || state.HeldOn != w.ApprovalID {
		return Result{}, failure.New(failure.KindConflict, "the run's ledger is not held on this warrant")
	}
	view, err := rebuild(lines)
	if err != nil {
		return Result{}, failure.Wrap(failure.KindLedgerCorrupt, "the run's transcript cannot be rebuilt", err)
	}
	req, err := tamperCheck(w, view)
	if err != nil {
		return Result{}, err
	}
	def, ok := b.agents[view.started.AgentKey]
	if !ok {
		return Result{}, failure.New(failure.KindUnknownAgent, "the run's agent is no longer registered")
	}
	def.ModelID = view.started.ModelID // a run keeps the model (and price) it started with
	tool, ok := b.tools[w.ToolName]
	if !ok || !slices.Contains(def.Tools, w.ToolName) {
		return Result{}, failure.New(failure.KindConflict, "the warranted tool is no longer available to the run's agent")
	}

	meta := contracts.InvokeMeta{RunID: r.RunID, FirmID: r.FirmID, UserID: view.started.UserID,
		MatterID: view.started.MatterID, CorrelationID: r.CorrelationID}
	s := b.newSession(ctx, def, meta)
	s.chain = contracts.ChainAfter(lines[len(lines)-1])
	s.chain.Now = b.cfg.Now
	s.state, s.msgs, s.allow = state, view.msgs, &w

	approved := w.Decision == contracts.DecisionApproved
	released := &contracts.RunReleased{ApprovalRequestID: w.ApprovalID, Decision: w.Decision}
	claim := dynamo.ResumeClaim{FirmID: r.FirmID, RunID: r.RunID, ApprovalID: w.ApprovalID, Decision: w.Decision,
		ToolName: w.ToolName, InputSHA256: w.ToolInputHash, Owner: s.owner, LeaseUntil: s.leaseUntil(ctx)}
	if approved {
		claim.EffectRef = b.cfg.NewID()
		released.EffectRef = claim.EffectRef
	}
	err = s.commit(ctx, func(ls []contracts.Line) error { return b.store.ResumeClaim(ctx, claim, ls[0]) }, released)
	if err != nil {
		return Result{}, storeError(err)
	}

	// From here the run is ours: every failure lands in the ledger as run.failed.
	var tc *contracts.ToolCompleted
	if approved {
		tc, _, err = s.run(ctx, req, tool, claim.EffectRef)
	} else {
		tc = &contracts.ToolCompleted{ToolUseID: req.ToolUseID, ToolName: req.ToolName, InputSHA256: req.InputSHA256,
			Status: contracts.ToolDeclined, Result: errorResult(ReasonDeclinedByCounsel)}
		err = s.commit(ctx, nil, tc)
	}
	if err != nil {
		s.fail(ctx, err, failure.StageToolExecute)
		return s.result(run), nil
	}
	done := map[string]*contracts.ToolCompleted{tc.ToolUseID: tc}
	for id, c := range view.done {
		done[id] = c
	}
	if s.runTools(ctx, view.lastTurn.Turn, view.lastTurn.Content, done) {
		s.loop(ctx)
	}
	return s.result(run), nil
}

// tamperCheck re-hashes the warrant's stored input and requires it to match the
// warrant's hash, the ledger's tool.requested line and the model's own tool use,
// so an edited warrant item cannot smuggle in a different effect.
func tamperCheck(w dynamo.Warrant, v ledgerView) (*contracts.ToolRequested, error) {
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
	for _, b := range v.lastTurn.Content {
		if b.Type == contracts.BlockToolUse && b.ToolUseID == w.ToolUseID {
			if bh, err := contracts.InputHash(b.Input); err != nil || bh != h || b.Name != w.ToolName {
				return nil, mismatch
			}
			return req, nil
		}
	}
	return nil, mismatch
}

func (b *Brain) readLedger(ctx context.Context, firm, run string) ([]contracts.Line, error) {
	items, _, err := b.store.ReadLedger(ctx, firm, run, 0, 0)
	if err != nil {
		return nil, err
	}
	lines := make([]contracts.Line, 0, len(items))
	for _, it := range items {
		l, err := contracts.ParseEventLine(it.Raw)
		if err != nil {
			return nil, failure.Wrap(failure.KindLedgerCorrupt, "the run's ledger does not parse", err)
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return nil, failure.New(failure.KindNotFound, "run not found")
	}
	return lines, nil
}

// storeError gives the store's typed errors their failure kinds and the
// precise messages the API returns.
func storeError(err error) error {
	for _, m := range []struct {
		target error
		kind   failure.Kind
		msg    string
	}{
		{dynamo.ErrNotFound, failure.KindNotFound, "run or warrant not found"},
		{dynamo.ErrWarrantNotDecided, failure.KindConflict, "the warrant is still pending: counsel has not decided"},
		{dynamo.ErrWarrantConsumed, failure.KindConflict, "the warrant was already used"},
		{dynamo.ErrWarrantExpired, failure.KindExpired, "the warrant has expired"},
		{dynamo.ErrRunNotInState, failure.KindConflict, "the run is not held on this warrant"},
		{dynamo.ErrEffectClaimed, failure.KindConflict, "the warranted effect was already claimed"},
		{dynamo.ErrSeqTaken, failure.KindConflict, "another writer advanced the run's ledger"},
		{dynamo.ErrWarrantNotPending, failure.KindConflict, "the warrant is not pending"},
		{dynamo.ErrHashMismatch, failure.KindConflict, "tool_input_hash does not match the warrant"},
		{dynamo.ErrRunExists, failure.KindConflict, "the run already exists"},
	} {
		if errors.Is(err, m.target) {
			return failure.Wrap(m.kind, m.msg, err)
		}
	}
	return err
}

// StoreError is storeError for the handlers, which map the same store errors.
func StoreError(err error) error { return storeError(err) }
