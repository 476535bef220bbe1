package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/provenance"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// emailRun is the events of a run whose e-mail to the client, copying
// someone outside the firm, was held, approved (as counsel edited it, when
// edit is set; after the client's domains changed) and sent, every decision
// made by policy p as the runtime makes it and recorded with its metadata.
// change, when set, edits the events before they are chained, as an
// insider with table access who re-hashes the chain would.
type emailRun struct {
	policy  *toolpolicy.Policy
	edit    bool
	change  func(evs []contracts.Event)
	meta    toolpolicy.Metadata
	changed toolpolicy.Metadata // the metadata after the client's domains changed
}

const (
	heldApproval = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"
	sentEffect   = "1d2c3b4a-5e6f-4789-8abc-def012345678"
)

func newEmailRun(t *testing.T) *emailRun {
	t.Helper()
	p, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	meta := toolpolicy.Metadata{FirmID: firmID, MatterID: matterID, AgentKey: "matter_assistant", UserID: userID, Roles: []string{"associate"},
		FirmDomains: []string{"smith-law.example"}, ClientDomains: []string{"ridgeway-logistics.example"}}
	changed := meta
	changed.ClientDomains = []string{"ridgeway-holdings.example"}
	return &emailRun{policy: p, meta: meta, changed: changed}
}

func recorded(t *testing.T, m toolpolicy.Metadata) (json.RawMessage, string) {
	t.Helper()
	raw, sum, err := contracts.RecordMetadata(m)
	if err != nil {
		t.Fatal(err)
	}
	return raw, sum
}

