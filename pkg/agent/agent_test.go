package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"

	"github.com/seed-f6d3920e/warrant"
)

func TestRunCompletesWithLowTierTools(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "converse", true: "converse-stream"}[stream], func(t *testing.T) {
			h := newHarness(t, demo, options{stream: stream})
			res := h.start("Summarize the matter for me.", "")
			h.report("completes ("+map[bool]string{false: "converse", true: "stream"}[stream]+")", res.State.RunID)
			if res.State.Status != warrant.RunCompleted || res.State.FinalText != bedrocktest.DemoSummaryText {
				t.Fatalf("state = %+v", res.State)
			}
			if got := statusOf(h.completions(res.State.RunID)); !slices.Equal(got, []string{"get_matter_summary:success"}) {
				t.Fatalf("tools = %v", got)
			}
			if h.fake.Calls() != 2 || res.State.ModelCalls != 2 || res.State.Cost <= 0 {
				t.Fatalf("calls=%d state=%+v", h.fake.Calls(), res.State)
			}
			// The same reducer folds the stored ledger to the brain's state.
			folded, err := reducer.ReduceAgentRun(h.ledger(res.State.RunID))
			if err != nil || folded.Status != res.State.Status || folded.Cost != res.State.Cost || folded.LastSeq != res.State.LastSeq {
				t.Fatalf("folded %+v, brain %+v, err %v", folded, res.State, err)
			}
			deltas := 0
			for _, l := range h.ledger(res.State.RunID) {
				if l.Type == contracts.TypeTurnDelta {
					deltas++
				}
			}
			if stream != (deltas > 0) {
				t.Fatalf("stream=%v but %d turn.delta lines", stream, deltas)
			}
		})
	}
}

func TestHoldApproveResumeExecutesOnce(t *testing.T) {
	h := newHarness(t, demo, options{})
	res := h.start("Please file the motion to compel.", "")
	if res.State.Status != warrant.RunHeld || res.State.PendingApproval == nil {
		t.Fatalf("not held: %+v", res.State)
	}
	p := res.State.PendingApproval
	if p.ToolName != "file_court_document" || p.RiskTier != "high" ||
		p.Reason != "Irreversible external court filing that must not run without human approval." || p.HumanSummary == "" {
		t.Fatalf("warrant = %+v", p)
	}
	h.report("invoke until held", res.State.RunID)
	if n := len(h.outbound(res.State.RunID)); n != 0 {
		t.Fatalf("%d effects before approval", n)
	}
	h.ep.Counter.Reset()
	h.decide(res, warrant.DecisionApproved)
	h.report("counsel approves", res.State.RunID)
	h.ep.Counter.Reset()
	done, err := h.resume(res)
	if err != nil {
		t.Fatal(err)
	}
	h.report("resume executes once, completes", res.State.RunID)
	if done.State.Status != warrant.RunCompleted || done.State.FinalText != bedrocktest.DemoFiledText {
		t.Fatalf("after resume: %+v", done.State)
	}
	out := h.outbound(res.State.RunID)
	if len(out) != 1 || out[0].Kind != "court_filing" {
		t.Fatalf("effects = %+v", out)
	}
	tcs := h.completions(res.State.RunID)
	if got := statusOf(tcs); !slices.Equal(got, []string{"search_matter_documents:success", "file_court_document:success"}) {
		t.Fatalf("tools = %v", got)
	}
	if tcs[1].EffectRef != out[0].EffectRef {
		t.Fatalf("effect_ref %s not passed downstream (%s)", tcs[1].EffectRef, out[0].EffectRef)
	}
	// A replayed resume is a conflict and executes nothing.
	if _, err := h.resume(res); failureKind(err) != failure.KindConflict {
		t.Fatalf("replay: %v", err)
	}
	if n := len(h.outbound(res.State.RunID)); n != 1 {
		t.Fatalf("replay executed: %d effects", n)
	}
}

