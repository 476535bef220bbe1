package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

const draftLimit = "drafts.per_matter_day"

// limitPolicyFile writes the embedded policy with draft_document limited to
// two calls a matter a day (then: then) as a full policy file, and loads it
// as TOOL_POLICY=file:<path> does.
func limitPolicyFile(t *testing.T, then string) (string, *toolpolicy.Policy) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(toolpolicy.EmbeddedDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	doc["version"] = "limits-" + strings.ReplaceAll(then, ":", "-")
	doc["limits"] = []any{map[string]any{"id": draftLimit, "tools": []string{"draft_document"}, "per": "matter", "window": "day",
		"max": 2, "then": then, "reason": "More than two drafts a day in one matter needs a look."}}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := toolpolicy.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, p
}

// threeDrafts: one turn proposes three drafts in the run's matter, then the
// model answers.
func threeDrafts(h *harness) bedrocktest.Script {
	var uses []bedrocktest.ToolUse
	for i := range 3 {
		uses = append(uses, toolUse("draft_document", map[string]any{"matter_id": h.matter, "title": fmt.Sprintf("Draft %d", i+1), "body": "Text."}))
	}
	return bedrocktest.Script{Rules: []bedrocktest.Rule{
		{Name: "done", When: bedrocktest.AfterToolResult(""), Reply: bedrocktest.Reply{Text: "Drafted."}},
		{Name: "turn", When: bedrocktest.Always, Reply: bedrocktest.Reply{ToolUses: uses}},
	}}
}

// limitHarness is a harness over the policy file, its clock fixed (every
// call of the run counts in one UTC day, whenever the test runs).
func limitHarness(t *testing.T, then string) (*harness, *toolpolicy.Policy, warrant.Counter) {
	t.Helper()
	path, p := limitPolicyFile(t, then)
	now := time.Now().UTC()
	h := newHarness(t, threeDrafts, options{env: map[string]string{"TOOL_POLICY": "file:" + path}, policy: p, now: func() time.Time { return now }})
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	return h, p, warrant.Counter{Limit: draftLimit, Per: "matter", Scope: h.matter, Window: day}
}

