package reducer

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
)

// RunState is a run folded from its ledger up to LastSeq. Money is integer
// nano-USD in Go and a decimal string in JSON (cost_usd, cost_cap_usd), so no
// consumer ever sees a float.
type RunState struct {
	RunID    string            `json:"run_id"`
	FirmID   string            `json:"firm_id"`
	Status   warrant.RunStatus `json:"status"`
	LastSeq  int64             `json:"last_seq"`
	HeadHash string            `json:"head_hash"`

	AgentKey string `json:"agent_key"`
	ModelID  string `json:"model_id"`
	MatterID string `json:"matter_id"`
	// UserID started the run (run.started), holding UserRoles.
	UserID    string   `json:"user_id,omitempty"`
	UserRoles []string `json:"user_roles,omitempty"`
	// UserName is the starting user's display name, when the token had one.
	UserName string `json:"user_name,omitempty"`

	InputTokens           int64        `json:"input_tokens"`
	OutputTokens          int64        `json:"output_tokens"`
	CacheReadInputTokens  int64        `json:"cache_read_input_tokens"`
	CacheWriteInputTokens int64        `json:"cache_write_input_tokens"`
	ModelCalls            int64        `json:"model_calls"`
	Cost                  pricing.Nano `json:"-"`
	CostCap               pricing.Nano `json:"-"`

	// HeldOn is the approval_request_id the run waits on; empty unless held.
	HeldOn          string                     `json:"held_on"`
	PendingApproval *contracts.BlockedApproval `json:"pending_approval"`
	// Decided is counsel's decision on the warrant the run is held on, once
	// approval.decided is in the ledger; a release needs it.
	Decided warrant.Decision `json:"decided,omitempty"`

	StopReason   string `json:"stop_reason"`
	FinalText    string `json:"final_text"`
	FailureKind  string `json:"failure_kind"`
	FailureStage string `json:"failure_stage"`
	// ToolChange is what a run that failed tool_changed stopped at: the
	// tool, both schema hashes, the warrant whose call was refused.
	ToolChange *failure.ToolChange `json:"tool_change,omitempty"`

	ToolsRequested int64 `json:"tools_requested"`
	ToolsSucceeded int64 `json:"tools_succeeded"`
	ToolsErrored   int64 `json:"tools_errored"`
	ToolsDenied    int64 `json:"tools_denied"`
	ToolsDeclined  int64 `json:"tools_declined"`
	// ToolsUnknown counts effects whose outcome was lost with their worker;
	// Unreconciled lists the effect_refs of those counsel has not reconciled.
	ToolsUnknown int64    `json:"tools_unknown,omitempty"`
	Unreconciled []string `json:"unreconciled,omitempty"`
	// Actions are the run's actions and what became of each, from the
	// ledger alone (never the model's words): every call that was held for
	// counsel, claimed as an effect, refused by the policy, declined, or
	// left unrun when the run ended on its warrant. A repeat answered from
	// an effect's record is not another action.
	Actions []Action `json:"actions,omitempty"`
	// Turns counts turn.completed lines: whole model turns, not deltas.
	Turns int64 `json:"turns"`
	// ContentDestroyed is set once the run's content was destroyed with
	// its data key (content.destroyed): its sealed members no longer open
	// anywhere, its state, hashes and decisions stay.
	ContentDestroyed *Destruction `json:"content_destroyed,omitempty"`
}