func (r *emailRun) events(t *testing.T) []contracts.Event {
	t.Helper()
	canon := func(v any) (json.RawMessage, string) {
		b, _ := json.Marshal(v)
		c, h, err := contracts.CanonicalInput(b)
		if err != nil {
			t.Fatal(err)
		}
		return c, h
	}
	input, h := canon(map[string]any{"matter_id": matterID, "to": "gc@ridgeway-logistics.example", "cc": []string{"counsel@harbor-freight.example"},
		"subject": "Status", "body": "The motion was filed."})
	edited, eh := canon(map[string]any{"matter_id": matterID, "to": "gc@ridgeway-logistics.example", "subject": "Status", "body": "The motion was filed."})
	// The model's call is traced to counsel's message (the run's only
	// source before it); counsel's edit and the release's check decide
	// what counsel signed, which is not traced.
	const counselMessage = "Tell gc@ridgeway-logistics.example the motion was filed, copying counsel@harbor-freight.example."
	traced := func(in json.RawMessage, m toolpolicy.Metadata) toolpolicy.Decision {
		return r.policy.DecideOrDeny(toolpolicy.Call{Tool: "send_client_email", Input: in, Meta: m,
			Sources: &provenance.Sources{Counsel: counselMessage}})
	}
	decide := func(in json.RawMessage, m toolpolicy.Metadata) toolpolicy.Decision {
		return r.policy.DecideOrDeny(toolpolicy.Call{Tool: "send_client_email", Input: in, Meta: m, Signed: true})
	}
	fired := func(d toolpolicy.Decision) []contracts.FiredRule {
		var out []contracts.FiredRule
		for _, f := range d.FiredRules {
			out = append(out, contracts.FiredRule{ID: f.ID, Effect: f.Effect, Reason: f.Reason})
		}
		return out
	}
	d := traced(input, r.meta)
	if d.Action != toolpolicy.ActionRequireApproval || len(d.Provenance) != 2 {
		t.Fatalf("fixture: the e-mail is %s", d.Action)
	}
	metaRaw, metaSum := recorded(t, r.meta)
	decided := &contracts.ApprovalDecided{ApprovalRequestID: heldApproval, Decision: warrant.DecisionApproved, DecidedBy: "c0c0c0c0-1111-4222-8333-444455556666",
		ToolInputHash: h, RequestedBy: userID, Separation: contracts.SeparationEnforced, DecidedAs: contracts.RoleCounsel}
	execInput, execHash, execMeta := input, h, r.meta
	if r.edit {
		ed := decide(edited, r.changed)
		raw, sum := recorded(t, r.changed)
		decided.EditedInput, decided.EditedInputSHA256, decided.EditedRiskTier, decided.EditedFiredRules = edited, eh, string(ed.Tier), fired(ed)
		decided.EditedPolicyVersion, decided.EditedPolicyMetadata, decided.EditedPolicyMetadataSHA256 = ed.PolicyVersion, raw, sum
		execInput, execHash, execMeta = edited, eh, r.changed
	}
	rd := decide(execInput, execMeta)
	raw, sum := recorded(t, execMeta)
	check := &contracts.PolicyCheck{ToolName: "send_client_email", InputSHA256: execHash, RiskTier: string(rd.Tier), Action: string(rd.Action),
		Reason: rd.Reason, MatchedPolicy: rd.MatchedPolicy, PolicyVersion: rd.PolicyVersion, FiredRules: fired(rd), PolicyMetadata: raw, PolicyMetadataSHA256: sum}
	completed := &contracts.ToolCompleted{ToolUseID: "t1", ToolName: "send_client_email", InputSHA256: h, Status: contracts.ToolSuccess,
		EffectRef: sentEffect, Result: json.RawMessage(`{"message_id":"M-1"}`)}
	if r.edit {
		completed.ExecutedInputSHA256 = eh
	}
	evs := []contracts.Event{
		&contracts.RunStarted{AgentKey: "matter_assistant", Mode: contracts.ModeInvoke, ModelID: modelID, PromptVersion: "v1",
			SchemaVersion: contracts.SchemaVersion, CostCapUSD: "1.00", MaxTokens: 1024, MatterID: matterID, UserID: userID, UserRoles: []string{"associate"},
			CounselMessage: counselMessage},
		&contracts.ToolRequested{Turn: 1, ToolUseID: "t1", ToolName: "send_client_email", Input: input, InputSHA256: h,
			RiskTier: string(d.Tier), Action: string(d.Action), Reason: d.Reason, MatchedPolicy: d.MatchedPolicy, PolicyVersion: d.PolicyVersion,
			FiredRules: fired(d), PolicyMetadata: metaRaw, PolicyMetadataSHA256: metaSum, Provenance: d.Provenance},
		&contracts.RunBlocked{Approval: contracts.BlockedApproval{ApprovalRequestID: heldApproval, ToolUseID: "t1", ToolName: "send_client_email",
			ToolInput: input, ToolInputHash: h, RiskTier: string(d.Tier), ExpiresAt: "2026-12-03T10:00:00.000Z", PolicyVersion: d.PolicyVersion, FiredRules: fired(d)}},
		decided,
		&contracts.RunReleased{ApprovalRequestID: heldApproval, Decision: warrant.DecisionApproved, EffectRef: sentEffect, PolicyCheck: check},
		completed,
		&contracts.RunCompleted{StopReason: "end_turn", FinalText: "Sent."},
	}
	if r.change != nil {
		r.change(evs)
	}
	return evs
}

// export chains the run's events into an NDJSON export.
func (r *emailRun) export(t *testing.T) string {
	t.Helper()
	return string(join(r.lines(t)))
}

// lines chains the run's events, one NDJSON line each.
func (r *emailRun) lines(t *testing.T) [][]byte {
	t.Helper()
	c := contracts.NewChain(runID, firmID)
	c.Now = func() time.Time { return time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC) }
	var raws [][]byte
	for _, e := range r.events(t) {
		l, err := c.Append(e)
		if err != nil {
			t.Fatalf("append %s: %v", e.EventType(), err)
		}
		raws = append(raws, l.Raw)
	}
	return raws
}