func (h *harness) count(c warrant.Counter) int64 {
	h.t.Helper()
	n, err := h.store.Count(context.Background(), h.firm, c)
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

// requested are the run's tool.requested events, in order.
func (h *harness) requested(runID string) []*contracts.ToolRequested {
	var out []*contracts.ToolRequested
	for _, l := range h.ledger(runID) {
		if r, ok := l.Event.(*contracts.ToolRequested); ok {
			out = append(out, r)
		}
	}
	return out
}

// wantLimitRecorded: the first two drafts record nothing of the limit (a
// charge is not a decision), the third records it reached, with its rule.
func wantLimitRecorded(t *testing.T, reqs []*contracts.ToolRequested, tier string) {
	t.Helper()
	if len(reqs) != 3 {
		t.Fatalf("%d tool.requested lines, want 3", len(reqs))
	}
	for i, r := range reqs[:2] {
		if len(r.LimitsReached) != 0 || slices.ContainsFunc(r.FiredRules, func(f contracts.FiredRule) bool { return f.ID == draftLimit }) || r.Action != "allow" {
			t.Errorf("draft %d records %s %v %v, want a plain allow", i+1, r.Action, r.FiredRules, r.LimitsReached)
		}
	}
	third := reqs[2]
	const reason = "More than two drafts a day in one matter needs a look. (limit: at most 2 per matter per day; reached)"
	if !slices.Equal(third.LimitsReached, []string{draftLimit}) || third.RiskTier != tier ||
		!slices.Contains(third.FiredRules, contracts.FiredRule{ID: draftLimit, Effect: map[string]string{"prohibited": "deny", "high": "raise:high"}[tier], Reason: reason}) ||
		third.Reason != "rule "+draftLimit+": "+reason {
		t.Errorf("the third draft records %+v", third)
	}
}

// Issue 29 item 2: a policy limits drafts to two a matter a day, then
// denies. The third draft of the run is denied, its tool.requested names
// the limit reached and its rule, the counter reads 2, and the audit
// re-derives every decision from the ledger and the policy.
func TestLimitDeniesTheThirdDraft(t *testing.T) {
	h, p, c := limitHarness(t, "deny")
	res := h.start("Draft three memos.", "")
	if res.State.Status != warrant.RunCompleted {
		t.Fatalf("run %+v", res.State)
	}
	tcs := h.completions(res.State.RunID)
	if got := statusOf(tcs); !slices.Equal(got, []string{"draft_document:success", "draft_document:success", "draft_document:denied"}) {
		t.Fatalf("calls %v", got)
	}
	if !strings.Contains(string(tcs[2].Result), "denied by policy: rule "+draftLimit) {
		t.Errorf("the model was told %s", tcs[2].Result)
	}
	wantLimitRecorded(t, h.requested(res.State.RunID), "prohibited")
	if n := h.count(c); n != 2 {
		t.Errorf("the counter reads %d, want 2 (the denied call counted nothing)", n)
	}
	if _, err := reducer.Rederive(h.ledger(res.State.RunID), p); err != nil {
		t.Errorf("audit: %v", err)
	}
	// A second run in the same matter and day finds the limit reached at
	// its first draft.
	again := h.start("Draft three more.", "")
	if got := statusOf(h.completions(again.State.RunID)); !slices.Equal(got, []string{"draft_document:denied", "draft_document:denied", "draft_document:denied"}) {
		t.Errorf("the second run's calls %v", got)
	}
	if n := h.count(c); n != 2 {
		t.Errorf("the counter reads %d after the second run, want 2", n)
	}
	if _, err := reducer.Rederive(h.ledger(again.State.RunID), p); err != nil {
		t.Errorf("audit of the second run: %v", err)
	}
}

// With "then": "raise:high" the third draft is held for counsel; once
// counsel approves, it runs, counted without the bound (the counter reads
// 3), and the audit re-derives the run.
func TestLimitHoldsTheThirdDraftForCounsel(t *testing.T) {
	h, p, c := limitHarness(t, "raise:high")
	res := h.start("Draft three memos.", "")
	if res.State.Status != warrant.RunHeld || res.State.PendingApproval == nil {
		t.Fatalf("run %+v", res.State)
	}
	if got := statusOf(h.completions(res.State.RunID)); !slices.Equal(got, []string{"draft_document:success", "draft_document:success"}) {
		t.Fatalf("calls before the hold %v", got)
	}
	wantLimitRecorded(t, h.requested(res.State.RunID), "high")
	var blocked *contracts.RunBlocked
	for _, l := range h.ledger(res.State.RunID) {
		if b, ok := l.Event.(*contracts.RunBlocked); ok {
			blocked = b
		}
	}
	if blocked == nil || !slices.ContainsFunc(blocked.Approval.FiredRules, func(f contracts.FiredRule) bool { return f.ID == draftLimit }) {
		t.Errorf("counsel is not shown the limit: %+v", blocked)
	}
	if n := h.count(c); n != 2 {
		t.Errorf("the counter reads %d while the third waits, want 2", n)
	}
	h.decide(res, warrant.DecisionApproved)
	done, err := h.resume(res)
	if err != nil {
		t.Fatal(err)
	}
	if done.State.Status != warrant.RunCompleted {
		t.Fatalf("after approval: %+v", done.State)
	}
	if got := statusOf(h.completions(res.State.RunID)); !slices.Equal(got, []string{"draft_document:success", "draft_document:success", "draft_document:success"}) {
		t.Errorf("calls after approval %v", got)
	}
	if n := h.count(c); n != 3 {
		t.Errorf("the counter reads %d after counsel's call ran, want 3", n)
	}
	if _, err := reducer.Rederive(h.ledger(res.State.RunID), p); err != nil {
		t.Errorf("audit: %v", err)
	}
}
