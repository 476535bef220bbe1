package handlers_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/seed-f6d3920e/warrant/internal/awscalls"
	"github.com/seed-f6d3920e/warrant/internal/wire"
	"github.com/seed-f6d3920e/warrant/pkg/anchor"
	"github.com/seed-f6d3920e/warrant/pkg/bedrock"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/config"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/eventbus"
	"github.com/seed-f6d3920e/warrant/pkg/eventbus/eventbustest"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// The fixed ids of the events/ fixtures.
const (
	fixFirm     = "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b"
	fixUser     = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
	fixCounsel  = "c0c0c0c0-1111-4222-8333-444455556666"
	fixMatter   = "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"
	fixRun      = "5b0c6a2e-7d4f-4c8e-9a51-0b8f2f3c1d01"
	fixApproval = "7e6d5c4b-3a29-4187-9f6e-5d4c3b2a1908"
	// fixEffectRef is events/reconcile-effect.json's effect.
	fixEffectRef = "8d7c6b5a-4e3f-4a2b-9c1d-0e9f8a7b6c5d"

	otherFirm = "e1e2e3e4-f5f6-4a7b-8c9d-0a1b2c3d4e5f"

	testModel = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
)

// testLedgerKey is the stack's local ledger key (LEDGER_KEY).
const testLedgerKey = "hmac:5d41402abc4b2a76b9719d911017c592ae2e7a1c5f2b4b5a6c7d8e9f0a1b2c3d"

// testReceiptKey signs the stack's receipts and checkpoints (a local P-256
// key, as the local stack's); otherReceiptKey is a key nobody trusts.
const (
	testReceiptKey  = "p256:308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b02010104200d0e4dfd2fd29a903e04ad4aaf4b09cf4f341a495760f785a1a36b331f79e6c1a144034200040a0d7f5199191b9c03f5e99dcb8423f3444b077206c81f6e878be8c25c504ac079170d8f3522366b88b2d789cce66044570f7a8f1cef463b2ac7731b56135950"
	otherReceiptKey = "p256:308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b020101042054122af9b95c2d5aac34ae0f36abfc44759ed685de0c3f071477bdda00f5a371a14403420004663fc239e270916492b7e7dd1c0e5dd9fdd33e0126c3c89dc27381988e4010724ad1597c138b77cd77053af6e186059f48f5f3890f67f514f8a2659262bb22c7"
)

// eventsDir is the repository's events/ folder, which both `sam local
// invoke` and these tests read.
var eventsDir = filepath.Join("..", "..", "events")

// clock is a movable clock shared by the store, the brain and Approve.
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
func (s *syncBuffer) Reset()         { s.mu.Lock(); defer s.mu.Unlock(); s.b.Reset() }

// stack is the five handlers over one minidyn table and the fake Bedrock,
// wired as functions/<name>/main.go wires them, with a movable clock.
// runKey is a run's data key (nil: a run in the clear).
func (s *stack) runKey(t *testing.T, runID string) *seal.RunKey {
	t.Helper()
	run, err := s.store.GetRun(t.Context(), fixFirm, runID)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.DataKey) == 0 {
		return nil
	}
	k, err := s.dataKeys.OpenRunKey(t.Context(), fixFirm, runID, run.DataKey)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// stackDataKey is the test stack's DATA_KEY, a local master key.
var stackDataKey = "aes:" + hex.EncodeToString([]byte("handlers-stack-data-master-key32"))

type stack struct {
	// dataKeys makes and opens the runs' data keys (DATA_KEY).
	dataKeys seal.Keyring
	t        *testing.T
	ep       *dynamotest.Endpoint
	client   *dynamodb.Client
	table    string
	store    *dynamo.Store
	fake     *bedrocktest.Server
	clock    *clock
	logs     *syncBuffer
	cfg      config.Config // invoke's
	// runsCfg is the runs function's (it also reads the firm budget).
	runsCfg config.Config

	invoke  *handlers.Invoke
	approve *handlers.Approve
	resume  *handlers.Resume
	runs    *handlers.Runs
	reduce  *handlers.StreamReduce
	worker  *handlers.Worker
	sweeper *handlers.Sweeper
	queue   *memQueue
	// bus is the fake EventBridge the notifications go to.
	bus *eventbustest.Server
	// keys signs the ledger heads the store moves.
	keys *anchor.Keyring
}

