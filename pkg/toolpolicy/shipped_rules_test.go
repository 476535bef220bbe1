package toolpolicy_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/provenance"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// email is a send_client_email input inside matter M-1 to the client's
// CEO; set overrides members, and a nil value removes one. It is the
// canonical form the agent hands the policy.
func email(t *testing.T, set map[string]any) []byte {
	t.Helper()
	in := map[string]any{"matter_id": "M-1", "to": "ceo@acme-corp.com", "subject": "Update", "body": "Dear client,\nall is well."}
	for k, v := range set {
		if v == nil {
			delete(in, k)
		} else {
			in[k] = v
		}
	}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	c, err := contracts.Canonicalize(raw)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func attachments(sizes ...any) []any {
	var out []any
	for i, s := range sizes {
		out = append(out, map[string]any{"document_id": fmt.Sprintf("doc-%d", i), "name": fmt.Sprintf("file-%d.pdf", i), "size_bytes": s})
	}
	return out
}

const mib = 1 << 20

func TestShippedEmailRules(t *testing.T) {
	p, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	const (
		outsideClient = "email.recipient_outside_client"
		unknownDest   = provenance.RuleUnknown // a recipient that is not a bare address cannot be traced
		client        = "email.client_communication"
		copyOutside   = "email.copy_outside_firm"
		count         = "email.attachment_count"
		size          = "email.attachment_size"
		credential    = "email.credential_outside_firm"
		ssn           = "email.ssn_outside_firm"
		card          = "email.card_number_outside_firm"
		wall          = "matter.wall"
	)
	noFirm := runMeta
	noFirm.FirmDomains = nil
	noClient := runMeta
	noClient.ClientDomains = []string{}
	noMatter := runMeta
	noMatter.MatterID = ""
	upperMeta := runMeta
	upperMeta.ClientDomains = []string{"ACME-Corp.com"}
	for _, tc := range []struct {
		name  string
		set   map[string]any
		meta  *toolpolicy.Metadata
		deny  bool
		fired []string // "+" suffix: fired because it could not be evaluated
	}{
		// Recipients: only exact client domains are the client's; a
		// sub-domain is another party.
		{"to the client", nil, nil, false, []string{client}},
		{"to the client in upper case", map[string]any{"to": "CEO@ACME-CORP.COM"}, nil, false, []string{client}},
		{"client domains listed in upper case", nil, &upperMeta, false, []string{client}},
		{"to a sub-domain of the client", map[string]any{"to": "ceo@eu.acme-corp.com"}, nil, false, []string{outsideClient}},
		{"to a look-alike domain", map[string]any{"to": "ceo@acme-corp.com.evil.net"}, nil, false, []string{outsideClient}},
		{"to a third party", map[string]any{"to": "x@gmail.com"}, nil, false, []string{outsideClient}},
		{"to a display name", map[string]any{"to": "CEO <ceo@acme-corp.com>"}, nil, false, []string{outsideClient, unknownDest}},
		{"to two addresses in one string", map[string]any{"to": "ceo@acme-corp.com, x@gmail.com"}, nil, false, []string{outsideClient, unknownDest}},
		{"to an empty string", map[string]any{"to": ""}, nil, false, []string{outsideClient, unknownDest}},
		{"to a number", map[string]any{"to": 7}, nil, false, []string{outsideClient, unknownDest}},
		{"to a colleague", map[string]any{"to": "partner@smithlaw.com"}, nil, false, []string{outsideClient}},
		{"to a source route through the client", map[string]any{"to": "x%evil.example@acme-corp.com"}, nil, false, []string{outsideClient, unknownDest}},
		{"to a bang path through the client", map[string]any{"to": "evil.example!x@acme-corp.com"}, nil, false, []string{outsideClient, unknownDest}},
		{"no client domains known", nil, &noClient, false, []string{outsideClient}},
		{"cc a colleague", map[string]any{"cc": []any{"partner@smithlaw.com"}}, nil, false, []string{outsideClient, client}},
		{"cc a colleague in upper case", map[string]any{"cc": []any{"Partner@SmithLaw.COM"}}, nil, false, []string{outsideClient, client}},
		{"cc the client", map[string]any{"cc": []any{"cfo@acme-corp.com"}}, nil, false, []string{client, copyOutside}},
		{"bcc the client", map[string]any{"bcc": []any{"cfo@acme-corp.com"}}, nil, false, []string{client, copyOutside}},
		{"cc a third party", map[string]any{"cc": []any{"partner@smithlaw.com", "x@gmail.com"}}, nil, false, []string{outsideClient, client, copyOutside}},
		{"bcc a sub-domain of the firm", map[string]any{"bcc": []any{"x@mail.smithlaw.com"}}, nil, false, []string{outsideClient, client, copyOutside}},
		{"bcc a malformed address", map[string]any{"bcc": []any{"partner at smithlaw.com"}}, nil, false, []string{outsideClient, client, copyOutside, unknownDest}},
		{"empty cc and bcc", map[string]any{"cc": []any{}, "bcc": []any{}}, nil, false, []string{client}},
		{"cc a colleague, no firm domains known", map[string]any{"cc": []any{"partner@smithlaw.com"}}, &noFirm, false, []string{outsideClient, client, copyOutside}},
		{"cc as a string", map[string]any{"cc": "x@gmail.com"}, nil, false, []string{outsideClient + "+", client, copyOutside + "+", unknownDest}},
		{"cc with an object", map[string]any{"cc": []any{map[string]any{"address": "x@gmail.com"}}}, nil, false, []string{outsideClient, client, copyOutside, unknownDest}},
		// Attachments.
		{"five attachments", map[string]any{"attachments": attachments(1, 1, 1, 1, 1)}, nil, false, []string{client}},
		{"six attachments", map[string]any{"attachments": attachments(1, 1, 1, 1, 1, 1)}, nil, false, []string{client, count}},
		{"10 MiB in all", map[string]any{"attachments": attachments(4*mib, 6*mib)}, nil, false, []string{client}},
		{"10 MiB and a byte", map[string]any{"attachments": attachments(4*mib, 6*mib+1)}, nil, false, []string{client, size}},
		{"one big attachment", map[string]any{"attachments": attachments(20 * mib)}, nil, false, []string{client, size}},
		{"a size as a string", map[string]any{"attachments": attachments(1, "20000000")}, nil, false, []string{client, size + "+"}},
		{"attachments as an object", map[string]any{"attachments": map[string]any{"a": 1}}, nil, false, []string{client, count + "+", size + "+"}},
		{"no attachments", map[string]any{"attachments": []any{}}, nil, false, []string{client}},
		// Sensitive data outside the firm is refused.
		{"an SSN in the body", map[string]any{"body": "His SSN is 123-45-6789."}, nil, true, []string{client, ssn}},
		{"an SSN in the subject", map[string]any{"subject": "Re: 123-45-6789"}, nil, true, []string{client, ssn}},
		{"the last four digits of an SSN", map[string]any{"body": "SSN ending 6789"}, nil, false, []string{client}},
		{"an invalid SSN", map[string]any{"body": "Ref 000-12-3456"}, nil, false, []string{client}},
		{"a card number", map[string]any{"body": "Card: 4111 1111 1111 1111, exp 12/27"}, nil, true, []string{client, card}},
		{"a card number in the subject", map[string]any{"subject": "4111-1111-1111-1111"}, nil, true, []string{client, card}},
		{"not a card number (Luhn)", map[string]any{"body": "Ref 4111 1111 1111 1112"}, nil, false, []string{client}},
		{"a password", map[string]any{"body": "The portal password: Tr0ub4dor&3"}, nil, true, []string{client, credential}},
		{"an API key", map[string]any{"body": "api_key=sk_live_51H8"}, nil, true, []string{client, credential}},
		{"an AWS key id", map[string]any{"body": "use AKIAIOSFODNN7EXAMPLE"}, nil, true, []string{client, credential}},
		{"a private key", map[string]any{"body": "-----BEGIN RSA PRIVATE KEY-----\nMIIEow"}, nil, true, []string{client, credential}},
		{"a password-protected file", map[string]any{"body": "The file is password protected."}, nil, false, []string{client}},
		{"an SSN to a colleague only", map[string]any{"to": "partner@smithlaw.com", "body": "SSN 123-45-6789"}, nil, false, []string{outsideClient}},
		{"an SSN to a colleague, bcc outside", map[string]any{"to": "partner@smithlaw.com", "bcc": []any{"x@gmail.com"}, "body": "SSN 123-45-6789"},
			nil, true, []string{outsideClient, copyOutside, ssn}},
		{"an SSN to a source route through the firm", map[string]any{"to": "x%evil.example@smithlaw.com", "body": "SSN 123-45-6789"},
			nil, true, []string{outsideClient, ssn, unknownDest}},
		{"cc a bang path through the firm", map[string]any{"cc": []any{"evil.example!x@smithlaw.com"}}, nil, false, []string{outsideClient, client, copyOutside, unknownDest}},
		{"an SSN to a colleague, no firm domains known", map[string]any{"to": "partner@smithlaw.com", "body": "SSN 123-45-6789"}, &noFirm, true, []string{outsideClient, ssn}},
		// Every string the e-mail sends is read (issue 17): not only the
		// subject and the body.
		{"an SSN in an attachment's name", map[string]any{"attachments": []any{map[string]any{"document_id": "doc-0", "name": "SSN 123-45-6789.pdf", "size_bytes": 1}}},
			nil, true, []string{client, ssn}},
		{"a card number in an attachment's document id", map[string]any{"attachments": []any{map[string]any{"document_id": "4111-1111-1111-1111", "name": "a.pdf", "size_bytes": 1}}},
			nil, true, []string{client, card}},
		{"a credential in an attachment's name", map[string]any{"attachments": []any{map[string]any{"document_id": "doc-0", "name": "password: hunter22.txt", "size_bytes": 1}}},
			nil, true, []string{client, credential}},
		{"an SSN in to", map[string]any{"to": "123-45-6789@acme-corp.com"}, nil, true, []string{client, ssn}},
		{"a card number in cc", map[string]any{"cc": []any{"4111111111111111@smithlaw.com"}}, nil, true, []string{outsideClient, client, card}},
		{"a credential in bcc", map[string]any{"bcc": []any{"AKIAIOSFODNN7EXAMPLE@acme-corp.com"}}, nil, true, []string{client, copyOutside, credential}},
		{"an SSN in a member name", map[string]any{"re 123-45-6789": "x"}, nil, true, []string{client, ssn}},
		{"a card number as a number", map[string]any{"ref": 4111111111111111}, nil, true, []string{client, card}},
		{"a body that is not a string", map[string]any{"body": []any{"SSN 123-45-6789"}}, nil, true, []string{client, ssn}},
		// The matter wall.
		{"another matter", map[string]any{"matter_id": "M-2"}, nil, true, []string{wall, client}},
		{"the matter id in another case", map[string]any{"matter_id": "m-1"}, nil, true, []string{wall, client}},
		{"the matter id as a number", map[string]any{"matter_id": 1}, nil, true, []string{wall + "+", client}},
		{"no matter id in the input", map[string]any{"matter_id": nil}, nil, false, []string{client}},
		{"the run's matter unknown", nil, &noMatter, true, []string{wall + "+", client}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			meta := runMeta
			if tc.meta != nil {
				meta = *tc.meta
			}
			// Counsel asked for exactly this e-mail: every address is
			// counsel's, so the provenance rule fires only on a
			// recipient that cannot be read as an address.
			in := email(t, tc.set)
			d, err := p.Decide(toolpolicy.Call{Tool: "send_client_email", Input: in, Meta: meta, Sources: &provenance.Sources{Counsel: string(in)}})
			if err != nil {
				t.Fatal(err)
			}
			checkDecision(t, d, "send_client_email", tc.deny, toolpolicy.TierHigh, tc.fired)
		})
	}
}

