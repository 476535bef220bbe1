package agent_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/internal/wire"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/anchor"
	"github.com/seed-f6d3920e/warrant/pkg/bedrock"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/config"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"

	"github.com/seed-f6d3920e/warrant"
)

const testModel = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

// harness is one brain over minidyn and the fake Bedrock, with counters.
type harness struct {
	t      *testing.T
	ep     *dynamotest.Endpoint
	store  *dynamo.Store
	table  string
	fake   *bedrocktest.Server
	brain  *agent.Brain
	logs   *syncBuffer
	firm   string
	user   string
	matter string
	model  agent.Converser
	cfg    config.Config
	keys   *anchor.Keyring
	// dataKeys makes and opens the runs' data keys (DATA_KEY): the
	// harness's runs are sealed (schema 2) unless options.plain.
	dataKeys seal.Keyring
}

// harnessDataKey is the harness's DATA_KEY, a local master key.
var harnessDataKey = "aes:" + hex.EncodeToString([]byte("agent-harness-data-master-key-32"))

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

type options struct {
	stream bool
	// plain: no DATA_KEY, the runs' content in the clear (schema 1).
	plain bool
	env   map[string]string // the function's environment beyond TABLE_NAME and MODEL_ID
	now   func() time.Time  // the brain's clock (nil: time.Now)
	// policy is the brain's risk policy, as TOOL_POLICY would load it
	// (nil: the embedded one).
	policy *toolpolicy.Policy
}

