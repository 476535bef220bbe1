package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/pkg/anchor"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"

	"github.com/seed-f6d3920e/warrant"
)

// The conformance suite: every case runs against every endpoint in
// dynamotest.All (minidyn always; moto when installed, required in CI;
// DYNAMODB_ENDPOINT when set). Each case gets its own table. Cases run one
// after another on an endpoint so that round-trip counts are exact.
//
// Where an endpoint is lenient the case says so; fidelity cases (what
// minidyn is lenient about) run where the endpoint has the behavior, and
// on lenient endpoints check that the leniency is still there, so the
// Lenient lists in dynamotest stay true.
var suite = []struct {
	name string
	fn   func(t *testing.T, ep *dynamotest.Endpoint)
}{
	{"CreateAndGetRun", testCreateAndGetRun},
	{"AppendAndReadLedger", testAppendAndReadLedger},
	{"AppendSeqTaken", testAppendSeqTaken},
	{"AppendManyChunks", testAppendManyChunks},
	{"MatterSteps", testMatterSteps},
	{"RejectsForeignLines", testRejectsForeignLines},
	{"FinishRun", testFinishRun},
	{"UpdateProjection", testUpdateProjection},
	{"WarrantApprovedLifecycle", testWarrantApprovedLifecycle},
	{"WarrantDeniedResumeOnce", testWarrantDeniedResumeOnce},
	{"WarrantRefusals", testWarrantRefusals},
	{"WarrantEdited", testWarrantEdited},
	{"WarrantEditedBig", testWarrantEditedBig},
	{"WarrantDecisionTooLarge", testWarrantDecisionTooLarge},
	{"WarrantExpiry", testWarrantExpiry},
	{"ResumeConditionMapping", testResumeConditionMapping},
	{"ListPendingWarrants", testListPendingWarrants},
	{"PendingWarrantsPaged", testPendingWarrantsPaged},
	{"ClaimOnceAndComplete", testClaimOnceAndComplete},
	{"ClaimOwnNeedsItsRef", testClaimOwnNeedsItsRef},
	{"ClaimLease", testClaimLease},
	{"EffectAttempts", testEffectAttempts},
	{"FirmSettings", testFirmSettings},
	{"Matters", testMatters},
	{"LedgerHead", testLedgerHead},
	{"Outbound", testOutbound},
	{"RepeatsAreIdempotent", testRepeatsAreIdempotent},
	{"FirmScoping", testFirmScoping},
	{"LeaseOnWrites", testLeaseOnWrites},
	{"AcquireRun", testAcquireRun},
	{"TakeClaim", testTakeClaim},
	{"RaceTakeClaim16", testRaceTakeClaim},
	{"ExpiredLeases", testExpiredLeases},
	{"ExpiredLeasesShareTheLimit", testExpiredLeasesShareTheLimit},
	{"CheckpointTimestamps", testCheckpointTimestamps},
	{"RestartRun", testRestartRun},
	{"SweepFailLeaseExpired", testSweepFailLeaseExpired},
	{"SweepFailOwner", testSweepFailOwner},
	{"SweepFailExpireApproval", testSweepFailExpireApproval},
	{"SweepFailShapes", testSweepFailShapes},
	{"ReconcileEffect", testReconcileEffect},
	{"Holds", testHolds},
	{"DestroyContent", testDestroyContent},
	{"DestroyUnderHold", testDestroyUnderHold},
	{"DestroyCrash", testDestroyCrash},
	{"RaceHoldDestroy8", testRaceHoldDestroy},
	{"RetentionIndex", testRetentionIndex},
	{"DestructionOrders", testDestructionOrders},
	{"RetentionSettings", testRetentionSettings},
	{"BudgetReserveSettle", testBudgetReserveSettle},
	{"BudgetRefusalWritesNothing", testBudgetRefusalWritesNothing},
	{"BudgetReleaseOnce", testBudgetReleaseOnce},
	{"BudgetLimitChange", testBudgetLimitChange},
	{"BudgetRace64", testBudgetRace64},
	{"BudgetRoundTrips", testBudgetRoundTrips},
	{"RaceClaim64", testRaceClaim},
	{"LimitRefusesClaim", testLimitRefusesClaim},
	{"LimitUnbounded", testLimitUnbounded},
	{"LimitCountersInvalid", testLimitCountersInvalid},
	{"RaceLimit", testRaceLimit},
	{"RaceUnbounded", testRaceUnbounded},
	{"RaceResume64", testRaceResume},
	{"RaceSeq16", testRaceSeq},
	{"RaceDecide8", testRaceDecide},
	{"RoundTrips", testRoundTrips},
	{"RoundTripsOfRetriedReads", testRoundTripsOfRetriedReads},
	{"FailureKinds", testFailureKinds},
	{"FidelityConsistentReadOnGSI", testFidelityConsistentReadOnGSI},
	{"FidelityPutAllOld", testFidelityPutAllOld},
	{"FidelityCancellationReasons", testFidelityCancellationReasons},
	{"FidelityTableStatusAndStream", testFidelityTableStatusAndStream},
	{"FidelityUpdateRemove", testFidelityUpdateRemove},
	{"FidelityItemSize", testFidelityItemSize},
}