// Action is one of a run's actions: the call (tool_use_id, tool), what
// became of it (Outcome, closed) and why, in the clear.
type Action struct {
	ToolUseID string `json:"tool_use_id"`
	ToolName  string `json:"tool_name"`
	// Seq is the line that settled it (its tool.completed, or the
	// run.failed that ended the run before it ran).
	Seq     int64  `json:"seq"`
	Outcome string `json:"outcome"`
	// Why: a failure's error_kind (unreachable, tool_failed,
	// invalid_input), the run's failure kind for an action not run
	// (warrant_expired, tool_changed, policy_changed, ...).
	Why string `json:"why,omitempty"`
	// EffectRef names a claimed effect; ApprovalID the warrant it was held
	// on; Edited: counsel's edit of it is what ran (or failed).
	EffectRef  string `json:"effect_ref,omitempty"`
	ApprovalID string `json:"approval_id,omitempty"`
	Edited     bool   `json:"edited,omitempty"`
	// Reconciled is counsel's finding on an unknown outcome (executed,
	// not_executed).
	Reconciled string `json:"reconciled,omitempty"`
}

// What became of an action (Action.Outcome; closed).
const (
	ActionDone     = "done"     // it ran and its system said it succeeded
	ActionFailed   = "failed"   // it was tried and failed (Why says how)
	ActionDeclined = "declined" // counsel declined it: nothing ran
	ActionDenied   = "denied"   // the risk policy refused it: nothing ran
	ActionUnknown  = "unknown"  // sent, and its answer lost: counsel reconciles it
	ActionNotRun   = "not_run"  // the run ended before it ran (Why: the run's failure)
	// ActionPending: requested, and not settled yet (waiting on counsel,
	// or running).
	ActionPending = "pending"
)

// NotDone counts the actions that did not succeed (every outcome but
// done, and an unknown one counsel reconciled as executed).
func (s RunState) NotDone() int {
	n := 0
	for _, a := range s.Actions {
		if a.Outcome != ActionDone && a.Outcome != ActionPending && !(a.Outcome == ActionUnknown && a.Reconciled == "executed") {
			n++
		}
	}
	return n
}

// pending reports whether a call is an action not settled yet (an effect
// requested, or a call held for counsel).
func (s RunState) pending(toolUseID string) bool {
	for _, a := range s.Actions {
		if a.ToolUseID == toolUseID && a.Outcome == ActionPending {
			return true
		}
	}
	return false
}

// settle records what became of a call: its pending entry (held) is
// settled in place, or a new action is added.
func (s RunState) settle(a Action) RunState {
	acts := slices.Clone(s.Actions)
	for i := range acts {
		if acts[i].ToolUseID == a.ToolUseID && acts[i].Outcome == ActionPending {
			a.ApprovalID = acts[i].ApprovalID
			acts[i] = a
			s.Actions = acts
			return s
		}
	}
	s.Actions = append(acts, a)
	return s
}

// Destruction is when (the line's created_at) and why a run's content was
// destroyed, and until when backups of the table still hold its key.
type Destruction struct {
	At           string `json:"at"`
	Reason       string `json:"reason"`
	BackupsUntil string `json:"backups_until"`
}

// stateFields drops RunState's methods so the JSON methods can embed it
// without recursing.
type stateFields RunState

type stateJSON struct {
	stateFields
	CostUSD    string `json:"cost_usd"`
	CostCapUSD string `json:"cost_cap_usd"`
}

// MarshalJSON writes the money fields as decimal strings.
func (s RunState) MarshalJSON() ([]byte, error) {
	return json.Marshal(stateJSON{
		stateFields: stateFields(s),
		CostUSD:     pricing.FormatUSD(s.Cost),
		CostCapUSD:  pricing.FormatUSD(s.CostCap),
	})
}

// UnmarshalJSON reads what MarshalJSON writes. A state is a projection that
// can always be rebuilt from the ledger, so this is not the strict decoder.
func (s *RunState) UnmarshalJSON(data []byte) error {
	var w stateJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	cost, err := pricing.ParseUSD(w.CostUSD)
	if err != nil {
		return fmt.Errorf("reducer: cost_usd: %w", err)
	}
	limit, err := pricing.ParseUSD(w.CostCapUSD)
	if err != nil {
		return fmt.Errorf("reducer: cost_cap_usd: %w", err)
	}
	*s = RunState(w.stateFields)
	s.Cost, s.CostCap = cost, limit
	return nil
}

