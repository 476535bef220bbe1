package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"

	"github.com/seed-f6d3920e/warrant"
)

const (
	runID    = "5b0c6a2e-7d4f-4c8e-9a51-0b8f2f3c1d01"
	firmID   = "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b"
	matterID = "7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	userID   = "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f"
	modelID  = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
)

type result struct {
	code           int
	stdout, stderr string
}

func runCLI(stdin string, args ...string) result {
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// check asserts the exit code and that each stream contains its fragment.
func check(t *testing.T, got result, code int, stdout, stderr string) {
	t.Helper()
	if got.code != code || !strings.Contains(got.stdout, stdout) || !strings.Contains(got.stderr, stderr) {
		t.Fatalf("exit %d, want %d\nstdout: %q (want %q)\nstderr: %q (want %q)",
			got.code, code, got.stdout, stdout, got.stderr, stderr)
	}
	if code != 0 && got.stdout != "" {
		t.Fatalf("a failure wrote to stdout: %q", got.stdout)
	}
}

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTopLevel(t *testing.T) {
	for _, tc := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{"no command", nil, 2, "", "usage:"},
		{"unknown command", []string{"deploy"}, 2, "", `unknown command "deploy"`},
		{"help", []string{"help"}, 0, "usage:", ""},
		{"-h", []string{"-h"}, 0, "usage:", ""},
		{"subcommand -h", []string{"price", "-h"}, 0, "usage:", ""},
		{"ledger without verify", []string{"ledger"}, 2, "", "ledger needs the subcommand verify"},
		{"ledger wrong subcommand", []string{"ledger", "fold"}, 2, "", "ledger needs the subcommand verify"},
		{"policy without decide", []string{"policy"}, 2, "", "policy needs the subcommand decide"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check(t, runCLI("", tc.args...), tc.code, tc.stdout, tc.stderr)
		})
	}
}

func TestHash(t *testing.T) {
	doc := `{"title":"Motion","court":"SF Superior"}`
	want, err := contracts.InputHash([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	file := writeTemp(t, "input.json", []byte("{\n  \"court\": \"SF Superior\",\n  \"title\": \"Motion\"\n}\n"))
	for _, tc := range []struct {
		name           string
		stdin          string
		args           []string
		code           int
		stdout, stderr string
	}{
		{"stdin", doc, nil, 0, want + "\n", ""},
		{"stdin as -", doc, []string{"-"}, 0, want + "\n", ""},
		{"file, other key order and spacing", "", []string{file}, 0, want + "\n", ""},
		{"syntax error names the byte", `{"court":}`, nil, 1, "", "invalid character '}' at byte 9"},
		{"duplicate key names the field", `{"a":{"b":1,"b":2}}`, nil, 1, "", "field a.b: duplicate key"},
		{"trailing data", `{} {}`, nil, 1, "", "trailing data"},
		{"empty input", "", nil, 1, "", "empty document"},
		{"missing file", "", []string{filepath.Join(t.TempDir(), "nope.json")}, 1, "", "no such file"},
		{"two files", "", []string{file, file}, 2, "", "at most one FILE"},
		{"unknown flag", doc, []string{"--canonical"}, 2, "", "flag provided but not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check(t, runCLI(tc.stdin, append([]string{"hash"}, tc.args...)...), tc.code, tc.stdout, tc.stderr)
		})
	}
}

// ledger builds a small held-then-released run; each line is one NDJSON line.
func ledger(t *testing.T, extra ...contracts.Event) [][]byte {
	t.Helper()
	input := json.RawMessage(`{"matter_id":"` + matterID + `","court":"SF Superior"}`)
	h, err := contracts.InputHash(input)
	if err != nil {
		t.Fatal(err)
	}
	const approval, effect = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b", "1d2c3b4a-5e6f-4789-8abc-def012345678"
	events := []contracts.Event{
		&contracts.RunStarted{AgentKey: "matter_assistant", Mode: contracts.ModeInvoke, ModelID: modelID, PromptVersion: "v1",
			SchemaVersion: contracts.SchemaVersion, CostCapUSD: "1.00", MaxTokens: 1024, MatterID: matterID, UserID: userID},
		&contracts.ModelUsage{Turn: 1, ModelID: modelID, Usage: contracts.Usage{InputTokens: 1200, OutputTokens: 350}, CostUSD: "0.009735"},
		&contracts.ToolRequested{Turn: 1, ToolUseID: "t1", ToolName: "file_court_document", Input: input, InputSHA256: h,
			RiskTier: "high", Action: "require_approval", Reason: "court filing", MatchedPolicy: "tools.file_court_document"},
		&contracts.RunBlocked{Approval: contracts.BlockedApproval{ApprovalRequestID: approval, ToolUseID: "t1",
			ToolName: "file_court_document", ToolInput: input, ToolInputHash: h, RiskTier: "high", ExpiresAt: "2026-12-03T10:00:00.000Z"}},
		&contracts.ApprovalDecided{ApprovalRequestID: approval, Decision: warrant.DecisionApproved, DecidedBy: "c0c0c0c0-1111-4222-8333-444455556666", ToolInputHash: h,
			RequestedBy: userID, Separation: contracts.SeparationEnforced, DecidedAs: contracts.RoleCounsel},
		&contracts.RunReleased{ApprovalRequestID: approval, Decision: warrant.DecisionApproved, EffectRef: effect},
		&contracts.ToolCompleted{ToolUseID: "t1", ToolName: "file_court_document", InputSHA256: h, Status: contracts.ToolSuccess,
			EffectRef: effect, Result: json.RawMessage(`{"filing_id":"F-1"}`)},
		&contracts.RunCompleted{StopReason: "end_turn", FinalText: "Filed."},
	}
	c := contracts.NewChain(runID, firmID)
	c.Now = func() time.Time { return time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC) }
	var raws [][]byte
	for _, e := range append(events, extra...) {
		l, err := c.Append(e)
		if err != nil {
			t.Fatalf("append %s: %v", e.EventType(), err)
		}
		raws = append(raws, l.Raw)
	}
	return raws
}

