package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
	"github.com/seed-f6d3920e/warrant/pkg/tools"

	"github.com/seed-f6d3920e/warrant"
)

// Result is where a run stands when the brain returns: completed, failed,
// aborted, or held on a warrant (State.PendingApproval).
type Result struct {
	State reducer.RunState
	Run   warrant.Run
	// HandedOver: the worker's invocation had too little time left for
	// the run's next effect and gave the run up, still running, for a new
	// invocation to continue (the caller sends the worker message).
	HandedOver bool
}

// StartOptions are the broker's choices for a new run.
type StartOptions struct {
	CostCapUSD string // decimal string, already bounded by the broker
	// UserRoles are the starting user's roles from the token's claims:
	// recorded in run.started, and metadata for the risk policy's rules.
	UserRoles []string
	// UserName is the starting user's display name (recorded, shown).
	UserName string
}

// Run starts a run and drives it in this process until it completes, fails or
// holds (Start, then Continue). The API starts runs and hands them to the
// worker instead.
func (b *Brain) Run(ctx context.Context, inv contracts.AgentInvoke, opts StartOptions) (Result, error) {
	if _, err := b.Start(ctx, inv, opts); err != nil {
		return Result{}, err
	}
	return b.Continue(ctx, inv.Meta.FirmID, inv.Meta.RunID, inv.Meta.CorrelationID)
}

// Start validates a command and records the run: the run item (running,
// waiting for a worker until Config.Pickup from now) and ledger line 1,
// run.started, in one transaction. It calls no model and runs no tool. Errors
// are request-level (unknown agent or model: failure kinds unknown_agent and
// unknown_model; invalid_request; a store that cannot create the run, e.g.
// warrant.ErrRunExists).
func (b *Brain) Start(ctx context.Context, inv contracts.AgentInvoke, opts StartOptions) (Result, error) {
	if err := inv.Validate(); err != nil {
		return Result{}, failure.Wrap(failure.KindInvalidRequest, err.Error(), err)
	}
	if inv.Mode != contracts.ModeInvoke {
		return Result{}, failure.New(failure.KindInvalidRequest, "field mode: Run starts invoke commands only")
	}
	def, ok := b.agents[inv.AgentKey]
	if !ok {
		return Result{}, failure.New(failure.KindUnknownAgent, "unknown agent_key")
	}
	if _, err := b.prices.Price(def.ModelID); err != nil {
		return Result{}, failure.Wrap(failure.KindUnknownModel, "the agent's model has no price, so its cost cannot be capped", err)
	}
	if inv.Meta.MatterID == "" {
		return Result{}, failure.New(failure.KindInvalidRequest, "field matter_id: required")
	}
	if _, err := pricing.ParseUSD(opts.CostCapUSD); err != nil {
		return Result{}, failure.Wrap(failure.KindInvalidRequest, "field cost_cap_usd: must be a decimal string", err)
	}
	if _, err := openingMessages(inv.History, inv.CounselMessage); err != nil {
		return Result{}, err
	}
	started := &contracts.RunStarted{AgentKey: def.Key, Mode: contracts.ModeInvoke, ModelID: def.ModelID,
		PromptVersion: def.PromptVersion, SchemaVersion: contracts.SchemaVersion, CostCapUSD: opts.CostCapUSD,
		MaxTokens: int64(cmp.Or(def.MaxTokens, b.cfg.MaxTokens)), MatterID: inv.Meta.MatterID, UserID: inv.Meta.UserID, UserName: opts.UserName, UserRoles: slices.Clone(opts.UserRoles),
		CorrelationID: inv.Meta.CorrelationID, ChatSessionID: inv.Meta.ChatSessionID, FormID: inv.Meta.FormID,
		History: append([]contracts.HistoryMessage{}, inv.History...), CounselMessage: inv.CounselMessage,
		AgentsVersion: b.cfg.AgentsVersion, CatalogVersion: b.cfg.CatalogVersion, PolicySHA256: b.policy.Digest()}
	s := b.newSession(ctx, def, inv.Meta)
	s.roles, s.userName = started.UserRoles, started.UserName
	var dataKey []byte
	if b.cfg.Keys != nil {
		// The run's own data key, made now and kept only wrapped in its run
		// item: every privileged member of its ledger is sealed under it.
		// No key, no run: content is never written in the clear instead.
		key, wrapped, err := b.cfg.Keys.NewRunKey(ctx, inv.Meta.FirmID, inv.Meta.RunID)
		if err != nil {
			return Result{}, err
		}
		defer key.Destroy()
		s.chain.Sealer, s.key, dataKey = key, key, wrapped
	}
	first, err := s.chain.Next(started)
	if err != nil {
		return Result{}, failure.Wrap(failure.KindInvalidRequest, err.Error(), err)
	}
	now := b.cfg.Now().UTC()
	run := warrant.Run{FirmID: inv.Meta.FirmID, RunID: inv.Meta.RunID, MatterID: inv.Meta.MatterID, UserID: inv.Meta.UserID,
		AgentKey: def.Key, ModelID: def.ModelID, PromptVersion: def.PromptVersion, CorrelationID: inv.Meta.CorrelationID,
		CostCapUSD: opts.CostCapUSD, Status: warrant.RunRunning, CreatedAt: now, UpdatedAt: now,
		Lease: warrant.Lease{Until: now.Add(b.cfg.Pickup)}, DataKey: dataKey}
	if err := b.store.CreateRun(ctx, run, first); err != nil {
		return Result{}, err
	}
	if err := s.advance(first); err != nil {
		return Result{}, err
	}
	return s.result(run), nil
}

