package toolpolicy_test

import (
	_ "embed"
	"errors"
	"regexp"
	"testing"

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