// Issue 25, item 4: `warrant ledger audit` decides every recorded decision
// again, from the record alone (the input and the metadata it records, under
// the policy version the line names), and names the line of one that does
// not follow: a ledger whose metadata an insider rewrote and re-chained, or
// whose decision was changed, verifies as a chain and must still fail here.
func TestLedgerAuditRederivesDecisions(t *testing.T) {
	for _, edit := range []bool{false, true} {
		t.Run(fmt.Sprintf("edit=%v", edit), func(t *testing.T) {
			r := newEmailRun(t)
			r.edit = edit
			got := runCLI(r.export(t), "ledger", "audit")
			n := map[bool]string{false: "2", true: "3"}[edit]
			check(t, got, 0, "audit: 1 executed effect(s), every one with provenance; "+n+" decision(s) re-derived under policy version "+r.policy.Version(), "")
			for _, want := range []string{"decision seq 2 tool.requested send_client_email: require_approval (high, fired email.recipient_outside_client email.client_communication email.copy_outside_firm), input ",
				"decision seq 5 run.released send_client_email: require_approval (high"} {
				if !strings.Contains(got.stdout, want) {
					t.Errorf("audit output lacks %q:\n%s", want, got.stdout)
				}
			}
			if edit && !strings.Contains(got.stdout, "decision seq 4 approval.decided send_client_email (counsel's edit): require_approval (high, fired email.recipient_outside_client") {
				t.Errorf("audit output lacks the edit's decision:\n%s", got.stdout)
			}
		})
	}

	insider := func(m toolpolicy.Metadata, set func(raw json.RawMessage, sum string)) {
		raw, sum, _ := contracts.RecordMetadata(m)
		set(raw, sum)
	}
	for _, tc := range []struct {
		name   string
		edit   bool
		change func(r *emailRun, evs []contracts.Event)
		stderr string
	}{
		{"the client's domains rewritten in tool.requested", false, func(r *emailRun, evs []contracts.Event) {
			m := r.meta
			m.ClientDomains = []string{"harbor-freight.example", "ridgeway-logistics.example"}
			insider(m, func(raw json.RawMessage, sum string) {
				evs[1].(*contracts.ToolRequested).PolicyMetadata, evs[1].(*contracts.ToolRequested).PolicyMetadataSHA256 = raw, sum
			})
		}, "seq 2: tool.requested of send_client_email does not re-derive"},
		{"the firm's domains rewritten in the release's check", false, func(r *emailRun, evs []contracts.Event) {
			m := r.meta
			m.FirmDomains = []string{"smith-law.example", "harbor-freight.example"}
			insider(m, func(raw json.RawMessage, sum string) {
				c := *evs[4].(*contracts.RunReleased).PolicyCheck
				c.PolicyMetadata, c.PolicyMetadataSHA256 = raw, sum
				evs[4].(*contracts.RunReleased).PolicyCheck = &c
			})
		}, "seq 5: run.released of send_client_email does not re-derive"},
		{"the edit's metadata rewritten", true, func(r *emailRun, evs []contracts.Event) {
			insider(r.meta, func(raw json.RawMessage, sum string) {
				evs[3].(*contracts.ApprovalDecided).EditedPolicyMetadata, evs[3].(*contracts.ApprovalDecided).EditedPolicyMetadataSHA256 = raw, sum
			})
		}, "seq 4: approval.decided of send_client_email does not re-derive"},
		{"a tier the policy did not give", false, func(_ *emailRun, evs []contracts.Event) {
			evs[1].(*contracts.ToolRequested).RiskTier = "medium"
			evs[1].(*contracts.ToolRequested).Action = "allow"
		}, "seq 2: tool.requested of send_client_email does not re-derive"},
		{"the provenance dropped", false, func(_ *emailRun, evs []contracts.Event) {
			evs[1].(*contracts.ToolRequested).Provenance = nil
		}, "seq 2: tool.requested of send_client_email does not re-derive: traced again over the ledger before it"},
		{"an origin the run does not show", false, func(_ *emailRun, evs []contracts.Event) {
			p := slices.Clone(evs[1].(*contracts.ToolRequested).Provenance)
			p[1].Origins = []contracts.ProvenanceOrigin{{Source: contracts.SourceMatter}}
			evs[1].(*contracts.ToolRequested).Provenance = p
		}, "finding 1 (/cc/0) has other origins than the run shows"},
		{"counsel's message rewritten after the decision", false, func(_ *emailRun, evs []contracts.Event) {
			evs[0].(*contracts.RunStarted).CounselMessage = "Tell the client the motion was filed."
		}, "seq 2: tool.requested of send_client_email does not re-derive: recorded fired rules"},
		{"a fired rule dropped", false, func(_ *emailRun, evs []contracts.Event) {
			evs[1].(*contracts.ToolRequested).FiredRules = nil
		}, "seq 2: tool.requested of send_client_email does not re-derive"},
		{"another matter in the metadata", false, func(r *emailRun, evs []contracts.Event) {
			m := r.meta
			m.MatterID = "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
			insider(m, func(raw json.RawMessage, sum string) {
				evs[1].(*contracts.ToolRequested).PolicyMetadata, evs[1].(*contracts.ToolRequested).PolicyMetadataSHA256 = raw, sum
			})
		}, "seq 2: tool.requested of send_client_email: its metadata's matter_id is not the run's"},
		{"a decision recorded without its metadata", false, func(_ *emailRun, evs []contracts.Event) {
			evs[1].(*contracts.ToolRequested).PolicyMetadata, evs[1].(*contracts.ToolRequested).PolicyMetadataSHA256 = nil, ""
		}, "seq 2: tool.requested of send_client_email records no policy_metadata"},
		{"a release that decided another call", true, func(r *emailRun, evs []contracts.Event) {
			c := *evs[4].(*contracts.RunReleased).PolicyCheck
			c.InputSHA256 = evs[1].(*contracts.ToolRequested).InputSHA256
			evs[4].(*contracts.RunReleased).PolicyCheck = &c
		}, "seq 5: run.released of send_client_email decided another call than the warrant lets run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newEmailRun(t)
			r.edit = tc.edit
			r.change = func(evs []contracts.Event) { tc.change(r, evs) }
			export := r.export(t)
			// The chain verifies: only the re-derivation can catch it.
			check(t, runCLI(export, "ledger", "verify"), 0, "", "")
			check(t, runCLI(export, "ledger", "audit"), 1, "", tc.stderr)
		})
	}
}

