package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// thenAgain scripts a model that proposes first (once), then again (once)
// after the first tool results, then answers "Done." to anything after that.
func thenAgain(first, again func(h *harness) []bedrocktest.ToolUse) func(h *harness) bedrocktest.Script {
	return func(h *harness) bedrocktest.Script {
		rules := []bedrocktest.Rule{}
		if again != nil {
			rules = append(rules, bedrocktest.Rule{Name: "again", Times: 1, When: bedrocktest.AfterToolResult(""),
				Reply: bedrocktest.Reply{ToolUses: again(h)}})
		}
		rules = append(rules,
			bedrocktest.Rule{Name: "done", When: bedrocktest.AfterToolResult(""), Reply: bedrocktest.Reply{Text: "Done."}},
			bedrocktest.Rule{Name: "first", Times: 1, When: bedrocktest.Always, Reply: bedrocktest.Reply{ToolUses: first(h)}})
		return bedrocktest.Script{Rules: rules}
	}
}

func filings(titles ...string) func(h *harness) []bedrocktest.ToolUse {
	return func(h *harness) []bedrocktest.ToolUse {
		var uses []bedrocktest.ToolUse
		for _, title := range titles {
			uses = append(uses, toolUse("file_court_document", h.filing(title)))
		}
		return uses
	}
}

func (h *harness) mustResume(res agent.Result) agent.Result {
	h.t.Helper()
	done, err := h.resume(res)
	if err != nil {
		h.t.Fatalf("resume: %v", err)
	}
	return done
}

// Issue 11, item 1: a declined warrant allows nothing. The held turn proposes
// the same filing twice (two tool_use ids, same input); after counsel
// declines, the second copy is declined too, and so is the same call in a
// later turn, without a new warrant.
func TestDeclinedWarrantDeniesEveryCopyOfTheCall(t *testing.T) {
	h := newHarness(t, thenAgain(filings("Motion", "Motion"), filings("Motion")), options{})
	res := h.start("File it.", "")
	if res.State.Status != warrant.RunHeld {
		t.Fatalf("state = %+v", res.State)
	}
	h.decide(res, warrant.DecisionDenied)
	done := h.mustResume(res)
	if done.State.Status != warrant.RunCompleted {
		t.Fatalf("after resume: %+v (a later identical call must not hold a new warrant)", done.State)
	}
	if n := len(h.outbound(res.State.RunID)); n != 0 {
		t.Fatalf("a declined call executed: %d effects", n)
	}
	want := []string{"file_court_document:declined", "file_court_document:declined", "file_court_document:declined"}
	if got := statusOf(h.completions(res.State.RunID)); !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	claim, err := h.store.LatestEffect(context.Background(), h.firm, res.State.RunID, "file_court_document", res.State.PendingApproval.ToolInputHash)
	if err != nil || claim == nil || claim.State != warrant.ClaimDeclined {
		t.Fatalf("the decline is not recorded as a declined claim: %+v, %v", claim, err)
	}
}

// Issue 11, item 5: the same high-risk call in a later turn after it
// completed answers with the stored result (same effect_ref), with no new
// warrant that could never be resumed.
func TestRepeatedCompletedCallReusesItsResult(t *testing.T) {
	h := newHarness(t, thenAgain(filings("Motion"), filings("Motion")), options{})
	res := h.start("File it.", "")
	h.decide(res, warrant.DecisionApproved)
	done := h.mustResume(res)
	if done.State.Status != warrant.RunCompleted {
		t.Fatalf("after resume: %+v (the repeated call held on a warrant that can never run)", done.State)
	}
	tcs := h.completions(res.State.RunID)
	if got := statusOf(tcs); !slices.Equal(got, []string{"file_court_document:success", "file_court_document:success"}) {
		t.Fatalf("tools = %v", got)
	}
	if tcs[0].EffectRef == "" || tcs[1].EffectRef != tcs[0].EffectRef || string(tcs[1].Result) != string(tcs[0].Result) {
		t.Fatalf("the repeat did not reuse the stored result: %+v / %+v", tcs[0], tcs[1])
	}
	if n := len(h.outbound(res.State.RunID)); n != 1 {
		t.Fatalf("%d effects", n)
	}
}