// checkDecision checks the tier (want, or prohibited when deny), the
// action, and the fired rules ("+": fired because it could not be
// evaluated, which its reason says).
func checkDecision(t *testing.T, d toolpolicy.Decision, tool string, deny bool, want toolpolicy.Tier, fired []string) {
	t.Helper()
	wantAction := map[toolpolicy.Tier]toolpolicy.Action{toolpolicy.TierLow: toolpolicy.ActionAllow, toolpolicy.TierMedium: toolpolicy.ActionAllow,
		toolpolicy.TierHigh: toolpolicy.ActionRequireApproval}[want]
	if deny {
		want, wantAction = toolpolicy.TierProhibited, toolpolicy.ActionDeny
	}
	var got []string
	for _, r := range d.FiredRules {
		id := r.ID
		if strings.Contains(r.Reason, "could not be evaluated") {
			id += "+"
		}
		got = append(got, id)
	}
	if d.Tier != want || d.Action != wantAction || !reflect.DeepEqual(got, fired) || d.MatchedPolicy != "tools."+tool {
		t.Errorf("decision %s/%s, fired %v, matched %s; want %s/%s, fired %v", d.Tier, d.Action, got, d.MatchedPolicy, want, wantAction, fired)
	}
	if deny && d.Tier == toolpolicy.TierProhibited && tool != "delete_matter_document" {
		if !strings.HasPrefix(d.Reason, "rule ") {
			t.Errorf("a rule denied the call but the reason %q does not name it", d.Reason)
		}
	}
}