func TestConformance(t *testing.T) {
	for _, ep := range dynamotest.All(t) {
		t.Run(ep.Name, func(t *testing.T) {
			for _, c := range suite {
				t.Run(c.name, func(t *testing.T) { c.fn(t, ep) })
			}
		})
	}
}

// Compile-time checks of the API the agent is written against.
var (
	_ func(context.Context, warrant.Run, contracts.Line) error                                                        = (*dynamo.Store)(nil).CreateRun
	_ func(context.Context, string, string, ...contracts.Line) error                                                  = (*dynamo.Store)(nil).AppendEvents
	_ func(context.Context, string, string, warrant.RunStatus, ...contracts.Line) error                               = (*dynamo.Store)(nil).FinishRun
	_ func(context.Context, string, string, int64, int) ([]warrant.LedgerItem, bool, error)                           = (*dynamo.Store)(nil).ReadLedger
	_ func(context.Context, warrant.Warrant, ...contracts.Line) error                                                 = (*dynamo.Store)(nil).CreateWarrantRequest
	_ func(context.Context, string, string, string, warrant.CounselDecision, contracts.Line) (warrant.Warrant, error) = (*dynamo.Store)(nil).DecideWarrant
	_ func(context.Context, string, string, string, string) (warrant.Warrant, error)                                  = (*dynamo.Store)(nil).GetReleaseAuthorizedRequest
	_ func(context.Context, warrant.ResumeClaim, contracts.Line) error                                                = (*dynamo.Store)(nil).ResumeClaim
	_ func(context.Context, warrant.ClaimInput, ...contracts.Line) (bool, *warrant.Claim, error)                      = (*dynamo.Store)(nil).ClaimToolEffectOnce
	_ func(context.Context, string, string, warrant.EffectKey, string, warrant.Completion, ...contracts.Line) error   = (*dynamo.Store)(nil).CompleteEffect
	_ func(context.Context, string, string, int64, warrant.Projection) error                                          = (*dynamo.Store)(nil).UpdateProjection
	_ func(context.Context, warrant.Outbound) (bool, error)                                                           = (*dynamo.Store)(nil).RecordOutbound
	_ func(time.Time) bool                                                                                            = warrant.Claim{}.OutcomeUnknown
	_ error                                                                                                           = (*dynamo.SeqTakenError)(nil)
	_ func(string) *dynamodb.CreateTableInput                                                                         = dynamo.TableDefinition
)

// clock is a settable clock for WithClock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is one case's table and store.
type env struct {
	t     *testing.T
	ep    *dynamotest.Endpoint
	table string
	clock *clock
	store *dynamo.Store
	ctx   context.Context
	ring  *anchor.Keyring // the key the store signs ledger heads with
}

func newEnv(t *testing.T, ep *dynamotest.Endpoint) *env {
	t.Helper()
	table := dynamotest.NewTable(t, ep)
	c := &clock{t: time.Now().UTC().Truncate(time.Millisecond)}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	key, err := anchor.NewHMAC([]byte("conformance-suite-ledger-head-key!"))
	if err != nil {
		t.Fatal(err)
	}
	ring := anchor.NewKeyring(key)
	return &env{t: t, ep: ep, table: table, clock: c, ctx: ctx, ring: ring,
		store: dynamo.New(ep.Client, table, dynamo.WithClock(c.Now), dynamo.WithHeadSigner(ring))}
}

