package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// historyPolicy is docs/examples/history/policy.json, the example
// docs/DEPLOY.md audits a matter-scoped prior with.
const historyPolicy = "../../docs/examples/history/policy.json"

const (
	checkRunID = "2a3b4c5d-6e7f-4a8b-9c0d-1e2f3a4b5c6d"
	fileRunID  = "8f7e6d5c-4b3a-4c2d-9e1f-0a9b8c7d6e5f"
)

// exportOf chains events into a run's export.
func exportOf(t *testing.T, run string, evs ...contracts.Event) ([]contracts.Line, string) {
	t.Helper()
	c := contracts.NewChain(run, firmID)
	c.Now = func() time.Time { return time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC) }
	var lines []contracts.Line
	var out []byte
	for _, e := range evs {
		l, err := c.Append(e)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
		out = append(append(out, l.Raw...), '\n')
	}
	return lines, string(out)
}

// matterRuns are the exports of two runs of one matter under the example
// policy: the first checked conflicts (none found), the second filed,
// decided on the first run's step as the runtime decides it (its line
// records the step: run, seq, hash). matter is the first run's matter.
func matterRuns(t *testing.T, matter string) (check, file string) {
	t.Helper()
	p := mustLoad(t, historyPolicy)
	started := func(m string) *contracts.RunStarted {
		return &contracts.RunStarted{AgentKey: "matter_assistant", Mode: contracts.ModeInvoke, ModelID: modelID, PromptVersion: "v1",
			SchemaVersion: contracts.SchemaVersion, CostCapUSD: "1.00", MaxTokens: 1024, MatterID: m, UserID: userID, UserRoles: []string{"associate"}}
	}
	request := func(tool, use, in string, matter []toolpolicy.Step) (*contracts.ToolRequested, string) {
		meta := toolpolicy.Metadata{FirmID: firmID, MatterID: matterID, AgentKey: "matter_assistant", UserID: userID, Roles: []string{"associate"}}
		metaRaw, metaSum := recorded(t, meta)
		input, h, err := contracts.CanonicalInput([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		d := p.DecideOrDeny(toolpolicy.Call{Tool: tool, Input: input, Meta: meta, History: []toolpolicy.Step{}, Matter: matter})
		var fired []contracts.FiredRule
		for _, f := range d.FiredRules {
			fired = append(fired, contracts.FiredRule{ID: f.ID, Effect: f.Effect, Reason: f.Reason})
		}
		req := &contracts.ToolRequested{Turn: 1, ToolUseID: use, ToolName: tool, Input: input, InputSHA256: h,
			RiskTier: string(d.Tier), Action: string(d.Action), Reason: d.Reason, MatchedPolicy: d.MatchedPolicy, PolicyVersion: d.PolicyVersion,
			FiredRules: fired, PolicyMetadata: metaRaw, PolicyMetadataSHA256: metaSum}
		for _, st := range d.MatterSteps {
			req.MatterSteps = append(req.MatterSteps, contracts.MatterStep{RunID: st.RunID, Seq: st.Seq, Hash: st.Hash, Tool: st.Tool, Status: st.Status, Unread: st.Unread})
		}
		return req, h
	}
	req, h := request("check_conflicts", "t1", `{"parties":["Acme"]}`, nil)
	result := json.RawMessage(`{"conflict":false,"matches":[]}`)
	checkLines, check := exportOf(t, checkRunID, started(matter), req,
		&contracts.ToolCompleted{ToolUseID: "t1", ToolName: "check_conflicts", InputSHA256: h, Status: contracts.ToolSuccess, Result: result},
		&contracts.RunCompleted{StopReason: "end_turn", FinalText: "No conflict."})
	done := checkLines[2]
	step := toolpolicy.Step{RunID: checkRunID, Seq: done.Seq, Hash: done.Hash, Tool: "check_conflicts", Status: contracts.ToolSuccess, Result: result}
	filing, fh := request("file_court_document", "t1", `{"title":"Motion to Compel"}`, []toolpolicy.Step{step})
	if filing.Action != "require_approval" || len(filing.MatterSteps) != 1 {
		t.Fatalf("the filing after the check: %s, %+v", filing.Action, filing.MatterSteps)
	}
	_, file = exportOf(t, fileRunID, started(matterID), filing,
		&contracts.ToolCompleted{ToolUseID: "t1", ToolName: "file_court_document", InputSHA256: fh, Status: contracts.ToolDenied,
			Result: json.RawMessage(`{"error":"not filed"}`)},
		&contracts.RunCompleted{StopReason: "end_turn", FinalText: "Not filed."})
	return check, file
}

// docs/DEPLOY.md, "Prior steps": the audit of a decision that read another
// run of the matter, as the docs run it. Without that run's export it says
// which run and seq it needs; with it, the step is checked and the
// decision re-derived; an export of another matter's run is refused.
func TestAuditMatterPrior(t *testing.T) {
	check, file := matterRuns(t, matterID)
	other := writeTemp(t, "check.ndjson", []byte(check))
	ledger := writeTemp(t, "ledger.ndjson", []byte(file))

	got := runCLI("", "ledger", "audit", "--policy", historyPolicy, ledger)
	check2 := "rests on run " + checkRunID + "'s check_conflicts (success) at seq 3"
	if got.code != 1 || !strings.Contains(got.stderr, check2) || !strings.Contains(got.stderr, "--matter-ledger") {
		t.Fatalf("without the other run's export: %+v", got)
	}
	got = runCLI("", "ledger", "audit", "--policy", historyPolicy, "--matter-ledger", other, ledger)
	if got.code != 0 || !strings.Contains(got.stdout, "read run "+checkRunID+"'s check_conflicts at seq 3 (checked in its export)") {
		t.Fatalf("with it: %+v", got)
	}
	// A replay does not hold the other run: the call is not decided,
	// rather than decided on nothing.
	got = runCLI("", "policy", "check", "--ledger", ledger, "--policy", historyPolicy)
	if got.code != 0 || !strings.Contains(got.stdout, "1 not decided") || !strings.Contains(got.stdout, "reads the matter's other runs") {
		t.Fatalf("policy check: %+v", got)
	}
	got = runCLI("", "policy", "decide", "--ledger", ledger, "--seq", "2", "--policy", historyPolicy)
	if got.code != 1 || !strings.Contains(got.stderr, "reads the matter's other runs") {
		t.Fatalf("policy decide --ledger: %+v", got)
	}
	elsewhere, _ := matterRuns(t, "6b5a4c3d-2e1f-4a0b-9c8d-7e6f5a4b3c2d")
	got = runCLI("", "ledger", "audit", "--policy", historyPolicy, "--matter-ledger", writeTemp(t, "elsewhere.ndjson", []byte(elsewhere)), ledger)
	if got.code != 1 || !strings.Contains(got.stderr, "not of this run's firm and matter") {
		t.Fatalf("with another matter's run: %+v", got)
	}
}

// DEPLOY.md's audit of a matter-scoped prior, read from the text and run as
// written (from the repository's root, with the two exports it names):
// it passes with the other run's export, and without it names the run and
// seq it needs, as the text quotes.
func TestAuditMatterPriorDocCommand(t *testing.T) {
	b, err := os.ReadFile("../../docs/DEPLOY.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?m)^go run ./cmd/warrant (ledger audit [^\n]*--matter-ledger[^\n]*)$").FindSubmatch(b)
	if m == nil {
		t.Fatal("docs/DEPLOY.md no longer has the `go run ./cmd/warrant ledger audit ... --matter-ledger ...` command")
	}
	check, file := matterRuns(t, matterID)
	dir := t.TempDir()
	files := map[string]string{"check-run.ndjson": check, "ledger.ndjson": file}
	var argv, without []string
	skip := false
	for _, f := range strings.Fields(string(m[1])) {
		if body, ok := files[f]; ok {
			path := filepath.Join(dir, f)
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			delete(files, f)
			f = path
		} else if strings.HasPrefix(f, "docs/") {
			f = "../../" + f // the command runs from the repository's root
		}
		argv = append(argv, f)
		if f == "--matter-ledger" {
			skip = true
			continue
		}
		if !skip {
			without = append(without, f)
		}
		skip = false
	}
	if len(files) != 0 {
		t.Fatalf("the command names none of %v: %s", files, m[1])
	}
	got := runCLI("", argv...)
	if got.code != 0 || !strings.Contains(got.stdout, "read run "+checkRunID+"'s check_conflicts at seq 3 (checked in its export)") {
		t.Fatalf("%s: %+v", m[1], got)
	}
	quoted := regexp.MustCompile("(?s)Without it the audit exits 1 naming what it needs \\(`(seq 2: .*?)`\\)").FindSubmatch(b)
	if quoted == nil {
		t.Fatal("docs/DEPLOY.md no longer quotes what the audit says without the other run's export")
	}
	want := strings.ReplaceAll(strings.Join(strings.Fields(string(quoted[1])), " "), "<run_id>", checkRunID)
	got = runCLI("", without...)
	if got.code != 1 || !strings.Contains(got.stderr, want) {
		t.Fatalf("without --matter-ledger: %+v, want %q", got, want)
	}
}