// session is one invocation's view of a run: the chain head, the folded state
// and the transcript, all advanced only after the store accepted a write.
type session struct {
	b     *Brain
	def   Definition
	meta  contracts.InvokeMeta
	chain *contracts.Chain
	state reducer.RunState
	msgs  []types.Message
	owner string
	lease time.Time // the worker's lease on the run (zero: none taken)
	// limit is the firm's monthly budget as this session last read it
	// (nil: not read yet).
	limit *warrant.BudgetLimit
	// roles are the starting user's roles (run.started), for the policy.
	roles []string
	// userName is the starting user's display name (run.started), for the
	// warrants the run asks for.
	userName string
	// fs caches the firm's settings for the session (firmSettings).
	fs *warrant.FirmSettings
	// allow is the warrant mounted for the resumed step (nil otherwise).
	allow *warrant.Warrant
	// pmeta is what the policy's rules weigh beyond a call (read once).
	pmeta *toolpolicy.Metadata
	// handedOver: the run was given up to a new invocation.
	handedOver bool
	// restarts is how often the sweeper had handed the run to a new
	// worker when this session took it (the run item's count): it bounds
	// the deferrals of a model fault.
	restarts int
	// key is the run's data key (nil: its content is in the clear, or the
	// session is the sweeper's): the ledger's members (chain.Sealer) and
	// the items that copy content are sealed under it.
	key *seal.RunKey
	// sources are what the run's calls' destinations are traced to
	// (counsel's words, the tool results so far): every line the session
	// loads or commits is folded in (advance).
	sources reducer.Sources
}

func (b *Brain) newSession(ctx context.Context, def Definition, meta contracts.InvokeMeta) *session {
	c := contracts.NewChain(meta.RunID, meta.FirmID)
	c.Now = b.cfg.Now
	return &session{b: b, def: def, meta: meta, chain: c, owner: b.cfg.NewID()}
}

func (s *session) result(run warrant.Run) Result {
	run.Status = s.state.Status
	run.HeldOn = s.state.HeldOn
	return Result{State: s.state, Run: run, HandedOver: s.handedOver}
}

