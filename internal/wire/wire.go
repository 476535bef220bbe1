// Package wire builds each Lambda function from its environment: the
// configuration, the AWS clients, the store, the brain and the handler, once
// at init. functions/<name>/main.go is one call to Main; the handler and
// agent test stacks build their handlers and brains through the same
// functions, with their own clock, ids and endpoints in Deps.
//
// It lives under the module's internal/ rather than functions/internal/ so
// that the tests of pkg/agent and pkg/handlers can use it too
// (docs/DECISIONS.md).
package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	lambdasvc "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/anchor"
	"github.com/seed-f6d3920e/warrant/pkg/bedrock"
	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/config"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/desk"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/eventbus"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"
	"github.com/seed-f6d3920e/warrant/pkg/httpstarget"
	"github.com/seed-f6d3920e/warrant/pkg/lambdatarget"
	"github.com/seed-f6d3920e/warrant/pkg/mcp"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/remote"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
	"github.com/seed-f6d3920e/warrant/pkg/secrets"
	"github.com/seed-f6d3920e/warrant/pkg/sqs"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
	"github.com/seed-f6d3920e/warrant/pkg/tools"
)

// The adapters satisfy the interfaces their consumers declare.
var (
	_ agent.Store                 = (*dynamo.Store)(nil)
	_ agent.DecideStore           = (*dynamo.Store)(nil)
	_ agent.Converser             = (*bedrock.Client)(nil)
	_ tools.Outbox                = (*dynamo.Store)(nil)
	_ handlers.RunsStore          = (*dynamo.Store)(nil)
	_ handlers.ProjectionStore    = (*dynamo.Store)(nil)
	_ handlers.Runner             = (*agent.Brain)(nil)
	_ handlers.Continuer          = (*agent.Brain)(nil)
	_ handlers.SweepBrain         = (*agent.Brain)(nil)
	_ handlers.LeaseIndex         = (*dynamo.Store)(nil)
	_ handlers.EvidenceStore      = (*dynamo.Store)(nil)
	_ handlers.ExpiringIndex      = (*dynamo.Store)(nil)
	_ handlers.ReservationSweeper = (*dynamo.Store)(nil)
	_ handlers.Enqueuer           = (*sqs.Queue)(nil)
	_ agent.ReconcileStore        = (*dynamo.Store)(nil)
	_ reducer.Source              = (*dynamo.Store)(nil)
	_ reducer.HeadVerifier        = (*anchor.Keyring)(nil)
	_ dynamo.HeadSigner           = (*anchor.Keyring)(nil)
)

// Deps is what a function is built from. Load fills it from the environment;
// tests fill it with their own store, model, clock and ids.
type Deps struct {
	Config config.Config
	// Keys signs and verifies ledger heads (LEDGER_KEY); the Store signs
	// with the same keyring (dynamo.WithHeadSigner).
	Keys *anchor.Keyring
	// DataKeys makes and opens the runs' data keys under the firm's key
	// (DATA_KEY, issue 26); nil: runs are written in the clear.
	DataKeys seal.Keyring
	Store    *dynamo.Store
	// Model is the brain's model; nil for functions that call no model
	// (only the worker does).
	Model agent.Converser
	// Queue hands runs to the worker (QUEUE_URL); nil for functions that
	// hand nothing over.
	Queue handlers.Enqueuer
	// Policy is the risk policy (TOOL_POLICY); nil: the embedded one.
	Policy *toolpolicy.Policy
	// Catalog and Agents are the tool catalog (TOOL_CATALOG) and the
	// agents (AGENTS); nil: the embedded ones.
	Catalog *catalog.Catalog
	Agents  *catalog.Agents
	// Documents are the configuration documents Load read (by variable:
	// config.DocCatalog, DocAgents, DocPolicy), so a fault found in them
	// later (an agent naming a tool the catalog lacks) names its line and
	// column; nil: faults name the field only.
	Documents map[string]config.Document
	// Targets builds the target of a catalog server (an MCP server's); nil:
	// a catalog that names servers does not build.
	Targets func(catalog.Server) (agent.Target, error)
	Logger  *failure.Logger
	// Bus publishes notifications (EVENT_BUS_NAME); nil in a function that
	// publishes none.
	Bus handlers.Publisher
	// DeskURL is the desk's base URL (DESK_URL), for the events' links.
	DeskURL string
	// Evidence is the receipt keys (RECEIPT_KEY, RECEIPT_RETIRED_KEYS) and
	// the checkpoint bucket (CHECKPOINT_BUCKET); nil in a function that
	// reads none.
	Evidence *EvidenceKeys
	// Now is the brain's and the approval handler's clock (nil: time.Now).
	// The store has its own (dynamo.WithClock).
	Now func() time.Time
	// NewID mints the brain's ids: warrants, effect refs, claim owners (nil:
	// random UUIDs). NewRunID mints run ids (nil: random UUIDs).
	NewID, NewRunID func() string
}