func TestConcurrentResumesExecuteOnce(t *testing.T) {
	h := newHarness(t, demo, options{})
	res := h.start("Please file the motion.", "")
	h.decide(res, warrant.DecisionApproved)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, conflicts := 0, 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := h.resume(res)
			mu.Lock()
			defer mu.Unlock()
			switch failureKind(err) {
			case "":
				ok++
			case failure.KindConflict:
				conflicts++
			default:
				t.Errorf("resume: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok != 1 || conflicts != 7 {
		t.Fatalf("ok=%d conflicts=%d", ok, conflicts)
	}
	h.report("8 concurrent resumes", res.State.RunID)
	if n := len(h.outbound(res.State.RunID)); n != 1 {
		t.Fatalf("%d effects", n)
	}
}

func TestDeclineTellsTheModel(t *testing.T) {
	h := newHarness(t, demo, options{})
	res := h.start("Please file the motion.", "")
	h.decide(res, warrant.DecisionDenied)
	done, err := h.resume(res)
	if err != nil {
		t.Fatal(err)
	}
	if done.State.Status != warrant.RunCompleted || done.State.FinalText != bedrocktest.DemoDeclinedText {
		t.Fatalf("state = %+v", done.State)
	}
	if n := len(h.outbound(res.State.RunID)); n != 0 {
		t.Fatalf("declined warrant executed: %d effects", n)
	}
	reqs := h.fake.Requests()
	if !lastRequestHasToolResult(reqs[len(reqs)-1], "error", agent.ReasonDeclinedByCounsel) {
		t.Fatal("the model was not told the call was declined by counsel")
	}
	if got := statusOf(h.completions(res.State.RunID)); got[len(got)-1] != "file_court_document:declined" {
		t.Fatalf("tools = %v", got)
	}
	h.report("decline + resume", res.State.RunID)
}

// deniedScript proposes one tool, then answers whatever it is told.
func deniedScript(use func(h *harness) bedrocktest.ToolUse) func(h *harness) bedrocktest.Script {
	return func(h *harness) bedrocktest.Script {
		return bedrocktest.Script{Rules: []bedrocktest.Rule{
			{Name: "after", When: bedrocktest.AfterToolResult(""), Reply: bedrocktest.Reply{Text: "Understood."}},
			{Name: "propose", When: bedrocktest.Always, Reply: bedrocktest.Reply{ToolUses: []bedrocktest.ToolUse{use(h)}}},
		}}
	}
}

func TestProhibitedAndUnlistedToolsNeverRun(t *testing.T) {
	cases := map[string]func(h *harness) bedrocktest.ToolUse{
		"prohibited": func(h *harness) bedrocktest.ToolUse {
			return toolUse("delete_matter_document", map[string]any{"matter_id": h.matter, "document_id": "DOC-001"})
		},
		"unlisted": func(h *harness) bedrocktest.ToolUse {
			return toolUse("wire_client_funds", map[string]any{"amount": 1000})
		},
	}
	for name, use := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, deniedScript(use), options{})
			res := h.start("Go ahead.", "")
			if res.State.Status != warrant.RunCompleted {
				t.Fatalf("state = %+v", res.State)
			}
			tcs := h.completions(res.State.RunID)
			if len(tcs) != 1 || tcs[0].Status != contracts.ToolDenied {
				t.Fatalf("tools = %v", statusOf(tcs))
			}
			h.report(name+" tool denied", res.State.RunID)
			if n := len(h.outbound(res.State.RunID)); n != 0 {
				t.Fatalf("%d effects", n)
			}
			reqs := h.fake.Requests()
			if !lastRequestHasToolResult(reqs[len(reqs)-1], "error", "denied by policy") {
				t.Fatal("the model was not told why")
			}
		})
	}
}