// The audit decides each line under the policy version it names: the
// embedded policy, or the --policy files given (an overlay of the
// embedded policy is its own version); a decision of a version none of them
// is refuses the audit, naming the version to supply.
func TestLedgerAuditNeedsTheLinesPolicy(t *testing.T) {
	base, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	overlayFile := writeTemp(t, "overlay.json", []byte(`{"extends":"embedded","version":"firm-7"}`))
	overlay, err := toolpolicy.LoadFile(overlayFile)
	if err != nil {
		t.Fatal(err)
	}
	r := newEmailRun(t)
	r.policy = overlay
	export := r.export(t)
	check(t, runCLI(export, "ledger", "audit"), 1, "",
		"seq 2: decided under policy version "+overlay.Version()+"; the policy given is version "+base.Version()+": pass --policy FILE of that version")
	check(t, runCLI(export, "ledger", "audit", "--policy", overlayFile), 0, "2 decision(s) re-derived under policy version "+overlay.Version(), "")
	// Several files: each line is decided under its own version.
	check(t, runCLI(export, "ledger", "audit", "--policy", writeTemp(t, "p.json", toolpolicy.EmbeddedDocument()), "--policy", overlayFile), 0,
		"2 decision(s) re-derived under policy version "+overlay.Version(), "")
	// A run whose release was decided after the overlay was deployed.
	r.change = func(evs []contracts.Event) {
		d := base.DecideOrDeny(toolpolicy.Call{Tool: "send_client_email", Input: evs[1].(*contracts.ToolRequested).Input, Meta: r.meta, Signed: true})
		c := *evs[4].(*contracts.RunReleased).PolicyCheck
		c.PolicyVersion = d.PolicyVersion
		evs[4].(*contracts.RunReleased).PolicyCheck = &c
	}
	mixed := r.export(t)
	check(t, runCLI(mixed, "ledger", "audit", "--policy", overlayFile), 1, "",
		"seq 5: decided under policy version "+base.Version()+"; the policy given is version "+overlay.Version())
	check(t, runCLI(mixed, "ledger", "audit", "--policy", overlayFile, "--policy", writeTemp(t, "p.json", toolpolicy.EmbeddedDocument())), 0,
		"2 decision(s) re-derived under policy versions "+overlay.Version()+", "+base.Version(), "")
	check(t, runCLI(mixed, "ledger", "audit", "--policy", filepath.Join(t.TempDir(), "nope.json")), 1, "", "no such file")
}