// Issue 11, item 5: a warranted effect that failed can be retried, as a new
// effect with its own claim and effect_ref, approved separately.
func TestFailedWarrantedCallIsRetriedOnANewWarrant(t *testing.T) {
	h := newHarness(t, thenAgain(filings("Motion"), filings("Motion")), options{})
	var attempts atomic.Int32
	set := h.reference()
	for i := range set {
		if set[i].Name == "file_court_document" {
			real := set[i].Execute
			set[i].Execute = func(ctx context.Context, in json.RawMessage, ref string) (json.RawMessage, error) {
				if attempts.Add(1) == 1 {
					return nil, errors.New("court e-filing gateway timed out")
				}
				return real(ctx, in, ref)
			}
		}
	}
	policy, _ := toolpolicy.Embedded()
	brain, err := agent.New(h.store, h.model, policy, h.cfg.Prices, failure.NewLogger(h.logs), agent.Config{ModelID: testModel, Keys: h.dataKeys, FirmBudget: h.cfg.DefaultFirmBudget()}, set, agent.MatterAssistant)
	if err != nil {
		t.Fatal(err)
	}
	h.brain = brain
	res := h.start("File it.", "")
	h.decide(res, warrant.DecisionApproved)
	retry := h.mustResume(res)
	if retry.State.Status != warrant.RunHeld || retry.State.PendingApproval == nil ||
		retry.State.PendingApproval.ApprovalRequestID == res.State.PendingApproval.ApprovalRequestID {
		t.Fatalf("the retry of a failed effect must hold on its own new warrant: %+v", retry.State)
	}
	h.decide(retry, warrant.DecisionApproved)
	done := h.mustResume(retry)
	if done.State.Status != warrant.RunCompleted {
		t.Fatalf("after the retry: %+v", done.State)
	}
	tcs := h.completions(res.State.RunID)
	if got := statusOf(tcs); !slices.Equal(got, []string{"file_court_document:error", "file_court_document:success"}) {
		t.Fatalf("tools = %v", got)
	}
	if tcs[0].EffectRef == tcs[1].EffectRef {
		t.Fatal("the retry reused the failed attempt's effect_ref")
	}
	if out := h.outbound(res.State.RunID); len(out) != 1 || out[0].EffectRef != tcs[1].EffectRef || attempts.Load() != 2 {
		t.Fatalf("effects = %+v after %d attempts", out, attempts.Load())
	}
}

// Issue 11, item 11: a claim whose owner died before recording an outcome
// (lease passed) is never executed again: the run fails with
// effect_outcome_unknown and the claim is flagged for reconciliation. Both
// for an allowed tool and for a call that would otherwise hold a warrant.
func TestUnknownOutcomeIsNeverReExecuted(t *testing.T) {
	for _, tc := range []struct {
		name string
		use  func(h *harness) map[string]any
		tool string
	}{
		{"allowed tool", func(h *harness) map[string]any {
			return map[string]any{"matter_id": h.matter, "title": "Draft", "body": "Text."}
		}, "draft_document"},
		{"warranted tool", func(h *harness) map[string]any { return h.filing("Motion") }, "file_court_document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, thenAgain(func(h *harness) []bedrocktest.ToolUse {
				return []bedrocktest.ToolUse{toolUse(tc.tool, tc.use(h))}
			}, nil), options{})
			raw, _ := json.Marshal(tc.use(h))
			hash, err := contracts.InputHash(raw)
			if err != nil {
				t.Fatal(err)
			}
			runID := uuid.NewString()
			// A Lambda claimed this very effect and died before it recorded
			// the outcome; its lease passed a minute ago.
			claimed, _, err := h.store.ClaimToolEffectOnce(context.Background(), warrant.ClaimInput{FirmID: h.firm, RunID: runID,
				ToolName: tc.tool, InputSHA256: hash, EffectRef: uuid.NewString(), Owner: "lambda-that-died",
				LeaseUntil: time.Now().Add(-time.Minute)})
			if err != nil || !claimed {
				t.Fatalf("pre-claim: %v %v", claimed, err)
			}
			res := h.startRun(runID, "Go.", "")
			if res.State.Status != warrant.RunFailed || res.State.FailureKind != string(failure.KindEffectOutcomeUnknown) {
				t.Fatalf("state = %+v", res.State)
			}
			if n := len(h.outbound(runID)); n != 0 {
				t.Fatalf("an effect of unknown outcome was executed again: %d effects", n)
			}
			c, err := h.store.LatestEffect(context.Background(), h.firm, runID, tc.tool, hash)
			if err != nil || c == nil || !c.NeedsReconciliation || c.Owner != "lambda-that-died" {
				t.Fatalf("claim = %+v, %v: want it flagged for reconciliation and still the dead owner's", c, err)
			}
		})
	}
}

