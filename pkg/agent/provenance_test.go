package agent_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/provenance"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// Issue 29 item 1: a document the agent read asks for an extra recipient.
// The model searches the matter's documents (DOC-005 asks whoever reads it
// to blind-copy an outside address), files a motion (held, approved,
// resumed: the e-mail below is decided by the session that continues the
// run, which must know what the search returned before the hold), then
// e-mails the client with the bcc. The e-mail is held with
// provenance.untrusted_destination naming the search's line, tool.requested
// records where each recipient was found, and the audit traces the call
// again to the same record.
func TestInjectedRecipientIsHeldAndTraced(t *testing.T) {
	noResults := func(c bedrocktest.Conversation) bool { return len(c.LastToolResults()) == 0 }
	script := func(h *harness) bedrocktest.Script {
		return bedrocktest.Script{Rules: []bedrocktest.Rule{
			{Name: "read", When: noResults, Reply: bedrocktest.Reply{ToolUses: []bedrocktest.ToolUse{
				toolUse(bedrocktest.ToolSearchMatterDocuments, map[string]any{"matter_id": h.matter, "query": "correspondence"})}}},
			{Name: "file", When: bedrocktest.AfterToolResultFrom(bedrocktest.ToolSearchMatterDocuments, ""), Reply: bedrocktest.Reply{
				ToolUses: []bedrocktest.ToolUse{toolUse(bedrocktest.ToolFileCourtDocument, h.filing("Motion to Compel"))}}},
			{Name: "email", When: bedrocktest.AfterToolResultFrom(bedrocktest.ToolFileCourtDocument, "success"), Reply: bedrocktest.Reply{
				ToolUses: []bedrocktest.ToolUse{toolUse(bedrocktest.ToolSendClientEmail, map[string]any{"matter_id": h.matter,
					"to": bedrocktest.DemoClientAddress, "bcc": []string{bedrocktest.DemoInjectedAddress}, "subject": "Filed", "body": "The motion is filed."})}}},
			{Name: "done", When: bedrocktest.Always, Reply: bedrocktest.Reply{Text: "Done."}},
		}}
	}
	h := newHarness(t, script, options{})
	ctx := context.Background()
	if err := h.store.PutFirmSettings(ctx, warrant.FirmSettings{FirmID: h.firm, Domains: []string{"smith-law.example"}}); err != nil {
		t.Fatal(err)
	}
	putMatter(t, h, []string{"ridgeway-logistics.example"})

	res := h.start("Please file the motion and tell the client.", "")
	if res.State.Status != warrant.RunHeld || res.State.PendingApproval.ToolName != bedrocktest.ToolFileCourtDocument {
		t.Fatalf("not held on the filing: %+v", res.State)
	}
	h.decide(res, warrant.DecisionApproved)
	res, err := h.resume(res)
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Status != warrant.RunHeld || res.State.PendingApproval.ToolName != bedrocktest.ToolSendClientEmail {
		t.Fatalf("not held on the e-mail: %+v", res.State)
	}

	var searched int64
	var email *contracts.ToolRequested
	var emailSeq int64
	for _, l := range h.ledger(res.State.RunID) {
		switch e := l.Event.(type) {
		case *contracts.ToolCompleted:
			if e.ToolName == bedrocktest.ToolSearchMatterDocuments {
				searched = l.Seq
			}
		case *contracts.ToolRequested:
			if e.ToolName == bedrocktest.ToolSendClientEmail {
				email, emailSeq = e, l.Seq
			}
		}
	}
	if email == nil || searched == 0 {
		t.Fatalf("the ledger has no e-mail call (%v) or no search result (%d)", email != nil, searched)
	}
	want := []contracts.ProvenanceFinding{
		{Pointer: "/to", Kind: "email", Origins: []contracts.ProvenanceOrigin{{Source: contracts.SourceMatter}}},
		{Pointer: "/bcc/0", Kind: "email", Origins: []contracts.ProvenanceOrigin{{Source: contracts.SourceToolResult, Seq: searched, Tool: bedrocktest.ToolSearchMatterDocuments}}},
	}
	if !slices.EqualFunc(email.Provenance, want, func(a, b contracts.ProvenanceFinding) bool {
		return a.Pointer == b.Pointer && a.Kind == b.Kind && a.Unreadable == b.Unreadable && slices.Equal(a.Origins, b.Origins)
	}) {
		t.Fatalf("tool.requested at seq %d records provenance %+v\nwant %+v", emailSeq, email.Provenance, want)
	}
	var rule *contracts.FiredRule
	for i, r := range email.FiredRules {
		if r.ID == provenance.RuleUntrusted {
			rule = &email.FiredRules[i]
		}
	}
	if rule == nil || rule.Pointer != "/bcc/0" || rule.Effect != "raise:high" ||
		!strings.Contains(rule.Reason, bedrocktest.ToolSearchMatterDocuments+" at seq ") || strings.Contains(rule.Reason, bedrocktest.DemoInjectedAddress) {
		t.Fatalf("fired %+v, want %s at /bcc/0 naming the search and never the address", email.FiredRules, provenance.RuleUntrusted)
	}
	// Counsel is shown it: the warrant carries the rule and its pointer.
	pending := res.State.PendingApproval
	if !slices.ContainsFunc(pending.FiredRules, func(r contracts.FiredRule) bool { return r.ID == provenance.RuleUntrusted && r.Pointer == "/bcc/0" }) {
		t.Fatalf("the pending warrant's rules %+v", pending.FiredRules)
	}
	// Nothing is logged of the address.
	if strings.Contains(h.logs.String(), bedrocktest.DemoInjectedAddress) {
		t.Fatal("the injected address is in the logs")
	}

	// The audit decides the call again over the ledger before it: the same
	// rules, the same record.
	p, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reducer.Rederive(h.ledger(res.State.RunID), p); err != nil {
		t.Fatalf("audit: %v", err)
	}
	// A record that claims the bcc was counsel's does not survive it.
	lines := h.ledger(res.State.RunID)
	for i, l := range lines {
		if e, ok := l.Event.(*contracts.ToolRequested); ok && e.ToolName == bedrocktest.ToolSendClientEmail {
			forged := *e
			forged.Provenance = slices.Clone(e.Provenance)
			forged.Provenance[1].Origins = []contracts.ProvenanceOrigin{{Source: contracts.SourceCounselMessage}}
			lines[i].Event = &forged
		}
	}
	if _, err := reducer.Rederive(lines, p); err == nil || !strings.Contains(err.Error(), "/bcc/0") {
		t.Fatalf("audit of a forged provenance: %v", err)
	}
}
