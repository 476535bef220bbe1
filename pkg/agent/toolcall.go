package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"

	"github.com/seed-f6d3920e/warrant"
)

// Reasons the model is given when a call does not run.
const (
	ReasonNotCoveredByWarrant = "not covered by warrant"
	ReasonDeclinedByCounsel   = "declined by counsel"
	ReasonInvalidInput        = "input does not match the tool's schema"
	ReasonToolUnavailable     = "tool is not available to this agent"
)

// stagedError carries the stage a tool-call failure happened in.
type stagedError struct {
	stage failure.Stage
	err   error
}

func (e *stagedError) Error() string { return e.err.Error() }
func (e *stagedError) Unwrap() error { return e.err }

func staged(stage failure.Stage, err error) error { return &stagedError{stage: stage, err: err} }

func stageOf(err error) failure.Stage {
	var se *stagedError
	if errors.As(err, &se) {
		return se.stage
	}
	return failure.StageInvoke
}

// toolCall passes one tool use through the hook chain: schema, risk policy and,
// in a resumed step, the warrant allowlist. It returns the tool.completed event
// the model will see, or held=true when the run now waits on a warrant.
func (s *session) toolCall(ctx context.Context, turn int64, b contracts.ContentBlock) (*contracts.ToolCompleted, bool, error) {
	input, hash, err := contracts.CanonicalInput(b.Input)
	if err != nil {
		return nil, false, staged(failure.StageToolPolicy, failure.Wrap(failure.KindModelMalformedOutput, "the model's tool input is not canonical JSON", err))
	}
	decision, err := s.b.policy.GetToolRiskDecision(b.Name, nil)
	if err != nil {
		// A name the policy cannot even read is denied like any unlisted tool.
		decision = toolpolicy.Decision{ToolName: b.Name, Tier: toolpolicy.TierProhibited, Action: toolpolicy.ActionDeny,
			Reason: "malformed tool name", MatchedPolicy: "default", PolicyVersion: s.b.policy.Version()}
	}
	req := &contracts.ToolRequested{Turn: turn, ToolUseID: b.ToolUseID, ToolName: b.Name, Input: input, InputSHA256: hash,
		RiskTier: string(decision.Tier), Action: string(decision.Action), Reason: decision.Reason, MatchedPolicy: decision.MatchedPolicy}
	finish := func(status, msg string) (*contracts.ToolCompleted, bool, error) {
		tc := &contracts.ToolCompleted{ToolUseID: b.ToolUseID, ToolName: b.Name, InputSHA256: hash, Status: status, Result: errorResult(msg)}
		if err := s.commit(ctx, nil, req, tc); err != nil {
			return nil, false, staged(failure.StageLedgerWrite, err)
		}
		return tc, false, nil
	}

	tool, known := s.b.tools[b.Name]
	switch {
	case !known || !slices.Contains(s.def.Tools, b.Name):
		if decision.Action == toolpolicy.ActionDeny {
			return finish(contracts.ToolDenied, "denied by policy: "+decision.Reason)
		}
		return finish(contracts.ToolDenied, ReasonToolUnavailable)
	case !validInput(tool.schema, input):
		return finish(contracts.ToolError, ReasonInvalidInput)
	}
	switch decision.Action {
	case toolpolicy.ActionDeny:
		return finish(contracts.ToolDenied, "denied by policy: "+decision.Reason)
	case toolpolicy.ActionRequireApproval:
		if s.allow != nil && !(s.allow.ToolName == b.Name && s.allow.ToolInputHash == hash) {
			// One warrant covers one exact call; anything else needing approval
			// in the step it resumed is blocked, not silently re-held.
			return finish(contracts.ToolDenied, ReasonNotCoveredByWarrant)
		}
		if s.allow == nil {
			return nil, true, s.hold(ctx, req, tool)
		}
		// The same exact call again in the resumed step: its effect was claimed
		// under the warrant, so the claim below returns the stored result.
	case toolpolicy.ActionAllow:
	default:
		return finish(contracts.ToolDenied, "denied by policy: unknown action")
	}
	return s.execute(ctx, req, tool, decision.Replayable)
}

func validInput(sch *jsonschema.Schema, raw json.RawMessage) bool {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return false
	}
	return sch.Validate(v) == nil
}

// execute claims the effect once, runs the tool and records the outcome: two
// round trips (requested line + claim, completion + completed line).
func (s *session) execute(ctx context.Context, req *contracts.ToolRequested, tool registeredTool, replayable bool) (*contracts.ToolCompleted, bool, error) {
	effectRef := s.b.cfg.NewID()
	claim := warrant.ClaimInput{FirmID: s.meta.FirmID, RunID: s.meta.RunID, ToolName: req.ToolName, InputSHA256: req.InputSHA256,
		EffectRef: effectRef, Owner: s.owner, LeaseUntil: s.leaseUntil(ctx)}
	var claimed bool
	var existing *warrant.Claim
	err := s.commit(ctx, func(lines []contracts.Line) error {
		var err error
		claimed, existing, err = s.b.store.ClaimToolEffectOnce(ctx, claim, lines...)
		if err == nil && !claimed {
			// The claim's transaction wrote nothing; record the request alone.
			err = s.b.store.AppendEvents(ctx, s.meta.FirmID, s.meta.RunID, lines...)
		}
		return err
	}, req)
	if err != nil {
		return nil, false, staged(failure.StageEffectClaim, err)
	}
	if !claimed {
		return s.reuse(ctx, req, tool, existing, replayable)
	}
	return s.run(ctx, req, tool, effectRef)
}

