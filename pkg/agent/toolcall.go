package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
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
	ReasonOtherMatter         = "denied: the call names another matter than the run's (the matter wall)"
	// ReasonMatterFieldInvalid: the input's matter field cannot hold the
	// run's matter (a parent of it that is not an object, a matter that is
	// not a string), so the wall cannot tell which matter the call is for.
	ReasonMatterFieldInvalid = "denied: the tool's matter field must hold the run's matter id as a string (the matter wall)"
)

// MaxToolInputBytes bounds a tool call's canonical input. A larger one is
// answered with an error the model can act on (shorten or split the
// document) before anything is held or claimed: counsel's edit of a call
// travels in a request body of at most 256 KiB, so a call counsel could not
// edit as a whole is not put before counsel.
const MaxToolInputBytes = 256 << 10

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
	raw, matter := s.b.withMatter(b.Name, b.Input, s.meta.MatterID)
	input, hash, err := contracts.CanonicalInput(raw)
	if err != nil {
		return nil, false, staged(failure.StageToolPolicy, failure.Wrap(failure.KindModelMalformedOutput, "the model's tool input is not canonical JSON", err))
	}
	meta, err := s.policyMeta(ctx)
	if err != nil {
		return nil, false, staged(failure.StageToolPolicy, err)
	}
	decision, matterUnread := s.decide(ctx, b.Name, input, meta)
	metaRaw, metaSum, err := recordMeta(meta)
	if err != nil {
		return nil, false, staged(failure.StageToolPolicy, err)
	}
	req := &contracts.ToolRequested{Turn: turn, ToolUseID: b.ToolUseID, ToolName: b.Name, Input: input, InputSHA256: hash,
		RiskTier: string(decision.Tier), Action: string(decision.Action), Reason: decision.Reason, MatchedPolicy: decision.MatchedPolicy,
		PolicyVersion: decision.PolicyVersion, FiredRules: firedRules(decision.FiredRules),
		PolicyMetadata: metaRaw, PolicyMetadataSHA256: metaSum, Provenance: decision.Provenance}
	req.MatterSteps, req.MatterUnread = matterRecord(decision, matterUnread)
	if t, ok := s.b.tools[b.Name]; ok {
		req.ToolClass = string(t.Class)
	}
	finish := func(status, msg string) (*contracts.ToolCompleted, bool, error) {
		tc := &contracts.ToolCompleted{ToolUseID: b.ToolUseID, ToolName: b.Name, InputSHA256: hash, Status: status, Result: errorResult(msg)}
		if status == contracts.ToolError {
			tc.ErrorKind = contracts.ToolErrInvalidInput // refused here, before any call
		}
		if err := s.commit(ctx, nil, req, tc); err != nil {
			return nil, false, staged(failure.StageLedgerWrite, err)
		}
		return tc, false, nil
	}

	tool, known := s.b.tools[b.Name]
	switch {
	case len(input) > MaxToolInputBytes:
		return finish(contracts.ToolError, fmt.Sprintf("input too large: %d bytes of canonical JSON, at most %d; shorten or split it", len(input), MaxToolInputBytes))
	case !known || !slices.Contains(s.def.Tools, b.Name):
		if decision.Action == toolpolicy.ActionDeny {
			return finish(contracts.ToolDenied, "denied by policy: "+decision.Reason)
		}
		return finish(contracts.ToolDenied, ReasonToolUnavailable)
	case !validInput(tool.schema, input):
		return finish(contracts.ToolError, ReasonInvalidInput)
	}
	switch {
	case decision.Action == toolpolicy.ActionDeny:
		return finish(contracts.ToolDenied, "denied by policy: "+decision.Reason)
	case matter == matterOther:
		return finish(contracts.ToolDenied, ReasonOtherMatter)
	case matter == matterInvalid:
		return finish(contracts.ToolDenied, ReasonMatterFieldInvalid)
	case decision.Action == toolpolicy.ActionRequireApproval:
		return s.warranted(ctx, req, tool, finish)
	case decision.Action == toolpolicy.ActionAllow:
		tc, held, err := s.execute(ctx, req, tool, s.b.replayable(b.Name, decision), s.counters(decision.Limits, true))
		var reached *warrant.LimitReachedError
		if errors.As(err, &reached) {
			return s.limitReached(ctx, req, tool, decision, reached.Limit, finish)
		}
		return tc, held, err
	}
	return finish(contracts.ToolDenied, "denied by policy: unknown action")
}

