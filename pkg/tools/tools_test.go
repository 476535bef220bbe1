package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
	"github.com/seed-f6d3920e/warrant/pkg/tools"

	"github.com/seed-f6d3920e/warrant"
)

const matter = "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"

// outbox is a test double: effects keyed by effect_ref, like the store's.
type outbox struct {
	mu      sync.Mutex
	effects map[string]warrant.Outbound
}

func (o *outbox) RecordOutbound(_ context.Context, e warrant.Outbound) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.effects[e.EffectRef]; ok {
		return false, nil
	}
	o.effects[e.EffectRef] = e
	return true, nil
}

func byName(t *testing.T, ob tools.Outbox) map[string]tools.Tool {
	m := map[string]tools.Tool{}
	for _, tl := range tools.Reference(ob, nil) {
		m[tl.Name] = tl
	}
	return m
}

func scoped() context.Context {
	return tools.NewContext(context.Background(), tools.Scope{FirmID: "f", RunID: "r", MatterID: matter})
}

func TestEveryReferenceToolIsInThePolicy(t *testing.T) {
	policy, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]toolpolicy.Tier{"search_matter_documents": "low", "get_matter_summary": "low", "draft_document": "medium",
		"send_client_email": "high", "file_court_document": "high", "delete_matter_document": "prohibited"}
	for name, tl := range byName(t, nil) {
		if tier, listed := policy.Floor(name); !listed || tier != want[name] {
			t.Errorf("%s: floor %q listed=%v, want %q", name, tier, listed, want[name])
		}
		var schema map[string]any
		if json.Unmarshal(tl.Schema, &schema) != nil || schema["type"] != "object" {
			t.Errorf("%s: schema is not an object schema", name)
		}
	}
}

