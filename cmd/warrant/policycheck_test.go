package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/provenance"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// The values of researchRun's inputs and results that no output of policy
// check or policy decide may show.
var (
	opposingAddress = "opposing@harbor-freight.example"
	clientAddress   = "gc@ridgeway-logistics.example"
	emailBody       = "Privileged: our settlement floor is 40k."
	draftBody       = "Draft strategy memo, privileged and confidential."
	searchQuery     = "opposing counsel contact"
)

// researchRun is the ledger export of a run that searched the matter (the
// result names opposing counsel's address), drafted a memo, and e-mailed
// the client blind-copying that address, which came only from the search's
// result; the e-mail is held. Every call is decided by policy as the runtime
// decides it (traced over the lines before it) and recorded with its
// metadata. With sealed, the content is sealed (schema 2) and the export
// is read without the key. The seqs: search 2, draft 4, e-mail 6.
func researchRun(t *testing.T, policy *toolpolicy.Policy, sealed bool) string {
	t.Helper()
	meta := toolpolicy.Metadata{FirmID: firmID, MatterID: matterID, AgentKey: "matter_assistant", UserID: userID, Roles: []string{"associate"},
		FirmDomains: []string{"smith-law.example"}, ClientDomains: []string{"ridgeway-logistics.example"}}
	metaRaw, metaSum := recorded(t, meta)
	c := contracts.NewChain(runID, firmID)
	c.Now = func() time.Time { return time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC) }
	if sealed {
		ring, err := seal.NewLocalKeyring(bytes.Repeat([]byte{9}, 32))
		if err != nil {
			t.Fatal(err)
		}
		key, _, err := ring.NewRunKey(context.Background(), firmID, runID)
		if err != nil {
			t.Fatal(err)
		}
		c.Sealer = key
	}
	var src reducer.Sources
	var out [][]byte
	seq := int64(0)
	appendLine := func(e contracts.Event) {
		seq++
		l, err := c.Append(e)
		if err != nil {
			t.Fatalf("append %s: %v", e.EventType(), err)
		}
		// The runtime folds the lines it writes, opened.
		src.Fold(contracts.Line{Seq: seq, Type: e.EventType(), Event: e})
		out = append(out, l.Raw)
	}
	request := func(id, tool string, in map[string]any) (*contracts.ToolRequested, toolpolicy.Decision) {
		b, _ := json.Marshal(in)
		input, h, err := contracts.CanonicalInput(b)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := src.Sources()
		d := policy.DecideOrDeny(toolpolicy.Call{Tool: tool, Input: input, Meta: meta, Sources: s})
		var fired []contracts.FiredRule
		for _, f := range d.FiredRules {
			fired = append(fired, contracts.FiredRule{ID: f.ID, Effect: f.Effect, Reason: f.Reason})
		}
		e := &contracts.ToolRequested{Turn: 1, ToolUseID: id, ToolName: tool, Input: input, InputSHA256: h,
			RiskTier: string(d.Tier), Action: string(d.Action), Reason: d.Reason, MatchedPolicy: d.MatchedPolicy, PolicyVersion: d.PolicyVersion,
			FiredRules: fired, PolicyMetadata: metaRaw, PolicyMetadataSHA256: metaSum, Provenance: d.Provenance}
		appendLine(e)
		return e, d
	}
	appendLine(&contracts.RunStarted{AgentKey: "matter_assistant", Mode: contracts.ModeInvoke, ModelID: modelID, PromptVersion: "v1",
		SchemaVersion: contracts.SchemaVersion, CostCapUSD: "1.00", MaxTokens: 1024, MatterID: matterID, UserID: userID, UserRoles: []string{"associate"},
		CounselMessage: "Find opposing counsel's address and send the client a status update."})
	search, d := request("t1", "search_matter_documents", map[string]any{"matter_id": matterID, "query": searchQuery})
	if d.Action != toolpolicy.ActionAllow {
		t.Fatalf("fixture: the search is %s", d.Action)
	}
	appendLine(&contracts.ToolCompleted{ToolUseID: "t1", ToolName: search.ToolName, InputSHA256: search.InputSHA256, Status: contracts.ToolSuccess,
		Result: json.RawMessage(`{"hits":[{"document_id":"D-3","snippet":"Opposing counsel: ` + opposingAddress + `"}]}`)})
	draft, d := request("t2", "draft_document", map[string]any{"matter_id": matterID, "title": "Strategy", "body": draftBody})
	if d.Action == toolpolicy.ActionDeny {
		t.Fatalf("fixture: the draft is %s", d.Action)
	}
	appendLine(&contracts.ToolCompleted{ToolUseID: "t2", ToolName: draft.ToolName, InputSHA256: draft.InputSHA256, Status: contracts.ToolSuccess,
		EffectRef: sentEffect, Result: json.RawMessage(`{"document_id":"D-9"}`)})
	email, d := request("t3", "send_client_email", map[string]any{"matter_id": matterID, "to": clientAddress,
		"bcc": []string{opposingAddress}, "subject": "Status", "body": emailBody})
	if d.Action != toolpolicy.ActionRequireApproval {
		t.Fatalf("fixture: the e-mail is %s", d.Action)
	}
	appendLine(&contracts.RunBlocked{Approval: contracts.BlockedApproval{ApprovalRequestID: heldApproval, ToolUseID: "t3", ToolName: email.ToolName,
		ToolInput: email.Input, ToolInputHash: email.InputSHA256, RiskTier: email.RiskTier, ExpiresAt: "2026-12-03T10:00:00.000Z",
		PolicyVersion: email.PolicyVersion, FiredRules: email.FiredRules}})
	return string(join(out))
}