// memQueue is the worker queue of the handler tests: it keeps what the
// handlers send, and drain delivers it to the worker handler as SQS events
// (through aws-lambda-go's JSON path, as the Lambda runtime does).
type memQueue struct {
	mu   sync.Mutex
	msgs []contracts.WorkerMessage
	sent int
	// refuse, when set, is the error every Enqueue returns (a queue outage).
	refuse error
}

func (q *memQueue) Enqueue(_ context.Context, m contracts.WorkerMessage) error {
	if err := m.Validate(); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.refuse != nil {
		return q.refuse
	}
	q.msgs = append(q.msgs, m)
	q.sent++
	return nil
}

func (q *memQueue) take() []contracts.WorkerMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.msgs
	q.msgs = nil
	return out
}

// work hands one message to the worker handler, as one SQS record, and
// returns the batch item failures it reported.
func (s *stack) work(m contracts.WorkerMessage, receiveCount int) []events.SQSBatchItemFailure {
	s.t.Helper()
	body, _ := json.Marshal(m)
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "msg-" + m.RunID + "-" + m.Reason, Body: string(body),
		EventSource: "aws:sqs", Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(receiveCount)}}}}
	payload, _ := json.Marshal(ev)
	out, err := lambda.NewHandler(s.worker.Handle).Invoke(context.Background(), payload)
	if err != nil {
		s.t.Fatalf("worker: %v", err)
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		s.t.Fatalf("worker response: %v: %s", err, out)
	}
	return resp.BatchItemFailures
}

// drain delivers every queued message to the worker until the queue is
// empty; a message the worker reports failed is a test failure.
func (s *stack) drain() {
	s.t.Helper()
	for {
		msgs := s.queue.take()
		if len(msgs) == 0 {
			return
		}
		for _, m := range msgs {
			if f := s.work(m, 1); len(f) > 0 {
				s.t.Fatalf("worker reported %v for %+v", f, m)
			}
		}
	}
}

func envLookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

type stackOptions struct {
	// plain: no DATA_KEY, the runs' content in the clear (a deployment
	// that does not seal; the default stack seals, issue 26).
	plain  bool
	newID  func() string // the invoke handler's run id source
	env    map[string]string
	script *bedrocktest.Script // the model; nil: bedrocktest.DemoScript
	// endpoint is the DynamoDB endpoint (nil: a new minidyn).
	endpoint *dynamotest.Endpoint
	// resumePolicy is the resume function's risk policy (nil: the one the
	// others run), as after a deployment changed it.
	resumePolicy *toolpolicy.Policy
	// system, when set, serves the reference tools from the firm's kind of
	// system (catalog.TargetMCP: pkg/tools/mcpserver; catalog.TargetHTTPS:
	// pkg/tools/httpserver; on loopback, writing their effects with a
	// client of their own) that the functions reach through the catalog and
	// its target, as a firm's tools; wrap, when set, wraps the server's
	// handler. "": the builtins, in process.
	system string
	wrap   func(http.Handler) http.Handler
	// signs, when set, counts what the stack asks its keys to sign: ledger
	// heads (an HMAC: kms:GenerateMac on AWS) and receipts and checkpoints
	// (ECDSA: kms:Sign).
	signs *signCounts
	// calls, when set, gives each function its own clients (DynamoDB, the
	// model, EventBridge), as each function has its own aws.Config in
	// internal/wire, each recording under the function's template name
	// (Invoke, Approve, ...). The test's own reads (s.store, s.client)
	// record nothing.
	calls *awscalls.Recorder
	// aws, with calls, is the ledger and data keys (KMS), the checkpoint
	// bucket (S3) and the worker queue (SQS, as well as memQueue) on
	// moto_server, so those calls go through the SDK and are recorded too.
	aws *motoAWS
}