// Load reads function's environment through lookup and builds its clients.
// Endpoints come from the SDK's own configuration (AWS_ENDPOINT_URL_DYNAMODB
// and AWS_ENDPOINT_URL_BEDROCK_RUNTIME on the local stack).
func Load(ctx context.Context, function string, lookup func(string) (string, bool), logOut io.Writer) (Deps, error) {
	cfg, err := config.Load(function, lookup)
	if err != nil {
		return Deps{}, err
	}
	awsCfg, err := loadAWS(ctx)
	if err != nil {
		return Deps{}, err
	}
	key, err := anchor.Parse(cfg.LedgerKey, func() anchor.KMSClient { return kms.NewFromConfig(awsCfg) })
	if err != nil {
		// The error never echoes the spec (it may hold key material).
		return Deps{}, failure.Wrap(failure.KindConfigInvalid, "environment variable LEDGER_KEY does not name a usable key", err)
	}
	keys := anchor.NewKeyring(key)
	dataKeys, err := DataKeys(cfg.DataKey, func() seal.KMSClient { return kms.NewFromConfig(awsCfg) })
	if err != nil {
		return Deps{}, err
	}
	storeOpts := []dynamo.Option{dynamo.WithHeadSigner(keys)}
	if cfg.TimestampURL != "" || len(cfg.Witnesses) > 0 {
		storeOpts = append(storeOpts, dynamo.WithAttestations())
	}
	d := Deps{
		DataKeys: dataKeys,
		Config:   cfg,
		Keys:     keys,
		Store:    dynamo.New(dynamodb.NewFromConfig(awsCfg), cfg.TableName, storeOpts...),
		Logger:   failure.NewLevelLogger(logOut, cfg.LogLevel),
	}
	if cfg.QueueURL != "" {
		d.Queue = sqs.New(awssqs.NewFromConfig(awsCfg), cfg.QueueURL)
	}
	newSSM := func() SSMGetter { return ssm.NewFromConfig(awsCfg) }
	d.Documents = map[string]config.Document{}
	for _, src := range []struct{ variable, spec string }{
		{config.DocPolicy, cfg.ToolPolicy}, {config.DocCatalog, cfg.ToolCatalog}, {config.DocAgents, cfg.Agents},
	} {
		if src.spec == "" {
			continue
		}
		doc, err := ReadDocument(ctx, src.variable, src.spec, newSSM)
		if err != nil {
			return Deps{}, err
		}
		switch src.variable {
		case config.DocPolicy:
			d.Policy, err = doc.Policy()
		case config.DocCatalog:
			d.Catalog, err = doc.Catalog()
		case config.DocAgents:
			d.Agents, err = doc.Agents(ReadBundleFile)
		}
		if err != nil {
			return Deps{}, err
		}
		d.Documents[src.variable] = doc
	}
	d.Targets = targets(awsCfg, d.Logger)
	if cfg.EventBus != "" {
		d.Bus, d.DeskURL = eventbus.New(eventbridge.NewFromConfig(awsCfg), cfg.EventBus), cfg.DeskURL
	}
	if d.Evidence, err = LoadEvidenceKeys(ctx, cfg, func() anchor.SignClient { return kms.NewFromConfig(awsCfg) },
		func() anchor.S3Client { return s3.NewFromConfig(awsCfg) }); err != nil {
		return Deps{}, err
	}
	if cfg.Function == config.Worker {
		d.Model = bedrock.New(bedrock.NewRuntime(ctx, awsCfg, ""), bedrock.Options{Stream: cfg.Streaming, DefaultMaxTokens: cfg.MaxTokens})
	}
	return d, nil
}