func TestShippedRulesOnOtherTools(t *testing.T) {
	p, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool, input string
		tier        toolpolicy.Tier
		deny        bool
		fired       []string
		replayable  bool
	}{
		{"search_matter_documents", `{"matter_id":"M-1","query":"lease"}`, toolpolicy.TierLow, false, nil, true},
		{"search_matter_documents", `{"matter_id":"M-2","query":"lease"}`, "", true, []string{"matter.wall"}, false},
		{"get_matter_summary", `{"matter_id":"M-2"}`, "", true, []string{"matter.wall"}, false},
		{"get_matter_summary", `{"matter_id":"M-1"}`, toolpolicy.TierLow, false, nil, true},
		{"get_matter_summary", `not json`, "", true, []string{"matter.wall+"}, false},
		{"draft_document", `{"matter_id":"M-1","title":"Memo","text":"SSN 123-45-6789"}`, toolpolicy.TierMedium, false, nil, false},
		{"draft_document", `{"matter_id":"M-3","title":"Memo","text":"x"}`, "", true, []string{"matter.wall"}, false},
		{"file_court_document", `{"matter_id":"M-1","court":"SF Superior","document_title":"Motion","document_text":"The motion."}`,
			toolpolicy.TierHigh, false, []string{"court.filing_requires_warrant"}, false},
		{"file_court_document", `{"matter_id":"M-1","court":"SF Superior","document_title":"Motion","document_text":"Plaintiff, SSN 123-45-6789, moves"}`,
			toolpolicy.TierHigh, false, []string{"court.filing_requires_warrant", "court.unredacted_identifiers"}, false},
		{"file_court_document", `{"matter_id":"M-1","court":"SF Superior","document_title":"Motion","document_text":"Plaintiff, SSN xxx-xx-6789, moves"}`,
			toolpolicy.TierHigh, false, []string{"court.filing_requires_warrant"}, false},
		{"file_court_document", `{"matter_id":"M-1","court":"SF Superior","document_title":"Exhibit 123-45-6789","document_text":"x"}`,
			toolpolicy.TierHigh, false, []string{"court.filing_requires_warrant", "court.unredacted_identifiers"}, false},
		{"file_court_document", `{"matter_id":"M-1","court":"SF Superior","document_title":"Exhibit","document_text":"Account 5555 5555 5555 4444"}`,
			toolpolicy.TierHigh, false, []string{"court.filing_requires_warrant", "court.unredacted_identifiers"}, false},
		{"file_court_document", `{"matter_id":"M-1","court":"SF Superior","document_title":"Exhibit 4111-1111-1111-1111","document_text":"x"}`,
			toolpolicy.TierHigh, false, []string{"court.filing_requires_warrant", "court.unredacted_identifiers"}, false},
		{"file_court_document", `{"matter_id":"M-1","court":"SF Superior 123-45-6789","document_title":"Motion","document_text":"x"}`,
			toolpolicy.TierHigh, false, []string{"court.filing_requires_warrant", "court.unredacted_identifiers"}, false},
		{"file_court_document", `{"matter_id":"M-1","court":"SF Superior","document_title":"Motion","document_text":"Log in with password: hunter22"}`,
			"", true, []string{"court.filing_requires_warrant", "court.credential"}, false},
		{"file_court_document", `{"matter_id":"M-2","court":"SF Superior","document_title":"Motion","document_text":"x"}`,
			"", true, []string{"matter.wall", "court.filing_requires_warrant"}, false},
		{"delete_matter_document", `{"matter_id":"M-1","document_id":"d-1"}`, "", true, nil, false},
		{"delete_matter_document", `{"matter_id":"M-2","document_id":"d-1"}`, "", true, []string{"matter.wall"}, false},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			d, err := p.Decide(toolpolicy.Call{Tool: tc.tool, Input: []byte(tc.input), Meta: runMeta})
			if err != nil {
				t.Fatal(err)
			}
			checkDecision(t, d, tc.tool, tc.deny, tc.tier, tc.fired)
			if d.Replayable != tc.replayable {
				t.Errorf("%s: replayable %v", tc.input, d.Replayable)
			}
		})
	}
	// An unlisted tool gets the default; no rule applies to it.
	d, err := p.Decide(toolpolicy.Call{Tool: "wire_funds", Input: []byte(`{"matter_id":"M-2"}`), Meta: runMeta})
	if err != nil {
		t.Fatal(err)
	}
	if d.MatchedPolicy != "default" || d.Action != toolpolicy.ActionDeny || d.FiredRules != nil {
		t.Errorf("unlisted: %+v", d)
	}
}