// warranted handles a call that needs counsel's warrant. The run's record of
// the call decides first, so no path executes it twice or on a declined
// warrant, and no warrant is asked for that could never be used:
//
//   - completed: the stored result and effect_ref answer it, no new warrant;
//   - declined: counsel declined this call in this run; it stays declined;
//   - claimed: an earlier attempt never reported its outcome; nobody
//     re-executes it (the run fails with effect_outcome_unknown);
//   - failed under the warrant this step resumed: the same answer (a copy of
//     the call in the same turn);
//   - failed otherwise, or never claimed: a warrant for the next attempt,
//     unless this is the step a warrant resumed, where anything the warrant
//     does not cover is denied (one warrant, one exact call).
func (s *session) warranted(ctx context.Context, req *contracts.ToolRequested, tool registeredTool,
	finish func(status, msg string) (*contracts.ToolCompleted, bool, error)) (*contracts.ToolCompleted, bool, error) {
	latest, err := s.b.store.LatestEffect(ctx, s.meta.FirmID, s.meta.RunID, req.ToolName, req.InputSHA256)
	if err != nil {
		return nil, false, staged(failure.StageEffectClaim, err)
	}
	attempt := 1
	if latest != nil {
		switch {
		case latest.State == warrant.ClaimCompleted || latest.State == warrant.ClaimDeclined,
			latest.State == warrant.ClaimFailed && s.allow != nil && latest.ApprovalID == s.allow.ApprovalID:
			return s.answerFromRecord(ctx, req, latest, req)
		case latest.State == warrant.ClaimClaimed:
			if err := s.commit(ctx, nil, req); err != nil {
				return nil, false, staged(failure.StageLedgerWrite, err)
			}
			return nil, false, s.unknownOutcome(ctx, req, latest.EffectRef, latest.Key(), whyNoOutcome)
		}
		attempt = latest.Attempt + 1
	}
	if s.allow != nil {
		return finish(contracts.ToolDenied, ReasonNotCoveredByWarrant)
	}
	// Counsel is never asked to sign a call that could not run.
	if changed := s.pinChanged(ctx, tool); changed != nil {
		return nil, false, s.toolChanged(ctx, failure.StageApproval, req, tool, changed, "", nil, req)
	}
	return nil, true, s.hold(ctx, req, tool, attempt)
}

// answerFromRecord answers a call from its claim without executing it,
// writing events (the tool.requested, when not yet stored) and the
// tool.completed, marked reused: the effect ran (or was declined) once, and
// its receipt is the first answer's.
func (s *session) answerFromRecord(ctx context.Context, req *contracts.ToolRequested, c *warrant.Claim, events ...contracts.Event) (*contracts.ToolCompleted, bool, error) {
	tc := &contracts.ToolCompleted{ToolUseID: req.ToolUseID, ToolName: req.ToolName, InputSHA256: req.InputSHA256, Reused: true}
	if c.State == warrant.ClaimDeclined {
		tc.Status, tc.Result = contracts.ToolDeclined, errorResult(ReasonDeclinedByCounsel)
	} else {
		result, err := openResult(s.key, c)
		if err != nil {
			return nil, false, err
		}
		tc.Status, tc.Result, tc.EffectRef = c.ToolStatus, result, c.EffectRef
		if tc.Status == "" {
			tc.Status = contracts.ToolSuccess
		}
	}
	if err := s.commit(ctx, nil, append(events, tc)...); err != nil {
		return nil, false, staged(failure.StageLedgerWrite, err)
	}
	return tc, false, nil
}

func validInput(sch *jsonschema.Schema, raw json.RawMessage) bool {
	_, ok := inputProblem(sch, raw)
	return ok
}

// inputProblem checks raw against the tool's schema and, when it does not
// fit, names where: the JSON pointers (under the input) of the members the
// schema refuses, at most three ("" when it cannot say, e.g. not JSON). A
// pointer names only the schema's own members and list positions; a member
// the schema does not know is not named (its name is the caller's text).
func inputProblem(sch *jsonschema.Schema, raw json.RawMessage) (where []string, ok bool) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, false
	}
	err = sch.Validate(v)
	if err == nil {
		return nil, true
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, false
	}
	known := map[string]bool{}
	collectPropertyNames(sch, known, 0)
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		segs := make([]string, 0, len(e.InstanceLocation))
		for _, seg := range e.InstanceLocation {
			if _, err := strconv.Atoi(seg); err != nil && !known[seg] {
				break // a member the schema does not know: named up to its parent
			}
			segs = append(segs, strings.NewReplacer("~", "~0", "/", "~1").Replace(seg))
		}
		add := func(segs []string) {
			p := ""
			if len(segs) > 0 {
				p = "/" + strings.Join(segs, "/")
			}
			if !seen[p] && len(where) < 3 {
				seen[p] = true
				where = append(where, p)
			}
		}
		if req, ok := e.ErrorKind.(*kind.Required); ok && len(segs) == len(e.InstanceLocation) {
			for _, m := range req.Missing { // the schema's own names
				add(append(slices.Clone(segs), strings.NewReplacer("~", "~0", "/", "~1").Replace(m)))
			}
			return
		}
		add(segs)
	}
	walk(ve)
	return where, false
}