// deferTransient handles a worker's failure that a later attempt may not
// meet: the store's (throttled, unavailable, a transaction conflict) and the
// model's (throttled, timed out, a 5xx or no answer, past the SDK's
// retries). Nothing the failed step would have recorded is lost (every
// write is atomic, a failed model call was not paid and its reservation was
// released, and the next worker carries on from the ledger), so the run is
// not failed with the kind ("try again") but given up, still running, for
// the sweeper to hand to a new worker once a backoff passed (StoreRetry, or
// ModelRetry doubled for each restart the run had), counted among its
// restarts. A store that keeps failing ends the run worker_lost when the
// sweeper's restarts run out; a model fault met with the restarts spent is
// not taken here, so the run fails with the model's own kind. It reports
// whether it took err.
func (s *session) deferTransient(ctx context.Context, err error, stage failure.Stage) bool {
	if _, fenced := warrant.FenceFromContext(ctx); !fenced {
		return false // not a worker's session
	}
	var backoff time.Duration
	switch kind, retryable, _ := failure.Classify(err); kind {
	case failure.KindStoreThrottled, failure.KindStoreUnavailable, failure.KindStoreConflict:
		backoff = s.b.cfg.StoreRetry
	case failure.KindModelThrottled, failure.KindModelTimeout, failure.KindModelError:
		// A model_error is retryable only when Bedrock was out (a 5xx, no
		// answer), not when the model failed on this request.
		if !retryable || s.restarts >= s.b.cfg.MaxRestarts {
			return false
		}
		backoff = s.b.cfg.ModelRetry << min(s.restarts, 8)
	default:
		return false
	}
	s.b.logger.Log(ctx, failure.Build(err, stage, "agent", s.scope()))
	if herr := s.b.store.HandOverRun(ctx, s.meta.FirmID, s.meta.RunID, s.owner, s.b.cfg.Now().Add(backoff).UTC()); herr != nil {
		// The lease then ends at this invocation's deadline: the sweeper
		// hands the run over after that instead.
		s.b.logger.Log(ctx, failure.Build(herr, failure.StageHandOver, "agent", s.scope()))
	}
	return true
}

// errHandedOver says the worker gave the run up to a new invocation.
var errHandedOver = errors.New("agent: the run was handed to a new invocation")

// timeForEffect reports whether the invocation has time left to run a tool
// (its timeout) and record its outcome (Config.OutcomeTime) before its deadline;
// if not, it gives the run's lease up for a new invocation (the worker
// sends the message) and returns errHandedOver. A tool started without that
// time could outlive the Lambda: its outcome would be lost, and the effect
// would end effect_outcome_unknown for counsel to reconcile.
func (s *session) timeForEffect(ctx context.Context, tool time.Duration) error {
	d, ok := ctx.Deadline()
	if !ok || d.Sub(s.b.cfg.Now()) >= tool+s.b.cfg.OutcomeTime {
		return nil
	}
	if err := s.b.store.HandOverRun(ctx, s.meta.FirmID, s.meta.RunID, s.owner, s.b.cfg.Now().Add(s.b.cfg.Pickup).UTC()); err != nil {
		return staged(failure.StageHandOver, err)
	}
	s.handedOver = true
	return errHandedOver
}

func (s *session) scope() failure.Identity {
	return failure.Identity{RunID: s.meta.RunID, FirmID: s.meta.FirmID, MatterID: s.meta.MatterID, CorrelationID: s.meta.CorrelationID}
}

// advance folds a stored line into the state. The brain and stream-reduce share
// the reducer, so a line the reducer rejects is a bug here, never papered over.
func (s *session) advance(l contracts.Line) error {
	next, err := reducer.Apply(s.state, l)
	if err != nil {
		return fmt.Errorf("agent: reducer rejected seq %d (%s): %w", l.Seq, l.Type, err)
	}
	s.state = next
	s.chain.Advance(l)
	s.sources.Fold(l)
	return nil
}

