package agent

import (
	"context"
	"errors"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// A tool whose system no longer offers it as the catalog pinned it ends the
// run tool_changed, wherever the brain meets it, and nothing is sent:
//
//   - before counsel is asked to sign a call (pinChanged before hold): no
//     warrant is asked for a call that could not run;
//   - before a signed call runs (pinChanged before the worker takes the
//     claim the resume reserved): the warrant was burned by the resume, its
//     call never runs, and run.failed names it;
//   - when the target itself refuses a call (any call: a read, an allowed
//     effect, or a change between the check and the call): its claim is
//     completed failed first.
//
// The run is not told to go on without the tool: the catalog the firm
// reviewed no longer describes what the system would do, which only an
// operator can settle (import the tool again, review it, publish a new
// catalog), so the run stops where everyone sees it, with the pinned and
// the current schema hash in run.failed, the logged envelope and the run
// view.

// pinChanged asks t's system whether it still offers t as the catalog
// pinned it, within t's timeout, when the system publishes its tools'
// schemas (PinChecker). It returns the change, or nil: the tool is as
// pinned, its system publishes no schema (a builtin, an HTTPS endpoint, a
// Lambda function), or the system could not be asked now, in which case
// the target checks the pin again before it sends the call.
func (s *session) pinChanged(ctx context.Context, t registeredTool) *ToolChangedError {
	pc, ok := t.System.(PinChecker)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	var changed *ToolChangedError
	if errors.As(pc.CheckPin(ctx, s.targetCall(t, nil, "")), &changed) {
		return changed
	}
	return nil
}

// targetCall is the call of t with input as its target sends it.
func (s *session) targetCall(t registeredTool, input []byte, effectRef string) TargetCall {
	return TargetCall{Tool: t.Target.Tool, Input: input, SchemaSHA256: t.Target.SchemaSHA256, Effect: t.Class != catalog.ClassRead,
		EffectRef: effectRef, FirmID: s.meta.FirmID, RunID: s.meta.RunID, MatterID: s.meta.MatterID}
}

// changedTool is the record of a tool_changed failure: the catalog's names
// and pin, the system's hash (kept only when it is one: a target's text
// never reaches the ledger), and the warrant whose call was refused.
func changedTool(req *contracts.ToolRequested, t registeredTool, changed *ToolChangedError, approvalID string) *failure.ToolChange {
	c := &failure.ToolChange{Tool: req.ToolName, Server: t.Server, PinnedSchemaSHA256: t.Target.SchemaSHA256, ApprovalRequestID: approvalID}
	if contracts.IsHash(changed.Current) && changed.Current != c.PinnedSchemaSHA256 {
		c.CurrentSchemaSHA256 = changed.Current
	}
	return c
}

// toolChanged ends the run tool_changed: run.failed names the tool, its
// pin and its system's current hash (and the warrant, approvalID, whose
// signed call is refused), written with events (the tool.requested of a
// call never held) in one write, and its envelope is logged. A claim this
// session took for the call (taken) is then completed failed, nothing
// having been sent. It returns errRunEnded once the run is ended.
func (s *session) toolChanged(ctx context.Context, stage failure.Stage, req *contracts.ToolRequested, t registeredTool, changed *ToolChangedError,
	approvalID string, taken *warrant.EffectKey, events ...contracts.Event) error {
	change := changedTool(req, t, changed, approvalID)
	reason := failure.Wrap(failure.KindToolChanged, "", changed)
	env := failure.Build(reason, stage, "agent", s.scope())
	env.ToolChange = change
	s.b.logger.Log(ctx, env)
	failed := runFailed(reason, env)
	failed.ToolChange = change
	if err := s.commit(ctx, nil, append(events, failed)...); err != nil {
		return staged(failure.StageLedgerWrite, err)
	}
	if taken != nil {
		// The run's end first: a worker lost before the claim's write
		// leaves an ended run whose record says nothing was sent, never a
		// run a later worker would go on with.
		done := warrant.Completion{State: warrant.ClaimFailed, ToolStatus: contracts.ToolError,
			Result: errorResult("refused: the tool changed on its system since the catalog pinned it; nothing was sent")}
		var err error
		if done.Result, err = sealResult(s.key, *taken, done.Result); err != nil {
			return err
		}
		err = s.retryWrite(ctx, func() error {
			return s.b.store.CompleteEffect(ctx, s.meta.FirmID, s.meta.RunID, *taken, s.owner, done)
		})
		if err != nil {
			s.b.logger.Log(ctx, failure.Build(err, failure.StageEffectClaim, "agent", s.scope()))
		}
	}
	return errRunEnded
}