// signCounts counts signing requests, as KMS would receive them.
type signCounts struct{ heads, receipts atomic.Int64 }

type countingHeads struct {
	dynamo.HeadSigner
	n *atomic.Int64
}

func (c countingHeads) SignHead(ctx context.Context, firm, run string, seq int64, hash string) (string, string, error) {
	c.n.Add(1)
	return c.HeadSigner.SignHead(ctx, firm, run, seq, hash)
}

type countingSigner struct {
	evidence.Signer
	n *atomic.Int64
}

func (c countingSigner) SignDigest(ctx context.Context, d []byte) ([]byte, error) {
	c.n.Add(1)
	return c.Signer.SignDigest(ctx, d)
}

func newStack(t *testing.T, opt stackOptions) *stack {
	t.Helper()
	ctx := context.Background()
	ep := opt.endpoint
	if ep == nil {
		ep = dynamotest.Minidyn(t)
	}
	table := dynamotest.NewTable(t, ep)
	env := map[string]string{"TABLE_NAME": table, "MODEL_ID": testModel, "LEDGER_KEY": testLedgerKey, "RECEIPT_KEY": testReceiptKey,
		"EVENT_BUS_NAME": "warrant-test-notifications", "DESK_URL": "https://desk.warrant.example/desk",
		"QUEUE_URL":               "http://sqs.local/000000000000/warrant-worker", // the stack's queue is memQueue
		"FIRM_MONTHLY_BUDGET_USD": "100.00",                                       // the template's default
		"CHECKPOINT_DIR":          t.TempDir()}                                    // the checkpoint bucket's stand-in
	for k, v := range opt.env {
		env[k] = v
	}
	cfg, err := config.Load(config.Invoke, envLookup(env))
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	// The worker and runs read what invoke does not (the firm budget).
	workerCfg, err := config.Load(config.Worker, envLookup(env))
	if err != nil {
		t.Fatalf("config.Load(worker): %v", err)
	}
	runsCfg, err := config.Load(config.Runs, envLookup(env))
	if err != nil {
		t.Fatalf("config.Load(runs): %v", err)
	}
	clk := &clock{}
	key, err := anchor.Parse(cfg.LedgerKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := anchor.NewKeyring(key)
	var heads dynamo.HeadSigner = keys
	if opt.signs != nil {
		heads = countingHeads{keys, &opt.signs.heads}
	}
	storeOpts := []dynamo.Option{dynamo.WithClock(clk.Now)}
	if env["TIMESTAMP_AUTHORITY_URL"] != "" || env["WITNESSES"] != "" { // as wire.Load makes the sweeper's
		storeOpts = append(storeOpts, dynamo.WithAttestations())
	}
	store := dynamo.New(ep.Client, cfg.TableName, append(storeOpts, dynamo.WithHeadSigner(heads))...)
	script := bedrocktest.DemoScript()
	if opt.script != nil {
		script = *opt.script
	}
	fake := bedrocktest.New(script)
	t.Cleanup(fake.Close)
	awsCfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}
	rt := bedrock.NewRuntime(ctx, awsCfg, fake.URL(), bedrock.WithMaxAttempts(2), bedrock.WithBackoff(bedrock.NoBackoff()))
	model := bedrock.New(rt, bedrock.Options{Stream: cfg.Streaming, DefaultMaxTokens: cfg.MaxTokens})
	logs := &syncBuffer{}
	// Wired as functions/<name>/main.go wire them (internal/wire), with
	// this stack's store, fake model, clock and run ids.
	queue := &memQueue{}
	sweepCfg, err := config.Load(config.Sweeper, envLookup(env))
	if err != nil {
		t.Fatalf("config.Load(sweeper): %v", err)
	}
	// The receipt keys, as stream-reduce, the sweeper and runs load them.
	evk, err := wire.LoadEvidenceKeys(ctx, sweepCfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if opt.signs != nil {
		evk.Signer = countingSigner{evk.Signer, &opt.signs.receipts}
	}
	// The notifications go to a fake EventBridge, through the real client.
	bus := eventbustest.New()
	t.Cleanup(bus.Close)
	ebClient := eventbridge.New(eventbridge.Options{Region: "us-east-1", BaseEndpoint: aws.String(bus.URL()),
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")})
	// Runs sealed under a local data key, as on the local stack (issue 26).
	var dataKeys seal.Keyring
	if !opt.plain {
		if dataKeys, err = wire.DataKeys(stackDataKey, nil); err != nil {
			t.Fatal(err)
		}
	}
	d := wire.Deps{Config: cfg, Keys: keys, DataKeys: dataKeys, Store: store, Model: model, Queue: queue, Logger: failure.NewLogger(logs), Now: clk.Now, NewRunID: opt.newID,
		Evidence: evk, Bus: eventbus.New(ebClient, "warrant-test-notifications"), DeskURL: "https://desk.warrant.example/desk"}
	if opt.system != "" {
		d.Catalog, d.Targets = referenceServer(t, ep, table, clk.Now, opt.system, opt.wrap)
	}
	// own is d with function's own clients, when the stack records calls.
	own := func(function string, d wire.Deps) wire.Deps {
		if opt.calls == nil {
			return d
		}
		rec := opt.calls.APIOption(function)
		signer := heads
		if m := opt.aws; m != nil {
			d = m.own(t, d, rec)
			signer = d.Keys
		}
		client := dynamodb.New(ep.Client.Options(), func(o *dynamodb.Options) { o.APIOptions = append(slices.Clone(o.APIOptions), rec) })
		d.Store = dynamo.New(client, cfg.TableName, append(storeOpts, dynamo.WithHeadSigner(signer))...)
		fnCfg := awsCfg.Copy()
		fnCfg.APIOptions = append(fnCfg.APIOptions, rec)
		d.Model = bedrock.New(bedrock.NewRuntime(ctx, fnCfg, fake.URL(), bedrock.WithMaxAttempts(2), bedrock.WithBackoff(bedrock.NoBackoff())),
			bedrock.Options{Stream: cfg.Streaming, DefaultMaxTokens: cfg.MaxTokens})
		d.Bus = eventbus.New(eventbridge.New(ebClient.Options(), func(o *eventbridge.Options) { o.APIOptions = append(slices.Clone(o.APIOptions), rec) }),
			"warrant-test-notifications")
		return d
	}
	invoke, err := wire.Invoke(own("Invoke", d))
	if err != nil {
		t.Fatal(err)
	}
	rd := d
	if opt.resumePolicy != nil {
		rd.Policy = opt.resumePolicy
	}
	resume, err := wire.Resume(own("Resume", rd))
	if err != nil {
		t.Fatal(err)
	}
	dw := d
	dw.Config = workerCfg
	worker, err := wire.Worker(own("Worker", dw))
	if err != nil {
		t.Fatal(err)
	}
	ds := d
	ds.Config = sweepCfg // its own variables (RETENTION_DAY)
	sweeper, err := wire.Sweeper(own("Sweeper", ds))
	if err != nil {
		t.Fatal(err)
	}
	approve, err := wire.Approve(own("Approve", d))
	if err != nil {
		t.Fatal(err)
	}
	dr := d
	dr.Config = runsCfg
	runs := wire.Runs(own("Runs", dr))
	runs.Poll = 10 * time.Millisecond
	s := &stack{t: t, keys: keys, dataKeys: dataKeys, ep: ep, client: ep.Client, table: table, store: store, fake: fake, clock: clk, logs: logs, cfg: cfg, runsCfg: runsCfg,
		invoke: invoke, approve: approve, resume: resume, runs: runs, reduce: wire.StreamReduce(own("StreamReduce", d)),
		worker: worker, sweeper: sweeper, queue: queue, bus: bus}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("failure log:\n%s", logs.String())
		}
	})
	return s
}