// build encodes events as the next lines without advancing, and folds them into
// a tentative state so the caller can pick the write that matches the outcome.
func (s *session) build(events ...contracts.Event) ([]contracts.Line, reducer.RunState, error) {
	c := *s.chain
	st := s.state
	lines := make([]contracts.Line, 0, len(events))
	for _, e := range events {
		l, err := c.Append(e)
		if err != nil {
			return nil, st, err
		}
		if st, err = reducer.Apply(st, l); err != nil {
			return nil, st, fmt.Errorf("agent: reducer rejects %s: %w", l.Type, err)
		}
		lines = append(lines, l)
	}
	return lines, st, nil
}

// commit stores events with write (nil: append, or finish the run when the
// events end it) and advances the session.
func (s *session) commit(ctx context.Context, write func([]contracts.Line) error, events ...contracts.Event) error {
	lines, st, err := s.build(events...)
	if err != nil {
		return err
	}
	if write == nil {
		write = s.appendOrFinish(ctx, st)
	}
	if err := write(lines); err != nil {
		return err
	}
	for _, l := range lines {
		if err := s.advance(l); err != nil {
			return err
		}
	}
	return nil
}

// appendOrFinish is commit's default write: append lines, or finish the run
// when st, the state they lead to, ends it.
func (s *session) appendOrFinish(ctx context.Context, st reducer.RunState) func([]contracts.Line) error {
	return func(ls []contracts.Line) error {
		if st.Status.Terminal() {
			return s.b.store.FinishRun(ctx, s.meta.FirmID, s.meta.RunID, st.Status, ls...)
		}
		return s.b.store.AppendEvents(ctx, s.meta.FirmID, s.meta.RunID, ls...)
	}
}

// commitPaid is commit for the answer of a model call that was paid for
// (its usage is settled): the write is retried like the usage's, because
// an answer that is not stored is lost for good (a later worker never
// makes the call again; the run then fails model_answer_lost).
func (s *session) commitPaid(ctx context.Context, events ...contracts.Event) error {
	lines, st, err := s.build(events...)
	if err != nil {
		return err
	}
	write := s.appendOrFinish(ctx, st)
	if err := s.retryWrite(ctx, func() error { return write(lines) }); err != nil {
		return err
	}
	for _, l := range lines {
		if err := s.advance(l); err != nil {
			return err
		}
	}
	return nil
}

// fail ends the run with a sanitized failure envelope, logged once.
func (s *session) fail(ctx context.Context, err error, stage failure.Stage) {
	if errors.Is(err, errRunEnded) {
		return // already ended, with its own lines
	}
	if errors.Is(err, errEffectUnrecorded) {
		return // logged; the sweeper ends the run once the lease passed
	}
	if errors.Is(err, errHandedOver) {
		return // the run goes on in a new invocation
	}
	if s.deferTransient(ctx, err, stage) {
		return
	}
	if errors.Is(err, warrant.ErrLeaseHeld) {
		// This worker's lease passed and the run is another's (a new
		// worker's, or the sweeper's): nothing of it is this worker's to
		// write, its failure included.
		s.b.logger.Log(ctx, failure.Build(err, stage, "agent", s.scope()))
		return
	}
	env := failure.Build(err, stage, "agent", s.scope())
	s.b.logger.Log(ctx, env)
	if werr := s.commit(ctx, nil, runFailed(err, env)); werr != nil {
		// The ledger stays consistent (nothing half-written); the run keeps its
		// last state and the envelope of the write failure is logged too.
		s.b.logger.Log(ctx, failure.Build(werr, failure.StageLedgerWrite, "agent", s.scope()))
	}
}

// runFailed is the run.failed line of a failure and its logged envelope.
func runFailed(err error, env failure.Envelope) *contracts.RunFailed {
	raw, _ := json.Marshal(env)
	return &contracts.RunFailed{ErrorClass: errorClass(err), ErrorMessage: env.SanitizedSummary,
		FailureStage: string(env.FailureStage), FailureKind: string(env.FailureKind), Failure: raw}
}

func errorClass(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			break
		}
		err = u
	}
	return reflect.TypeOf(err).String()
}

