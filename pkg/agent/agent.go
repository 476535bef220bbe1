package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/google/uuid"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"

	"github.com/seed-f6d3920e/warrant"
)

// Converser is the model (pkg/bedrock's Client satisfies it). onDelta receives
// streamed text fragments when the client streams.
type Converser interface {
	Converse(ctx context.Context, in *bedrockruntime.ConverseInput, onDelta func(text string)) (*bedrockruntime.ConverseOutput, error)
}

// The brain's store, per flow, in the domain's nouns (pkg/dynamo's Store
// implements them; internal/wire checks it at compile time).

// RunStore keeps runs and their ledgers.
type RunStore interface {
	reducer.Source
	CreateRun(ctx context.Context, r warrant.Run, first contracts.Line) error
	GetRun(ctx context.Context, firm, run string) (warrant.Run, error)
	AppendEvents(ctx context.Context, firm, run string, lines ...contracts.Line) error
	FinishRun(ctx context.Context, firm, run string, to warrant.RunStatus, lines ...contracts.Line) error
	// AcquireRun leases a running run to one worker at a time.
	AcquireRun(ctx context.Context, firm, run, owner string, until time.Time) (warrant.Run, error)
	// SweepFail ends a run that cannot go on (see warrant.SweepFailure).
	SweepFail(ctx context.Context, sw warrant.SweepFailure, lines ...contracts.Line) error
	// RestartRun hands a running run whose lease passed to a new worker.
	RestartRun(ctx context.Context, firm, run string, pickupBy time.Time, max int) error
	// HandOverRun gives up a worker's lease of its running run, for a new
	// invocation to take (a worker too close to its deadline).
	HandOverRun(ctx context.Context, firm, run, owner string, pickupBy time.Time) error
}

// ApprovalStore holds runs on warrants and releases them.
type ApprovalStore interface {
	CreateWarrantRequest(ctx context.Context, w warrant.Warrant, lines ...contracts.Line) error
	GetReleaseAuthorizedRequest(ctx context.Context, approvalID, firmID, runID, matterID string) (warrant.Warrant, error)
	ResumeClaim(ctx context.Context, c warrant.ResumeClaim, released contracts.Line) error
}

// EffectStore claims effects once and records their outcomes.
type EffectStore interface {
	ClaimToolEffectOnce(ctx context.Context, c warrant.ClaimInput, lines ...contracts.Line) (bool, *warrant.Claim, error)
	CompleteEffect(ctx context.Context, firm, run string, k warrant.EffectKey, owner string, c warrant.Completion, lines ...contracts.Line) error
	FlagForReconciliation(ctx context.Context, firm, run string, k warrant.EffectKey) error
	// LatestEffect is the latest attempt's claim of a call (nil: never claimed).
	LatestEffect(ctx context.Context, firm, run, tool, inputSHA256 string) (*warrant.Claim, error)
	// TakeClaim makes a worker the executor of an effect a resume reserved,
	// adding to counters in the same write.
	TakeClaim(ctx context.Context, firm, run string, k warrant.EffectKey, owner string, until time.Time, counters ...warrant.Counter) error
}

// PolicyStore is what the risk policy's rules weigh beyond a call: the
// firm's own e-mail domains and the matter's client's.
type PolicyStore interface {
	GetFirmSettings(ctx context.Context, firm string) (warrant.FirmSettings, error)
	GetMatter(ctx context.Context, firm, matter string) (warrant.Matter, error)
	MatterStepStore
}

// BudgetStore holds firms to their monthly budgets (pkg/dynamo's budget.go).
type BudgetStore interface {
	GetFirmSettings(ctx context.Context, firm string) (warrant.FirmSettings, error)
	// Reserve holds a call's worst case against the firm's month, for the
	// run's lease holder only, while the firm's settings say limit.
	Reserve(ctx context.Context, r warrant.Reservation, limit warrant.BudgetLimit) (warrant.Reservation, error)
	// SettleUsage stores the call's model.usage line and settles its
	// reservation to the line's cost, in one write.
	SettleUsage(ctx context.Context, r warrant.Reservation, finish warrant.RunStatus, line contracts.Line) error
	// ReleaseReservation gives a reservation back whole, once.
	ReleaseReservation(ctx context.Context, r warrant.Reservation, expiredBefore time.Time) (bool, error)
}