// Sentinels matched with errors.Is; Apply wraps them in a *RuleError.
var (
	ErrNotStarted    = errors.New("reducer: the first line of a run must be run.started")
	ErrRestarted     = errors.New("reducer: run.started may only be line 1")
	ErrTerminal      = errors.New("reducer: the run is terminal and accepts no further line")
	ErrHeld          = errors.New("reducer: the run is held on a warrant")
	ErrNotHeld       = errors.New("reducer: the run is not held")
	ErrWrongApproval = errors.New("reducer: the line does not match the warrant the run is held on")
	ErrNotDecided    = errors.New("reducer: counsel has not decided the warrant the run is held on")
	ErrDecided       = errors.New("reducer: counsel already decided the warrant the run is held on")
	ErrNotUnknown    = errors.New("reducer: the effect's outcome is not unknown")
	ErrSelfApproval  = errors.New("reducer: the user who started the run decided its warrant under separation of duties")
	ErrOverflow      = errors.New("reducer: a counter would overflow or go negative")
	// A run's content is destroyed once, after the run ended, as a
	// content.destroyed of its own matter says, with backups that hold the
	// key no earlier than the destruction.
	ErrNotEnded      = errors.New("reducer: the run has not ended; its content cannot be destroyed")
	ErrDestroyed     = errors.New("reducer: the run's content was already destroyed")
	ErrWrongMatter   = errors.New("reducer: the line names another matter than the run's")
	ErrBackupsWindow = errors.New("reducer: backups_until is before the destruction")
)

// Rule names carried in RuleError.Rule; they are stable so logs and metrics
// can group on them.
const (
	RuleLink      = "link"
	RuleFirstLine = "first_line"
	RuleTerminal  = "terminal"
	RuleLifecycle = "lifecycle"
	RuleApproval  = "approval"
	RuleMoney     = "money"
	RuleEvent     = "event"
	// RuleDestruction: what a content.destroyed says must agree with the
	// run (its matter, its time).
	RuleDestruction = "destruction"
)

// RuleError is a line Apply refused: which seq, which rule, and why. Err wraps
// a sentinel of this package, a *contracts.LinkError, a pricing error, or
// contracts.ErrInvalid / ErrUnknownEvent for a line no parser produced.
type RuleError struct {
	Seq  int64
	Rule string
	Err  error
}

func (e *RuleError) Error() string { return fmt.Sprintf("seq %d: %s: %v", e.Seq, e.Rule, e.Err) }
func (e *RuleError) Unwrap() error { return e.Err }

// Apply folds one line into the state. It is pure: on error the state comes
// back unchanged, and nothing the result shares with its inputs is mutated
// later. A line that passed ParseEventLine is trusted to be well formed; Apply
// enforces only what needs the state.
func Apply(state RunState, line contracts.Line) (RunState, error) {
	if err := contracts.CheckLink(state.LastSeq, state.HeadHash, state.RunID, state.FirmID, line); err != nil {
		return state, &RuleError{Seq: line.Seq, Rule: RuleLink, Err: err}
	}
	next, rule, err := step(state, line)
	if err != nil {
		return state, &RuleError{Seq: line.Seq, Rule: rule, Err: err}
	}
	next.LastSeq, next.HeadHash = line.Seq, line.Hash
	return next, nil
}

// ReduceAgentRun folds a whole ledger from the zero state. On the first bad
// line it returns the state as of the line before, and a *RuleError naming the
// bad line's seq.
func ReduceAgentRun(lines []contracts.Line) (RunState, error) {
	if len(lines) == 0 {
		return RunState{}, fmt.Errorf("%w: the ledger is empty", ErrNotStarted)
	}
	var s RunState
	for _, l := range lines {
		next, err := Apply(s, l)
		if err != nil {
			return s, err
		}
		s = next
	}
	return s, nil
}