// loop runs model turns until the run ends or holds.
func (s *session) loop(ctx context.Context) {
	for s.state.Status == warrant.RunRunning {
		if s.state.ModelCalls >= int64(s.stepLimit()) {
			s.fail(ctx, failure.New(failure.KindStepLimitExceeded, "the run reached its step limit"), failure.StageInvoke)
			return
		}
		if !s.step(ctx) {
			return
		}
	}
}

// step makes one model call and handles its tool uses. It returns false when
// the run stopped (ended, held or failed).
//
// Before the call its worst case is held to the run's cap (preflight) and
// reserved against the firm's monthly budget (reserve); a call that does not
// fit either is never made. The reservation is settled to the call's real
// cost in the write that stores its model.usage line, or released whole if
// the call failed.
func (s *session) step(ctx context.Context) bool {
	in := s.request()
	worst, err := s.preflight(in)
	if err != nil {
		s.fail(ctx, err, failure.StageModelCall)
		return false
	}
	turn := s.state.Turns + 1
	res, err := s.reserve(ctx, turn, worst)
	if err != nil {
		s.fail(ctx, err, failure.StageModelCall)
		return false
	}
	var deltas []string
	out, err := s.b.model.Converse(ctx, in, func(t string) { deltas = append(deltas, t) })
	if err != nil {
		s.release(ctx, res)
		s.fail(ctx, err, failure.StageModelCall)
		return false
	}
	// The money first: model.usage is stored on its own, before anything
	// that can still fail (a malformed answer, a turn too large for a ledger
	// line), so a call that was paid for is always counted, in the ledger
	// and the firm's budget at once. If it crosses the cap the reducer
	// aborts the run and this write finishes it: the turn's content is not
	// delivered.
	usage := usageOf(out.Usage)
	cost, err := s.b.prices.TokenCost(s.def.ModelID, usage)
	if err != nil {
		s.release(ctx, res)
		s.fail(ctx, failure.Wrap(failure.KindUnknownModel, "the model's usage cannot be priced", err), failure.StageModelCall)
		return false
	}
	if err := s.settle(ctx, res, &contracts.ModelUsage{Turn: turn, ModelID: s.def.ModelID, Usage: usage, CostUSD: pricing.FormatUSD(cost),
		ReservedUSD: pricing.FormatUSD(worst)}); err != nil {
		s.fail(ctx, err, failure.StageLedgerWrite)
		return false
	}
	if s.state.Status != warrant.RunRunning {
		return false
	}
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok {
		s.fail(ctx, failure.New(failure.KindModelMalformedOutput, "the model returned no message"), failure.StageModelCall)
		return false
	}
	blocks, text, err := contentFromModel(msg.Value.Content)
	if err != nil {
		s.fail(ctx, failure.Wrap(failure.KindModelMalformedOutput, "the model returned a malformed tool use", err), failure.StageModelCall)
		return false
	}
	// The turn is one write: its streamed text coalesced into at most
	// MaxDeltaLines lines, then turn.completed (and run.completed when it
	// is the last), so no turn is ever half-stored.
	var events []contracts.Event
	for _, d := range coalesce(deltas, MaxDeltaLines) {
		events = append(events, &contracts.TurnDelta{Turn: turn, Text: d})
	}
	stop := string(out.StopReason)
	events = append(events, &contracts.TurnCompleted{Turn: turn, Text: text, StopReason: stop, Content: blocks})
	toolUses := 0
	for _, b := range blocks {
		if b.Type == contracts.BlockToolUse {
			toolUses++
		}
	}
	if stop != string(types.StopReasonToolUse) || toolUses == 0 {
		events = append(events, &contracts.RunCompleted{StopReason: stop, FinalText: text})
	}
	if err := s.commitPaid(ctx, events...); err != nil {
		s.fail(ctx, err, failure.StageLedgerWrite)
		return false
	}
	s.msgs = append(s.msgs, types.Message{Role: types.ConversationRoleAssistant, Content: msg.Value.Content})
	if s.state.Status != warrant.RunRunning {
		return false
	}
	return s.runTools(ctx, turn, blocks, nil)
}