func TestInvalidInputIsNotExecuted(t *testing.T) {
	h := newHarness(t, deniedScript(func(h *harness) bedrocktest.ToolUse {
		return toolUse("draft_document", map[string]any{"matter_id": h.matter, "title": "x"}) // body missing
	}), options{})
	res := h.start("Draft it.", "")
	tcs := h.completions(res.State.RunID)
	if len(tcs) != 1 || tcs[0].Status != contracts.ToolError || len(h.outbound(res.State.RunID)) != 0 {
		t.Fatalf("tools = %v", statusOf(tcs))
	}
}

// One turn proposes search (low), the filing (high), an edited filing (high,
// different hash) and the summary (low).
func TestParallelCallsAndEditedInputAfterResume(t *testing.T) {
	h := newHarness(t, func(h *harness) bedrocktest.Script {
		return bedrocktest.Script{Rules: []bedrocktest.Rule{
			{Name: "done", When: bedrocktest.AfterToolResult(""), Reply: bedrocktest.Reply{Text: "All done."}},
			{Name: "turn", When: bedrocktest.Always, Reply: bedrocktest.Reply{ToolUses: []bedrocktest.ToolUse{
				toolUse("search_matter_documents", map[string]any{"matter_id": h.matter, "query": "motion"}),
				toolUse("file_court_document", h.filing("Motion to Compel")),
				toolUse("file_court_document", h.filing("Motion to Compel (edited)")),
				toolUse("get_matter_summary", map[string]any{"matter_id": h.matter}),
			}}},
		}}
	}, options{})
	res := h.start("Do everything.", "")
	if res.State.Status != warrant.RunHeld {
		t.Fatalf("state = %+v", res.State)
	}
	if got := statusOf(h.completions(res.State.RunID)); !slices.Equal(got, []string{"search_matter_documents:success"}) {
		t.Fatalf("before hold: %v", got)
	}
	h.decide(res, warrant.DecisionApproved)
	done, err := h.resume(res)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"search_matter_documents:success", "file_court_document:success", "file_court_document:denied", "get_matter_summary:success"}
	tcs := h.completions(res.State.RunID)
	if got := statusOf(tcs); !slices.Equal(got, want) || done.State.Status != warrant.RunCompleted {
		t.Fatalf("after resume: %v %s", got, done.State.Status)
	}
	if resultMessage(tcs[2]) != agent.ReasonNotCoveredByWarrant {
		t.Fatalf("edited call: %s", tcs[2].Result)
	}
	if n := len(h.outbound(res.State.RunID)); n != 1 {
		t.Fatalf("%d effects", n)
	}
	h.report("parallel calls + edited input", res.State.RunID)
}

func TestTamperedWarrantIsRefused(t *testing.T) {
	h := newHarness(t, demo, options{})
	res := h.start("Please file the motion.", "")
	h.decide(res, warrant.DecisionApproved)
	// Someone edits the stored input behind the warrant's back.
	h.tamperWarrant(res, "SET #i = :i", map[string]string{"#i": "input"},
		map[string]types.AttributeValue{":i": &types.AttributeValueMemberS{Value: `{"court":"elsewhere"}`}})
	h.wantResumeRefused(res)
}

// tamperWarrant updates the held run's warrant item directly, as someone
// with write access to the table might.
func (h *harness) tamperWarrant(res agent.Result, update string, names map[string]string, vals map[string]types.AttributeValue) {
	h.t.Helper()
	_, err := h.ep.Client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(h.table),
		Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "FIRM#" + h.firm + "#RUN#" + res.State.RunID},
			"SK": &types.AttributeValueMemberS{Value: "APR#" + res.State.PendingApproval.ApprovalRequestID}},
		UpdateExpression:          aws.String(update),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: vals,
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