// collectPropertyNames gathers the member names a schema declares, at any
// depth (bounded).
func collectPropertyNames(s *jsonschema.Schema, into map[string]bool, depth int) {
	if s == nil || depth > 16 {
		return
	}
	for name, sub := range s.Properties {
		into[name] = true
		collectPropertyNames(sub, into, depth+1)
	}
	if s.Items2020 != nil {
		collectPropertyNames(s.Items2020, into, depth+1)
	}
	if it, ok := s.Items.(*jsonschema.Schema); ok {
		collectPropertyNames(it, into, depth+1)
	}
	for _, sub := range s.AllOf {
		collectPropertyNames(sub, into, depth+1)
	}
	for _, sub := range s.AnyOf {
		collectPropertyNames(sub, into, depth+1)
	}
	for _, sub := range s.OneOf {
		collectPropertyNames(sub, into, depth+1)
	}
	if s.Ref != nil {
		collectPropertyNames(s.Ref, into, depth+1)
	}
}

// execute claims the effect once, runs the tool and records the outcome: two
// round trips (requested line + claim + the policy's counters, completion +
// completed line). A counter at its bound refuses the claim
// (*warrant.LimitReachedError) and nothing is written.
func (s *session) execute(ctx context.Context, req *contracts.ToolRequested, tool registeredTool, replayable bool, counters []warrant.Counter) (*contracts.ToolCompleted, bool, error) {
	if err := s.timeForEffect(ctx, tool.Timeout); err != nil {
		return nil, false, err
	}
	effectRef := s.b.cfg.NewID()
	claim := warrant.ClaimInput{FirmID: s.meta.FirmID, RunID: s.meta.RunID, ToolName: req.ToolName, InputSHA256: req.InputSHA256,
		EffectRef: effectRef, Owner: s.owner, LeaseUntil: s.leaseUntil(ctx), Counters: counters}
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
	return s.run(ctx, req, tool, req.Input, warrant.EffectKey{ToolName: req.ToolName, InputSHA256: req.InputSHA256}, effectRef, "")
}

// run executes a claimed effect attempt on input and completes the claim
// (conditioned on this session owning it) together with the tool.completed
// line. A tool's own error never leaves as text: it is logged as a sanitized
// failure envelope, and the ledger and the model get a fixed message with
// that envelope's debug ref. editedHash is set when input is counsel's edit
// of the requested call (tool.completed records it as the executed input).
func (s *session) run(ctx context.Context, req *contracts.ToolRequested, tool registeredTool, input json.RawMessage, k warrant.EffectKey, effectRef, editedHash string) (*contracts.ToolCompleted, bool, error) {
	call := s.callTool
	if tool.Class == catalog.ClassRead {
		call = s.callRead
	}
	result, execErr := call(ctx, tool, input, effectRef)
	var changed *ToolChangedError
	if errors.As(execErr, &changed) {
		// The target refused it before sending it (its tool changed since
		// the hold's check, or it is an allowed call, checked by its
		// target alone).
		approval := ""
		if s.allow != nil && s.allow.ToolUseID == req.ToolUseID {
			approval = s.allow.ApprovalID
		}
		return nil, false, s.toolChanged(ctx, failure.StageToolExecute, req, tool, changed, approval, &k)
	}
	if tool.Class != catalog.ClassRead && outcomeUnknown(tool, execErr) {
		// The call left for the tool's system and its answer was lost: the
		// effect may have happened. Never tried again; counsel reconciles.
		s.b.logger.Log(ctx, failure.Build(failure.Wrap(failure.KindEffectOutcomeUnknown, "", execErr), failure.StageToolExecute, "tool", s.scope()))
		return nil, false, s.unknownOutcome(ctx, req, effectRef, k, whyAnswerLost)
	}
	result, resultHash, resultBytes := bounded(result)
	tc := &contracts.ToolCompleted{ToolUseID: req.ToolUseID, ToolName: req.ToolName, InputSHA256: req.InputSHA256,
		Status: contracts.ToolSuccess, EffectRef: effectRef, Result: result, ExecutedInputSHA256: editedHash,
		ResultSHA256: resultHash, ResultBytes: resultBytes}
	completion := warrant.Completion{State: warrant.ClaimCompleted, ToolStatus: contracts.ToolSuccess, Result: result}
	if execErr != nil || !json.Valid(result) {
		cause := execErr
		if cause == nil {
			cause = errToolResultNotJSON
		}
		env := failure.Build(failure.Wrap(failure.KindToolError, "", cause), failure.StageToolExecute, "tool", s.scope())
		s.b.logger.Log(ctx, env)
		tc.Status, tc.Result = contracts.ToolError, errorResult("tool failed (ref "+env.InternalDebugRef+")")
		tc.ResultSHA256, tc.ResultBytes, tc.ErrorKind = "", 0, errorKind(execErr)
		completion = warrant.Completion{State: warrant.ClaimFailed, ToolStatus: contracts.ToolError, Result: tc.Result}
	}
	if err := s.recordOutcome(ctx, req, k, effectRef, completion, tc); err != nil {
		return nil, false, err
	}
	return tc, false, nil
}