// noTracePolicy is the embedded policy as a whole document that declares
// no destinations for send_client_email, so nothing traces them.
func noTracePolicy(t *testing.T) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(toolpolicy.EmbeddedDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	doc["version"] = "no-trace-1"
	email := doc["tools"].(map[string]any)["send_client_email"].(map[string]any)
	if _, ok := email["destinations"]; !ok {
		t.Fatal("fixture: the embedded policy declares no destinations for send_client_email")
	}
	delete(email, "destinations")
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return writeTemp(t, "no-trace.json", b)
}

func mustLoad(t *testing.T, file string) *toolpolicy.Policy {
	t.Helper()
	p, err := toolpolicy.LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func embeddedPolicy(t *testing.T) *toolpolicy.Policy {
	t.Helper()
	p, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// noValues fails when the output shows a value of the run's inputs or
// results: policy check prints ids, never values.
func noValues(t *testing.T, got result) {
	t.Helper()
	for _, v := range []string{opposingAddress, clientAddress, emailBody, draftBody, searchQuery,
		"counsel@harbor-freight.example", "The motion was filed"} {
		if strings.Contains(got.stdout, v) || strings.Contains(got.stderr, v) {
			t.Errorf("the output shows the value %q:\n%s%s", v, got.stdout, got.stderr)
		}
	}
}

// The summary line, its counts in order: replayed, unchanged, newly held,
// newly denied, newly allowed, otherwise changed, not decided.
func summary(version string, ledgers int, n ...int) string {
	return "policy check: " + itoa(n[0]) + " call(s) replayed under policy version " + version + " from " + itoa(ledgers) + " ledger(s): " +
		itoa(n[1]) + " unchanged, " + itoa(n[2]) + " newly held, " + itoa(n[3]) + " newly denied, " + itoa(n[4]) + " newly allowed (less strict), " +
		itoa(n[5]) + " otherwise changed (same action), " + itoa(n[6]) + " not decided (sealed)\n"
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// Issue 29 item 3: the embedded policy replayed over runs it decided
// changes nothing.
func TestPolicyCheckUnchanged(t *testing.T) {
	p := embeddedPolicy(t)
	research := writeTemp(t, "research.ndjson", []byte(researchRun(t, p, false)))
	email := writeTemp(t, "email.ndjson", []byte(newEmailRun(t).export(t)))
	got := runCLI("", "policy", "check", "--ledger", research, "--ledger", email)
	check(t, got, 0, "", "")
	if want := summary(p.Version(), 2, 4, 4, 0, 0, 0, 0, 0); got.stdout != want {
		t.Fatalf("policy check printed\n%s\nwant\n%s", got.stdout, want)
	}
	noValues(t, got)
	// From stdin, with the policy named: the same.
	got = runCLI(researchRun(t, p, false), "policy", "check", "--ledger", "-", "--policy", writeTemp(t, "p.json", toolpolicy.EmbeddedDocument()))
	check(t, got, 0, summary(p.Version(), 1, 3, 3, 0, 0, 0, 0, 0), "")
}

// A stricter overlay holds the draft the recorded policy let run.
func TestPolicyCheckStricterOverlay(t *testing.T) {
	p := embeddedPolicy(t)
	research := writeTemp(t, "research.ndjson", []byte(researchRun(t, p, false)))
	overlay := writeTemp(t, "overlay.json", []byte(`{"extends":"embedded","version":"t1","require_approval":["draft_document"]}`))
	got := runCLI("", "policy", "check", "--ledger", research, "--policy", overlay)
	check(t, got, 0, "", "")
	want := "run " + runID + " seq 4 draft_document (recorded under policy version " + p.Version() + "): allow/medium -> require_approval/high (newly held)\n" +
		summary(p.Version()+"+t1", 1, 3, 2, 1, 0, 0, 0, 0)
	if got.stdout != want {
		t.Fatalf("policy check printed\n%s\nwant\n%s", got.stdout, want)
	}
	noValues(t, got)

	// --json: the same, as one document.
	got = runCLI("", "policy", "check", "--ledger", research, "--policy", overlay, "--json")
	check(t, got, 0, "", "")
	noValues(t, got)
	var rep checkReport
	if err := json.Unmarshal([]byte(got.stdout), &rep); err != nil {
		t.Fatalf("--json printed no report: %v\n%s", err, got.stdout)
	}
	wantRep := checkReport{PolicyVersion: p.Version() + "+t1", Ledgers: []string{research},
		Calls: []replayedCall{{RunID: runID, Seq: 4, Tool: "draft_document", Change: changeHeld, RecordedPolicyVersion: p.Version(),
			RecordedAction: "allow", RecordedTier: "medium", Action: "require_approval", Tier: "high"}},
		Summary: checkSummary{Replayed: 3, Unchanged: 2, NewlyHeld: 1}}
	if g, w := mustJSON(t, rep), mustJSON(t, wantRep); g != w {
		t.Fatalf("--json:\n%s\nwant\n%s", g, w)
	}
	// Every member is in the document, by name.
	for _, k := range []string{`"run_id"`, `"seq"`, `"tool"`, `"recorded_action"`, `"recorded_tier"`, `"action"`, `"tier"`, `"change": "newly_held"`,
		`"replayed": 3`, `"unchanged": 2`, `"newly_held": 1`, `"newly_denied": 0`, `"newly_allowed": 0`, `"not_decided": 0`} {
		if !strings.Contains(got.stdout, k) {
			t.Errorf("--json lacks %s:\n%s", k, got.stdout)
		}
	}

	// The reverse: a run recorded under the overlay (its held draft shown
	// run, as the replay needs nothing past the request), replayed under
	// the embedded policy, is less strict.
	held := writeTemp(t, "held.ndjson", []byte(researchRun(t, mustLoad(t, overlay), false)))
	got = runCLI("", "policy", "check", "--ledger", held)
	check(t, got, 0, "seq 4 draft_document (recorded under policy version "+p.Version()+"+t1): require_approval/high -> allow/medium (newly allowed)\n"+
		summary(p.Version(), 1, 3, 2, 0, 0, 1, 0, 0), "")
}

// A policy that traces send_client_email's destinations fires
// provenance.untrusted_destination on the e-mail whose bcc came only from
// a tool's result; one that declares no destinations does not.
func TestPolicyCheckProvenance(t *testing.T) {
	p := embeddedPolicy(t)
	noTraceFile := noTracePolicy(t)
	noTrace := mustLoad(t, noTraceFile)
	traced := writeTemp(t, "traced.ndjson", []byte(researchRun(t, p, false)))
	untraced := writeTemp(t, "untraced.ndjson", []byte(researchRun(t, noTrace, false)))

	// As recorded: the embedded policy fired the rule, the other did not.
	for _, tc := range []struct {
		file  string
		fired bool
	}{{traced, true}, {untraced, false}} {
		got := runCLI("", "policy", "decide", "--ledger", tc.file, "--seq", "6")
		check(t, got, 0, `"action": "require_approval"`, "")
		noValues(t, got)
		var d toolpolicy.Decision
		if err := json.Unmarshal([]byte(got.stdout), &d); err != nil {
			t.Fatal(err)
		}
		if fired := slices.ContainsFunc(d.FiredRules, func(f toolpolicy.FiredRule) bool { return f.ID == provenance.RuleUntrusted }); !fired {
			t.Fatalf("policy decide --ledger under the embedded policy: %s does not fire", provenance.RuleUntrusted)
		}
		got = runCLI("", "policy", "decide", "send_client_email", "--ledger", tc.file, "--seq", "6", "--policy", noTraceFile)
		check(t, got, 0, `"action": "require_approval"`, "")
		if strings.Contains(got.stdout, provenance.RuleUntrusted) || strings.Contains(got.stdout, `"provenance"`) {
			t.Fatalf("policy decide --ledger under a policy that does not trace:\n%s", got.stdout)
		}
	}

	// Replayed under the policy without destinations: the rule no longer fires.
	got := runCLI("", "policy", "check", "--ledger", traced, "--policy", noTraceFile)
	check(t, got, 0, "run "+runID+" seq 6 send_client_email (recorded under policy version "+p.Version()+
		"): require_approval/high -> require_approval/high (changed); fired then, not now: "+provenance.RuleUntrusted+"\n"+
		summary("no-trace-1", 1, 3, 2, 0, 0, 0, 1, 0), "")
	noValues(t, got)
	// Replayed under the embedded policy, which traces: it fires now.
	got = runCLI("", "policy", "check", "--ledger", untraced)
	check(t, got, 0, "run "+runID+" seq 6 send_client_email (recorded under policy version no-trace-1): "+
		"require_approval/high -> require_approval/high (changed); fired now, not then: "+provenance.RuleUntrusted+"\n"+
		summary(p.Version(), 1, 3, 2, 0, 0, 0, 1, 0), "")
	noValues(t, got)
	got = runCLI("", "policy", "check", "--ledger", untraced, "--json")
	check(t, got, 0, `"fired_now_not_then": [`+"\n        \""+provenance.RuleUntrusted+`"`, "")
	noValues(t, got)
}

// A policy that does not load, an export that does not verify, a file that
// does not read: exit 1, naming the field, the file and line, the file.
func TestPolicyCheckFailures(t *testing.T) {
	p := embeddedPolicy(t)
	good := writeTemp(t, "good.ndjson", []byte(researchRun(t, p, false)))

	broken := strings.Replace(string(toolpolicy.EmbeddedDocument()), `"pointer": "/to"`, `"pointer": "to"`, 1)
	if broken == string(toolpolicy.EmbeddedDocument()) {
		t.Fatal("fixture: the embedded policy has no /to destination to break")
	}
	brokenFile := writeTemp(t, "broken.json", []byte(broken))
	got := runCLI("", "policy", "check", "--ledger", good, "--policy", brokenFile)
	check(t, got, 1, "", "tools.send_client_email.destinations[0].pointer")
	if !strings.Contains(got.stderr, brokenFile) {
		t.Fatalf("the error does not name the file: %s", got.stderr)
	}
	check(t, runCLI("", "policy", "check", "--ledger", good, "--policy", writeTemp(t, "o.json", []byte(`{"extends":"embedded","version":"t1","require_approval":["no_such_tool"]}`))),
		1, "", "no_such_tool")

	// Line 4 (the draft's tool.requested) tampered: its bytes no longer
	// hash to its hash field.
	lines := strings.SplitAfter(researchRun(t, p, false), "\n")
	if !strings.Contains(lines[3], `"draft_document"`) {
		t.Fatal("fixture: line 4 is not the draft's request")
	}
	lines[3] = strings.Replace(lines[3], `"medium"`, `"low"`, 1)
	tampered := writeTemp(t, "tampered.ndjson", []byte(strings.Join(lines, "")))
	got = runCLI("", "policy", "check", "--ledger", good, "--ledger", tampered)
	check(t, got, 1, "", tampered+": line 4: seq 4: "+contracts.ErrHashMismatch.Error())
	noValues(t, got)
	check(t, runCLI("", "policy", "decide", "--ledger", tampered, "--seq", "2"), 1, "", tampered+": line 4: ")
	check(t, runCLI("", "policy", "check", "--ledger", filepath.Join(t.TempDir(), "nope.ndjson")), 1, "", "no such file")
	check(t, runCLI("", "policy", "check", "--ledger", writeTemp(t, "empty.ndjson", nil)), 1, "", "the ledger has no lines")

	// Usage.
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"policy", "check"}, "policy check needs at least one --ledger EXPORT"},
		{[]string{"policy", "check", good}, "policy check takes no positional argument"},
		{[]string{"policy", "check", "--ledger", "-", "--ledger", "-"}, "only one --ledger can read stdin"},
		{[]string{"policy", "check", "--ledger", good, "--json=maybe"}, "policy check: invalid boolean value"},
		{[]string{"policy", "verify"}, "policy needs the subcommand decide or check"},
		{[]string{"policy", "decide", "--seq", "2"}, "--seq needs --ledger EXPORT"},
		{[]string{"policy", "decide", "--ledger", good}, "--ledger needs --seq N"},
		{[]string{"policy", "decide", "--ledger", good, "--seq", "two"}, "invalid value"},
		{[]string{"policy", "decide", "file_court_document", "--ledger", good, "--seq", "6"}, "seq 6 of " + good + " is a call of send_client_email, not file_court_document"},
		{[]string{"policy", "decide", "--ledger", "-", "--seq", "6", "--input", "-"}, "only one of --ledger, --input and --metadata can read stdin"},
	} {
		check(t, runCLI("", tc.args...), 2, "", tc.stderr)
	}
	check(t, runCLI("", "policy", "decide", "--ledger", good, "--seq", "3"), 1, "", good+": seq 3 is a tool.completed line, not tool.requested")
	check(t, runCLI("", "policy", "decide", "--ledger", good, "--seq", "9"), 1, "", good+": no line at seq 9 (the ledger runs to seq 7)")
}