func step(s RunState, l contracts.Line) (RunState, string, error) {
	if s.LastSeq == 0 {
		return start(l)
	}
	if ev, ok := l.Event.(*contracts.ContentDestroyed); ok {
		// A line a finished run takes, once: its content destroyed with
		// its key. Nothing else changes (effect.reconciled is still taken
		// after it: an effect's record is never lost with the content).
		switch {
		case !s.Status.Terminal():
			return s, RuleLifecycle, fmt.Errorf("%w (%s)", ErrNotEnded, s.Status)
		case s.ContentDestroyed != nil:
			return s, RuleLifecycle, fmt.Errorf("%w at %s", ErrDestroyed, s.ContentDestroyed.At)
		case ev.MatterID != s.MatterID:
			return s, RuleDestruction, ErrWrongMatter
		case ev.BackupsUntil < l.CreatedAt: // one fixed-width layout: string order is time order
			return s, RuleDestruction, ErrBackupsWindow
		}
		s.ContentDestroyed = &Destruction{At: l.CreatedAt, Reason: ev.Reason, BackupsUntil: ev.BackupsUntil}
		return s, "", nil
	}
	if rec, ok := l.Event.(*contracts.EffectReconciled); ok {
		// A line a finished run takes: counsel's record of an effect
		// whose outcome was lost, once per such effect.
		i := slices.Index(s.Unreconciled, rec.EffectRef)
		if i < 0 {
			return s, RuleLifecycle, fmt.Errorf("%w: effect %s has no unknown outcome to reconcile", ErrNotUnknown, rec.EffectRef)
		}
		// Separation of duties, as for counsel's decision: unless the line
		// says the firm waived it, the user who started the run does not
		// record what became of its effect.
		if rec.RequestedBy != "" && rec.RequestedBy != s.UserID {
			return s, RuleApproval, fmt.Errorf("%w: requested_by is not the user who started the run", ErrWrongApproval)
		}
		if rec.Separation != contracts.SeparationWaived && rec.ReconciledBy == s.UserID {
			return s, RuleApproval, ErrSelfApproval
		}
		s.Unreconciled = slices.Delete(slices.Clone(s.Unreconciled), i, i+1)
		if len(s.Unreconciled) == 0 {
			s.Unreconciled = nil // as a state read back from its JSON has it
		}
		acts := slices.Clone(s.Actions)
		for j := range acts {
			if acts[j].EffectRef == rec.EffectRef && acts[j].Outcome == ActionUnknown {
				acts[j].Reconciled = rec.Outcome
			}
		}
		s.Actions = acts
		return s, "", nil
	}
	if s.Status.Terminal() {
		return s, RuleTerminal, fmt.Errorf("%w (%s)", ErrTerminal, s.Status)
	}
	switch ev := l.Event.(type) {
	case *contracts.RunStarted:
		return s, RuleFirstLine, ErrRestarted

	case *contracts.RunBlocked:
		if err := s.mustRun(); err != nil {
			return s, RuleLifecycle, err
		}
		a := ev.Approval // copied: the state must not alias the caller's event
		s.Status, s.HeldOn, s.PendingApproval = warrant.RunHeld, a.ApprovalRequestID, &a
		// The call waits on counsel: an action (whatever its class),
		// settled by its tool.completed or by the run's end.
		acts := slices.Clone(s.Actions)
		found := false
		for i := range acts {
			if acts[i].ToolUseID == a.ToolUseID && acts[i].Outcome == ActionPending {
				acts[i].ApprovalID, found = a.ApprovalRequestID, true
			}
		}
		if !found {
			acts = append(acts, Action{ToolUseID: a.ToolUseID, ToolName: a.ToolName, Outcome: ActionPending, ApprovalID: a.ApprovalRequestID})
		}
		s.Actions = acts

	case *contracts.ApprovalDecided:
		if rule, err := s.mustBeHeldOn(ev.ApprovalRequestID); err != nil {
			return s, rule, err
		}
		// The warrant binds counsel's signature to the exact input the run is
		// waiting to send; a decision over other bytes is not this warrant.
		if s.PendingApproval == nil || ev.ToolInputHash != s.PendingApproval.ToolInputHash {
			return s, RuleApproval, fmt.Errorf("%w: tool_input_hash differs", ErrWrongApproval)
		}
		if s.Decided != "" {
			return s, RuleApproval, ErrDecided
		}
		// Separation of duties: unless the line says the firm waived it, the
		// user who started the run cannot decide its warrant.
		if ev.RequestedBy != "" && ev.RequestedBy != s.UserID {
			return s, RuleApproval, fmt.Errorf("%w: requested_by is not the user who started the run", ErrWrongApproval)
		}
		if ev.Separation != contracts.SeparationWaived && ev.DecidedBy == s.UserID {
			return s, RuleApproval, ErrSelfApproval
		}
		s.Decided = ev.Decision

	case *contracts.RunReleased:
		if rule, err := s.mustBeHeldOn(ev.ApprovalRequestID); err != nil {
			return s, rule, err
		}
		// A warrant releases the run only as counsel decided it, and only
		// after the decision is on the record.
		switch {
		case s.Decided == "":
			return s, RuleApproval, ErrNotDecided
		case ev.Decision != s.Decided:
			return s, RuleApproval, fmt.Errorf("%w: released as %s, decided %s", ErrWrongApproval, ev.Decision, s.Decided)
		}
		s.Status, s.HeldOn, s.PendingApproval, s.Decided = warrant.RunRunning, "", nil, ""

	case *contracts.TurnDelta:
		if err := s.mustRun(); err != nil {
			return s, RuleLifecycle, err
		}

	case *contracts.TurnCompleted:
		if err := s.mustRun(); err != nil {
			return s, RuleLifecycle, err
		}
		s.Turns++

	case *contracts.ModelUsage:
		if err := s.mustRun(); err != nil {
			return s, RuleLifecycle, err
		}
		return s.usage(ev)

	case *contracts.ToolRequested:
		if err := s.mustRun(); err != nil {
			return s, RuleLifecycle, err
		}
		s.ToolsRequested++
		if ev.ToolClass == contracts.ToolClassEffect {
			s.Actions = append(slices.Clone(s.Actions), Action{ToolUseID: ev.ToolUseID, ToolName: ev.ToolName, Outcome: ActionPending})
		}

	case *contracts.ToolCompleted:
		if err := s.mustRun(); err != nil {
			return s, RuleLifecycle, err
		}
		switch ev.Status {
		case contracts.ToolSuccess:
			s.ToolsSucceeded++
		case contracts.ToolError:
			s.ToolsErrored++
		case contracts.ToolDenied:
			s.ToolsDenied++
		case contracts.ToolDeclined:
			s.ToolsDeclined++
		case contracts.ToolUnknown:
			s.ToolsUnknown++
			s.Unreconciled = append(slices.Clone(s.Unreconciled), ev.EffectRef)
		default:
			return s, RuleEvent, fmt.Errorf("%w: tool.completed status is not one of the closed set", contracts.ErrInvalid)
		}
		if !ev.Reused && (s.pending(ev.ToolUseID) || ev.Status != contracts.ToolSuccess && ev.Status != contracts.ToolError) {
			s = s.settle(Action{ToolUseID: ev.ToolUseID, ToolName: ev.ToolName, Seq: l.Seq, Outcome: actionOutcome[ev.Status],
				Why: ev.ErrorKind, EffectRef: ev.EffectRef, Edited: ev.ExecutedInputSHA256 != ""})
		}

	case *contracts.RunCompleted:
		// A held run is waiting for a tool result, so it cannot have finished.
		if err := s.mustRun(); err != nil {
			return s, RuleLifecycle, err
		}
		s.Status, s.StopReason, s.FinalText = warrant.RunCompleted, ev.StopReason, ev.FinalText

	case *contracts.RunFailed:
		// Allowed while held: a warrant can expire or its resume can fail.
		// The pre-flight cost check fails the run before the cap is crossed,
		// so cost_cap_exceeded here is a failure, not an abort.
		s.Status, s.FailureKind, s.FailureStage, s.ToolChange = warrant.RunFailed, ev.FailureKind, ev.FailureStage, ev.ToolChange
		s.HeldOn, s.PendingApproval, s.Decided = "", nil, ""
		// A call still waiting (on counsel, or released and refused at its
		// dispatch) never ran: the run's failure says why.
		acts := slices.Clone(s.Actions)
		for i := range acts {
			if acts[i].Outcome == ActionPending {
				acts[i].Outcome, acts[i].Why, acts[i].Seq = ActionNotRun, ev.FailureKind, l.Seq
			}
		}
		s.Actions = acts

	default:
		return s, RuleEvent, fmt.Errorf("%w: %T", contracts.ErrUnknownEvent, l.Event)
	}
	return s, "", nil
}