func join(lines [][]byte) []byte { return append(bytes.Join(lines, []byte("\n")), '\n') }

func TestLedgerVerify(t *testing.T) {
	good := ledger(t)

	// A flipped byte inside line 3's payload: the line no longer hashes to
	// its own hash field.
	flipped := bytes.Clone(join(good))
	off := bytes.Index(flipped, []byte(`"court filing"`))
	if off < 0 || bytes.Count(flipped[:off], []byte("\n")) != 2 {
		t.Fatal("fixture: the flipped byte must land on line 3")
	}
	flipped[off+1] ^= 0x20 // "court" -> "Court"

	// A well-formed, correctly chained line the reducer refuses.
	afterTerminal := ledger(t, &contracts.TurnDelta{Turn: 2, Text: "one more thing"})

	// Lines 4 and 5 swapped: each is intact, the chain is not.
	swapped := ledger(t)
	swapped[3], swapped[4] = swapped[4], swapped[3]

	dir := t.TempDir()
	goodFile := filepath.Join(dir, "good.ndjson")
	if err := os.WriteFile(goodFile, join(good), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name           string
		stdin          []byte
		args           []string
		code           int
		stdout, stderr string
	}{
		{"good from stdin", join(good), nil, 0, `"status": "completed"`, ""},
		{"good from file", nil, []string{goodFile}, 0, `"cost_usd": "0.009735"`, ""},
		{"flipped byte", flipped, nil, 1, "", "line 3: seq 3: " + contracts.ErrHashMismatch.Error()},
		{"event after completion", join(afterTerminal), nil, 1, "", "line 9: seq 9: terminal: "},
		{"swapped lines", join(swapped), nil, 1, "", "line 4: ledger seq 5: expected seq 4"},
		{"blank line", append(join(good[:2]), '\n'), nil, 1, "", "line 3: empty line"},
		{"not JSON", []byte("hello\n"), nil, 1, "", "line 1: "},
		{"empty ledger", nil, nil, 1, "", "the ledger has no lines"},
		{"missing file", nil, []string{filepath.Join(dir, "nope.ndjson")}, 1, "", "no such file"},
		{"two files", nil, []string{goodFile, goodFile}, 2, "", "at most one FILE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI(string(tc.stdin), append([]string{"ledger", "verify"}, tc.args...)...)
			check(t, got, tc.code, tc.stdout, tc.stderr)
			if tc.code != 0 {
				if !strings.HasPrefix(got.stderr, "line ") && strings.HasPrefix(tc.stderr, "line ") {
					t.Fatalf("stderr %q does not start with the line number", got.stderr)
				}
				return
			}
			// stdout is exactly the reducer's state, readable back.
			var s reducer.RunState
			if err := json.Unmarshal([]byte(got.stdout), &s); err != nil {
				t.Fatalf("stdout is not a RunState: %v", err)
			}
			if s.LastSeq != int64(len(good)) || s.ToolsSucceeded != 1 || s.HeldOn != "" {
				t.Fatalf("folded state %+v", s)
			}
		})
	}
}