// handlerFor returns the Lambda handler (through aws-lambda-go's JSON path)
// of the function serving route.
func (s *stack) handlerFor(route string) lambda.Handler {
	switch {
	case route == "POST /v1/runs":
		return lambda.NewHandler(s.invoke.Handle)
	case strings.HasPrefix(route, "POST /v1/runs/{run_id}/approvals/"), route == handlers.ReconcileRoute, route == handlers.PutMatterRoute,
		route == handlers.ListToolsRoute, route == handlers.PutHoldRoute, route == handlers.DeleteHoldRoute, route == handlers.DestroyRoute,
		route == handlers.PutSettingsRoute:
		return lambda.NewHandler(s.approve.Handle)
	case route == "POST /v1/runs/{run_id}/resume":
		return lambda.NewHandler(s.resume.Handle)
	case strings.HasPrefix(route, "GET "):
		return lambda.NewHandler(s.runs.Handle)
	}
	s.t.Fatalf("no handler for route %q", route)
	return nil
}

// call is a client's request and what it sees once the run settled. For
// POST /v1/runs and .../resume it is post, then the worker drains the
// queue, then the client follows the 202's Location (GET, consistent): the
// answer is that GET's (200 with the run completed, failed or held). Every
// other request, and every problem answer, is post's.
func (s *stack) call(ev *event) events.APIGatewayV2HTTPResponse {
	s.t.Helper()
	resp := s.post(ev)
	route := ev.route()
	if resp.StatusCode != 202 || (route != "POST /v1/runs" && route != "POST /v1/runs/{run_id}/resume") {
		return resp
	}
	var v handlers.RunView
	if err := json.Unmarshal([]byte(resp.Body), &v); err != nil || v.Status != "running" {
		s.t.Fatalf("%s: a 202 that is not a running run: %v %s", route, err, resp.Body)
	}
	if loc := resp.Headers["Location"]; loc != "/v1/runs/"+v.RunID {
		s.t.Fatalf("%s: Location %q, want /v1/runs/%s", route, loc, v.RunID)
	}
	s.drain()
	get := fixture(s.t, "get-run.json").runPath(v.RunID, "").query(map[string]string{"consistent": "true"})
	get.obj("requestContext.authorizer.jwt")["claims"] = maps.Clone(ev.obj("requestContext.authorizer.jwt.claims"))
	get.set("headers.authorization", ev.obj("headers")["authorization"])
	if cid := resp.Headers[httpapi.CorrelationHeader]; cid != "" {
		get.set("headers.x-correlation-id", cid)
	}
	return s.post(get)
}