// run is a run created in the store, with its ledger chain.
type run struct {
	firm, id, matter, user string
	chain                  *contracts.Chain
}

func id() string { return uuid.NewString() }

func (e *env) newRun(firm string) *run { e.t.Helper(); return e.newRunOf(firm, id()) }

// newRunOf starts a run of the firm's matter (sealed: it has a data key).
func (e *env) newRunOf(firm, matter string) *run {
	e.t.Helper()
	r := &run{firm: firm, id: id(), matter: matter, user: id()}
	r.chain = contracts.NewChain(r.id, r.firm)
	first := e.line(r, &contracts.RunStarted{
		AgentKey: "drafting", Mode: contracts.ModeInvoke, ModelID: "model-x", PromptVersion: "p1",
		SchemaVersion: contracts.SchemaVersion, CostCapUSD: "1.00", MaxTokens: 1024,
		MatterID: r.matter, UserID: r.user, History: []contracts.HistoryMessage{},
	})
	must(e.t, e.store.CreateRun(e.ctx, warrant.Run{
		FirmID: firm, RunID: r.id, MatterID: r.matter, UserID: r.user, AgentKey: "drafting",
		ModelID: "model-x", PromptVersion: "p1", CorrelationID: "corr-1", CostCapUSD: "1.00",
		DataKey: []byte("wrapped-data-key"),
	}, first))
	return r
}

// line appends ev to the run's chain (the caller stores it).
func (e *env) line(r *run, ev contracts.Event) contracts.Line {
	e.t.Helper()
	l, err := r.chain.Append(ev)
	if err != nil {
		e.t.Fatalf("encode line: %v", err)
	}
	return l
}

// next encodes ev as the next line without advancing (for racers).
func (e *env) next(r *run, ev contracts.Event) contracts.Line {
	e.t.Helper()
	l, err := r.chain.Next(ev)
	if err != nil {
		e.t.Fatalf("encode line: %v", err)
	}
	return l
}

func delta(text string) *contracts.TurnDelta { return &contracts.TurnDelta{Turn: 1, Text: text} }

// toolCall is one governed tool call's input.
type toolCall struct {
	name, useID string
	input       json.RawMessage
	hash        string
}

func newToolCall(t testing.TB, name string) toolCall {
	t.Helper()
	in := json.RawMessage(fmt.Sprintf(`{"court":"SF Superior","title":"Motion %s"}`, id()))
	h, err := contracts.InputHash(in)
	if err != nil {
		t.Fatal(err)
	}
	return toolCall{name: name, useID: "tu_" + id()[:8], input: in, hash: h}
}

func requested(tc toolCall, action string) *contracts.ToolRequested {
	return &contracts.ToolRequested{Turn: 1, ToolUseID: tc.useID, ToolName: tc.name, Input: tc.input,
		InputSHA256: tc.hash, RiskTier: "high", Action: action, Reason: "files with a court", MatchedPolicy: "court"}
}

func completed(tc toolCall, ref string) *contracts.ToolCompleted {
	return &contracts.ToolCompleted{ToolUseID: tc.useID, ToolName: tc.name, InputSHA256: tc.hash,
		Status: contracts.ToolSuccess, EffectRef: ref, Result: json.RawMessage(`{"filed":true}`)}
}

// held is a run held on a pending warrant.
type held struct {
	*run
	approval string
	tool     toolCall
	expires  time.Time
}

func (e *env) newHeld(firm string) *held {
	e.t.Helper()
	r := e.newRun(firm)
	h := &held{run: r, approval: id(), tool: newToolCall(e.t, "file_court_document"),
		expires: e.clock.Now().Add(warrant.DefaultWarrantTTL)}
	req := e.line(r, requested(h.tool, "require_approval"))
	blocked := e.line(r, &contracts.RunBlocked{Approval: contracts.BlockedApproval{
		ApprovalRequestID: h.approval, ToolUseID: h.tool.useID, ToolName: h.tool.name, ToolInput: h.tool.input, ToolInputHash: h.tool.hash,
		RiskTier: "high", Reason: "files with a court", HumanSummary: "File the motion",
		ExpiresAt: contracts.FormatTime(h.expires),
	}})
	must(e.t, e.store.CreateWarrantRequest(e.ctx, e.warrant(h), req, blocked))
	return h
}

