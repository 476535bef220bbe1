package toolpolicy_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

func TestOverlay(t *testing.T) {
	base, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	p, err := toolpolicy.LoadDocument([]byte(`{"extends":"embedded","version":"firm-7.1",
		"disable":["email.attachment_count","court.unredacted_identifiers"],
		"require_approval":["draft_document","search_matter_documents","delete_matter_document","send_client_email"]}`))
	if err != nil {
		t.Fatalf("LoadDocument: %v", err)
	}
	if got := p.Version(); got != "2026-12-06.1+firm-7.1" {
		t.Errorf("Version = %q", got)
	}
	want := slices.DeleteFunc(base.RuleIDs(), func(id string) bool {
		return id == "email.attachment_count" || id == "court.unredacted_identifiers"
	})
	if got := p.RuleIDs(); !reflect.DeepEqual(got, want) {
		t.Errorf("RuleIDs = %v, want %v", got, want)
	}
	if n := len(base.RuleIDs()); n != 12 {
		t.Errorf("the overlay changed the embedded policy: %d rules", n)
	}
	for _, tc := range []struct {
		tool, input string
		tier        toolpolicy.Tier
		fired       []string
		reason      string // a substring
	}{
		{"draft_document", `{"matter_id":"M-1"}`, toolpolicy.TierHigh, nil, "Overlay firm-7.1 requires counsel's approval"},
		{"search_matter_documents", `{"matter_id":"M-1"}`, toolpolicy.TierHigh, nil, "Overlay firm-7.1"},
		{"get_matter_summary", `{"matter_id":"M-1"}`, toolpolicy.TierLow, nil, "Read-only retrieval"},
		{"delete_matter_document", `{"matter_id":"M-1"}`, toolpolicy.TierProhibited, nil, "agents may never delete"},
		{"send_client_email", string(emailInput(7)), toolpolicy.TierHigh, []string{"email.client_communication"}, "a lawyer must approve it."},
		{"search_matter_documents", `{"matter_id":"M-2"}`, toolpolicy.TierProhibited, []string{"matter.wall"}, "rule matter.wall"},
		{"file_court_document", `{"matter_id":"M-1","document_text":"SSN 123-45-6789"}`, toolpolicy.TierHigh, []string{"court.filing_requires_warrant"}, "Irreversible"},
	} {
		d, err := p.Decide(toolpolicy.Call{Tool: tc.tool, Input: []byte(tc.input), Meta: runMeta})
		if err != nil {
			t.Fatal(err)
		}
		var fired []string
		for _, r := range d.FiredRules {
			fired = append(fired, r.ID)
		}
		if d.Tier != tc.tier || !reflect.DeepEqual(fired, tc.fired) || !strings.Contains(d.Reason, tc.reason) ||
			d.Replayable != (tc.tool == "get_matter_summary") || d.PolicyVersion != "2026-12-06.1+firm-7.1" {
			t.Errorf("%s: %+v", tc.tool, d)
		}
	}
	// The embedded policy itself is untouched.
	d, err := base.Decide(toolpolicy.Call{Tool: "search_matter_documents", Input: []byte(`{"matter_id":"M-1"}`), Meta: runMeta})
	if err != nil || d.Tier != toolpolicy.TierLow || !d.Replayable || d.PolicyVersion != "2026-12-06.1" {
		t.Errorf("embedded after an overlay: %+v, %v", d, err)
	}
}