// policy decide --ledger --seq decides the recorded call; --input and
// --metadata replace the line's.
func TestPolicyDecideFromLedger(t *testing.T) {
	p := embeddedPolicy(t)
	research := researchRun(t, p, false)
	file := writeTemp(t, "research.ndjson", []byte(research))
	got := runCLI(research, "policy", "decide", "--ledger", "-", "--seq", "4")
	check(t, got, 0, `"tool_name": "draft_document"`, "")
	var d toolpolicy.Decision
	if err := json.Unmarshal([]byte(got.stdout), &d); err != nil || d.Action != toolpolicy.ActionAllow || d.Tier != toolpolicy.TierMedium ||
		d.PolicyVersion != p.Version() {
		t.Fatalf("decision %+v (%v)", d, err)
	}
	// The e-mail, its recorded decision exactly.
	got = runCLI("", "policy", "decide", "send_client_email", "--ledger", file, "--seq", "6")
	check(t, got, 0, "", "")
	var recordedEmail *contracts.ToolRequested
	if _, err := contracts.ReadExport(strings.NewReader(research), func(l contracts.Line) error {
		if l.Seq == 6 {
			recordedEmail = l.Event.(*contracts.ToolRequested)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(got.stdout), &d); err != nil {
		t.Fatal(err)
	}
	var ids, want []string
	for _, f := range d.FiredRules {
		ids = append(ids, f.ID)
	}
	for _, f := range recordedEmail.FiredRules {
		want = append(want, f.ID)
	}
	if string(d.Tier) != recordedEmail.RiskTier || !slices.Equal(ids, want) || mustJSON(t, d.Provenance) != mustJSON(t, recordedEmail.Provenance) {
		t.Fatalf("decided %s %v %s; recorded %s %v %s", d.Tier, ids, mustJSON(t, d.Provenance), recordedEmail.RiskTier, want, mustJSON(t, recordedEmail.Provenance))
	}
	// Another input, decided over the same sources: without the bcc, the
	// e-mail goes to the client alone, which the matter's registry vouches
	// for, so neither the copy rule nor the provenance rule fires.
	in := writeTemp(t, "in.json", []byte(`{"matter_id":"`+matterID+`","to":"`+clientAddress+`","subject":"Status","body":"ok"}`))
	got = runCLI("", "policy", "decide", "--ledger", file, "--seq", "6", "--input", in)
	check(t, got, 0, `"action": "require_approval"`, "")
	if strings.Contains(got.stdout, provenance.RuleUntrusted) || strings.Contains(got.stdout, "email.copy_outside_firm") {
		t.Fatalf("decided the line's input, not --input's:\n%s", got.stdout)
	}
	// Other metadata: another matter, so the wall denies.
	meta := writeTemp(t, "meta.json", []byte(`{"firm_id":"`+firmID+`","matter_id":"1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"}`))
	check(t, runCLI("", "policy", "decide", "--ledger", file, "--seq", "4", "--metadata", meta), 0, `"action": "deny"`, "")
}

// A sealed export's calls are not decided: their inputs are sealed.
func TestPolicyCheckSealed(t *testing.T) {
	p := embeddedPolicy(t)
	sealed := writeTemp(t, "sealed.ndjson", []byte(researchRun(t, p, true)))
	got := runCLI("", "policy", "check", "--ledger", sealed)
	check(t, got, 0, "run "+runID+" seq 2 search_matter_documents (recorded under policy version "+p.Version()+"): recorded allow/low, not decided: its input is sealed", "")
	if !strings.HasSuffix(got.stdout, summary(p.Version(), 1, 3, 0, 0, 0, 0, 0, 3)) {
		t.Fatalf("policy check printed\n%s", got.stdout)
	}
	noValues(t, got)
	check(t, runCLI("", "policy", "decide", "--ledger", sealed, "--seq", "4"), 1, "", sealed+": seq 4 (draft_document) cannot be decided: its input is sealed")
	// With the input given, a tool that traces nothing is decided; one that
	// traces its destinations still needs the sealed sources.
	in := writeTemp(t, "in.json", []byte(`{"matter_id":"`+matterID+`","title":"t","body":"b"}`))
	check(t, runCLI("", "policy", "decide", "--ledger", sealed, "--seq", "4", "--input", in), 0, `"action": "allow"`, "")
	email := writeTemp(t, "email.json", []byte(`{"matter_id":"`+matterID+`","to":"`+clientAddress+`","subject":"s","body":"b"}`))
	check(t, runCLI("", "policy", "decide", "--ledger", sealed, "--seq", "6", "--input", email), 1, "",
		"seq 6 (send_client_email) cannot be decided: a line before it whose content its destinations are traced to is sealed")
}

// docs/DEPLOY.md's "Replaying a policy over past runs" command runs, as
// written, on an export and a policy written under the names it gives
// them. (cmd/localapi's TestDocCommands does not read DEPLOY.md.)
func TestPolicyCheckDocCommand(t *testing.T) {
	b, err := os.ReadFile("../../docs/DEPLOY.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n### Replaying a policy over past runs\n")
	if !ok {
		t.Fatal(`docs/DEPLOY.md has no "Replaying a policy over past runs"`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	blocks := regexp.MustCompile("(?s)\n```sh\n(.*?)\n```").FindAllStringSubmatch(sec, -1)
	if len(blocks) != 1 || strings.Count(strings.TrimSpace(blocks[0][1]), "\n") != 0 {
		t.Fatalf("want one command in one sh block: %q", blocks)
	}
	command := strings.TrimSpace(blocks[0][1])
	args, ok := strings.CutPrefix(command, "go run ./cmd/warrant ")
	if !ok {
		t.Fatalf("not a warrant command: %s", command)
	}
	dir := t.TempDir()
	p := embeddedPolicy(t)
	files := map[string]string{
		"ledger.ndjson": researchRun(t, p, false),
		"policy.json":   `{"extends":"embedded","version":"t1","require_approval":["draft_document"]}`,
	}
	var argv []string
	for _, f := range strings.Fields(args) {
		if body, ok := files[f]; ok {
			path := filepath.Join(dir, f)
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			f = path
			delete(files, filepath.Base(path))
		}
		argv = append(argv, f)
	}
	if len(files) != 0 {
		t.Fatalf("the command names none of %v: %s", files, command)
	}
	got := runCLI("", argv...)
	check(t, got, 0, "seq 4 draft_document (recorded under policy version "+p.Version()+"): allow/medium -> require_approval/high (newly held)", "")
	noValues(t, got)
	// The decide command the text names, on the same export.
	if !strings.Contains(strings.Join(strings.Fields(sec), " "), "`warrant policy decide --ledger ledger.ndjson --seq N`") {
		t.Fatal("the section no longer names policy decide --ledger")
	}
	check(t, runCLI("", "policy", "decide", "--ledger", filepath.Join(dir, "ledger.ndjson"), "--seq", "4"), 0, `"tool_name": "draft_document"`, "")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// DEPLOY.md's "Try a document before deploying it" command, read from the
// text (its inline code, across a line break) and run as written on an
// overlay, a call and a run's metadata: it decides and names the overlay.
func TestTryAPolicyDocCommand(t *testing.T) {
	b, err := os.ReadFile("../../docs/DEPLOY.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("Try a\\s+document before deploying it: `(go run ./cmd/warrant policy decide [^`]+)`").FindSubmatch(b)
	if m == nil {
		t.Fatal(`docs/DEPLOY.md no longer has "Try a document before deploying it: ` + "`go run ./cmd/warrant policy decide ...`" + `"`)
	}
	command := strings.Join(strings.Fields(string(m[1])), " ")
	args, _ := strings.CutPrefix(command, "go run ./cmd/warrant ")
	dir := t.TempDir()
	files := map[string]string{
		"policy.json": `{"extends":"embedded","version":"firm-7","disable":["email.attachment_count"],"require_approval":["draft_document"]}`,
		"call.json":   `{"matter_id":"M-1","to":"gc@acme-corp.com","subject":"Status","body":"The motion was filed."}`,
		"run.json":    `{"matter_id":"M-1","firm_domains":["smithlaw.com"],"client_domains":["acme-corp.com"]}`,
	}
	var argv []string
	for _, f := range strings.Fields(args) {
		if body, ok := files[f]; ok {
			path := filepath.Join(dir, f)
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			delete(files, f)
			f = path
		}
		argv = append(argv, f)
	}
	if len(files) != 0 {
		t.Fatalf("the command names none of %v: %s", files, command)
	}
	got := runCLI("", argv...)
	check(t, got, 0, `"policy_version": "`+embeddedPolicy(t).Version()+`+firm-7"`, "")
}