// outline is what policy decide prints without --input: the tool's floor,
// the tier the rules that need no input give it, and the rules it could
// not evaluate.
type outline struct {
	ToolName      string                 `json:"tool_name"`
	Floor         toolpolicy.Tier        `json:"floor"`
	Tier          toolpolicy.Tier        `json:"tier"`
	Action        toolpolicy.Action      `json:"action"`
	Reason        string                 `json:"reason"`
	MatchedPolicy string                 `json:"matched_policy"`
	PolicyVersion string                 `json:"policy_version"`
	FiredRules    []toolpolicy.FiredRule `json:"fired_rules,omitempty"`
	NotEvaluated  []toolpolicy.FiredRule `json:"not_evaluated,omitempty"`
}

// Without --input, the answer is the tool's floor and what the rules that
// need no input make of it, with the rules that read the input listed as
// not evaluated: a court filing needs a warrant, it is not "prohibited"
// because the matter wall could not be checked.
func TestPolicyDecide(t *testing.T) {
	custom := writeTemp(t, "policy.json", []byte(`{"version":"test-1",
		"default":{"tier":"high","reason":"unlisted tools need a warrant"},
		"tools":{"search_matter_documents":{"tier":"medium","reason":"audited read"}}}`))
	broken := writeTemp(t, "broken.json", []byte(`{"version":"x","default":{"tier":"low","reason":"r"},"tools":{}}`))
	meta := writeTemp(t, "meta.json", []byte(`{"matter_id":"M-1","firm_domains":["smithlaw.com"],"client_domains":["acme-corp.com"]}`))
	const (
		low, medium, high, prohibited = toolpolicy.TierLow, toolpolicy.TierMedium, toolpolicy.TierHigh, toolpolicy.TierProhibited
		allow, approve, deny          = toolpolicy.ActionAllow, toolpolicy.ActionRequireApproval, toolpolicy.ActionDeny
	)
	email := []string{"matter.wall", "email.recipient_outside_client", "email.client_communication", "email.copy_outside_firm",
		"email.attachment_count", "email.attachment_size", "email.credential_outside_firm", "email.ssn_outside_firm", "email.card_number_outside_firm"}
	for _, tc := range []struct {
		name               string
		args               []string
		code               int
		floor, tier        toolpolicy.Tier
		action             toolpolicy.Action
		matched            string
		fired, unevaluated []string
		stderr             string
	}{
		{"court filing", []string{"file_court_document"}, 0, high, high, approve, "tools.file_court_document",
			[]string{"court.filing_requires_warrant"}, []string{"matter.wall", "court.unredacted_identifiers", "court.credential"}, ""},
		{"court filing with metadata", []string{"file_court_document", "--metadata", meta}, 0, high, high, approve, "tools.file_court_document",
			[]string{"court.filing_requires_warrant"}, []string{"matter.wall", "court.unredacted_identifiers", "court.credential"}, ""},
		{"low tier", []string{"search_matter_documents"}, 0, low, low, allow, "tools.search_matter_documents", nil, []string{"matter.wall"}, ""},
		{"high tier", []string{"send_client_email"}, 0, high, high, approve, "tools.send_client_email", nil, append(email, "provenance.unknown_destination"), ""},
		{"prohibited tool", []string{"delete_matter_document"}, 0, prohibited, prohibited, deny, "tools.delete_matter_document", nil, []string{"matter.wall"}, ""},
		{"unlisted tool gets the default", []string{"wire_funds"}, 0, prohibited, prohibited, deny, "default", nil, nil, ""},
		{"policy flag after the tool", []string{"search_matter_documents", "--policy", custom}, 0, medium, medium, allow, "tools.search_matter_documents", nil, nil, ""},
		{"policy flag before the tool", []string{"-policy=" + custom, "wire_funds"}, 0, high, high, approve, "default", nil, nil, ""},
		{"bad tool name", []string{"file court document"}, 1, "", "", "", "", nil, nil, "invalid tool name"},
		{"name starting with a digit", []string{"1tool"}, 1, "", "", "", "", nil, nil, "invalid tool name"},
		{"invalid policy file", []string{"x", "--policy", broken}, 1, "", "", "", "", nil, nil, "default tier must not allow"},
		{"missing policy file", []string{"x", "--policy", filepath.Join(t.TempDir(), "nope.json")}, 1, "", "", "", "", nil, nil, "no such file"},
		{"no tool", nil, 2, "", "", "", "", nil, nil, "exactly one TOOL"},
		{"two tools", []string{"a", "b"}, 2, "", "", "", "", nil, nil, "exactly one TOOL"},
		{"policy flag without a value", []string{"x", "--policy"}, 2, "", "", "", "", nil, nil, "flag needs an argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI("", append([]string{"policy", "decide"}, tc.args...)...)
			check(t, got, tc.code, "", tc.stderr)
			if tc.code != 0 {
				return
			}
			var o outline
			if err := contracts.DecodeStrict([]byte(got.stdout), &o); err != nil {
				t.Fatalf("stdout is not the name-only answer: %v\n%s", err, got.stdout)
			}
			ids := func(rs []toolpolicy.FiredRule) (out []string) {
				for _, r := range rs {
					out = append(out, r.ID)
				}
				return out
			}
			if o.ToolName != tc.args[0] && o.ToolName != tc.args[len(tc.args)-1] || o.Floor != tc.floor || o.Tier != tc.tier ||
				o.Action != tc.action || o.MatchedPolicy != tc.matched || o.Reason == "" || o.PolicyVersion == "" ||
				!reflect.DeepEqual(ids(o.FiredRules), tc.fired) || !reflect.DeepEqual(ids(o.NotEvaluated), tc.unevaluated) {
				t.Fatalf("name-only answer %+v\nwant floor %s, tier %s, %s, %s, fired %v, not evaluated %v",
					o, tc.floor, tc.tier, tc.action, tc.matched, tc.fired, tc.unevaluated)
			}
			for _, r := range o.NotEvaluated {
				if !strings.Contains(r.Reason, "not evaluated: the call has no input") {
					t.Errorf("rule %s: reason %q does not say why it was not evaluated", r.ID, r.Reason)
				}
			}
		})
	}
}