// actionOutcome is what a tool.completed status says of an action.
var actionOutcome = map[string]string{contracts.ToolSuccess: ActionDone, contracts.ToolError: ActionFailed,
	contracts.ToolDeclined: ActionDeclined, contracts.ToolDenied: ActionDenied, contracts.ToolUnknown: ActionUnknown}

func start(l contracts.Line) (RunState, string, error) {
	ev, ok := l.Event.(*contracts.RunStarted)
	if !ok {
		return RunState{}, RuleFirstLine, fmt.Errorf("%w (got %s)", ErrNotStarted, l.Type)
	}
	limit, err := pricing.ParseUSD(ev.CostCapUSD)
	if err != nil {
		return RunState{}, RuleMoney, fmt.Errorf("cost_cap_usd: %w", err)
	}
	return RunState{
		RunID: l.RunID, FirmID: l.FirmID, Status: warrant.RunRunning,
		AgentKey: ev.AgentKey, ModelID: ev.ModelID, MatterID: ev.MatterID, UserID: ev.UserID,
		UserRoles: ev.UserRoles, UserName: ev.UserName, CostCap: limit,
	}, "", nil
}

func (s RunState) usage(ev *contracts.ModelUsage) (RunState, string, error) {
	cost, err := pricing.ParseUSD(ev.CostUSD)
	if err != nil {
		return s, RuleMoney, fmt.Errorf("cost_usd: %w", err)
	}
	u := ev.Usage
	for _, c := range []struct {
		dst *int64
		n   int64
	}{
		{&s.InputTokens, u.InputTokens},
		{&s.OutputTokens, u.OutputTokens},
		{&s.CacheReadInputTokens, u.CacheReadInputTokens},
		{&s.CacheWriteInputTokens, u.CacheWriteInputTokens},
		{&s.ModelCalls, 1},
		{(*int64)(&s.Cost), int64(cost)},
	} {
		if c.n < 0 || *c.dst > math.MaxInt64-c.n {
			return s, RuleMoney, ErrOverflow
		}
		*c.dst += c.n
	}
	if s.Cost > s.CostCap {
		s.Status = warrant.RunAborted
		s.StopReason = string(failure.KindCostCapExceeded)
		s.FailureKind = string(failure.KindCostCapExceeded)
		s.FailureStage = string(failure.StageModelCall)
	}
	return s, "", nil
}

func (s RunState) mustRun() error {
	if s.Status == warrant.RunHeld {
		return fmt.Errorf("%w on approval %s", ErrHeld, s.HeldOn)
	}
	return nil
}

func (s RunState) mustBeHeldOn(approvalID string) (string, error) {
	if s.Status != warrant.RunHeld {
		return RuleLifecycle, ErrNotHeld
	}
	if approvalID != s.HeldOn {
		return RuleApproval, fmt.Errorf("%w: held on %s, line names %s", ErrWrongApproval, s.HeldOn, approvalID)
	}
	return "", nil
}
