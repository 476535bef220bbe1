package toolpolicy_test

import (
	_ "embed"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/provenance"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

//go:embed hitl_risk_policy.json
var embeddedDoc []byte

// validPairs is written out independently of the package so the fuzzer checks
// the mapping rather than the package checking itself.
var validPairs = map[toolpolicy.Tier]toolpolicy.Action{
	toolpolicy.TierLow:        toolpolicy.ActionAllow,
	toolpolicy.TierMedium:     toolpolicy.ActionAllow,
	toolpolicy.TierHigh:       toolpolicy.ActionRequireApproval,
	toolpolicy.TierProhibited: toolpolicy.ActionDeny,
}

var bedrockToolName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]{0,63}$`)

func FuzzLoad(f *testing.F) {
	f.Add(embeddedDoc, "file_court_document")
	f.Add(embeddedDoc, "wire_funds")
	f.Add([]byte(policyDoc(`{}`)), "")
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		p, err := toolpolicy.Load(data)
		if err != nil {
			if !errors.Is(err, toolpolicy.ErrInvalidPolicy) {
				t.Fatalf("Load error does not match ErrInvalidPolicy: %v", err)
			}
			return
		}
		// The fuzzed name may be listed, so also probe a name that almost
		// certainly is not, to exercise the default on every accepted policy.
		def, err := p.GetToolRiskDecision("zz_fuzz_probe_unlisted_tool", nil)
		if err != nil {
			t.Fatalf("probe: %v", err)
		}
		if def.MatchedPolicy == "default" && def.Action == toolpolicy.ActionAllow {
			t.Fatalf("default allows: %+v", def)
		}
		d, err := p.GetToolRiskDecision(name, map[string]string{"k": name})
		if !bedrockToolName.MatchString(name) {
			if !errors.Is(err, toolpolicy.ErrInvalidToolName) {
				t.Fatalf("name %q: err = %v, want ErrInvalidToolName", name, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("name %q: %v", name, err)
		}
		if want, ok := validPairs[d.Tier]; !ok || want != d.Action {
			t.Fatalf("name %q: invalid tier/action pair %q/%q", name, d.Tier, d.Action)
		}
		if d.ToolName != name || d.Reason == "" || d.PolicyVersion != p.Version() {
			t.Fatalf("name %q: malformed decision %+v", name, d)
		}
		switch d.MatchedPolicy {
		case "default":
			if d.Action == toolpolicy.ActionAllow || d.Replayable {
				t.Fatalf("default decision allows or replays: %+v", d)
			}
		case "tools." + name:
			if d.Replayable && d.Tier != toolpolicy.TierLow {
				t.Fatalf("replayable non-low tool: %+v", d)
			}
		default:
			t.Fatalf("name %q: matched_policy %q", name, d.MatchedPolicy)
		}
	})
}

var floorRank = map[toolpolicy.Tier]int{
	toolpolicy.TierLow: 0, toolpolicy.TierMedium: 1, toolpolicy.TierHigh: 2, toolpolicy.TierProhibited: 3,
}

// checkInvariants holds for every decision of every policy: a valid
// tier/action pair, never below the tool's floor, a prohibited or unlisted
// tool never allowed, nothing replayable but an untouched low tier, and
// only the policy's own rules fired.
func checkInvariants(t *testing.T, p *toolpolicy.Policy, d toolpolicy.Decision, floor toolpolicy.Tier, listed bool) {
	t.Helper()
	if want, ok := validPairs[d.Tier]; !ok || want != d.Action {
		t.Fatalf("invalid tier/action pair %q/%q", d.Tier, d.Action)
	}
	if floorRank[d.Tier] < floorRank[floor] {
		t.Fatalf("tier %s below the floor %s: %+v", d.Tier, floor, d)
	}
	if floor == toolpolicy.TierProhibited && d.Action != toolpolicy.ActionDeny {
		t.Fatalf("a prohibited tool is not denied: %+v", d)
	}
	if !listed && (d.MatchedPolicy != "default" || d.FiredRules != nil || d.Action == toolpolicy.ActionAllow) {
		t.Fatalf("unlisted tool: %+v", d)
	}
	if d.Replayable && (d.Tier != toolpolicy.TierLow || len(d.FiredRules) > 0) {
		t.Fatalf("replayable: %+v", d)
	}
	if d.Reason == "" || d.PolicyVersion != p.Version() {
		t.Fatalf("malformed decision %+v", d)
	}
	ids := p.RuleIDs()
	for _, r := range d.FiredRules {
		known := slices.Contains(ids, r.ID) || r.ID == provenance.RuleUntrusted || r.ID == provenance.RuleUnknown
		if !known || r.Reason == "" || (r.Effect != "deny" && r.Effect != "record" && !strings.HasPrefix(r.Effect, "raise:")) {
			t.Fatalf("fired rule %+v", r)
		}
	}
}

// fuzzTools are the embedded policy's tools, with their floors.
var fuzzTools = map[string]toolpolicy.Tier{
	"search_matter_documents": "low", "get_matter_summary": "low", "draft_document": "medium",
	"send_client_email": "high", "file_court_document": "high", "delete_matter_document": "prohibited",
}

const fuzzEmail = `{"attachments":[{"document_id":"d","name":"a.pdf","size_bytes":12}],"bcc":[],"body":"SSN 123-45-6789",` +
	`"cc":["x@gmail.com"],"matter_id":"M-1","subject":"Hi","to":"ceo@acme-corp.com"}`

// FuzzRules loads documents with the embedded tools and random rules: each
// loads or fails with ErrInvalidPolicy, never panics; and decisions of a
// loaded policy on random inputs keep the invariants, and the name-only
// decision is never less strict than one with the input.
func FuzzRules(f *testing.F) {
	var parts struct{ Tools, Rules json.RawMessage }
	if err := json.Unmarshal(embeddedDoc, &parts); err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(parts.Rules), "send_client_email", []byte(fuzzEmail), "M-1", "acme-corp.com")
	f.Add([]byte(`[{"id":"r","tools":["draft_document"],"when":[{"input":"/a/*/b","op":"sum_gt","value":3}],"then":"raise:high","reason":"r"}]`),
		"draft_document", []byte(`{"a":[{"b":2},{"b":2}]}`), "", "")
	f.Add([]byte(`[{"id":"r","tools":["search_matter_documents","delete_matter_document"],"when":[{"not":{"any":[{"meta":"roles","op":"in","value":["partner"]},`+
		`{"input":"/q","op":"matches","value":"(?i)merger"}]}}],"then":"deny","reason":"r"}]`), "search_matter_documents", []byte(`{"q":"Merger"}`), "partner", "x.com")
	f.Add([]byte(`[{"id":"r","tools":["send_client_email"],"then":"raise:high","reason":"r"}]`), "send_client_email", []byte(`{}`), "M", "")
	f.Add([]byte(`[{"id":"r","tools":["file_court_document","draft_document"],"when":[{"any":[{"input":"**","op":"contains_ssn"},`+
		`{"input":"**","op":"matches","value":"^x"}]}],"then":"deny","reason":"r"}]`), "file_court_document", []byte(`{"a":["x",{"123-45-6789":1}]}`), "", "")
	f.Add([]byte(`[{"id":"a","tools":["get_matter_summary"],"when":[{"input":"/x~1y/0","op":"length_gt","value":2}],"then":"record","reason":"r"}]`),
		"get_matter_summary", []byte(`{"x/y":["abc"]}`), "", "")
	f.Fuzz(func(t *testing.T, rules []byte, tool string, input []byte, matter, domain string) {
		doc := []byte(`{"version":"fuzz","default":{"tier":"prohibited","reason":"unlisted"},"tools":` + string(parts.Tools) +
			`,"rules":` + string(rules) + `}`)
		p, err := toolpolicy.Load(doc)
		if err != nil {
			if !errors.Is(err, toolpolicy.ErrInvalidPolicy) {
				t.Fatalf("Load error does not match ErrInvalidPolicy: %v", err)
			}
			return
		}
		meta := toolpolicy.Metadata{MatterID: matter, UserID: domain, AgentKey: matter, Roles: []string{matter},
			FirmDomains: []string{domain}, ClientDomains: []string{domain, "acme-corp.com"}}
		names := []string{"zz_unlisted"}
		for name := range fuzzTools {
			names = append(names, name)
		}
		if bedrockToolName.MatchString(tool) {
			names = append(names, tool)
		}
		for _, name := range names {
			floor, listed := fuzzTools[name]
			if !listed {
				floor = toolpolicy.TierProhibited
			}
			d, err := p.Decide(toolpolicy.Call{Tool: name, Input: input, Meta: meta})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			checkInvariants(t, p, d, floor, listed)
			nameOnly, err := p.GetToolRiskDecision(name, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, p, nameOnly, floor, listed)
			bare, err := p.Decide(toolpolicy.Call{Tool: name, Input: input})
			if err != nil {
				t.Fatal(err)
			}
			if floorRank[bare.Tier] > floorRank[nameOnly.Tier] {
				t.Fatalf("%s: the name-only decision %s is less strict than %s on %q", name, nameOnly.Tier, bare.Tier, input)
			}
		}
	})
}

// FuzzDecide runs the embedded policy, and overlays of it, on random
// inputs and metadata: no panic, the invariants hold, and the tool the
// policy prohibits is never allowed.
func FuzzDecide(f *testing.F) {
	f.Add([]byte(fuzzEmail), "send_client_email", "M-1", "smithlaw.com", "acme-corp.com", []byte(`{"extends":"embedded","version":"v"}`))
	f.Add([]byte(`{"matter_id":"M-1","document_text":"4111 1111 1111 1111"}`), "file_court_document", "M-1", "", "", []byte(`{}`))
	f.Add([]byte(`{"matter_id":"M-2"}`), "delete_matter_document", "M-2", "a.b", "c.d",
		[]byte(`{"extends":"embedded","version":"v","disable":["matter.wall"],"require_approval":["delete_matter_document","draft_document"]}`))
	f.Add([]byte(`not json`), "get_matter_summary", "", "", "", []byte(`{"extends":"embedded","version":"v","disable":["x"]}`))
	f.Fuzz(func(t *testing.T, input []byte, tool, matter, firm, client string, overlay []byte) {
		embedded, err := toolpolicy.Embedded()
		if err != nil {
			t.Fatal(err)
		}
		policies := []*toolpolicy.Policy{embedded}
		if p, err := toolpolicy.LoadDocument(overlay); err == nil {
			policies = append(policies, p)
		} else if !errors.Is(err, toolpolicy.ErrInvalidPolicy) {
			t.Fatalf("LoadDocument error does not match ErrInvalidPolicy: %v", err)
		}
		meta := toolpolicy.Metadata{MatterID: matter, FirmDomains: []string{firm}, ClientDomains: []string{client}}
		for _, p := range policies {
			for _, name := range []string{tool, "delete_matter_document", "send_client_email", "search_matter_documents"} {
				d, err := p.Decide(toolpolicy.Call{Tool: name, Input: input, Meta: meta})
				if !bedrockToolName.MatchString(name) {
					if !errors.Is(err, toolpolicy.ErrInvalidToolName) {
						t.Fatalf("name %q: err = %v", name, err)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				floor, listed := fuzzTools[name]
				if !listed {
					floor = toolpolicy.TierProhibited
				}
				if p != embedded && floorRank[floor] < floorRank[toolpolicy.TierHigh] {
					floor = toolpolicy.TierLow // an overlay may raise it; the invariants check the embedded floor
				}
				checkInvariants(t, p, d, floor, listed)
			}
		}
	})
}