// wantResumeRefused: the resume is a conflict and nothing executes.
//
// In a sealed run a content item rewritten without the run's data key does
// not even open (ledger_corrupt), before it is compared with the ledger
// (conflict).
func (h *harness) wantResumeRefused(res agent.Result) {
	h.t.Helper()
	_, err := h.resume(res)
	sealed := h.runKey(res.State.RunID) != nil
	if k := failureKind(err); k != failure.KindConflict && !(sealed && k == failure.KindLedgerCorrupt) {
		h.t.Fatalf("tampered resume: %v", err)
	}
	if n := len(h.outbound(res.State.RunID)); n != 0 {
		h.t.Fatalf("%d effects", n)
	}
}

func TestResumeOfPendingWarrantIsConflict(t *testing.T) {
	h := newHarness(t, demo, options{})
	res := h.start("Please file the motion.", "")
	if _, err := h.resume(res); failureKind(err) != failure.KindConflict {
		t.Fatalf("pending resume: %v", err)
	}
	other := *h
	other.firm = "11111111-2222-4333-8444-555555555555"
	if _, err := other.resume(res); failureKind(err) != failure.KindNotFound {
		t.Fatalf("other firm's resume: %v", err)
	}
}

// usages returns a run's model.usage lines, in order.
func (h *harness) usages(runID string) []*contracts.ModelUsage {
	var out []*contracts.ModelUsage
	for _, l := range h.ledger(runID) {
		if u, ok := l.Event.(*contracts.ModelUsage); ok {
			out = append(out, u)
		}
	}
	return out
}

func usd(t *testing.T, s string) pricing.Nano {
	t.Helper()
	n, err := pricing.ParseUSD(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

// TestCostCapStopsBeforeTheCrossingCall: the run cap is exact. A run whose
// second call's worst case (its reserved_usd) fits beside the first call's
// cost makes both calls; a cap one nano-dollar lower refuses the second
// before it is made (cost_cap_exceeded, nothing sent); a cap below the
// first call's worst case makes no call.
func TestCostCapStopsBeforeTheCrossingCall(t *testing.T) {
	h := newHarness(t, demo, options{})
	const ask = "Summarize the matter for me."
	full := h.start(ask, "1.00")
	us := h.usages(full.State.RunID)
	if full.State.Status != warrant.RunCompleted || len(us) != 2 || h.fake.Calls() != 2 {
		t.Fatalf("the uncapped run: %+v, %d usage lines", full.State, len(us))
	}
	for i, u := range us {
		if u.ReservedUSD == "" || usd(t, u.CostUSD) > usd(t, u.ReservedUSD) {
			t.Fatalf("call %d cost %s above its reservation %q", i+1, u.CostUSD, u.ReservedUSD)
		}
	}
	first, second := usd(t, us[0].ReservedUSD), usd(t, us[0].CostUSD)+usd(t, us[1].ReservedUSD)

	exact := h.start(ask, pricing.FormatUSD(second))
	if exact.State.Status != warrant.RunCompleted || h.fake.Calls() != 4 {
		t.Fatalf("cap = cost of call 1 + worst of call 2 (%s): %+v, calls %d", pricing.FormatUSD(second), exact.State, h.fake.Calls())
	}
	h.ep.Counter.Reset() // the report counts this run's round trips
	res := h.start(ask, pricing.FormatUSD(second-1))
	if res.State.Status != warrant.RunFailed || res.State.FailureKind != string(failure.KindCostCapExceeded) {
		t.Fatalf("one nano below: state = %+v", res.State)
	}
	if h.fake.Calls() != 5 || res.State.Cost > res.State.CostCap || res.State.ModelCalls != 1 {
		t.Fatalf("calls = %d, model calls %d, cost %d cap %d", h.fake.Calls(), res.State.ModelCalls, res.State.Cost, res.State.CostCap)
	}
	h.report("cost cap stops before crossing", res.State.RunID)
	// A cap below the first call's worst case makes no call at all.
	res = h.start(ask, pricing.FormatUSD(first-1))
	if res.State.Status != warrant.RunFailed || res.State.FailureKind != string(failure.KindCostCapExceeded) || h.fake.Calls() != 5 {
		t.Fatalf("state = %+v calls=%d", res.State, h.fake.Calls())
	}
}

func TestModelFaultsBecomeRetryableEnvelopes(t *testing.T) {
	for name, fault := range map[string]bedrocktest.Fault{
		"throttled": bedrocktest.FaultThrottle, "model timeout": bedrocktest.FaultModelTimeout,
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, func(*harness) bedrocktest.Script {
				return bedrocktest.Script{Fallback: &bedrocktest.Reply{Fault: fault}}
			}, options{})
			res := h.start("Summarize the matter.", "")
			if res.State.Status != warrant.RunRunning {
				t.Fatalf("state = %+v", res.State)
			}
			if h.fake.Calls() != 3 {
				t.Fatalf("retries: %d calls", h.fake.Calls())
			}
			h.report(name+" (3 attempts)", res.State.RunID)
			// Deferred (issue 25, item 3) until its restarts ran out.
			if res = h.drive(res.State.RunID); res.State.Status != warrant.RunFailed {
				t.Fatalf("state = %+v", res.State)
			}
			var failed *contracts.RunFailed
			for _, l := range h.ledger(res.State.RunID) {
				if f, ok := l.Event.(*contracts.RunFailed); ok {
					failed = f
				}
			}
			var env failure.Envelope
			if failed == nil || json.Unmarshal(failed.Failure, &env) != nil || !env.Retryable || env.RetryAfterSeconds < 1 {
				t.Fatalf("envelope = %+v", env)
			}
			if !strings.Contains(h.logs.String(), `"failure_kind":"`+string(env.FailureKind)+`"`) {
				t.Fatalf("envelope not logged: %s", h.logs)
			}
		})
	}
}

