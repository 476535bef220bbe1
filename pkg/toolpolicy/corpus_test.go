package toolpolicy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// corpusCase is one line of testdata/identifiers/*.jsonl (see the README
// there): a string and where in an e-mail to the client it is written.
type corpusCase struct {
	// In is where the text goes: body, subject, to, cc, bcc, attachment
	// (an attachment's name), document_id (an attachment's), key (a member
	// name) or member (Key as a member name, and Text or Value its value).
	In    string          `json:"in"`
	Text  string          `json:"text"`
	Key   string          `json:"key,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
	Why   string          `json:"why"`
	// Fires, on a negative only, names the detector that flags it anyway
	// (ssn, card or credential); Why then says why it is left so.
	Fires string `json:"fires,omitempty"`

	file string
	line int
}

func (c corpusCase) String() string {
	return fmt.Sprintf("%s:%d (%s in %s: %s)", c.file, c.line, c.shown(), c.In, c.Why)
}

func (c corpusCase) shown() string {
	if c.In == "member" {
		v := c.Text
		if c.Value != nil {
			v = string(c.Value)
		}
		return fmt.Sprintf("%q: %s", c.Key, v)
	}
	return fmt.Sprintf("%q", c.Text)
}

// corpusRules are the rules of the embedded policy that refuse an e-mail
// holding each class of identifier.
var corpusRules = map[string]string{
	"ssn":        "email.ssn_outside_firm",
	"card":       "email.card_number_outside_firm",
	"credential": "email.credential_outside_firm",
}

func readCorpus(t *testing.T, name string) []corpusCase {
	t.Helper()
	path := filepath.Join("testdata", "identifiers", name+".jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusCase
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var c corpusCase
		if err := dec.Decode(&c); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		c.file, c.line = filepath.Base(path), n
		switch {
		case c.Why == "":
			t.Fatalf("%v: every case says what form it is (why)", c)
		case (c.In == "member") != (c.Key != ""), c.Value != nil && c.In != "member":
			t.Fatalf("%v: key and value go with in: member only", c)
		case c.Fires != "" && (name != "negative" || corpusRules[c.Fires] == ""):
			t.Fatalf("%v: fires names ssn, card or credential, on a negative", c)
		}
		out = append(out, c)
	}
	return out
}

// corpusEmail is a realistic e-mail from the matter's partner to the
// client with c written where it says.
func corpusEmail(t *testing.T, c corpusCase) []byte {
	t.Helper()
	att := map[string]any{"document_id": "doc-4821", "name": "engagement.pdf", "size_bytes": 184320}
	in := map[string]any{
		"matter_id": "6f1c2a9e-0d4b-4c57-9a51-3e2f8b7d1c20",
		"to":        "m.alvarez@acme-corp.com",
		"cc":        []any{"j.smith@smithlaw.com"},
		"subject":   "Engagement letter",
		"body":      "Dear Ms. Alvarez,\n\nThe signed engagement letter is attached.\n\nRegards,\nJ. Smith",
	}
	switch c.In {
	case "body":
		in["body"] = "Dear Ms. Alvarez,\n\n" + c.Text + "\n\nRegards,\nJ. Smith"
	case "subject", "to":
		in[c.In] = c.Text
	case "cc":
		in["cc"] = []any{"j.smith@smithlaw.com", c.Text}
	case "bcc":
		in["bcc"] = []any{c.Text}
	case "attachment":
		att["name"] = c.Text
	case "document_id":
		att["document_id"] = c.Text
	case "key":
		in[c.Text] = ""
	case "member":
		var v any = c.Text
		if c.Value != nil {
			if err := json.Unmarshal(c.Value, &v); err != nil {
				t.Fatalf("%v: %v", c, err)
			}
		}
		in[c.Key] = v
	default:
		t.Fatalf("%v: unknown place %q", c, c.In)
	}
	in["attachments"] = []any{att}
	return canonical(t, in)
}

// TestIdentifierCorpus sends every case of testdata/identifiers as an
// e-mail to the client through the embedded policy, the decision the agent
// gets for the call: each SSN, card number and credential is refused by
// its rule, and no negative fires an identifier rule unless the corpus
// says which one and why. It logs the corpus's size and recall per class,
// which BENCHMARKS.md reports.
func TestIdentifierCorpus(t *testing.T) {
	p, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	meta := toolpolicy.Metadata{FirmID: "firm-1", MatterID: "6f1c2a9e-0d4b-4c57-9a51-3e2f8b7d1c20", AgentKey: "matter_assistant",
		UserID: "u-1", Roles: []string{"associate"}, FirmDomains: []string{"smithlaw.com"}, ClientDomains: []string{"acme-corp.com"}}
	decide := func(c corpusCase) toolpolicy.Decision {
		d, err := p.Decide(toolpolicy.Call{Tool: "send_client_email", Input: corpusEmail(t, c), Meta: meta})
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		return d
	}
	fired := func(d toolpolicy.Decision, id string) bool {
		return slices.ContainsFunc(d.FiredRules, func(r toolpolicy.FiredRule) bool { return r.ID == id })
	}
	if d := decide(corpusCase{In: "body", Text: "Nothing to see.", Why: "clean"}); d.Action != toolpolicy.ActionRequireApproval {
		t.Fatalf("the clean e-mail: %s %v; want require_approval", d.Action, ruleIDs(d))
	}
	const minCases = 60
	var summary []string
	for _, class := range []string{"ssn", "card", "credential"} {
		cases := readCorpus(t, class)
		if len(cases) < minCases {
			t.Errorf("%s: %d cases; the corpus holds at least %d of each class", class, len(cases), minCases)
		}
		caught := 0
		for _, c := range cases {
			d := decide(c)
			if d.Action == toolpolicy.ActionDeny && fired(d, corpusRules[class]) {
				caught++
				continue
			}
			t.Errorf("missed %s %v: %s, fired %v", class, c, d.Action, ruleIDs(d))
		}
		summary = append(summary, fmt.Sprintf("%s %d/%d (%.1f%%)", class, caught, len(cases), 100*float64(caught)/float64(len(cases))))
	}
	negatives := readCorpus(t, "negative")
	if len(negatives) < minCases {
		t.Errorf("negative: %d cases; the corpus holds at least %d", len(negatives), minCases)
	}
	explained, unexplained := 0, 0
	for _, c := range negatives {
		d := decide(c)
		var got []string
		for _, class := range []string{"ssn", "card", "credential"} {
			if fired(d, corpusRules[class]) {
				got = append(got, class)
			}
		}
		var want []string
		if c.Fires != "" {
			want = []string{c.Fires}
		}
		switch {
		case slices.Equal(got, want) && c.Fires != "":
			explained++
		case slices.Equal(got, want):
		default:
			unexplained++
			t.Errorf("negative %v: fired %v, corpus says %v", c, got, want)
		}
	}
	summary = append(summary, fmt.Sprintf("negatives %d: %d explained false positives, %d unexplained", len(negatives), explained, unexplained))
	t.Log("recall: " + strings.Join(summary, "; "))
}