// DataKeys is the keyring of DATA_KEY (issue 26): the firm's KMS key
// ("kms:<ARN>", through newKMS, called only then) or, on the local stack, a
// local master key ("aes:<64 hex>"). Empty: nil, runs in the clear.
func DataKeys(spec string, newKMS func() seal.KMSClient) (seal.Keyring, error) {
	if spec == "" {
		return nil, nil
	}
	ks, err := seal.ParseKeySpec(spec)
	if err != nil {
		return nil, err
	}
	var client seal.KMSClient
	if !ks.Local() {
		client = newKMS()
	}
	return ks.Keyring(client)
}

// loadAWS is the SDK's default configuration, which every client here is
// built from.
func loadAWS(ctx context.Context) (aws.Config, error) {
	c, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return aws.Config{}, failure.Wrap(failure.KindConfigInvalid, "AWS configuration does not load", err)
	}
	return c, nil
}

// Outbox builds the store the reference tool server (cmd/toolserver) records
// its effects in: the functions' table (TABLE_NAME), reached as Load reaches
// it (AWS_REGION, AWS_ENDPOINT_URL_DYNAMODB on the local stack, the SDK's
// credential chain). It writes only outbox items, so it signs nothing and
// needs no LEDGER_KEY.
func Outbox(ctx context.Context, lookup func(string) (string, bool)) (*dynamo.Store, error) {
	table, err := config.TableName(lookup)
	if err != nil {
		return nil, err
	}
	awsCfg, err := loadAWS(ctx)
	if err != nil {
		return nil, err
	}
	return dynamo.New(dynamodb.NewFromConfig(awsCfg), table), nil
}

// NewBrain builds the brain invoke, resume and the worker share: the model
// (the worker's; invoke and resume record and never call it), the embedded
// risk policy, the configured prices and the reference tools. The sweeper's
// brain has no agents: it settles runs from their ledgers and never runs one.
func NewBrain(d Deps) (*agent.Brain, error) {
	policy := d.Policy
	if policy == nil {
		var err error
		if policy, err = LoadPolicy(context.Background(), "", nil); err != nil {
			return nil, err
		}
	}
	c := d.Config
	cat, agentsDoc, err := d.configuration()
	if err != nil {
		return nil, err
	}
	var agents []agent.Definition
	if c.HasBrain() {
		// What agent.New would refuse, named: the agent, the tool the
		// catalog lacks or the model without a price, and where.
		if faults := config.CheckAgents(d.document(config.DocAgents, c.Agents), agentsDoc,
			d.document(config.DocCatalog, c.ToolCatalog), cat, c.Prices, c.ModelID); len(faults) > 0 {
			return nil, documentFaults(faults)
		}
		for _, key := range sortedKeys(agentsDoc.Agents) {
			agents = append(agents, agent.DefinitionOf(agentsDoc.Agents[key]))
		}
	}
	toolset, err := d.toolset(cat)
	if err != nil {
		return nil, err
	}
	brain, err := agent.New(d.Store, d.Model, policy, c.Prices, d.Logger,
		agent.Config{ModelID: c.ModelID, MaxTokens: c.MaxTokens, StepLimit: c.StepLimit, WarrantTTL: c.WarrantTTL,
			Now: d.Now, NewID: d.NewID, Heads: d.verifier(), FirmBudget: c.DefaultFirmBudget(), Keys: d.DataKeys,
			AgentsVersion: agentsDoc.Version, CatalogVersion: cat.Version},
		toolset, agents...)
	if err != nil {
		return nil, failure.Wrap(failure.KindConfigInvalid, "the agent registry does not build", err)
	}
	return brain, nil
}