func TestEffectsAreIdempotentByEffectRef(t *testing.T) {
	ob := &outbox{effects: map[string]warrant.Outbound{}}
	file := byName(t, ob)["file_court_document"]
	in := json.RawMessage(`{"matter_id":"` + matter + `","court":"SF Superior","document_title":"Motion","document_text":"x"}`)
	a, err := file.Execute(scoped(), in, "ref-1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := file.Execute(scoped(), in, "ref-1") // a retried delivery
	if err != nil || string(a) != string(b) {
		t.Fatalf("retry answered differently: %s vs %s (%v)", a, b, err)
	}
	if len(ob.effects) != 1 || ob.effects["ref-1"].Kind != "court_filing" {
		t.Fatalf("effects = %+v", ob.effects)
	}
	if !strings.Contains(file.Summarize(in), "Motion") {
		t.Fatalf("summary = %q", file.Summarize(in))
	}
	if _, err := file.Execute(scoped(), in, ""); err == nil {
		t.Fatal("an effect without effect_ref ran")
	}
}

func TestToolsSeeOnlyTheirRunsMatter(t *testing.T) {
	ob := &outbox{effects: map[string]warrant.Outbound{}}
	other := json.RawMessage(`{"matter_id":"11111111-2222-4333-8444-555555555555","query":"motion"}`)
	for name, tl := range byName(t, ob) {
		in := other
		if _, err := tl.Execute(scoped(), in, "ref"); !errors.Is(err, tools.ErrOutOfScope) {
			t.Errorf("%s ran against another matter: %v", name, err)
		}
		if _, err := tl.Execute(context.Background(), in, "ref"); err == nil {
			t.Errorf("%s ran without a run scope", name)
		}
	}
	if len(ob.effects) != 0 {
		t.Fatalf("effects recorded: %+v", ob.effects)
	}
}

func TestSearchFindsFixtureDocuments(t *testing.T) {
	out, err := byName(t, nil)["search_matter_documents"].Execute(scoped(), json.RawMessage(`{"matter_id":"`+matter+`","query":"compel"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Documents []struct {
			DocumentID string `json:"document_id"`
		}
	}
	if json.Unmarshal(out, &res) != nil || len(res.Documents) == 0 {
		t.Fatalf("no hits: %s", out)
	}
}

// TestEmailSummaryNamesEveryRecipient: counsel's one-line summary of an
// e-mail names every recipient (to, cc, bcc) and counts its attachments,
// with control and bidi characters made visible.
func TestEmailSummaryNamesEveryRecipient(t *testing.T) {
	email := byName(t, &outbox{effects: map[string]warrant.Outbound{}})["send_client_email"]
	in := json.RawMessage(`{"attachments":[{"document_id":"doc-1","name":"a.pdf","size_bytes":10},{"document_id":"doc-2","name":"b.pdf","size_bytes":20}],` +
		`"bcc":["audit@firm.example"],"body":"See attached.","cc":["partner@firm.example","x\u202e@evil.example"],` +
		`"matter_id":"` + matter + `","subject":"Discovery","to":"gc@client.example"}`)
	got := email.Summarize(in)
	for _, want := range []string{"gc@client.example", "partner@firm.example", `x\u202E@evil.example`, "blind-copying audit@firm.example", "2 attachment(s)"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary %q lacks %q", got, want)
		}
	}
	if plain := email.Summarize(json.RawMessage(`{"body":"b","matter_id":"` + matter + `","subject":"s","to":"gc@client.example"}`)); strings.Contains(plain, "copying") || strings.Contains(plain, "attachment") {
		t.Errorf("summary of a plain e-mail %q", plain)
	}
}

// A document id is resolved within the run's matter (the scope the runtime
// gives, never the input): an e-mail attaches, and a deletion names, only
// documents of that matter. An id that is not one (another matter's, a
// made-up one) is refused before anything is recorded, so a call inside the
// run's matter cannot carry another matter's document out (issue 17).
func TestDocumentIDsStayInTheRunsMatter(t *testing.T) {
	ob := &outbox{effects: map[string]warrant.Outbound{}}
	m := byName(t, ob)
	email := func(ids ...string) json.RawMessage {
		var att []map[string]any
		for _, id := range ids {
			att = append(att, map[string]any{"document_id": id, "name": "a.pdf", "size_bytes": 10})
		}
		b, _ := json.Marshal(map[string]any{"attachments": att, "body": "b", "matter_id": matter, "subject": "s", "to": "gc@client.example"})
		return b
	}
	if _, err := m["send_client_email"].Execute(scoped(), email("DOC-003", "DOC-001"), "ref-ok"); err != nil {
		t.Fatalf("the matter's own documents: %v", err)
	}
	for _, ids := range [][]string{{"DOC-999"}, {"doc-003"}, {"11111111-2222-4333-8444-555555555555/DOC-003"}, {"DOC-001", "DOC-404"}, {""}} {
		if _, err := m["send_client_email"].Execute(scoped(), email(ids...), "ref-bad"); !errors.Is(err, tools.ErrDocumentNotInMatter) {
			t.Errorf("attachments %q: %v, want ErrDocumentNotInMatter", ids, err)
		}
	}
	del := json.RawMessage(`{"document_id":"DOC-999","matter_id":"` + matter + `"}`)
	if _, err := m["delete_matter_document"].Execute(scoped(), del, "ref-del"); !errors.Is(err, tools.ErrDocumentNotInMatter) {
		t.Errorf("deletion of a document not in the matter: %v", err)
	}
	if len(ob.effects) != 1 || ob.effects["ref-ok"].Kind != "client_email" {
		t.Fatalf("effects recorded: %v", slices.Collect(maps.Keys(ob.effects)))
	}
}

// Counsel's summary shows invisible characters as escapes wherever the
// model put them: tag characters, zero-width characters, a soft hyphen, a
// Hangul filler or a variation selector in a subject, a title or an
// address cannot hide words from the one line counsel reads (issue 17).
func TestSummariesShowInvisibleCharacters(t *testing.T) {
	m := byName(t, nil)
	email := m["send_client_email"].Summarize(json.RawMessage(`{"body":"b","matter_id":"` + matter + `",` +
		`"subject":"Settle\u200b now\udb40\udc41\udb40\udc42","to":"gc\u00ad@client.example","cc":["x\u3164@evil.example"]}`))
	filing := m["file_court_document"].Summarize(json.RawMessage(`{"court":"SF\u180eSuperior","document_title":"Motion\ufe0f\u2060",` +
		`"document_text":"x","matter_id":"` + matter + `"}`))
	for _, tc := range []struct{ got, want string }{
		{email, `“Settle\u200B now\uE0041\uE0042”`},
		{email, `gc\u00AD@client.example`},
		{email, `x\u3164@evil.example`},
		{filing, `“Motion\uFE0F\u2060”`},
		{filing, `SF\u180ESuperior`},
	} {
		if !strings.Contains(tc.got, tc.want) {
			t.Errorf("summary %q lacks %q", tc.got, tc.want)
		}
	}
}
