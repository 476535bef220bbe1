package toolpolicy_test

import (
	"encoding/json"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// benchEmail is a realistic send_client_email input (about 300 bytes,
// canonical): the client in to, the responsible partner in cc, one
// attachment and a short body with line breaks (escaped in JSON).
const benchEmail = `{"matter_id":"6f1c2a9e-0d4b-4c57-9a51-3e2f8b7d1c20","to":"m.alvarez@acme-corp.com",` +
	`"cc":["j.smith@smithlaw.com"],"subject":"Engagement letter",` +
	`"body":"Dear Ms. Alvarez,\n\nThe signed engagement letter is attached.\n\nRegards,\nJ. Smith",` +
	`"attachments":[{"document_id":"doc-4821","name":"engagement.pdf","size_bytes":184320}]}`

var benchMeta = toolpolicy.Metadata{
	FirmID: "firm-1", MatterID: "6f1c2a9e-0d4b-4c57-9a51-3e2f8b7d1c20", AgentKey: "matter_assistant", UserID: "u-1",
	Roles: []string{"associate"}, FirmDomains: []string{"smithlaw.com"}, ClientDomains: []string{"acme-corp.com"},
}

var sink toolpolicy.Decision

// BenchmarkDecide compares, in one run, a decision on the call's arguments
// (the embedded policy: 12 rules, 9 of which list send_client_email) with
// the name-only decision, both on the embedded policy (where every rule on
// the input fires fail-closed) and on the same tools without rules (the
// decision as it was before rules: a map lookup).
func BenchmarkDecide(b *testing.B) {
	embedded, err := toolpolicy.Embedded()
	if err != nil {
		b.Fatal(err)
	}
	noRules := loadWithoutRules(b)
	input, err := contracts.Canonicalize([]byte(benchEmail))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("input: %d bytes; rules: %d", len(input), len(embedded.RuleIDs()))
	call := toolpolicy.Call{Tool: "send_client_email", Input: input, Meta: benchMeta}
	b.Run("name_only_no_rules", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink, _ = noRules.GetToolRiskDecision("send_client_email", nil)
		}
	})
	b.Run("name_only_embedded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink, _ = embedded.GetToolRiskDecision("send_client_email", nil)
		}
	})
	b.Run("with_input_embedded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink, _ = embedded.Decide(call)
		}
	})
}

func loadWithoutRules(tb testing.TB) *toolpolicy.Policy {
	tb.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(embeddedDoc, &doc); err != nil {
		tb.Fatal(err)
	}
	delete(doc, "rules")
	data, _ := json.Marshal(doc)
	p, err := toolpolicy.Load(data)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}