func TestPolicyDecideWithInput(t *testing.T) {
	meta := writeTemp(t, "meta.json", []byte(`{"firm_id":"f-1","matter_id":"M-1","agent_key":"matter_assistant","user_id":"u-1",
		"roles":["associate"],"firm_domains":["smithlaw.com"],"client_domains":["acme-corp.com"]}`))
	toClient := writeTemp(t, "to-client.json", []byte(`{"to": "ceo@acme-corp.com", "matter_id": "M-1", "subject": "Update", "body": "All is well."}`))
	withSSN := writeTemp(t, "ssn.json", []byte(`{"matter_id":"M-1","to":"ceo@acme-corp.com","subject":"SSN","body":"It is 123-45-6789."}`))
	otherMatter := writeTemp(t, "other.json", []byte(`{"matter_id":"M-2","query":"lease"}`))
	search := writeTemp(t, "search.json", []byte(`{"matter_id":"M-1","query":"lease"}`))
	notObject := writeTemp(t, "array.json", []byte(`["M-1"]`))
	duplicate := writeTemp(t, "dup.json", []byte(`{"matter_id":"M-1","matter_id":"M-2"}`))
	badMeta := writeTemp(t, "bad-meta.json", []byte(`{"matter":"M-1"}`))
	camelMeta := writeTemp(t, "camel-meta.json", []byte(`{"MatterID":"M-1"}`))
	overlay := writeTemp(t, "overlay.json", []byte(`{"extends":"embedded","version":"ops-1","require_approval":["search_matter_documents"]}`))
	badOverlay := writeTemp(t, "bad-overlay.json", []byte(`{"extends":"embedded","version":"ops-1","disable":["no.such.rule"]}`))
	const (
		clientReason = "A recipient is on the client's e-mail domains: a privileged attorney-client communication, to be logged as privileged and withheld from production."
		ssnReason    = "The e-mail appears to hold a US Social Security number and goes outside the firm; send it through the firm's secure channel, or only its last four digits."
		wallReason   = "The call names another matter than the run's; the ethical wall keeps every run inside its own matter."
	)
	for _, tc := range []struct {
		name    string
		args    []string
		stdin   string
		code    int
		tier    toolpolicy.Tier
		version string
		fired   []toolpolicy.FiredRule
		stderr  string
	}{
		{"e-mail to the client", []string{"send_client_email", "--input", toClient, "--metadata", meta}, "", 0, toolpolicy.TierHigh, "2026-12-06.1",
			[]toolpolicy.FiredRule{{ID: "email.client_communication", Effect: "record", Reason: clientReason}}, ""},
		{"input on stdin", []string{"send_client_email", "--metadata", meta, "--input", "-"}, `{"matter_id":"M-1","to":"ceo@acme-corp.com"}`, 0,
			toolpolicy.TierHigh, "2026-12-06.1", []toolpolicy.FiredRule{{ID: "email.client_communication", Effect: "record", Reason: clientReason}}, ""},
		{"metadata on stdin", []string{"send_client_email", "--input", toClient, "--metadata=-"}, `{"matter_id":"M-1","client_domains":["acme-corp.com"],"firm_domains":["smithlaw.com"]}`, 0,
			toolpolicy.TierHigh, "2026-12-06.1", []toolpolicy.FiredRule{{ID: "email.client_communication", Effect: "record", Reason: clientReason}}, ""},
		{"an SSN to the client", []string{"--input=" + withSSN, "--metadata=" + meta, "send_client_email"}, "", 0, toolpolicy.TierProhibited, "2026-12-06.1",
			[]toolpolicy.FiredRule{{ID: "email.client_communication", Effect: "record", Reason: clientReason}, {ID: "email.ssn_outside_firm", Effect: "deny", Reason: ssnReason}}, ""},
		{"another matter", []string{"search_matter_documents", "--input", otherMatter, "--metadata", meta}, "", 0, toolpolicy.TierProhibited, "2026-12-06.1",
			[]toolpolicy.FiredRule{{ID: "matter.wall", Effect: "deny", Reason: wallReason}}, ""},
		{"the run's matter", []string{"search_matter_documents", "--input", search, "--metadata", meta}, "", 0, toolpolicy.TierLow, "2026-12-06.1", nil, ""},
		{"no metadata: the matter is unknown", []string{"search_matter_documents", "--input", search}, "", 0, toolpolicy.TierProhibited, "2026-12-06.1",
			[]toolpolicy.FiredRule{{ID: "matter.wall", Effect: "deny", Reason: wallReason +
				" (condition could not be evaluated: metadata the rule compares with is not known; treated as fired, fail-closed)"}}, ""},
		{"input not an object", []string{"search_matter_documents", "--input", notObject, "--metadata", meta}, "", 0, toolpolicy.TierProhibited, "2026-12-06.1",
			[]toolpolicy.FiredRule{{ID: "matter.wall", Effect: "deny", Reason: wallReason +
				" (condition could not be evaluated: the input is not a valid JSON object; treated as fired, fail-closed)"}}, ""},
		{"an overlay", []string{"search_matter_documents", "--policy", overlay, "--input", search, "--metadata", meta}, "", 0, toolpolicy.TierHigh, "2026-12-06.1+ops-1", nil, ""},
		{"a bad overlay", []string{"search_matter_documents", "--policy", badOverlay, "--input", search}, "", 1, "", "", nil, `field disable[0]: the embedded policy has no rule "no.such.rule"`},
		{"input with a duplicate key", []string{"search_matter_documents", "--input", duplicate}, "", 1, "", "", nil, "duplicate key"},
		{"input not JSON", []string{"search_matter_documents", "--input", "-"}, "{", 1, "", "", nil, "stdin"},
		{"missing input file", []string{"search_matter_documents", "--input", filepath.Join(t.TempDir(), "nope.json")}, "", 1, "", "", nil, "no such file"},
		{"unknown metadata field", []string{"search_matter_documents", "--metadata", badMeta}, "", 1, "", "", nil, "field matter: unknown field"},
		{"metadata in camel case", []string{"search_matter_documents", "--metadata", camelMeta}, "", 1, "", "", nil, "unknown field"},
		{"both on stdin", []string{"search_matter_documents", "--metadata", "-", "--input", "-"}, "", 2, "", "", nil, "only one of --input and --metadata"},
		{"bad tool name with input", []string{"send email", "--input", toClient}, "", 1, "", "", nil, "invalid tool name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI(tc.stdin, append([]string{"policy", "decide"}, tc.args...)...)
			check(t, got, tc.code, "", tc.stderr)
			if tc.code != 0 {
				return
			}
			var d toolpolicy.Decision
			if err := contracts.DecodeStrict([]byte(got.stdout), &d); err != nil {
				t.Fatalf("stdout is not a Decision: %v\n%s", err, got.stdout)
			}
			if d.Tier != tc.tier || d.PolicyVersion != tc.version || !reflect.DeepEqual(d.FiredRules, tc.fired) {
				t.Fatalf("decision %+v\nwant tier %s, version %s, fired %+v", d, tc.tier, tc.version, tc.fired)
			}
			if len(tc.fired) > 0 && !strings.Contains(got.stdout, `"fired_rules": [`) {
				t.Fatalf("stdout does not show fired_rules:\n%s", got.stdout)
			}
		})
	}
}