// document is the configuration document of variable as Load read it;
// else the one spec names, unread (its faults name no line), or the
// embedded one.
func (d Deps) document(variable, spec string) config.Document {
	if doc, ok := d.Documents[variable]; ok {
		return doc
	}
	doc := config.Document{Variable: variable, Source: spec}
	if spec == "" {
		switch variable {
		case config.DocCatalog:
			doc.Data = catalog.EmbeddedDocument()
		case config.DocAgents:
			doc.Data = catalog.EmbeddedAgentsDocument()
		case config.DocPolicy:
			doc.Data = toolpolicy.EmbeddedDocument()
		}
	}
	return doc
}

// documentFaults is config_invalid naming the first fault, and how many
// more there are.
func documentFaults(faults []*config.DocumentError) error {
	msg := faults[0].Error()
	if n := len(faults) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more: warrant config check lists every one)", n)
	}
	errs := make([]error, len(faults))
	for i, f := range faults {
		errs[i] = f
	}
	return failure.Wrap(failure.KindConfigInvalid, msg, errors.Join(errs...))
}

// configuration is the tool catalog and the agents the brain runs: the
// Deps', else the embedded ones.
func (d Deps) configuration() (*catalog.Catalog, *catalog.Agents, error) {
	cat, agents := d.Catalog, d.Agents
	var err error
	if cat == nil {
		if cat, err = catalog.Embedded(); err != nil {
			return nil, nil, failure.Wrap(failure.KindConfigInvalid, "the embedded tool catalog does not load", err)
		}
	}
	if agents == nil {
		if agents, err = catalog.EmbeddedAgents(); err != nil {
			return nil, nil, failure.Wrap(failure.KindConfigInvalid, "the embedded agents do not load", err)
		}
	}
	return cat, agents, nil
}

// toolset binds every catalog tool to what runs it: a builtin to the
// reference tools of this build, a server's tool to its target
// (Deps.Targets). A catalog naming a server no target can reach does not
// build.
func (d Deps) toolset(cat *catalog.Catalog) ([]agent.Tool, error) {
	toolset, err := agent.Builtins(cat, tools.Reference(d.Store, d.Now))
	if err != nil {
		return nil, failure.Wrap(failure.KindConfigInvalid, "the tool catalog's builtins are not this build's", err)
	}
	targets := map[string]agent.Target{}
	for _, name := range cat.Names() {
		t := cat.Tools[name]
		if t.Target.Kind == catalog.TargetBuiltin {
			continue
		}
		target, ok := targets[t.Target.Server]
		if !ok {
			if d.Targets == nil {
				return nil, failure.New(failure.KindConfigInvalid, "tool catalog: tools."+name+": no target can reach its server")
			}
			server := cat.Servers[t.Target.Server]
			if server.PerFirm() {
				target, err = newPerFirm(server, d.Targets)
			} else {
				target, err = d.Targets(server)
			}
			if err != nil {
				return nil, failure.Wrap(failure.KindConfigInvalid, "tool catalog: servers."+t.Target.Server+": its target does not build", err)
			}
			targets[t.Target.Server] = target
		}
		toolset = append(toolset, agent.Tool{Tool: t, System: target, Server: t.Target.Server})
	}
	return toolset, nil
}