// runTools handles a turn's tool uses in order, then hands the results to the
// model. It returns false when the run stopped.
func (s *session) runTools(ctx context.Context, turn int64, blocks []contracts.ContentBlock, done map[string]*contracts.ToolCompleted) bool {
	var results []types.ContentBlock
	for _, b := range blocks {
		if b.Type != contracts.BlockToolUse {
			continue
		}
		if tc, ok := done[b.ToolUseID]; ok {
			results = append(results, toolResultBlock(tc))
			continue
		}
		tc, held, err := s.toolCall(ctx, turn, b)
		if err != nil {
			s.fail(ctx, err, stageOf(err))
			return false
		}
		if held {
			return false
		}
		results = append(results, toolResultBlock(tc))
	}
	s.allow = nil // the warrant covered only the step it resumed
	s.msgs = append(s.msgs, types.Message{Role: types.ConversationRoleUser, Content: results})
	return s.state.Status == warrant.RunRunning
}

// request builds the next Converse call from the transcript.
func (s *session) request() *bedrockruntime.ConverseInput {
	var specs []types.Tool
	for _, name := range s.def.Tools {
		t := s.b.tools[name]
		var schemaDoc any
		_ = json.Unmarshal(t.InputSchema, &schemaDoc)
		specs = append(specs, &types.ToolMemberToolSpec{Value: types.ToolSpecification{
			Name: aws.String(t.Name), Description: aws.String(t.Description),
			InputSchema: &types.ToolInputSchemaMemberJson{Value: lazyDocument(schemaDoc)},
		}})
	}
	system := s.def.SystemPrompt + "\nMatter: " + s.meta.MatterID
	return &bedrockruntime.ConverseInput{
		ModelId:         aws.String(s.def.ModelID),
		System:          []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: system}},
		Messages:        s.msgs,
		InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(s.maxTokens())},
		ToolConfig:      &types.ToolConfiguration{Tools: specs},
	}
}

// preflight refuses a call whose worst case would cross the run's cap (the
// cost so far plus worst > cap) and returns that worst case: inputBound's
// input tokens and every allowed output token, at the model's price
// (pricing.Table.WorstCost). The run's lease makes this check sequential,
// so it is exact.
func (s *session) preflight(in *bedrockruntime.ConverseInput) (pricing.Nano, error) {
	bound, err := inputBound(in)
	if err != nil {
		return 0, failure.Wrap(failure.KindInternal, "the model call's input cannot be bounded", err)
	}
	worst, err := s.b.prices.WorstCost(s.def.ModelID, bound, int64(aws.ToInt32(in.InferenceConfig.MaxTokens)))
	if err != nil {
		return 0, failure.Wrap(failure.KindUnknownModel, "the model cannot be priced", err)
	}
	if s.state.Cost+worst > s.state.CostCap {
		return 0, failure.New(failure.KindCostCapExceeded, "the next model call could exceed the run's cost cap")
	}
	return worst, nil
}

// reserve holds the call's worst case against the firm's budget for this
// month (until the worker's lease ends, when the sweeper may release it).
// The firm's limit is read from its settings once per session; every
// reservation is conditioned on the settings still saying so, and one
// refused for that reads them again, so no reservation is ever held to a
// limit the firm has changed.
func (s *session) reserve(ctx context.Context, turn int64, worst pricing.Nano) (warrant.Reservation, error) {
	r := warrant.Reservation{FirmID: s.meta.FirmID, RunID: s.meta.RunID, ID: s.b.cfg.NewID(), Turn: turn, Owner: s.owner,
		AmountNano: int64(worst), ExpiresAt: s.leaseUntil(ctx)}
	for attempt := 0; ; attempt++ {
		if s.limit == nil {
			fs, err := s.firmSettings(ctx)
			if err != nil {
				return warrant.Reservation{}, err
			}
			l := fs.Limit(s.b.cfg.FirmBudget)
			s.limit = &l
		}
		res, err := s.b.store.Reserve(ctx, r, *s.limit)
		if !errors.Is(err, warrant.ErrBudgetLimitChanged) || attempt == 2 {
			return res, err
		}
		s.limit, s.fs = nil, nil // read the settings again
	}
}