// Store is every flow's store: what a Brain runs on.
type Store interface {
	RunStore
	ApprovalStore
	EffectStore
	PolicyStore
	BudgetStore
}

// Definition is one agent: its prompt, model, tools and limits (the AGENTS
// document's, pkg/catalog).
type Definition struct {
	Key           string
	SystemPrompt  string
	PromptVersion string
	ModelID       string // empty: the brain's configured model
	Tools         []string
	// MaxTokens bounds each model call's output and MaxTurns the model
	// calls of a run (0: Config.MaxTokens, Config.StepLimit);
	// DefaultCostCapUSD is a run's cap when the request names none ("":
	// the deployment's).
	MaxTokens         int32
	MaxTurns          int
	DefaultCostCapUSD string
}

// DefinitionOf is an agent of the AGENTS document as the brain runs it.
func DefinitionOf(a catalog.Agent) Definition {
	return Definition{Key: a.Key, SystemPrompt: a.SystemPrompt, PromptVersion: a.PromptVersion, ModelID: a.ModelID,
		Tools: slices.Clone(a.Tools), MaxTokens: a.MaxTokens, MaxTurns: a.MaxTurns, DefaultCostCapUSD: a.DefaultCostCapUSD}
}

// MatterAssistant is the reference agent: the embedded AGENTS document's
// matter_assistant.
var MatterAssistant = func() Definition {
	a, err := catalog.EmbeddedAgents()
	if err != nil {
		panic("agent: the embedded agents document does not load: " + err.Error())
	}
	return DefinitionOf(a.Agents["matter_assistant"])
}()

// Config holds the brain's limits. Zero values take the defaults.
type Config struct {
	ModelID    string
	MaxTokens  int32         // maxTokens of every model call (default 1024)
	StepLimit  int           // model calls per run (default 12)
	WarrantTTL time.Duration // default warrant.DefaultWarrantTTL
	Lease      time.Duration // a worker's lease on a run and its claims when ctx has no deadline (default 5m)
	// Pickup is how long a started or resumed run waits for a worker before
	// the sweeper may restart or fail it (default 5m).
	Pickup time.Duration
	// MaxRestarts is how often the sweeper hands a run whose worker was lost
	// (with nothing irreversible pending) to a new worker before failing it
	// with worker_lost (default 2).
	MaxRestarts int
	// Heads verifies a run's signed ledger head before a resume acts on the
	// ledger (nil: the head's seq and hash are still checked, not its MAC).
	Heads reducer.HeadVerifier
	// FirmBudget is the monthly budget in nano-USD of a firm whose settings
	// name none (FIRM_MONTHLY_BUDGET_USD); nil: none, and such a firm's
	// model calls are refused (firm_budget_exceeded).
	FirmBudget *int64
	Now        func() time.Time
	NewID      func() string
	// AgentsVersion and CatalogVersion name the agents document and the
	// tool catalog the brain runs (pkg/catalog's version hashes), recorded
	// in every run.started.
	AgentsVersion, CatalogVersion string
	// StoreRetry is how long a run whose worker met a transient store
	// failure waits before the sweeper hands it to a new worker (default
	// 1 min).
	StoreRetry time.Duration
	// ModelRetry is how long a run whose model call failed in a way a
	// later attempt may not (throttled, timed out, a 5xx, past the SDK's
	// retries) waits before the sweeper hands it to a new worker, doubled
	// for each restart the run already had (default 1 min). Such a run is
	// given back at most MaxRestarts times; then it fails with the model's
	// kind.
	ModelRetry time.Duration
	// OutcomeTime is what an effect's outcome write needs beyond the tool's
	// own timeout: a worker starts an effect only with both left before its
	// deadline, and otherwise hands the run to a new invocation (default
	// 5 s).
	OutcomeTime time.Duration
	// OutcomeBackoff are the pauses between the retries of an executed
	// effect's outcome write (nil: 50 ms, 200 ms, 800 ms).
	OutcomeBackoff []time.Duration
	// Keys makes and opens the runs' data keys under the firm's key
	// (DATA_KEY; issue 26): each new run gets its own, wrapped in its run
	// item, and its ledger's privileged members are sealed under it
	// (schema 2). nil: new runs are written in the clear (schema 1), and a
	// sealed run cannot be continued (config_invalid).
	Keys seal.Keyring
}