func TestNothingPrivilegedInLogs(t *testing.T) {
	const secret = "PRIVILEGED-7f3a-settlement-authority-2.4M"
	h := newHarness(t, func(h *harness) bedrocktest.Script {
		return bedrocktest.Script{Rules: []bedrocktest.Rule{
			{Name: "then fail", When: bedrocktest.AfterToolResult(""), Reply: bedrocktest.Reply{Fault: bedrocktest.FaultThrottle}},
			{Name: "draft", When: bedrocktest.Always, Reply: bedrocktest.Reply{Text: secret, ToolUses: []bedrocktest.ToolUse{{
				Name: "draft_document", InputFunc: func(c bedrocktest.Conversation) json.RawMessage {
					raw, _ := json.Marshal(map[string]any{"matter_id": h.matter, "title": secret, "body": secret})
					return raw
				}}}}},
		}}
	}, options{})
	res := h.start("Our settlement authority is "+secret+". Draft a letter.", "")
	if res.State.Status == warrant.RunRunning {
		res = h.drive(res.State.RunID) // the model's fault deferred it
	}
	if res.State.Status != warrant.RunFailed {
		t.Fatalf("state = %+v", res.State)
	}
	if h.logs.String() == "" {
		t.Fatal("nothing was logged; the test would prove nothing")
	}
	if strings.Contains(h.logs.String(), secret) || strings.Contains(h.logs.String(), "settlement") {
		t.Fatalf("privileged content in logs: %s", h.logs)
	}
}

func TestUnknownAgentIsRejectedBeforeAnyWrite(t *testing.T) {
	h := newHarness(t, demo, options{})
	inv := contracts.AgentInvoke{AgentKey: "nope", Mode: contracts.ModeInvoke,
		Meta:    contracts.InvokeMeta{RunID: "5b0c6a2e-7d4f-4c8e-9a51-0b8f2f3c1d01", FirmID: h.firm, UserID: h.user, MatterID: h.matter},
		History: []contracts.HistoryMessage{{Role: "user", Text: "hi"}}}
	before := h.ep.Counter.Count()
	_, err := h.brain.Run(context.Background(), inv, agent.StartOptions{CostCapUSD: "1.00"})
	if failureKind(err) != failure.KindUnknownAgent || h.ep.Counter.Count() != before {
		t.Fatalf("err = %v, round trips %d", err, h.ep.Counter.Count()-before)
	}
}