// errorKind is why a call that ran failed, as tool.completed records it in
// the clear: its system could not be reached (nothing was sent), or it
// answered with an error (or with no valid result: err nil).
func errorKind(err error) string {
	if errors.Is(err, warrant.ErrTargetUnreachable) {
		return contracts.ToolErrUnreachable
	}
	return contracts.ToolErrToolFailed
}

// Outcome writes of an executed effect are retried this often, after these
// pauses, while the store's failure is transient (throttled, unavailable).
var outcomeBackoff = []time.Duration{50 * time.Millisecond, 200 * time.Millisecond, 800 * time.Millisecond}

// recordOutcome stores the outcome of an effect that was executed (its claim
// completed with the tool.completed line). The effect went out, so the
// write is retried, the same lines each time, while the store's failure is
// transient; if it still cannot be written, the run ends through the
// unknown-outcome path (tool.completed unknown, the claim flagged,
// effect_outcome_unknown) and never with the store's kind, which would
// tell the client to try again and hide the effect. If even that cannot be
// written, nothing is: the claim stays taken, and once this worker's lease
// passed the sweeper ends the run the same way.
func (s *session) recordOutcome(ctx context.Context, req *contracts.ToolRequested, k warrant.EffectKey, effectRef string,
	completion warrant.Completion, tc *contracts.ToolCompleted) error {
	lines, _, err := s.build(tc)
	if err != nil {
		return staged(failure.StageToolExecute, err)
	}
	// Sealed once: every retry below writes the same bytes, so a write
	// that landed and is retried is recognised as the same completion.
	if completion.Result, err = sealResult(s.key, k, completion.Result); err != nil {
		return staged(failure.StageToolExecute, err)
	}
	err = s.retryWrite(ctx, func() error {
		return s.b.store.CompleteEffect(ctx, s.meta.FirmID, s.meta.RunID, k, s.owner, completion, lines...)
	})
	if err == nil {
		for _, l := range lines {
			if err := s.advance(l); err != nil {
				return staged(failure.StageToolExecute, err)
			}
		}
		return nil
	}
	if errors.Is(err, warrant.ErrLeaseHeld) {
		return err // the run is another's now: whoever holds it flags the claim
	}
	s.b.logger.Log(ctx, failure.Build(err, failure.StageToolExecute, "agent", s.scope()))
	if uerr := s.unknownOutcome(ctx, req, effectRef, k, whyUnrecorded); !errors.Is(uerr, errRunEnded) {
		s.b.logger.Log(ctx, failure.Build(uerr, failure.StageLedgerWrite, "agent", s.scope()))
		return errEffectUnrecorded
	}
	return errRunEnded
}

// errEffectUnrecorded says an executed effect's outcome could be written
// neither as it was nor as unknown: the run is left as it stands for the
// sweeper (a failure of the store's kind would hide the effect).
var errEffectUnrecorded = errors.New("agent: an executed effect's outcome could not be recorded")

// retryWrite runs a write of something that already happened (an executed
// effect's outcome, a model call's usage) until it succeeds, fails for a
// reason a retry cannot change, or the backoff runs out. The write must be
// the same bytes each time, so a retry of a write that was applied with its
// answer lost is recognized by the store as done.
func (s *session) retryWrite(ctx context.Context, write func() error) error {
	backoff := s.b.outcomeBackoff()
	for attempt := 0; ; attempt++ {
		err := write()
		if err == nil || errors.Is(err, warrant.ErrLeaseHeld) {
			return err
		}
		if _, retryable, _ := failure.Classify(err); !retryable || attempt == len(backoff) || !sleep(ctx, backoff[attempt]) {
			return err
		}
	}
}