// Every shipped rule is exercised by the tables above: each fires in some
// case of TestShippedEmailRules or TestShippedRulesOnOtherTools (their ids
// are listed there), and a rule added later must be added to them.
func TestShippedRulesAreTested(t *testing.T) {
	p, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	tested := map[string]bool{
		"matter.wall": true, "court.filing_requires_warrant": true, "court.unredacted_identifiers": true,
		"email.recipient_outside_client": true, "email.client_communication": true, "email.copy_outside_firm": true,
		"email.attachment_count": true, "email.attachment_size": true, "email.credential_outside_firm": true,
		"email.ssn_outside_firm": true, "email.card_number_outside_firm": true, "court.credential": true,
	}
	for _, id := range p.RuleIDs() {
		if !tested[id] {
			t.Errorf("rule %s has no table test", id)
		}
	}
	if len(p.RuleIDs()) != len(tested) {
		t.Errorf("rules %v", p.RuleIDs())
	}
}

func TestRuleIDs(t *testing.T) {
	p, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(p.RuleIDs())
	want := "[matter.wall court.filing_requires_warrant court.unredacted_identifiers court.credential email.recipient_outside_client " +
		"email.client_communication email.copy_outside_firm email.attachment_count email.attachment_size " +
		"email.credential_outside_firm email.ssn_outside_firm email.card_number_outside_firm]"
	if got != want {
		t.Errorf("RuleIDs = %s\nwant      %s", got, want)
	}
}

