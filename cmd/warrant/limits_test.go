package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// limitPolicyFile is the embedded policy with draft_document limited to
// two a matter a day, then denied.
func limitPolicyFile(t *testing.T) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(toolpolicy.EmbeddedDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	doc["version"] = "limits-1"
	doc["limits"] = []any{map[string]any{"id": "drafts.per_matter_day", "tools": []string{"draft_document"}, "per": "matter", "window": "day",
		"max": 2, "then": "deny", "reason": "Two drafts a matter a day."}}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return writeTemp(t, "limits.json", b)
}

// limitRun is the export of a run whose draft found the matter's limit
// reached and was denied, recorded as the runtime records it under p.
func limitRun(t *testing.T, p *toolpolicy.Policy) string {
	t.Helper()
	meta := toolpolicy.Metadata{FirmID: firmID, MatterID: matterID, AgentKey: "matter_assistant", UserID: userID, Roles: []string{"associate"}}
	metaRaw, metaSum := recorded(t, meta)
	input, h, err := contracts.CanonicalInput([]byte(`{"matter_id":"` + matterID + `","title":"Memo","body":"` + draftBody + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.DecideOrDeny(toolpolicy.Call{Tool: "draft_document", Input: input, Meta: meta}).LimitsReached([]string{"drafts.per_matter_day"})
	if err != nil {
		t.Fatal(err)
	}
	var fired []contracts.FiredRule
	for _, f := range d.FiredRules {
		fired = append(fired, contracts.FiredRule{ID: f.ID, Effect: f.Effect, Reason: f.Reason})
	}
	c := contracts.NewChain(runID, firmID)
	c.Now = func() time.Time { return time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC) }
	var out []byte
	for _, e := range []contracts.Event{
		&contracts.RunStarted{AgentKey: "matter_assistant", Mode: contracts.ModeInvoke, ModelID: modelID, PromptVersion: "v1",
			SchemaVersion: contracts.SchemaVersion, CostCapUSD: "1.00", MaxTokens: 1024, MatterID: matterID, UserID: userID, UserRoles: []string{"associate"}},
		&contracts.ToolRequested{Turn: 1, ToolUseID: "t1", ToolName: "draft_document", Input: input, InputSHA256: h,
			RiskTier: string(d.Tier), Action: string(d.Action), Reason: d.Reason, MatchedPolicy: d.MatchedPolicy, PolicyVersion: d.PolicyVersion,
			FiredRules: fired, PolicyMetadata: metaRaw, PolicyMetadataSHA256: metaSum, LimitsReached: []string{"drafts.per_matter_day"}},
		&contracts.ToolCompleted{ToolUseID: "t1", ToolName: "draft_document", InputSHA256: h, Status: contracts.ToolDenied,
			Result: json.RawMessage(`{"error":"denied by policy"}`)},
		&contracts.RunCompleted{StopReason: "end_turn", FinalText: "Not drafted."},
	} {
		l, err := c.Append(e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, l.Raw...), '\n')
	}
	return string(out)
}

// A call denied at a limit is audited and replayed with the limit reached:
// the audit re-derives it, the policy that set the limit replays it
// unchanged, and a policy without the limit shows it newly allowed.
func TestLimitReachedAuditedAndReplayed(t *testing.T) {
	policyFile := limitPolicyFile(t)
	export := writeTemp(t, "limit.ndjson", []byte(limitRun(t, mustLoad(t, policyFile))))

	got := runCLI("", "ledger", "audit", export, "--policy", policyFile)
	check(t, got, 0, "decision seq 2 tool.requested draft_document: deny (prohibited, fired drafts.per_matter_day, limits reached drafts.per_matter_day)", "")
	noValues(t, got)

	got = runCLI("", "policy", "check", "--ledger", export, "--policy", policyFile)
	check(t, got, 0, "", "")
	if want := summary("limits-1", 1, 1, 1, 0, 0, 0, 0, 0); got.stdout != want {
		t.Errorf("policy check under the limit's policy printed\n%s\nwant\n%s", got.stdout, want)
	}
	got = runCLI("", "policy", "check", "--ledger", export)
	check(t, got, 0, "seq 2 draft_document (recorded under policy version limits-1): deny/prohibited -> allow/medium (newly allowed); "+
		"fired then, not now: drafts.per_matter_day\n", "")

	got = runCLI("", "policy", "decide", "--ledger", export, "--seq", "2", "--policy", policyFile)
	check(t, got, 0, `"action": "deny"`, "")
	if !strings.Contains(got.stdout, "(limit: at most 2 per matter per day; reached)") {
		t.Errorf("policy decide --ledger does not show the limit reached:\n%s", got.stdout)
	}
	noValues(t, got)
}

// docs/DEPLOY.md's "Limits over time" example is a limit a whole policy
// loads, and does what the text says when its count is reached.
func TestLimitsDocExample(t *testing.T) {
	b, err := os.ReadFile("../../docs/DEPLOY.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n### Limits over time\n")
	if !ok {
		t.Fatal(`docs/DEPLOY.md has no "Limits over time"`)
	}
	sec, _, _ = strings.Cut(sec, "\n### ")
	blocks := regexp.MustCompile("(?s)\n```json\n(.*?)\n```").FindAllStringSubmatch(sec, -1)
	if len(blocks) != 1 {
		t.Fatalf("want one json block, got %d", len(blocks))
	}
	var example struct {
		Limits []any `json:"limits"`
	}
	if err := json.Unmarshal([]byte(blocks[0][1]), &example); err != nil || len(example.Limits) != 1 {
		t.Fatalf("the example is not {\"limits\": [one limit]}: %v", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(toolpolicy.EmbeddedDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	doc["limits"] = example.Limits
	whole, _ := json.Marshal(doc)
	p, err := toolpolicy.Load(whole)
	if err != nil {
		t.Fatalf("the example does not load in a whole policy: %v", err)
	}
	if _, err := toolpolicy.LoadDocument([]byte(`{"extends":"embedded","version":"o1",` + strings.TrimPrefix(blocks[0][1], "{"))); err == nil {
		t.Error("an overlay added the example's limit")
	}
	d := p.DecideOrDeny(toolpolicy.Call{Tool: "draft_document", Input: json.RawMessage(`{"matter_id":"` + matterID + `","title":"Memo","body":"..."}`),
		Meta: toolpolicy.Metadata{MatterID: matterID}})
	if d.Action != toolpolicy.ActionAllow || len(d.Limits) != 1 {
		t.Fatalf("a draft under the example: %+v", d)
	}
	reached, err := d.LimitsReached([]string{d.Limits[0].ID})
	if err != nil || reached.Action != toolpolicy.ActionRequireApproval ||
		!strings.Contains(reached.Reason, "(limit: at most 20 per matter per day; reached)") {
		t.Errorf("the example reached: %+v, %v", reached, err)
	}
	if flat := strings.Join(strings.Fields(sec), " "); !strings.Contains(flat, "denied by policy: rule "+d.Limits[0].ID+": ... (limit: at most 20 per matter per day; reached)") {
		t.Error("the section does not quote the denial the model reads for the example's limit")
	}
}