// Issue 11, item 12 (today's rule, docs/DECISIONS.md): in the step a warrant
// resumes, an edited copy of the warranted call is denied, not covered by the
// warrant; when the model proposes the edited call again in a later turn, it
// is held on a warrant of its own (new hash, new warrant) and runs once
// counsel signs that one.
func TestEditedCallIsHeldOnItsOwnWarrantLater(t *testing.T) {
	h := newHarness(t, thenAgain(filings("Motion", "Motion (edited)"), filings("Motion (edited)")), options{})
	res := h.start("File it.", "")
	h.decide(res, warrant.DecisionApproved)
	second := h.mustResume(res)
	if second.State.Status != warrant.RunHeld || second.State.PendingApproval == nil ||
		second.State.PendingApproval.ToolInputHash == res.State.PendingApproval.ToolInputHash {
		t.Fatalf("the edited call must hold on its own warrant: %+v", second.State)
	}
	tcs := h.completions(res.State.RunID)
	if got := statusOf(tcs); !slices.Equal(got, []string{"file_court_document:success", "file_court_document:denied"}) ||
		resultMessage(tcs[1]) != agent.ReasonNotCoveredByWarrant {
		t.Fatalf("resumed step: %v %s", got, tcs[len(tcs)-1].Result)
	}
	h.decide(second, warrant.DecisionApproved)
	done := h.mustResume(second)
	if done.State.Status != warrant.RunCompleted {
		t.Fatalf("state = %+v", done.State)
	}
	if n := len(h.outbound(res.State.RunID)); n != 2 {
		t.Fatalf("%d effects, want the filing and the edited filing", n)
	}
}

// Issue 11, item 6: a tool's raw error (here an AWS error naming a role ARN
// and a table) reaches neither the ledger, nor the model, nor the logs. The
// model and the ledger get a fixed message with a debug ref; the failure
// envelope in the logs carries the same ref.
func TestToolErrorTextStaysOut(t *testing.T) {
	const raw = "AccessDeniedException: User: arn:aws:sts::123456789012:assumed-role/warrant-prod-invoke/x is not authorized on table warrant-prod-ledger"
	h := newHarness(t, thenAgain(func(h *harness) []bedrocktest.ToolUse {
		return []bedrocktest.ToolUse{toolUse("draft_document", map[string]any{"matter_id": h.matter, "title": "Draft", "body": "Text."})}
	}, nil), options{})
	set := h.reference()
	for i := range set {
		if set[i].Name == "draft_document" {
			set[i].Execute = func(context.Context, json.RawMessage, string) (json.RawMessage, error) { return nil, errors.New(raw) }
		}
	}
	policy, _ := toolpolicy.Embedded()
	brain, err := agent.New(h.store, h.model, policy, h.cfg.Prices, failure.NewLogger(h.logs), agent.Config{ModelID: testModel, Keys: h.dataKeys, FirmBudget: h.cfg.DefaultFirmBudget()}, set, agent.MatterAssistant)
	if err != nil {
		t.Fatal(err)
	}
	h.brain = brain
	res := h.start("Draft it.", "")
	tcs := h.completions(res.State.RunID)
	if len(tcs) != 1 || tcs[0].Status != contracts.ToolError {
		t.Fatalf("tools = %v", statusOf(tcs))
	}
	for _, leak := range []string{"arn:aws", "123456789012", "warrant-prod", "AccessDenied"} {
		for _, l := range h.ledger(res.State.RunID) {
			if strings.Contains(string(l.Raw), leak) {
				t.Fatalf("the ledger carries %q: %s", leak, l.Raw)
			}
		}
		for _, req := range h.fake.Requests() {
			if b, _ := json.Marshal(req.Messages); strings.Contains(string(b), leak) {
				t.Fatalf("the model was sent %q", leak)
			}
		}
		if strings.Contains(h.logs.String(), leak) {
			t.Fatalf("the logs carry %q", leak)
		}
	}
	msg := resultMessage(tcs[0])
	ref := strings.TrimSuffix(strings.TrimPrefix(msg, "tool failed (ref "), ")")
	if ref == msg || len(ref) != 16 || !strings.Contains(h.logs.String(), `"internal_debug_ref":"`+ref+`"`) {
		t.Fatalf("result %q: want a fixed message whose debug ref is in a logged envelope\n%s", msg, h.logs.String())
	}
}