// Brain runs agents. Build it with New; it is safe for concurrent use.
type Brain struct {
	store  Store
	model  Converser
	policy *toolpolicy.Policy
	prices *pricing.Table
	logger *failure.Logger
	cfg    Config
	agents map[string]Definition
	tools  map[string]registeredTool
}

type registeredTool struct {
	Tool
	schema *jsonschema.Schema
}

func (b *Brain) outcomeBackoff() []time.Duration {
	if b.cfg.OutcomeBackoff != nil {
		return b.cfg.OutcomeBackoff
	}
	return outcomeBackoff
}

// New builds a brain. Every tool schema is compiled and every agent's tools must
// exist, so a bad registry fails at init, not mid-run.
func New(store Store, model Converser, policy *toolpolicy.Policy, prices *pricing.Table, logger *failure.Logger,
	cfg Config, toolset []Tool, agents ...Definition) (*Brain, error) {
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 1024
	}
	if cfg.StepLimit <= 0 {
		cfg.StepLimit = 12
	}
	if cfg.WarrantTTL <= 0 {
		cfg.WarrantTTL = warrant.DefaultWarrantTTL
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 5 * time.Minute
	}
	if cfg.MaxRestarts <= 0 {
		cfg.MaxRestarts = 2
	}
	if cfg.Pickup <= 0 {
		cfg.Pickup = 5 * time.Minute
	}
	if cfg.StoreRetry <= 0 {
		cfg.StoreRetry = time.Minute
	}
	if cfg.ModelRetry <= 0 {
		cfg.ModelRetry = time.Minute
	}
	if cfg.OutcomeTime <= 0 {
		cfg.OutcomeTime = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = func() string { return uuid.NewString() }
	}
	if logger == nil {
		logger = failure.NewLogger(nil)
	}
	b := &Brain{store: store, model: model, policy: policy, prices: prices, logger: logger, cfg: cfg,
		agents: map[string]Definition{}, tools: map[string]registeredTool{}}
	for _, t := range toolset {
		if (t.System == nil) == (t.Execute == nil) {
			return nil, fmt.Errorf("agent: tool %s needs exactly one of a target and a builtin", t.Name)
		}
		if t.Timeout <= 0 {
			t.Timeout = catalog.DefaultTimeout
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		var doc any
		if err := json.Unmarshal(t.InputSchema, &doc); err != nil {
			return nil, fmt.Errorf("agent: tool %s schema: %w", t.Name, err)
		}
		if err := c.AddResource(t.Name+".json", doc); err != nil {
			return nil, fmt.Errorf("agent: tool %s schema: %w", t.Name, err)
		}
		s, err := c.Compile(t.Name + ".json")
		if err != nil {
			return nil, fmt.Errorf("agent: tool %s schema: %w", t.Name, err)
		}
		b.tools[t.Name] = registeredTool{Tool: t, schema: s}
	}
	for _, d := range agents {
		for _, name := range d.Tools {
			if _, ok := b.tools[name]; !ok {
				return nil, fmt.Errorf("agent: %s uses unknown tool %s", d.Key, name)
			}
		}
		if d.ModelID == "" {
			d.ModelID = cfg.ModelID
		}
		if _, err := prices.Price(d.ModelID); err != nil {
			return nil, fmt.Errorf("agent: %s: %w", d.Key, err)
		}
		b.agents[d.Key] = d
	}
	return b, nil
}

// DefaultCostCap is the cost cap of a run of agentKey whose request names
// none: the agent's own ("" when it has none, or no such agent: the
// deployment's applies).
func (b *Brain) DefaultCostCap(agentKey string) string { return b.agents[agentKey].DefaultCostCapUSD }

func (s *session) maxTokens() int32 {
	if s.def.MaxTokens > 0 {
		return s.def.MaxTokens
	}
	return s.b.cfg.MaxTokens
}

func (s *session) stepLimit() int {
	if s.def.MaxTurns > 0 {
		return s.def.MaxTurns
	}
	return s.b.cfg.StepLimit
}