// sweep runs one sweeper pass (as the schedule invokes it) and returns
// its report.
func (s *stack) sweep() handlers.SweepReport {
	s.t.Helper()
	out, err := lambda.NewHandler(s.sweeper.Handle).Invoke(context.Background(), []byte(`{}`))
	if err != nil {
		s.t.Fatalf("sweeper: %v", err)
	}
	var rep handlers.SweepReport
	if err := json.Unmarshal(out, &rep); err != nil {
		s.t.Fatalf("sweeper report: %v: %s", err, out)
	}
	return rep
}

// view is the run's consistent view (GET /v1/runs/{run_id}?consistent=true
// as the fixture's user).
func (s *stack) view(runID string) handlers.RunView {
	s.t.Helper()
	resp := s.post(fixture(s.t, "get-run.json").runPath(runID, "").query(map[string]string{"consistent": "true"}))
	if resp.StatusCode != 200 {
		s.t.Fatalf("get run %s: %d %s", runID, resp.StatusCode, resp.Body)
	}
	return decode[handlers.RunView](s.t, resp)
}

// post invokes the handler of the event's route with the event's bytes, as
// the Lambda runtime does, and decodes the response.
func (s *stack) post(ev *event) events.APIGatewayV2HTTPResponse {
	s.t.Helper()
	payload := ev.bytes(s.t)
	out, err := s.handlerFor(ev.route()).Invoke(context.Background(), payload)
	if err != nil {
		s.t.Fatalf("%s: handler returned error: %v", ev.route(), err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		s.t.Fatalf("%s: response does not decode: %v\n%s", ev.route(), err, out)
	}
	answers.record(ev.route(), resp)
	return resp
}

// event is a fixture from events/ as generic JSON, edited in place.
type event struct {
	m   map[string]any
	raw []byte // set to send bytes verbatim instead of m
}

func loadFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(eventsDir, name))
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return b
}