// The name-only decision is never less strict than a decision on an
// actual call with the same (empty) metadata.
func TestNameOnlyIsAnUpperBound(t *testing.T) {
	p, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	inputs := []string{`{}`, `{"matter_id":"M-1"}`, string(email(t, nil)), string(email(t, map[string]any{"body": "SSN 123-45-6789"})),
		`{"matter_id":"M-1","cc":"x"}`, `[]`}
	for _, tool := range []string{"search_matter_documents", "get_matter_summary", "draft_document", "send_client_email",
		"file_court_document", "delete_matter_document", "wire_funds"} {
		nameOnly, err := p.GetToolRiskDecision(tool, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range inputs {
			d, err := p.Decide(toolpolicy.Call{Tool: tool, Input: []byte(in)})
			if err != nil {
				t.Fatal(err)
			}
			if rank(d.Tier) > rank(nameOnly.Tier) {
				t.Errorf("%s %s: %s, above the name-only %s", tool, in, d.Tier, nameOnly.Tier)
			}
		}
	}
}

// Decisions run concurrently on one policy (the evaluators are pooled)
// answer as they do one at a time.
func TestConcurrentDecisions(t *testing.T) {
	p, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	calls := []toolpolicy.Call{
		{Tool: "send_client_email", Input: email(t, map[string]any{"cc": []any{"x@gmail.com"}, "body": "SSN 123-45-6789\n\u00e9"}), Meta: runMeta},
		{Tool: "send_client_email", Input: email(t, map[string]any{"attachments": attachments(1, 2, 3, 4, 5, 6)}), Meta: runMeta},
		{Tool: "send_client_email", Input: email(t, map[string]any{"to": "x@Acme-Corp.com", "body": "a\tb\nc"})},
		{Tool: "file_court_document", Input: []byte(`{"matter_id":"M-1","document_text":"4111 1111 1111 1111"}`), Meta: runMeta},
		{Tool: "search_matter_documents", Input: []byte(`{"matter_id":"M-2"}`), Meta: runMeta},
		{Tool: "get_matter_summary", Input: []byte(`[]`), Meta: runMeta},
		{Tool: "draft_document"},
	}
	want := make([]toolpolicy.Decision, len(calls))
	for i, c := range calls {
		if want[i], err = p.Decide(c); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for n := range 200 {
				i := (g + n) % len(calls)
				d, err := p.Decide(calls[i])
				if err != nil || !reflect.DeepEqual(d, want[i]) {
					t.Errorf("call %d: %+v, %v\nwant %+v", i, d, err, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
}

// Before the tool's schema is checked, an input can be anything: many
// recipients, each with escapes, are read once each (linear time).
func TestManyRecipients(t *testing.T) {
	p, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`{"matter_id":"M-1","to":"ceo@acme-corp.com","body":"b","subject":"s","cc":[`)
	for i := range 20000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"p\u0061rtner@smithlaw.com"`)
	}
	b.WriteString(`],"bcc":["x@gmail.com"]}`)
	start := time.Now()
	d, err := p.Decide(toolpolicy.Call{Tool: "send_client_email", Input: []byte(b.String()), Meta: runMeta})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes, 20,001 recipients: %v", b.Len(), time.Since(start))
	checkDecision(t, d, "send_client_email", false, toolpolicy.TierHigh,
		// x@gmail.com is in no source of the run (none is given).
		[]string{"email.recipient_outside_client", "email.client_communication", "email.copy_outside_firm", provenance.RuleUnknown})
}