// firmSettings are the firm's settings, read once per session (the
// budget's limit and the policy's firm domains come from the same read).
func (s *session) firmSettings(ctx context.Context) (warrant.FirmSettings, error) {
	if s.fs == nil {
		fs, err := s.b.store.GetFirmSettings(ctx, s.meta.FirmID)
		if err != nil {
			return fs, err
		}
		s.fs = &fs
	}
	return *s.fs, nil
}

// settle stores the call's model.usage line and settles its reservation to
// the line's cost in one write (finishing the run if the line ends it).
func (s *session) settle(ctx context.Context, res warrant.Reservation, u *contracts.ModelUsage) error {
	lines, st, err := s.build(u)
	if err != nil {
		return err
	}
	var finish warrant.RunStatus
	if st.Status.Terminal() {
		finish = st.Status
	}
	// The call was made and billed: its usage is written until it is
	// counted, or the failure is not one a retry can change.
	if err := s.retryWrite(ctx, func() error { return s.b.store.SettleUsage(ctx, res, finish, lines[0]) }); err != nil {
		return err
	}
	return s.advance(lines[0])
}

// release gives a reservation back whole: its call failed and nothing was
// billed. If it cannot, the sweeper will once the worker's lease passed.
func (s *session) release(ctx context.Context, res warrant.Reservation) {
	if _, err := s.b.store.ReleaseReservation(ctx, res, time.Time{}); err != nil {
		s.b.logger.Log(ctx, failure.Build(err, failure.StageModelCall, "agent", s.scope()))
	}
}

func usageOf(u *types.TokenUsage) contracts.Usage {
	if u == nil {
		return contracts.Usage{}
	}
	return contracts.Usage{InputTokens: int64(aws.ToInt32(u.InputTokens)), OutputTokens: int64(aws.ToInt32(u.OutputTokens)),
		CacheReadInputTokens: int64(aws.ToInt32(u.CacheReadInputTokens)), CacheWriteInputTokens: int64(aws.ToInt32(u.CacheWriteInputTokens))}
}

// leaseUntil is the lease of a worker on a run and its claims: the Lambda
// deadline when there is one.
func (b *Brain) leaseUntil(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d.UTC()
	}
	return b.cfg.Now().Add(b.cfg.Lease).UTC()
}

// leaseUntil is the session's lease, or the Lambda deadline.
func (s *session) leaseUntil(ctx context.Context) time.Time {
	if !s.lease.IsZero() {
		return s.lease
	}
	return s.b.leaseUntil(ctx)
}

func (s *session) toolContext(ctx context.Context) context.Context {
	return tools.NewContext(ctx, tools.Scope{FirmID: s.meta.FirmID, RunID: s.meta.RunID, MatterID: s.meta.MatterID})
}

// MaxDeltaLines bounds the turn.delta lines of one turn: a streamed answer
// arrives in as many fragments as the model likes, and a turn is stored in
// one transaction (at most 100 items).
const MaxDeltaLines = 16

// coalesce joins consecutive fragments into at most max texts of about
// equal size, in order (empty fragments dropped): their concatenation is the
// fragments'.
func coalesce(fragments []string, max int) []string {
	var parts []string
	total := 0
	for _, f := range fragments {
		if f != "" {
			parts = append(parts, f)
			total += len(f)
		}
	}
	if len(parts) <= max {
		return parts
	}
	target := (total + max - 1) / max
	out := make([]string, 0, max)
	var b strings.Builder
	for _, f := range parts {
		b.WriteString(f)
		// The last line takes whatever is left.
		if len(out) < max-1 && b.Len() >= target {
			out = append(out, b.String())
			b.Reset()
		}
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}