// newHarness builds the brain; script gets the harness so rules can name its matter.
func newHarness(t *testing.T, script func(h *harness) bedrocktest.Script, opt options) *harness {
	t.Helper()
	h := &harness{t: t, firm: uuid.NewString(), user: uuid.NewString(), matter: uuid.NewString()}
	ep := dynamotest.Minidyn(t)
	table := dynamotest.NewTable(t, ep)
	key, err := anchor.NewHMAC([]byte("agent-harness-ledger-head-key-32b"))
	if err != nil {
		t.Fatal(err)
	}
	keys := anchor.NewKeyring(key)
	store := dynamo.New(ep.Client, table, dynamo.WithHeadSigner(keys))
	ep.Counter.Reset() // count the run's round trips, not the table's creation
	fake := bedrocktest.New(script(h))
	t.Cleanup(fake.Close)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}
	rt := bedrock.NewRuntime(context.Background(), cfg, fake.URL(), bedrock.WithMaxAttempts(3), bedrock.WithBackoff(bedrock.NoBackoff()))
	model := bedrock.New(rt, bedrock.Options{Stream: opt.stream})
	env := map[string]string{"TABLE_NAME": table, "MODEL_ID": testModel, "LEDGER_KEY": "hmac:" + hex.EncodeToString([]byte("agent-harness-ledger-head-key-32b")),
		"FIRM_MONTHLY_BUDGET_USD": "100.00",                                       // the template's default
		"QUEUE_URL":               "http://sqs.local/000000000000/warrant-worker"} // the worker hands over through it; unused here
	if !opt.plain {
		env["DATA_KEY"] = harnessDataKey
	}
	for k, v := range opt.env {
		env[k] = v
	}
	fnCfg, err := config.Load(config.Worker, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	dataKeys, err := wire.DataKeys(fnCfg.DataKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The brain the worker function builds (internal/wire), on the
	// policy given, else the one TOOL_POLICY names (a test's file:), else
	// the embedded one.
	policy := opt.policy
	if policy == nil && fnCfg.ToolPolicy != "" {
		if policy, err = wire.LoadPolicy(context.Background(), fnCfg.ToolPolicy, nil); err != nil {
			t.Fatal(err)
		}
	}
	brain, err := wire.NewBrain(wire.Deps{Config: fnCfg, Keys: keys, DataKeys: dataKeys, Store: store, Model: model, Logger: failure.NewLogger(logs),
		Now: opt.now, Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	h.ep, h.store, h.table, h.fake, h.brain, h.logs, h.model, h.cfg, h.keys = ep, store, table, fake, brain, logs, model, fnCfg, keys
	h.dataKeys = dataKeys
	return h
}

func demo(*harness) bedrocktest.Script { return bedrocktest.DemoScript() }

func (h *harness) start(text, capUSD string) agent.Result {
	h.t.Helper()
	return h.startRun(uuid.NewString(), text, capUSD)
}

// startRun is start with a run id chosen by the test.
func (h *harness) startRun(runID, text, capUSD string) agent.Result {
	h.t.Helper()
	if capUSD == "" {
		capUSD = "1.00"
	}
	inv := contracts.AgentInvoke{AgentKey: "matter_assistant", Mode: contracts.ModeInvoke,
		Meta:           contracts.InvokeMeta{RunID: runID, FirmID: h.firm, UserID: h.user, MatterID: h.matter},
		History:        []contracts.HistoryMessage{},
		CounselMessage: text}
	res, err := h.brain.Run(context.Background(), inv, agent.StartOptions{CostCapUSD: capUSD})
	if err != nil {
		h.t.Fatalf("run: %v", err)
	}
	return res
}

func (h *harness) decide(res agent.Result, decision warrant.Decision) {
	h.t.Helper()
	p := res.State.PendingApproval
	if p == nil {
		h.t.Fatalf("run is not held: %+v", res.State)
	}
	_, err := agent.Decider{Store: h.store, Heads: h.keys, Keys: h.dataKeys}.Decide(context.Background(), h.firm, res.State.RunID, p.ApprovalRequestID,
		warrant.CounselDecision{Decision: decision, PresentedHash: p.ToolInputHash, DecidedBy: uuid.NewString()})
	if err != nil {
		h.t.Fatalf("decide: %v", err)
	}
}

func (h *harness) resume(res agent.Result) (agent.Result, error) {
	return h.brain.Resume(context.Background(), agent.ResumeRequest{FirmID: h.firm, RunID: res.State.RunID,
		ApprovalID: res.State.PendingApproval.ApprovalRequestID, UserID: h.user})
}

func (h *harness) outbound(runID string) []warrant.Outbound {
	h.t.Helper()
	out, err := h.store.ListOutbound(context.Background(), h.firm, runID)
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

// runKey is the run's data key (nil for a run in the clear).
func (h *harness) runKey(runID string) *seal.RunKey {
	h.t.Helper()
	ctx := context.Background()
	run, err := h.store.GetRun(ctx, h.firm, runID)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(run.DataKey) == 0 {
		return nil
	}
	key, err := h.dataKeys.OpenRunKey(ctx, h.firm, runID, run.DataKey)
	if err != nil {
		h.t.Fatal(err)
	}
	return key
}

// ledger is the run's ledger as stored, its sealed lines opened with the
// run's data key.
func (h *harness) ledger(runID string) []contracts.Line {
	h.t.Helper()
	ctx := context.Background()
	items, _, err := h.store.ReadLedger(ctx, h.firm, runID, 0, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	var key *seal.RunKey
	var lines []contracts.Line
	for _, it := range items {
		l, err := contracts.ParseEventLine(it.Raw)
		if err != nil {
			h.t.Fatal(err)
		}
		if l.Sealed {
			if key == nil {
				key = h.runKey(runID)
			}
			if l, err = contracts.OpenLine(l, key); err != nil {
				h.t.Fatal(err)
			}
		}
		lines = append(lines, l)
	}
	return lines
}

// completions returns the tool.completed events of a run, in order.
func (h *harness) completions(runID string) []*contracts.ToolCompleted {
	var out []*contracts.ToolCompleted
	for _, l := range h.ledger(runID) {
		if tc, ok := l.Event.(*contracts.ToolCompleted); ok {
			out = append(out, tc)
		}
	}
	return out
}

// report logs the per-scenario counts (read before the test's own queries).
func (h *harness) report(name, runID string) {
	calls, trips := h.fake.Calls(), h.ep.Counter.Count()
	effects := len(h.outbound(runID))
	if effects > 1 {
		h.t.Errorf("%s: %d effects for one warrant", name, effects)
	}
	h.t.Logf("SCENARIO %-34s model_calls=%d dynamodb_round_trips=%d effects=%d", name, calls, trips, effects)
}

func toolUse(name string, input map[string]any) bedrocktest.ToolUse {
	raw, _ := json.Marshal(input)
	return bedrocktest.ToolUse{Name: name, Input: raw}
}

func (h *harness) filing(title string) map[string]any {
	return map[string]any{"matter_id": h.matter, "court": "Superior Court of California, County of San Francisco",
		"document_title": title, "document_text": "Plaintiff moves to compel."}
}

func statusOf(tcs []*contracts.ToolCompleted) []string {
	var s []string
	for _, tc := range tcs {
		s = append(s, tc.ToolName+":"+tc.Status)
	}
	return s
}

func lastRequestHasToolResult(req bedrocktest.Request, status, contains string) bool {
	if len(req.Messages) == 0 {
		return false
	}
	for _, b := range req.Messages[len(req.Messages)-1].Blocks {
		if b.ToolResult != nil && b.ToolResult.Status == status && strings.Contains(strings.Join(b.ToolResult.Texts, " "), contains) {
			return true
		}
	}
	return false
}

// brainWith is the harness's brain (the worker's wiring) on another model.
func (h *harness) brainWith(model agent.Converser) *agent.Brain {
	h.t.Helper()
	brain, err := wire.NewBrain(wire.Deps{Config: h.cfg, Keys: h.keys, DataKeys: h.dataKeys, Store: h.store, Model: model, Logger: failure.NewLogger(h.logs)})
	if err != nil {
		h.t.Fatal(err)
	}
	return brain
}

// invoke is the command that starts runID with the user's text.
func (h *harness) invoke(runID, text string) contracts.AgentInvoke {
	return contracts.AgentInvoke{AgentKey: "matter_assistant", Mode: contracts.ModeInvoke,
		Meta:    contracts.InvokeMeta{RunID: runID, FirmID: h.firm, UserID: h.user, MatterID: h.matter},
		History: []contracts.HistoryMessage{}, CounselMessage: text}
}

func newID() string { return uuid.NewString() }

// expireLease makes the run's lease have passed an hour ago (the store
// keeps real time here).
func (h *harness) expireLease(runID string) {
	h.t.Helper()
	past := time.Now().Add(-time.Hour).UTC().Format("2006-01-02T15:04:05.000000000Z")
	dynamotest.Update(h.t, h.ep.Client, h.table, dynamo.RunKey(h.firm, runID), "RUN", "SET lease_until = :past",
		nil, map[string]any{":past": past})
}

// reference is the embedded catalog's tools (the reference set) run in
// process over the harness's store.
func (h *harness) reference() []agent.Tool {
	h.t.Helper()
	set, err := agent.ReferenceTools(h.store, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return set
}