// forge rewrites a run's ledger as a table writer without the ledger key
// could (dynamotest.RechainLedger): every filing's input becomes edited, and
// the warrant item is made to match. With sealHead, the run item's head is
// moved to the forged last line too, keeping a MAC it cannot recompute.
func (h *harness) forge(runID, approvalID string, edited json.RawMessage, sealHead bool) {
	h.t.Helper()
	newHash := mustHash(h.t, edited)
	f := dynamotest.RechainSealedLedger(h.t, h.ep.Client, h.table, h.firm, runID, h.runKey(runID), func(e contracts.Event) {
		switch ev := e.(type) {
		case *contracts.TurnCompleted:
			for i := range ev.Content {
				if ev.Content[i].Name == "file_court_document" {
					ev.Content[i].Input = edited
				}
			}
		case *contracts.ToolRequested:
			if ev.ToolName == "file_court_document" {
				ev.Input, ev.InputSHA256 = edited, newHash
			}
		case *contracts.RunBlocked:
			ev.Approval.ToolInput, ev.Approval.ToolInputHash = edited, newHash
		case *contracts.ApprovalDecided:
			ev.ToolInputHash = newHash
		}
	})
	if _, err := reducer.ReduceAgentRun(f.Lines); err != nil {
		h.t.Fatalf("the forgery must verify as a chain on its own: %v", err)
	}
	_, err := h.ep.Client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(h.table),
		Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: dynamo.RunKey(h.firm, runID)},
			"SK": &types.AttributeValueMemberS{Value: "APR#" + approvalID}},
		UpdateExpression:         aws.String("SET #i = :i, tool_input_hash = :h"),
		ExpressionAttributeNames: map[string]string{"#i": "input"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":i": &types.AttributeValueMemberS{Value: string(edited)}, ":h": &types.AttributeValueMemberS{Value: newHash}}})
	if err != nil {
		h.t.Fatal(err)
	}
	if sealHead {
		last := f.Lines[len(f.Lines)-1]
		dynamotest.SetHead(h.t, h.ep.Client, h.table, h.firm, runID, last.Seq, last.Hash)
	}
}

// Issue 11, item 2: a ledger rewritten and re-chained by a table writer (the
// warrant item made to match) executes nothing: the run's head is signed in
// the transaction of every append, so the forgery cannot produce a head that
// verifies, and resume (like counsel's decision) folds the ledger against it.
func TestRechainedLedgerIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name              string
		sealHead, decided bool
	}{
		{"head untouched, after the decision", false, true},
		{"head moved with a stale MAC, after the decision", true, true},
		{"before the decision", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, demo, options{})
			res := h.start("Please file the motion.", "")
			p := res.State.PendingApproval
			if tc.decided {
				h.decide(res, warrant.DecisionApproved)
			}
			edited, _ := json.Marshal(h.filing("Motion to Dismiss With Prejudice"))
			h.forge(res.State.RunID, p.ApprovalRequestID, edited, tc.sealHead)
			if !tc.decided {
				_, err := agent.Decider{Store: h.store, Heads: h.keys, Keys: h.dataKeys}.Decide(context.Background(), h.firm, res.State.RunID,
					p.ApprovalRequestID, warrant.CounselDecision{Decision: warrant.DecisionApproved, PresentedHash: mustHash(t, edited), DecidedBy: uuid.NewString()})
				if failureKind(err) != failure.KindLedgerCorrupt {
					t.Fatalf("counsel's decision on a forged ledger: %v", err)
				}
				return
			}
			_, err := h.resume(res)
			if failureKind(err) != failure.KindLedgerCorrupt {
				t.Fatalf("resume of a forged ledger: %v, want ledger_corrupt", err)
			}
			if n := len(h.outbound(res.State.RunID)); n != 0 {
				t.Fatalf("the forged filing executed: %d effects", n)
			}
		})
	}
}

func mustHash(t *testing.T, in json.RawMessage) string {
	t.Helper()
	h, err := contracts.InputHash(in)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