func fixture(t *testing.T, name string) *event {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(loadFixture(t, name)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	return &event{m: m}
}

func (e *event) bytes(t *testing.T) []byte {
	if e.raw != nil {
		return e.raw
	}
	b, err := json.Marshal(e.m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (e *event) route() string { s, _ := e.m["routeKey"].(string); return s }

// obj walks to the object at a dotted path, creating objects on the way.
func (e *event) obj(path string) map[string]any {
	m := e.m
	if path == "" {
		return m
	}
	for _, k := range strings.Split(path, ".") {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	return m
}

// set sets a dotted path; a nil value deletes the member.
func (e *event) set(path string, v any) *event {
	parent, key := "", path
	if i := strings.LastIndex(path, "."); i >= 0 {
		parent, key = path[:i], path[i+1:]
	}
	o := e.obj(parent)
	if v == nil {
		delete(o, key)
	} else {
		o[key] = v
	}
	return e
}

func (e *event) body(b string) *event { return e.set("body", b) }

// claim sets a claim as the authorizer passes it and in the bearer
// token's payload, as one token would carry it.
func (e *event) claim(k, v string) *event {
	e.set("requestContext.authorizer.jwt.claims."+k, v)
	return e.tokenMember(k, v)
}

// roles gives the caller these roles: the token's roles claim is exactly
// this array, and the authorizer's claim is API Gateway's rendering of it
// ("[a b]"), which the handlers never read.
func (e *event) roles(rs ...string) *event {
	e.set("requestContext.authorizer.jwt.claims.roles", "["+strings.Join(rs, " ")+"]")
	return e.tokenMember("roles", rs)
}

// tokenMember sets (nil: removes) one member of the bearer token's payload.
func (e *event) tokenMember(k string, v any) *event {
	h, _ := e.obj("headers")["authorization"].(string)
	parts := strings.Split(strings.TrimPrefix(h, "Bearer "), ".")
	if len(parts) != 3 {
		panic("the event carries no bearer token: " + h)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		panic(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var payload map[string]any
	if err := dec.Decode(&payload); err != nil {
		panic(err)
	}
	if v == nil {
		delete(payload, k)
	} else {
		payload[k] = v
	}
	if b, err = json.Marshal(payload); err != nil {
		panic(err)
	}
	parts[1] = base64.RawURLEncoding.EncodeToString(b)
	return e.set("headers.authorization", "Bearer "+strings.Join(parts, "."))
}
func (e *event) pathParam(k, v string) *event {
	return e.set("pathParameters."+k, v)
}

// query replaces the query string (both renderings API Gateway sends).
func (e *event) query(kv map[string]string) *event {
	if len(kv) == 0 {
		e.set("queryStringParameters", nil)
		e.m["rawQueryString"] = ""
		return e
	}
	q := map[string]any{}
	var raw []string
	for k, v := range kv {
		q[k] = v
		raw = append(raw, k+"="+v)
	}
	e.m["queryStringParameters"] = q
	e.m["rawQueryString"] = strings.Join(raw, "&")
	return e
}

// bodyJSON sets the body to v's JSON.
func (e *event) bodyJSON(v any) *event {
	b, _ := json.Marshal(v)
	return e.body(string(b))
}

// runPath points the event's path parameters (and rawPath) at run and,
// for approve, approval.
func (e *event) runPath(run, approval string) *event {
	e.pathParam("run_id", run)
	path := "/v1/runs/" + run
	switch {
	case strings.Contains(e.route(), "/approvals/"):
		e.pathParam("approval_id", approval)
		path += "/approvals/" + approval
	case strings.HasSuffix(e.route(), "/resume"):
		path += "/resume"
	case strings.HasSuffix(e.route(), "/events"):
		path += "/events"
	}
	e.m["rawPath"] = path
	e.obj("requestContext.http")["path"] = path
	return e
}

// problem is an application/problem+json body.
type problem struct {
	Type          string `json:"type"`
	Title         string `json:"title"`
	Status        int    `json:"status"`
	Detail        string `json:"detail"`
	CorrelationID string `json:"correlation_id"`
	Kind          string `json:"kind"`
	FailureID     string `json:"failure_id"`
}

// leaks are texts a problem body must never hold: raw Go error text, SDK
// error text, credentials.
var leaks = []string{"json:", "encoding/", "strconv.", "runtime error", "panic", "goroutine", "dynamodb", "DynamoDB",
	"operation error", "api error", "SECRET", "AKID", "Bearer", "ConditionalCheckFailed", "minidyn", "127.0.0.1"}

func (s *stack) wantProblem(name string, resp events.APIGatewayV2HTTPResponse, status int) problem {
	s.t.Helper()
	if resp.StatusCode != status {
		s.t.Errorf("%s: status %d, want %d; body %s", name, resp.StatusCode, status, resp.Body)
	}
	if ct := resp.Headers["Content-Type"]; ct != "application/problem+json" {
		s.t.Errorf("%s: Content-Type %q, want application/problem+json", name, ct)
	}
	var p problem
	if err := json.Unmarshal([]byte(resp.Body), &p); err != nil {
		s.t.Errorf("%s: problem body does not decode: %v: %s", name, err, resp.Body)
		return p
	}
	if p.Type == "" || p.Title == "" || p.Detail == "" || p.CorrelationID == "" || p.Status != resp.StatusCode {
		s.t.Errorf("%s: incomplete problem %s", name, resp.Body)
	}
	if h := resp.Headers[httpapi.CorrelationHeader]; h != p.CorrelationID {
		s.t.Errorf("%s: X-Correlation-Id %q != correlation_id %q", name, h, p.CorrelationID)
	}
	for _, l := range leaks {
		if strings.Contains(resp.Body, l) {
			s.t.Errorf("%s: problem body leaks %q: %s", name, l, resp.Body)
		}
	}
	return p
}

// scan reads the whole table through the endpoint's client (the store never
// scans; the test does, to prove a rejected request wrote nothing).
func (s *stack) scan() map[string]map[string]types.AttributeValue {
	s.t.Helper()
	out := map[string]map[string]types.AttributeValue{}
	p := dynamodb.NewScanPaginator(s.client, &dynamodb.ScanInput{TableName: aws.String(s.table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			s.t.Fatalf("scan: %v", err)
		}
		for _, it := range page.Items {
			pk := it["PK"].(*types.AttributeValueMemberS).Value
			sk := it["SK"].(*types.AttributeValueMemberS).Value
			out[pk+"|"+sk] = it
		}
	}
	return out
}

func (s *stack) wantUnchanged(name string, before map[string]map[string]types.AttributeValue) {
	s.t.Helper()
	after := s.scan()
	if reflect.DeepEqual(before, after) {
		return
	}
	keys := slices.Sorted(maps.Keys(after))
	for _, k := range keys {
		if _, ok := before[k]; !ok {
			s.t.Errorf("%s: rejected request added item %s", name, k)
		} else if !reflect.DeepEqual(before[k], after[k]) {
			s.t.Errorf("%s: rejected request changed item %s", name, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if _, ok := after[k]; !ok {
			s.t.Errorf("%s: rejected request removed item %s", name, k)
		}
	}
}

// decode reads a JSON response body.
func decode[T any](t *testing.T, resp events.APIGatewayV2HTTPResponse) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(resp.Body), &v); err != nil {
		t.Fatalf("response body does not decode into %T: %v: %s", v, err, resp.Body)
	}
	return v
}

// editBody decodes the event's JSON body, lets fn change it and encodes it
// again, so a request keeps the fixture's shape and changes one member.
// A fixture body that is not a JSON object is a broken fixture: it panics.
func (e *event) editBody(fn func(m map[string]any)) *event {
	var m map[string]any
	if err := json.Unmarshal([]byte(e.m["body"].(string)), &m); err != nil {
		panic("fixture body is not a JSON object: " + err.Error())
	}
	fn(m)
	return e.bodyJSON(m)
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func lambdaHandler(h any) lambda.Handler { return lambda.NewHandler(h) }