// sleep waits d, or less if ctx ends first (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

var errToolResultNotJSON = errors.New("agent: the tool's result is not JSON")

// reuse answers a call whose effect was already claimed: the stored result when
// it completed (or counsel declined it), a re-run only for replayable reads,
// otherwise the outcome is unknown and nobody re-executes it on their own
// (DESIGN §10). The tool.requested line is already stored.
func (s *session) reuse(ctx context.Context, req *contracts.ToolRequested, tool registeredTool, c *warrant.Claim, replayable bool) (*contracts.ToolCompleted, bool, error) {
	switch {
	case c.State == warrant.ClaimCompleted || c.State == warrant.ClaimFailed || c.State == warrant.ClaimDeclined:
		return s.answerFromRecord(ctx, req, c)
	case replayable:
		result, err := s.callRead(ctx, tool, req.Input, c.EffectRef)
		result, resultHash, resultBytes := bounded(result)
		tc := &contracts.ToolCompleted{ToolUseID: req.ToolUseID, ToolName: req.ToolName, InputSHA256: req.InputSHA256,
			EffectRef: c.EffectRef, Status: contracts.ToolSuccess, Result: result, ResultSHA256: resultHash, ResultBytes: resultBytes}
		if err != nil || !json.Valid(result) {
			tc.Status, tc.Result, tc.ResultSHA256, tc.ResultBytes, tc.ErrorKind = contracts.ToolError, errorResult("tool failed"), "", 0, errorKind(err)
		}
		if err := s.commit(ctx, nil, tc); err != nil {
			return nil, false, staged(failure.StageLedgerWrite, err)
		}
		return tc, false, nil
	}
	return nil, false, s.unknownOutcome(ctx, req, c.EffectRef, c.Key(), whyNoOutcome)
}

// hold asks counsel: a warrant request bound to the exact input and the
// effect's attempt, the run.blocked line and the run's running -> held, in
// one transaction.
func (s *session) hold(ctx context.Context, req *contracts.ToolRequested, tool registeredTool, attempt int) error {
	now := s.b.cfg.Now().UTC()
	w := warrant.Warrant{FirmID: s.meta.FirmID, RunID: s.meta.RunID, ApprovalID: s.b.cfg.NewID(), MatterID: s.meta.MatterID,
		ToolName: req.ToolName, ToolUseID: req.ToolUseID, ToolInputHash: req.InputSHA256, Attempt: attempt, Input: req.Input,
		RiskTier: req.RiskTier, Reason: req.Reason, HumanSummary: tool.Summarize(req.Input), RequestedBy: s.meta.UserID, RequestedByName: s.userName,
		RequestedAt: now, ExpiresAt: now.Add(s.b.cfg.WarrantTTL), PolicyVersion: req.PolicyVersion}
	if tool.System != nil {
		// The catalog's schema hash: an MCP tool's pin on its server (the
		// catalog holds them equal), an HTTPS or Lambda tool's own.
		w.ToolServer, w.ToolSchemaSHA256 = tool.Server, tool.SchemaSHA256
	}
	w.FiredRules = slices.Clone(req.FiredRules)
	blocked := &contracts.RunBlocked{Approval: contracts.BlockedApproval{ApprovalRequestID: w.ApprovalID, ToolUseID: w.ToolUseID,
		ToolName: w.ToolName, ToolInput: w.Input, ToolInputHash: w.ToolInputHash, Attempt: attemptField(attempt),
		RiskTier: w.RiskTier, Reason: w.Reason,
		HumanSummary: w.HumanSummary, ExpiresAt: contracts.FormatTime(w.ExpiresAt),
		PolicyVersion: req.PolicyVersion, FiredRules: req.FiredRules,
		ToolServer: w.ToolServer, ToolSchemaSHA256: w.ToolSchemaSHA256}}
	stored, err := sealWarrant(s.key, w)
	if err != nil {
		return staged(failure.StageApproval, err)
	}
	err = s.commit(ctx, func(lines []contracts.Line) error {
		return s.b.store.CreateWarrantRequest(ctx, stored, lines...)
	}, req, blocked)
	if err != nil {
		return staged(failure.StageApproval, err)
	}
	return nil
}

// attemptField is run.blocked's attempt: omitted for a first attempt.
func attemptField(n int) int64 {
	if n <= 1 {
		return 0
	}
	return int64(n)
}