// emailInput is an e-mail to the client with n small attachments.
func emailInput(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"attachments":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"document_id":"d","name":"n.pdf","size_bytes":10}`)
	}
	b.WriteString(`],"body":"Hello","matter_id":"M-1","subject":"Hi","to":"ceo@acme-corp.com"}`)
	return []byte(b.String())
}

func TestOverlayMinimal(t *testing.T) {
	p, err := toolpolicy.LoadDocument([]byte(`{"extends":"embedded","version":"v2"}`))
	if err != nil {
		t.Fatal(err)
	}
	base, _ := toolpolicy.Embedded()
	if p.Version() != "2026-12-06.1+v2" || !reflect.DeepEqual(p.RuleIDs(), base.RuleIDs()) {
		t.Errorf("version %q, rules %v", p.Version(), p.RuleIDs())
	}
}

func TestOverlayRejects(t *testing.T) {
	for _, tc := range []struct {
		name, doc, path, msg string
	}{
		{"unknown rule", `{"extends":"embedded","version":"v","disable":["email.attachments"]}`, "disable[0]", `no rule "email.attachments"`},
		{"rule disabled twice", `{"extends":"embedded","version":"v","disable":["matter.wall","matter.wall"]}`, "disable[1]", "disabled twice"},
		{"unlisted tool", `{"extends":"embedded","version":"v","require_approval":["wire_funds"]}`, "require_approval[0]", `"wire_funds" is not listed`},
		{"tool in another case", `{"extends":"embedded","version":"v","require_approval":["Draft_Document"]}`, "require_approval[0]", "not listed"},
		{"tool twice", `{"extends":"embedded","version":"v","require_approval":["draft_document","draft_document"]}`, "require_approval[1]", "named twice"},
		{"extends another policy", `{"extends":"https://example.com/policy.json","version":"v"}`, "extends", `extends "embedded"`},
		{"extends empty", `{"extends":"","version":"v"}`, "extends", ""},
		{"extends null", `{"extends":null,"version":"v"}`, "extends", "null"},
		{"no version", `{"extends":"embedded"}`, "version", "missing"},
		{"empty version", `{"extends":"embedded","version":""}`, "version", "must match"},
		{"version with +", `{"extends":"embedded","version":"a+b"}`, "version", "must match"},
		{"version with a space", `{"extends":"embedded","version":"firm 7"}`, "version", "must match"},
		{"overlay adding rules", `{"extends":"embedded","version":"v","rules":[]}`, "rules", "unknown field"},
		{"overlay lowering a tool", `{"extends":"embedded","version":"v","tools":{"send_client_email":{"tier":"low","reason":"r"}}}`, "tools", "unknown field"},
		{"overlay with a default", `{"extends":"embedded","version":"v","default":{"tier":"low","reason":"r"}}`, "default", "unknown field"},
		{"allow list", `{"extends":"embedded","version":"v","allow":["delete_matter_document"]}`, "allow", "unknown field"},
		{"disable not a list", `{"extends":"embedded","version":"v","disable":"matter.wall"}`, "disable", "array"},
		{"duplicate key", `{"extends":"embedded","version":"v","disable":[],"disable":["matter.wall"]}`, "disable", "duplicate"},
		{"not JSON", `{"extends":"embedded",`, "", ""},
		{"null", `null`, "", ""},
		{"an array", `[{"extends":"embedded"}]`, "", ""},
		{"empty", ``, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := toolpolicy.LoadDocument([]byte(tc.doc))
			if err == nil || p != nil {
				t.Fatalf("LoadDocument = %v, %v; want an error and no policy", p, err)
			}
			if !errors.Is(err, toolpolicy.ErrInvalidPolicy) || !errors.Is(err, contracts.ErrInvalid) {
				t.Errorf("err = %v, want ErrInvalidPolicy", err)
			}
			var fe *contracts.FieldError
			if tc.path != "" && (!errors.As(err, &fe) || fe.Path != tc.path) {
				t.Errorf("err = %v, want a FieldError at %q", err, tc.path)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want it to say %q", err, tc.msg)
			}
		})
	}
}

// A document without "extends" is a full policy, loaded as Load does.
func TestLoadDocumentFullPolicy(t *testing.T) {
	p, err := toolpolicy.LoadDocument(embeddedDoc)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := toolpolicy.Embedded()
	if p.Version() != base.Version() || !reflect.DeepEqual(p.RuleIDs(), base.RuleIDs()) {
		t.Errorf("version %q rules %v", p.Version(), p.RuleIDs())
	}
	if _, err := toolpolicy.LoadDocument([]byte(`{"version":"v1","default":{"tier":"low","reason":"r"},"tools":{}}`)); err == nil ||
		!strings.Contains(err.Error(), "the default tier must not allow") {
		t.Errorf("err = %v", err)
	}
}

func TestLoadFileOverlay(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(path, []byte(`{"extends":"embedded","version":"v9","require_approval":["get_matter_summary"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := toolpolicy.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Decide(toolpolicy.Call{Tool: "get_matter_summary", Input: []byte(`{"matter_id":"M-1"}`), Meta: runMeta})
	if err != nil || d.Action != toolpolicy.ActionRequireApproval || d.PolicyVersion != "2026-12-06.1+v9" {
		t.Errorf("%+v, %v", d, err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"extends":"embedded","version":"v9","disable":["nope"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := toolpolicy.LoadFile(bad); !errors.Is(err, toolpolicy.ErrInvalidPolicy) || !strings.Contains(err.Error(), bad) {
		t.Errorf("err = %v", err)
	}
}