func failureKind(err error) failure.Kind {
	if err == nil {
		return ""
	}
	var fe *failure.Error
	if errors.As(err, &fe) {
		return fe.Kind
	}
	return failure.KindInternal
}

func resultMessage(tc *contracts.ToolCompleted) string {
	var m struct{ Error string }
	_ = json.Unmarshal(tc.Result, &m)
	return m.Error
}

func TestStepLimitFailsTheRun(t *testing.T) {
	h := newHarness(t, func(h *harness) bedrocktest.Script {
		// A model that never stops calling a read tool.
		return bedrocktest.Script{Fallback: &bedrocktest.Reply{ToolUses: []bedrocktest.ToolUse{{
			Name: "search_matter_documents", InputFunc: func(c bedrocktest.Conversation) json.RawMessage {
				raw, _ := json.Marshal(map[string]any{"matter_id": h.matter, "query": "motion " + strings.Repeat("x", len(c.Messages))})
				return raw
			}}}}}
	}, options{env: map[string]string{"STEP_LIMIT": "3"}})
	res := h.start("Search forever.", "")
	if res.State.Status != warrant.RunFailed || res.State.FailureKind != string(failure.KindStepLimitExceeded) || h.fake.Calls() != 3 {
		t.Fatalf("state = %+v, calls %d", res.State, h.fake.Calls())
	}
}

func TestMalformedToolUseFailsTheRun(t *testing.T) {
	for _, stream := range []bool{false, true} {
		h := newHarness(t, func(*harness) bedrocktest.Script {
			return bedrocktest.Script{Fallback: &bedrocktest.Reply{Fault: bedrocktest.FaultMalformedToolUse}}
		}, options{stream: stream})
		res := h.start("Go.", "")
		if res.State.Status != warrant.RunFailed || res.State.FailureKind != string(failure.KindModelMalformedOutput) {
			t.Fatalf("stream=%v: state = %+v", stream, res.State)
		}
		if res.State.ToolsRequested != 0 {
			t.Fatal("a malformed tool use reached the hook chain")
		}
	}
}

func TestMidStreamExceptionFailsTheRun(t *testing.T) {
	h := newHarness(t, func(*harness) bedrocktest.Script {
		return bedrocktest.Script{Fallback: &bedrocktest.Reply{Text: "partial answer", Fault: bedrocktest.FaultMidStream}}
	}, options{stream: true})
	res := h.start("Go.", "")
	if res.State.Status != warrant.RunFailed || res.State.Turns != 0 {
		t.Fatalf("state = %+v", res.State)
	}
}

// A warrant for a tool the agent no longer has is refused, not executed.
func TestResumeWithAToolNoLongerRegistered(t *testing.T) {
	h := newHarness(t, demo, options{})
	res := h.start("Please file the motion.", "")
	h.decide(res, warrant.DecisionApproved)
	policy, _ := toolpolicy.Embedded()
	prices, _ := pricing.Embedded()
	trimmed := agent.MatterAssistant
	trimmed.Tools = []string{"search_matter_documents", "get_matter_summary"}
	brain, err := agent.New(h.store, nil, policy, prices, failure.NewLogger(h.logs), agent.Config{ModelID: testModel, Keys: h.dataKeys, FirmBudget: h.cfg.DefaultFirmBudget()},
		h.reference(), trimmed)
	if err != nil {
		t.Fatal(err)
	}
	_, err = brain.Resume(context.Background(), agent.ResumeRequest{FirmID: h.firm, RunID: res.State.RunID,
		ApprovalID: res.State.PendingApproval.ApprovalRequestID, UserID: h.user})
	if failureKind(err) != failure.KindConflict || len(h.outbound(res.State.RunID)) != 0 {
		t.Fatalf("err = %v", err)
	}
}
