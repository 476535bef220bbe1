package toolpolicy_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// planted is a copy of a document with a secret written into one place.
type planted struct {
	where string
	doc   any
}

// plant returns one copy of v for each member name and each string value
// in it, with the secret appended to that one string (a member name gains
// a sibling named with the secret).
func plant(v any, secret, where string) []planted {
	var out []planted
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			c := maps.Clone(x)
			c[k+" "+secret] = x[k] // beside k, so the call still has its recipients
			out = append(out, planted{where + "/" + k + " (member name)", c})
			for _, p := range plant(x[k], secret, where+"/"+k) {
				c := maps.Clone(x)
				c[k] = p.doc
				out = append(out, planted{p.where, c})
			}
		}
	case []any:
		for i, el := range x {
			for _, p := range plant(el, secret, where+"/"+strconv.Itoa(i)) {
				c := slices.Clone(x)
				c[i] = p.doc
				out = append(out, planted{p.where, c})
			}
		}
	case string:
		out = append(out, planted{where, x + " " + secret})
	}
	return out
}

// Every string a tool that sends data outside the firm sends (each member
// name and each string value, recipients and attachments included) is read
// by the detectors: an SSN, a card number or a credential anywhere in an
// e-mail to the client is refused, and anywhere in a court filing it fires
// the filing's rule.
func TestDetectorsReadEveryStringSentOutside(t *testing.T) {
	p, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]string{
		"send_client_email": `{"matter_id":"M-1","to":"ceo@acme-corp.com","cc":["partner@smithlaw.com"],"bcc":["records@smithlaw.com"],` +
			`"subject":"Update","body":"Dear client,\nall is well.",` +
			`"attachments":[{"document_id":"doc-1","name":"letter.pdf","size_bytes":1024}]}`,
		"file_court_document": `{"matter_id":"M-1","court":"SF Superior","document_title":"Motion","document_text":"The motion."}`,
	}
	secrets := []struct {
		kind, text string
		rule       map[string]string // tool -> the rule that must fire
		deny       map[string]bool
	}{
		{"an SSN", "123-45-6789",
			map[string]string{"send_client_email": "email.ssn_outside_firm", "file_court_document": "court.unredacted_identifiers"},
			map[string]bool{"send_client_email": true}},
		{"a card number", "4111 1111 1111 1111",
			map[string]string{"send_client_email": "email.card_number_outside_firm", "file_court_document": "court.unredacted_identifiers"},
			map[string]bool{"send_client_email": true}},
		{"a credential", "password: hunter22",
			map[string]string{"send_client_email": "email.credential_outside_firm", "file_court_document": "court.credential"},
			map[string]bool{"send_client_email": true, "file_court_document": true}},
	}
	// The tools that send data out are the policy's to declare; each one
	// it declares is tried here.
	var declared []string
	for _, name := range slices.Sorted(maps.Keys(fuzzTools)) {
		if p.SendsOutside(name) {
			declared = append(declared, name)
		}
	}
	if want := slices.Sorted(maps.Keys(calls)); !slices.Equal(declared, want) {
		t.Fatalf("the embedded policy declares %v as sending outside the firm; this test tries %v", declared, want)
	}
	if p.SendsOutside("wire_funds") {
		t.Error("an unlisted tool sends outside")
	}
	for _, tool := range slices.Sorted(maps.Keys(calls)) {
		var base any
		if err := json.Unmarshal([]byte(calls[tool]), &base); err != nil {
			t.Fatal(err)
		}
		clean, err := p.Decide(toolpolicy.Call{Tool: tool, Input: canonical(t, base), Meta: runMeta})
		if err != nil || clean.Action != toolpolicy.ActionRequireApproval {
			t.Fatalf("%s without a secret: %+v, %v", tool, clean, err)
		}
		for _, s := range secrets {
			places := plant(base, s.text, "")
			if len(places) < 4 {
				t.Fatalf("%s: only %d places", tool, len(places))
			}
			for _, pl := range places {
				d, err := p.Decide(toolpolicy.Call{Tool: tool, Input: canonical(t, pl.doc), Meta: runMeta})
				if err != nil {
					t.Fatal(err)
				}
				fired := slices.ContainsFunc(d.FiredRules, func(r toolpolicy.FiredRule) bool { return r.ID == s.rule[tool] })
				if !fired || (s.deny[tool] && d.Action != toolpolicy.ActionDeny) {
					t.Errorf("%s with %s in %s: %s, fired %v; want %s to fire%s", tool, s.kind, pl.where, d.Action, ruleIDs(d), s.rule[tool],
						map[bool]string{true: " and the call denied"}[s.deny[tool]])
				}
			}
		}
	}
}

func canonical(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	c, err := contracts.Canonicalize(raw)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ruleIDs(d toolpolicy.Decision) []string {
	var ids []string
	for _, r := range d.FiredRules {
		ids = append(ids, r.ID)
	}
	return ids
}