func (e *env) warrant(h *held) warrant.Warrant {
	return warrant.Warrant{FirmID: h.firm, RunID: h.id, ApprovalID: h.approval, MatterID: h.matter,
		ToolName: h.tool.name, ToolUseID: h.tool.useID, ToolInputHash: h.tool.hash, Input: h.tool.input,
		RiskTier: "high", Reason: "files with a court", HumanSummary: "File the motion", RequestedBy: h.user}
}

func (e *env) decide(h *held, decision warrant.Decision) (warrant.Warrant, error) {
	e.t.Helper()
	l := e.next(h.run, &contracts.ApprovalDecided{ApprovalRequestID: h.approval, Decision: decision,
		DecidedBy: "counsel-1", ToolInputHash: h.tool.hash, Note: "ok"})
	w, err := e.store.DecideWarrant(e.ctx, h.firm, h.id, h.approval,
		warrant.CounselDecision{Decision: decision, PresentedHash: h.tool.hash, DecidedBy: "counsel-1", Note: "ok"}, l)
	if err == nil {
		h.chain.Advance(l)
	}
	return w, err
}

// resume builds a ResumeClaim and its released line (not advanced).
func (e *env) resume(h *held, decision warrant.Decision) (warrant.ResumeClaim, contracts.Line) {
	e.t.Helper()
	c := warrant.ResumeClaim{FirmID: h.firm, RunID: h.id, ApprovalID: h.approval, Decision: decision,
		ToolName: h.tool.name, InputSHA256: h.tool.hash, PickupBy: e.clock.Now().Add(time.Minute)}
	if decision == warrant.DecisionApproved {
		c.EffectRef = id()
	}
	l := e.next(h.run, &contracts.RunReleased{ApprovalRequestID: h.approval, Decision: decision, EffectRef: c.EffectRef})
	return c, l
}

// take makes a new worker the run's lease holder and the executor of the
// claim c reserved, and returns its owner id.
func (e *env) take(c warrant.ResumeClaim) string {
	e.t.Helper()
	owner := "lambda-" + id()[:8]
	k := warrant.EffectKey{ToolName: c.ToolName, InputSHA256: c.InputSHA256, Attempt: c.Attempt}
	_, err := e.store.AcquireRun(e.ctx, c.FirmID, c.RunID, owner, e.clock.Now().Add(time.Minute))
	must(e.t, err)
	must(e.t, e.store.TakeClaim(e.ctx, c.FirmID, c.RunID, k, owner, e.clock.Now().Add(time.Minute)))
	return owner
}

// partition is a run partition's items as plain values, for comparing.
func (e *env) partition(firm, runID string) []map[string]any {
	e.t.Helper()
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(e.table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": dynamo.AttrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "FIRM#" + firm + "#RUN#" + runID}},
		ConsistentRead:            aws.Bool(true),
	}
	var out []map[string]any
	for {
		page, err := e.ep.Client.Query(e.ctx, in)
		if err != nil {
			e.t.Fatalf("query partition: %v", err)
		}
		var items []map[string]any
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, items...)
		if len(page.LastEvaluatedKey) == 0 {
			return out
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

func (e *env) unchanged(before []map[string]any, firm, runID, what string) {
	e.t.Helper()
	if after := e.partition(firm, runID); !reflect.DeepEqual(before, after) {
		e.t.Errorf("%s changed the partition:\nbefore %v\nafter  %v", what, before, after)
	}
}

func (e *env) ledger(r *run) []warrant.LedgerItem {
	e.t.Helper()
	items, more, err := e.store.ReadLedger(e.ctx, r.firm, r.id, 0, 0)
	must(e.t, err)
	if more {
		e.t.Fatal("ReadLedger(limit 0) said more")
	}
	return items
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t testing.TB, err, want error, what string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: got %v, want %v", what, err, want)
	}
}