// targets builds a catalog server's target by its kind: an MCP server's
// (pkg/mcp), an HTTPS endpoint's (pkg/httpstarget), a Lambda function's
// (pkg/lambdatarget, invoked with the function's role). Credentials come from
// Secrets Manager, read when a call first needs them, by the worker: the
// other functions build targets they never call. Every request an MCP
// server makes of Warrant (elicitation, sampling, roots) is refused and
// logged by its method alone.
func targets(awsCfg aws.Config, logger *failure.Logger) func(catalog.Server) (agent.Target, error) {
	sm := &secrets.Manager{Client: secretsmanager.NewFromConfig(awsCfg)}
	fns := lambdasvc.NewFromConfig(awsCfg)
	return func(srv catalog.Server) (agent.Target, error) {
		auth := remote.Auth{Kind: remote.AuthKind(srv.Auth.Kind), TokenSecretID: srv.Auth.Secret, TokenURL: srv.Auth.TokenURL,
			ClientID: srv.Auth.ClientID, ClientSecretID: srv.Auth.ClientSecret, Scopes: srv.Auth.Scopes}
		switch srv.Kind {
		case catalog.TargetMCP:
			return mcp.New(mcp.Config{Name: srv.Name, URL: srv.URL, Secrets: sm, Auth: auth,
				OnServerRequest: func(method string) {
					logger.Info(context.Background(), "mcp_server_request_refused", "server", srv.Name, "method", method)
				}})
		case catalog.TargetHTTPS:
			return httpstarget.New(httpstarget.Config{Name: srv.Name, URL: srv.URL, Secrets: sm, Auth: auth,
				FinalClientErrors: srv.FinalClientErrors})
		case catalog.TargetLambda:
			return lambdatarget.New(lambdatarget.Config{Name: srv.Name, Function: srv.Function, Client: fns})
		}
		return nil, fmt.Errorf("server %q: no target of kind %q in this build", srv.Name, srv.Kind)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// verifier is Keys as the consumers' interface (a nil keyring is a nil
// interface, not a typed nil).
func (d Deps) verifier() reducer.HeadVerifier {
	if d.Keys == nil {
		return nil
	}
	return d.Keys
}

func (d Deps) http() httpapi.Config {
	return httpapi.Config{FirmClaim: d.Config.FirmClaim, UserClaim: d.Config.UserClaim, RolesClaim: d.Config.RolesClaim}
}

// responder names the function in every failure envelope it logs.
func (d Deps) responder(function string) httpapi.Responder {
	return httpapi.Responder{Logger: d.Logger, Component: function}
}

// Invoke builds the POST /v1/runs handler.
func Invoke(d Deps) (*handlers.Invoke, error) {
	brain, err := NewBrain(d)
	if err != nil {
		return nil, err
	}
	_, agentsDoc, err := d.configuration()
	if err != nil {
		return nil, err
	}
	return &handlers.Invoke{Brain: namedAgents{Runner: brain, keys: agentsDoc.Keys()}, Queue: d.Queue, Store: d.Store, Keys: d.verifier(), Config: d.Config, HTTP: d.http(),
		Resp: d.responder(config.Invoke), NewID: d.NewRunID, DataKeys: d.DataKeys}, nil
}

// namedAgents is the brain as POST /v1/runs starts runs with it: its
// unknown_agent answer names the key asked for and the stack's agents.
type namedAgents struct {
	handlers.Runner
	keys []string
}

func (n namedAgents) Start(ctx context.Context, inv contracts.AgentInvoke, opts agent.StartOptions) (agent.Result, error) {
	res, err := n.Runner.Start(ctx, inv, opts)
	if kind, _, _ := failure.Classify(err); err != nil && kind == failure.KindUnknownAgent {
		return res, failure.Wrap(failure.KindUnknownAgent, UnknownAgent(inv.AgentKey, n.keys), err)
	}
	return res, err
}

// UnknownAgent is the detail of an unknown_agent answer: the key asked for
// (quoted only when it has an agent key's form: the request's text is
// never echoed otherwise) and the keys of the stack's agents (AGENTS).
func UnknownAgent(key string, agents []string) string {
	msg := "field agent_key: no agent of this stack has the key asked for (a key is 1 to 64 lowercase letters, digits or '_', starting with a letter)"
	if catalog.IsAgentKey(key) {
		msg = "field agent_key: no agent of this stack has the key " + strconv.Quote(key)
	}
	if len(agents) == 0 {
		return msg + "; this stack has no agents"
	}
	return msg + "; this stack's agents (AGENTS): " + strings.Join(agents, ", ")
}

// Resume builds the POST /v1/runs/{run_id}/resume handler.
func Resume(d Deps) (*handlers.Resume, error) {
	brain, err := NewBrain(d)
	if err != nil {
		return nil, err
	}
	return &handlers.Resume{Brain: brain, Queue: d.Queue, HTTP: d.http(), Resp: d.responder(config.Resume)}, nil
}

// Worker builds the worker queue's handler.
func Worker(d Deps) (*handlers.Worker, error) {
	brain, err := NewBrain(d)
	if err != nil {
		return nil, err
	}
	return &handlers.Worker{Brain: brain, Logger: d.Logger, Queue: d.Queue}, nil
}

// Sweeper builds the scheduled sweeper.
func Sweeper(d Deps) (*handlers.Sweeper, error) {
	brain, err := NewBrain(d)
	if err != nil {
		return nil, err
	}
	return &handlers.Sweeper{Brain: brain, Index: d.Store, Budgets: d.Store, Queue: d.Queue, Logger: d.Logger, Now: d.Now,
		Evidence: d.evidence(true), Notify: d.notifier(), Expiring: d.Store,
		Retention: d.Store, Shred: d.shredder(), Reduce: StreamReduce(d)}, nil
}

// shredder destroys runs' content by their keys (the sweeper's retention
// pass, approve's destruction on instruction); it opens none.
func (d Deps) shredder() *agent.Shredder {
	return &agent.Shredder{Store: d.Store, Heads: d.verifier(), Now: d.Now, Day: d.Config.RetentionDay}
}

// Approve builds counsel's decision handler. Its brain (no model) decides
// counsel's edits: the tools' schemas and the risk policy.
func Approve(d Deps) (*handlers.Approve, error) {
	brain, err := NewBrain(d)
	if err != nil {
		return nil, err
	}
	return &handlers.Approve{Decider: agent.Decider{Store: d.Store, Heads: d.verifier(), Now: d.Now, Edits: brain, Keys: d.DataKeys},
		Reconciler: agent.Reconciler{Store: d.Store, Heads: d.verifier(), Now: d.Now, Keys: d.DataKeys}, Matters: d.Store, Tools: brain,
		Holds: d.Store, Shred: d.shredder(), Settings: d.Store,
		HTTP: d.http(), Resp: d.responder(config.Approve)}, nil
}

// Runs builds the read-only routes' handler.
func Runs(d Deps) *handlers.Runs {
	return &handlers.Runs{Store: d.Store, Keys: d.verifier(), HTTP: d.http(), Resp: d.responder(config.Runs), DataKeys: d.DataKeys,
		FirmBudget: d.Config.DefaultFirmBudget(), Now: d.Now, Evidence: d.evidence(false), Matters: d.Store, Holds: d.Store,
		Desk: desk.OIDC(d.Config.DeskClientID, d.Config.DeskAuthorizeURL, d.Config.DeskTokenURL, d.Config.DeskScopes, d.Config.FirmClaim, d.Config.RolesClaim)}
}

// StreamReduce builds the ledger stream's reducer.
func StreamReduce(d Deps) *handlers.StreamReduce {
	return &handlers.StreamReduce{Store: d.Store, Keys: d.verifier(), Logger: d.Logger, Evidence: d.evidence(true), Notify: d.notifier()}
}

// Handler builds the handler of d.Config.Function, as the function lambda.Start
// takes.
func Handler(d Deps) (any, error) {
	switch d.Config.Function {
	case config.Invoke:
		h, err := Invoke(d)
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	case config.Resume:
		h, err := Resume(d)
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	case config.Worker:
		h, err := Worker(d)
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	case config.Sweeper:
		h, err := Sweeper(d)
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	case config.Approve:
		h, err := Approve(d)
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	case config.Runs:
		return Runs(d).Handle, nil
	case config.StreamReduce:
		return StreamReduce(d).Handle, nil
	}
	return nil, fmt.Errorf("wire: unknown function %q", d.Config.Function)
}

// Main is a function's main: Boot, then lambda.Start. A function Boot
// gives no handler (a configuration that does not load, of a function API
// Gateway does not call) exits, its failure envelope logged.
func Main(function string) {
	h, err := Boot(context.Background(), function, os.LookupEnv, os.Stdout, ConfigRetry)
	if err != nil {
		os.Exit(1)
	}
	lambda.Start(h)
}

// ConfigRetry is how often a function whose configuration did not load
// tries it again, on a request (Boot).
const ConfigRetry = time.Minute

// apiFunctions are the functions API Gateway calls.
var apiFunctions = []string{config.Invoke, config.Resume, config.Approve, config.Runs}

// APIHandler is the handler of a function API Gateway calls.
type APIHandler = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// Boot builds function's handler from its environment (Load, Handler), as
// Main starts it, and logs "ready". A configuration that does not load is
// logged as one config_invalid failure envelope naming the fault (for a
// document: which, the field, its line and column; never a value), and
// then:
//
//   - a function API Gateway calls (invoke, resume, approve, runs) gets a
//     handler that answers every request with that problem (500,
//     application/problem+json, kind config_invalid, the fault as its
//     detail), each answer's envelope logged, rather than letting API
//     Gateway answer a bare 500. On a request, at most once every retry, it
//     tries the configuration again (an SSM parameter put right is read
//     without waiting for a new container), and serves requests as usual
//     from the first that finds it loads;
//   - the others (the worker, stream-reduce, the sweeper) get the error:
//     Main exits, and Lambda starts them again, reading the configuration
//     again, on their next event.
func Boot(ctx context.Context, function string, lookup func(string) (string, bool), logOut io.Writer, retry time.Duration) (any, error) {
	build := func() (any, error) {
		d, err := Load(ctx, function, lookup, logOut)
		if err != nil {
			return nil, err
		}
		h, err := Handler(d)
		if err != nil {
			return nil, err
		}
		d.Logger.Info(ctx, "ready", "function", function, "table", d.Config.TableName, "model_id", d.Config.ModelID)
		return h, nil
	}
	h, err := build()
	if err == nil {
		return h, nil
	}
	// The function's logger may not exist yet (LOG_LEVEL is configuration
	// too): envelopes are logged at every level.
	logger := failure.NewLogger(logOut)
	logger.Log(ctx, failure.Build(err, failure.StageConfig, function, failure.Identity{}))
	if !slices.Contains(apiFunctions, function) {
		return nil, err
	}
	f := &configFault{err: err, retry: retry, tried: time.Now(), build: build,
		resp: httpapi.Responder{Logger: logger, Component: function}}
	return APIHandler(f.Handle), nil
}

// configFault answers the requests of a function whose configuration did
// not load (Boot).
type configFault struct {
	mu    sync.Mutex
	err   error
	tried time.Time
	retry time.Duration
	build func() (any, error)
	serve APIHandler // once the configuration loads
	resp  httpapi.Responder
}

func (f *configFault) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	f.mu.Lock()
	if f.serve == nil && time.Since(f.tried) >= f.retry {
		f.tried = time.Now()
		if h, err := f.build(); err != nil {
			f.err = err
		} else if serve, ok := h.(APIHandler); ok {
			f.serve = serve
		}
	}
	serve, err := f.serve, f.err
	f.mu.Unlock()
	if serve != nil {
		return serve(ctx, req)
	}
	return f.resp.Error(ctx, err, failure.StageConfig, failure.Identity{CorrelationID: httpapi.CorrelationID(req)}), nil
}

// notifier builds the notifications' publisher of a function that
// publishes them (nil otherwise).
func (d Deps) notifier() *handlers.Notifier {
	if d.Bus == nil {
		return nil
	}
	return &handlers.Notifier{Bus: d.Bus, Matters: d.Store, DeskURL: d.DeskURL}
}