func TestPrice(t *testing.T) {
	t.Setenv(pricing.EnvPricingFile, "")
	os.Unsetenv(pricing.EnvPricingFile) // t.Setenv restores whatever was there

	cost := func(u contracts.Usage) string {
		n, err := pricing.TokenCost(modelID, u)
		if err != nil {
			t.Fatal(err)
		}
		return pricing.FormatUSD(n) + "\n"
	}
	for _, tc := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{"input and output", []string{modelID, "1200", "350"}, 0,
			cost(contracts.Usage{InputTokens: 1200, OutputTokens: 350}), ""},
		{"with cache tokens", []string{modelID, "900", "120", "--cache-read", "2400", "--cache-write=1500"}, 0,
			cost(contracts.Usage{InputTokens: 900, OutputTokens: 120, CacheReadInputTokens: 2400, CacheWriteInputTokens: 1500}), ""},
		{"flags first", []string{"--cache-read=2400", modelID, "900", "120"}, 0,
			cost(contracts.Usage{InputTokens: 900, OutputTokens: 120, CacheReadInputTokens: 2400}), ""},
		{"zero tokens", []string{modelID, "0", "0"}, 0, "0.00\n", ""},
		{"unknown model", []string{"anthropic.claude-9", "1", "1"}, 1, "", `unknown model "anthropic.claude-9"`},
		{"missing output", []string{modelID, "1200"}, 2, "", "price needs MODEL INPUT OUTPUT"},
		{"not a number", []string{modelID, "1.5k", "3"}, 2, "", `INPUT must be a non-negative token count, got "1.5k"`},
		{"negative cache", []string{modelID, "1", "1", "--cache-read", "-5"}, 2, "", "--cache-read must be a non-negative"},
		{"unknown flag", []string{modelID, "1", "1", "--discount", "5"}, 2, "", "flag provided but not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI("", append([]string{"price"}, tc.args...)...)
			check(t, got, tc.code, tc.stdout, tc.stderr)
			if tc.code == 0 && got.stdout != tc.stdout {
				t.Fatalf("stdout %q, want exactly %q", got.stdout, tc.stdout)
			}
		})
	}
}

// The operator checks the price an override file gives, as the agent would.
func TestPriceHonoursPricingFile(t *testing.T) {
	file := writeTemp(t, "prices.json", []byte(`{"version":"t","currency":"USD","unit":"per_million_tokens",
		"models":{"test.model-v1:0":{"input":"1.00","output":"2.00","source":"test","as_of":"2026-12-01"}}}`))
	t.Setenv(pricing.EnvPricingFile, file)
	check(t, runCLI("", "price", "test.model-v1:0", "1000000", "500000"), 0, "2.00\n", "")
	check(t, runCLI("", "price", modelID, "1", "1"), 1, "", "unknown model")
}