// run executes a claimed effect and completes the claim (conditioned on this
// session owning it) together with the tool.completed line.
func (s *session) run(ctx context.Context, req *contracts.ToolRequested, tool registeredTool, effectRef string) (*contracts.ToolCompleted, bool, error) {
	result, execErr := tool.Execute(s.toolContext(ctx), req.Input, effectRef)
	tc := &contracts.ToolCompleted{ToolUseID: req.ToolUseID, ToolName: req.ToolName, InputSHA256: req.InputSHA256,
		Status: contracts.ToolSuccess, EffectRef: effectRef, Result: result}
	completion := warrant.Completion{State: warrant.ClaimCompleted, ToolStatus: contracts.ToolSuccess, Result: result}
	if execErr != nil || !json.Valid(result) {
		msg := "tool failed"
		if execErr != nil {
			msg = "tool failed: " + execErr.Error()
		}
		tc.Status, tc.Result = contracts.ToolError, errorResult(msg)
		completion = warrant.Completion{State: warrant.ClaimFailed, ToolStatus: contracts.ToolError, Result: tc.Result}
	}
	err := s.commit(ctx, func(lines []contracts.Line) error {
		return s.b.store.CompleteEffect(ctx, s.meta.FirmID, s.meta.RunID, req.ToolName, req.InputSHA256, s.owner, completion, lines...)
	}, tc)
	if err != nil {
		return nil, false, staged(failure.StageToolExecute, err)
	}
	return tc, false, nil
}

// reuse answers a call whose effect was already claimed: the stored result when
// it completed, a re-run only for replayable reads, otherwise the outcome is
// unknown and nobody re-executes it on their own (DESIGN §10).
func (s *session) reuse(ctx context.Context, req *contracts.ToolRequested, tool registeredTool, c *warrant.Claim, replayable bool) (*contracts.ToolCompleted, bool, error) {
	tc := &contracts.ToolCompleted{ToolUseID: req.ToolUseID, ToolName: req.ToolName, InputSHA256: req.InputSHA256, EffectRef: c.EffectRef}
	switch {
	case c.State == warrant.ClaimCompleted || c.State == warrant.ClaimFailed:
		tc.Status, tc.Result = c.ToolStatus, c.Result
		if tc.Status == "" {
			tc.Status = contracts.ToolSuccess
		}
	case replayable:
		result, err := tool.Execute(s.toolContext(ctx), req.Input, c.EffectRef)
		tc.Status, tc.Result = contracts.ToolSuccess, result
		if err != nil || !json.Valid(result) {
			tc.Status, tc.Result = contracts.ToolError, errorResult("tool failed")
		}
	default:
		_ = s.b.store.FlagForReconciliation(ctx, s.meta.FirmID, s.meta.RunID, req.ToolName, req.InputSHA256)
		return nil, false, staged(failure.StageEffectClaim, failure.New(failure.KindEffectOutcomeUnknown,
			"an earlier attempt at this effect did not report its outcome; it is flagged for reconciliation"))
	}
	if err := s.commit(ctx, nil, tc); err != nil {
		return nil, false, staged(failure.StageLedgerWrite, err)
	}
	return tc, false, nil
}

// hold asks counsel: a warrant request bound to the exact input, the run.blocked
// line and the run's running -> held, in one transaction.
func (s *session) hold(ctx context.Context, req *contracts.ToolRequested, tool registeredTool) error {
	now := s.b.cfg.Now().UTC()
	w := warrant.Warrant{FirmID: s.meta.FirmID, RunID: s.meta.RunID, ApprovalID: s.b.cfg.NewID(), MatterID: s.meta.MatterID,
		ToolName: req.ToolName, ToolUseID: req.ToolUseID, ToolInputHash: req.InputSHA256, Input: req.Input,
		RiskTier: req.RiskTier, Reason: req.Reason, HumanSummary: tool.Summarize(req.Input), RequestedBy: s.meta.UserID,
		RequestedAt: now, ExpiresAt: now.Add(s.b.cfg.WarrantTTL)}
	blocked := &contracts.RunBlocked{Approval: contracts.BlockedApproval{ApprovalRequestID: w.ApprovalID, ToolUseID: w.ToolUseID,
		ToolName: w.ToolName, ToolInput: w.Input, ToolInputHash: w.ToolInputHash, RiskTier: w.RiskTier, Reason: w.Reason,
		HumanSummary: w.HumanSummary, ExpiresAt: contracts.FormatTime(w.ExpiresAt)}}
	err := s.commit(ctx, func(lines []contracts.Line) error {
		return s.b.store.CreateWarrantRequest(ctx, w, lines...)
	}, req, blocked)
	if err != nil {
		return staged(failure.StageApproval, err)
	}
	return nil
}
