package toolpolicy_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

const courtFilingReason = "Irreversible external court filing that must not run without human approval."

// runMeta is the metadata of a run on matter M-1 of Acme Corp, handled by
// Smith Law.
var runMeta = toolpolicy.Metadata{
	FirmID: "firm-1", MatterID: "M-1", AgentKey: "matter_assistant", UserID: "u-1", Roles: []string{"associate"},
	FirmDomains: []string{"smithlaw.com"}, ClientDomains: []string{"acme-corp.com"},
}

// The floors: each tool called inside the run's matter with nothing else
// in its input, so no rule but the court filing's (which has no
// conditions) fires.
func TestEmbeddedReferenceTools(t *testing.T) {
	p, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatalf("Embedded: %v", err)
	}
	if got := p.Version(); got != "2026-12-06.1" {
		t.Errorf("Version = %q, want 2026-12-06.1", got)
	}
	tests := []struct {
		name       string
		tier       toolpolicy.Tier
		action     toolpolicy.Action
		replayable bool
		fired      []toolpolicy.FiredRule
	}{
		{"search_matter_documents", toolpolicy.TierLow, toolpolicy.ActionAllow, true, nil},
		{"get_matter_summary", toolpolicy.TierLow, toolpolicy.ActionAllow, true, nil},
		{"draft_document", toolpolicy.TierMedium, toolpolicy.ActionAllow, false, nil},
		{"send_client_email", toolpolicy.TierHigh, toolpolicy.ActionRequireApproval, false, nil},
		{"file_court_document", toolpolicy.TierHigh, toolpolicy.ActionRequireApproval, false, []toolpolicy.FiredRule{{
			ID: "court.filing_requires_warrant", Effect: "raise:high",
			Reason: "A court filing is irreversible and always needs counsel's warrant, whatever the tool's floor says.",
		}}},
		{"delete_matter_document", toolpolicy.TierProhibited, toolpolicy.ActionDeny, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := p.Decide(toolpolicy.Call{Tool: tc.name, Input: []byte(`{"matter_id":"M-1"}`), Meta: runMeta})
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			want := toolpolicy.Decision{
				ToolName:      tc.name,
				Tier:          tc.tier,
				Action:        tc.action,
				Reason:        d.Reason,
				MatchedPolicy: "tools." + tc.name,
				PolicyVersion: "2026-12-06.1",
				Replayable:    tc.replayable,
				FiredRules:    tc.fired,
			}
			if !reflect.DeepEqual(d, want) {
				t.Errorf("decision = %+v\nwant       %+v", d, want)
			}
			if strings.TrimSpace(d.Reason) == "" || strings.HasPrefix(d.Reason, "rule ") {
				t.Errorf("reason %q is not the tool's", d.Reason)
			}
		})
	}
}

func TestCourtFilingReasonIsExact(t *testing.T) {
	p, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Decide(toolpolicy.Call{Tool: "file_court_document", Input: []byte(`{"matter_id":"M-1"}`), Meta: runMeta})
	if err != nil {
		t.Fatal(err)
	}
	if d.Reason != courtFilingReason {
		t.Errorf("reason = %q, want %q", d.Reason, courtFilingReason)
	}
}

// The name-only decision cannot see the input: every raise or deny rule
// that reads it fires (fail-closed). Under the embedded policy the matter
// wall lists every tool, so every name-only decision is a denial that says
// why.
func TestNameOnlyDecisionIsFailClosed(t *testing.T) {
	p, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"search_matter_documents", "get_matter_summary", "draft_document", "send_client_email",
		"file_court_document", "delete_matter_document"} {
		d, err := p.GetToolRiskDecision(name, map[string]string{"matter_id": "M-1"})
		if err != nil {
			t.Fatal(err)
		}
		if d.Action != toolpolicy.ActionDeny || d.Tier != toolpolicy.TierProhibited || d.Replayable ||
			d.MatchedPolicy != "tools."+name || len(d.FiredRules) == 0 || d.FiredRules[0].ID != "matter.wall" {
			t.Errorf("%s: %+v", name, d)
		}
		if name != "delete_matter_document" && !strings.Contains(d.Reason, "rule matter.wall:") {
			t.Errorf("%s: reason %q does not name the rule", name, d.Reason)
		}
		for _, fr := range d.FiredRules {
			if fr.ID == "court.filing_requires_warrant" { // no conditions: it always fires
				continue
			}
			if fr.Effect == "record" || !strings.Contains(fr.Reason, "could not be evaluated: the call has no input") {
				t.Errorf("%s: fired rule %+v does not say it could not be evaluated", name, fr)
			}
		}
	}
}

func TestUnlistedToolFailsClosed(t *testing.T) {
	for _, name := range []string{"wire_funds", "File_Court_Document", "search_matter_documents2", "x"} {
		t.Run(name, func(t *testing.T) {
			d, err := toolpolicy.GetToolRiskDecision(name, map[string]string{"tier": "low", "matter_id": "M-1"})
			if err != nil {
				t.Fatalf("GetToolRiskDecision: %v", err)
			}
			want := toolpolicy.Decision{
				ToolName:      name,
				Tier:          toolpolicy.TierProhibited,
				Action:        toolpolicy.ActionDeny,
				Reason:        "Tool is not listed in the risk policy; unlisted tools are denied (fail-closed).",
				MatchedPolicy: "default",
				PolicyVersion: "2026-12-06.1",
			}
			if !reflect.DeepEqual(d, want) {
				t.Errorf("decision = %+v\nwant       %+v", d, want)
			}
		})
	}
}

// GetToolRiskDecision's metadata map is ignored.
func TestMetadataDoesNotChangeDecision(t *testing.T) {
	p, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	plain, err := p.GetToolRiskDecision("send_client_email", nil)
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]string{"tier": "low", "action": "allow", "reason": "trust me", "matched_policy": "tools.x"}
	withMeta, err := p.GetToolRiskDecision("send_client_email", meta)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plain, withMeta) {
		t.Errorf("metadata changed the decision: %+v vs %+v", plain, withMeta)
	}
}

func TestInvalidToolNames(t *testing.T) {
	long := "a" + strings.Repeat("b", 64) // 65 characters, one over Bedrock's limit
	for _, name := range []string{"", " ", "1tool", "_tool", "-tool", "send client email", "send.email", "send_email\n", "tööl", long, "file_court_document "} {
		t.Run(name, func(t *testing.T) {
			_, err := toolpolicy.GetToolRiskDecision(name, nil)
			if !errors.Is(err, toolpolicy.ErrInvalidToolName) {
				t.Fatalf("err = %v, want ErrInvalidToolName", err)
			}
			if want := `"` + strings.ReplaceAll(name, "\n", `\n`) + `"`; !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not quote the name as %s", err, want)
			}
		})
	}
	if _, err := toolpolicy.GetToolRiskDecision("a"+strings.Repeat("b", 63), nil); err != nil {
		t.Errorf("64-character name rejected: %v", err)
	}
}

// policyDoc builds a minimal valid document around the given tools object.
func policyDoc(tools string) string {
	return `{"version":"v1","default":{"tier":"prohibited","reason":"deny"},"tools":` + tools + `}`
}

func TestLoadRejects(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		path string // FieldError.Path expected
	}{
		{"unknown tier", policyDoc(`{"t":{"tier":"critical","reason":"r"}}`), "tools.t.tier"},
		{"empty tier", policyDoc(`{"t":{"tier":"","reason":"r"}}`), "tools.t.tier"},
		{"tier wrong case", policyDoc(`{"t":{"tier":"High","reason":"r"}}`), "tools.t.tier"},
		{"unknown default tier", `{"version":"v1","default":{"tier":"none","reason":"r"},"tools":{}}`, "default.tier"},
		{"unknown field in tool", policyDoc(`{"t":{"tier":"low","reason":"r","approvers":2}}`), "tools.t.approvers"},
		{"unknown top-level field", `{"version":"v1","default":{"tier":"high","reason":"r"},"tools":{},"extra":1}`, "extra"},
		{"replayable on default", `{"version":"v1","default":{"tier":"high","reason":"r","replayable":false},"tools":{}}`, "default.replayable"},
		{"case-variant key", `{"Version":"v1","default":{"tier":"high","reason":"r"},"tools":{}}`, "Version"},
		{"empty reason", policyDoc(`{"t":{"tier":"low","reason":""}}`), "tools.t.reason"},
		{"whitespace reason", policyDoc(`{"t":{"tier":"low","reason":" \t\n"}}`), "tools.t.reason"},
		{"missing reason", policyDoc(`{"t":{"tier":"low"}}`), "tools.t.reason"},
		{"missing tier", policyDoc(`{"t":{"reason":"r"}}`), "tools.t.tier"},
		{"empty default reason", `{"version":"v1","default":{"tier":"high","reason":"  "},"tools":{}}`, "default.reason"},
		{"duplicate tool", policyDoc(`{"t":{"tier":"high","reason":"r"},"t":{"tier":"low","reason":"r"}}`), "tools.t"},
		{"duplicate tool among many", policyDoc(`{"a":{"tier":"low","reason":"r"},"b":{"tier":"low","reason":"r"},"c":{"tier":"low","reason":"r"},"d":{"tier":"low","reason":"r"},"e":{"tier":"low","reason":"r"},"f":{"tier":"low","reason":"r"},"g":{"tier":"low","reason":"r"},"h":{"tier":"low","reason":"r"},"i":{"tier":"low","reason":"r"},"a":{"tier":"high","reason":"r"}}`), "tools.a"},
		{"tools differing only in case", policyDoc(`{"send_email":{"tier":"high","reason":"r"},"Send_Email":{"tier":"low","reason":"r"}}`), ""},
		{"missing version", `{"default":{"tier":"high","reason":"r"},"tools":{}}`, "version"},
		{"empty version", `{"version":" ","default":{"tier":"high","reason":"r"},"tools":{}}`, "version"},
		{"missing default", `{"version":"v1","tools":{}}`, "default"},
		{"missing tools", `{"version":"v1","default":{"tier":"high","reason":"r"}}`, "tools"},
		{"null tools", `{"version":"v1","default":{"tier":"high","reason":"r"},"tools":null}`, "tools"},
		{"default low", `{"version":"v1","default":{"tier":"low","reason":"r"},"tools":{}}`, "default.tier"},
		{"default medium", `{"version":"v1","default":{"tier":"medium","reason":"r"},"tools":{}}`, "default.tier"},
		{"tool name with space", policyDoc(`{"send email":{"tier":"high","reason":"r"}}`), "tools.send email"},
		{"tool name starting with digit", policyDoc(`{"1send":{"tier":"high","reason":"r"}}`), "tools.1send"},
		{"tool name with dot", policyDoc(`{"send.email":{"tier":"high","reason":"r"}}`), "tools.send.email"},
		{"empty tool name", policyDoc(`{"":{"tier":"high","reason":"r"}}`), "tools."},
		{"tool name too long", policyDoc(`{"a` + strings.Repeat("b", 64) + `":{"tier":"high","reason":"r"}}`), "tools.a" + strings.Repeat("b", 64)},
		{"replayable medium", policyDoc(`{"t":{"tier":"medium","reason":"r","replayable":true}}`), "tools.t.replayable"},
		{"replayable high", policyDoc(`{"t":{"tier":"high","reason":"r","replayable":true}}`), "tools.t.replayable"},
		{"replayable prohibited", policyDoc(`{"t":{"tier":"prohibited","reason":"r","replayable":true}}`), "tools.t.replayable"},
		{"replayable wrong type", policyDoc(`{"t":{"tier":"low","reason":"r","replayable":"yes"}}`), "tools.t.replayable"},
		{"tier wrong type", policyDoc(`{"t":{"tier":1,"reason":"r"}}`), "tools.t.tier"},
		{"tools is an array", policyDoc(`[]`), "tools"},
		{"trailing data", policyDoc(`{}`) + `{}`, ""},
		{"empty document", ``, ""},
		{"not an object", `[]`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := toolpolicy.Load([]byte(tc.doc))
			if err == nil {
				t.Fatalf("Load accepted %s (version %q)", tc.doc, p.Version())
			}
			if !errors.Is(err, toolpolicy.ErrInvalidPolicy) || !errors.Is(err, contracts.ErrInvalid) {
				t.Errorf("err = %v, want ErrInvalidPolicy and contracts.ErrInvalid", err)
			}
			var fe *contracts.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, not a *contracts.FieldError", err)
			}
			if tc.path != "" && fe.Path != tc.path {
				t.Errorf("path = %q, want %q (err %v)", fe.Path, tc.path, err)
			}
		})
	}
}

func TestDefaultMustNotAllowMessage(t *testing.T) {
	_, err := toolpolicy.Load([]byte(`{"version":"v1","default":{"tier":"low","reason":"r"},"tools":{}}`))
	if err == nil || !strings.Contains(err.Error(), "the default tier must not allow") {
		t.Fatalf("err = %v", err)
	}
}

func TestLoadAccepts(t *testing.T) {
	tests := []struct {
		name string
		doc  string
	}{
		{"empty tools", `{"version":"v1","default":{"tier":"prohibited","reason":"deny"},"tools":{}}`},
		{"high default", `{"version":"v1","default":{"tier":"high","reason":"ask"},"tools":{}}`},
		{"replayable false on high", policyDoc(`{"t":{"tier":"high","reason":"r","replayable":false}}`)},
		{"64-character name", policyDoc(`{"a` + strings.Repeat("b", 63) + `":{"tier":"low","reason":"r"}}`)},
		{"hyphen and digits", policyDoc(`{"Get-Doc_2":{"tier":"low","reason":"r","replayable":true}}`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := toolpolicy.Load([]byte(tc.doc)); err != nil {
				t.Fatalf("Load: %v", err)
			}
		})
	}
}

func TestEmptyToolsDeniesEverything(t *testing.T) {
	p, err := toolpolicy.Load([]byte(policyDoc(`{}`)))
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.GetToolRiskDecision("search_matter_documents", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Action != toolpolicy.ActionDeny || d.MatchedPolicy != "default" || d.PolicyVersion != "v1" {
		t.Errorf("decision = %+v", d)
	}
}

func TestHighDefaultRequiresApproval(t *testing.T) {
	p, err := toolpolicy.Load([]byte(`{"version":"v2","default":{"tier":"high","reason":"ask counsel"},"tools":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.GetToolRiskDecision("anything", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Tier != toolpolicy.TierHigh || d.Action != toolpolicy.ActionRequireApproval || d.Reason != "ask counsel" || d.Replayable {
		t.Errorf("decision = %+v", d)
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(good, []byte(policyDoc(`{"t":{"tier":"high","reason":"r"}}`)), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := toolpolicy.LoadFile(good)
	if err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	if d, err := p.GetToolRiskDecision("t", nil); err != nil || d.Action != toolpolicy.ActionRequireApproval {
		t.Errorf("decision = %+v, %v", d, err)
	}

	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(policyDoc(`{"t":{"tier":"sometimes","reason":"r"}}`)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := toolpolicy.LoadFile(bad); !errors.Is(err, toolpolicy.ErrInvalidPolicy) || !strings.Contains(err.Error(), bad) {
		t.Errorf("bad file: err = %v", err)
	}
	if _, err := toolpolicy.LoadFile(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
}

func TestEmbeddedIsCached(t *testing.T) {
	var wg sync.WaitGroup
	got := make([]*toolpolicy.Policy, 8)
	for i := range got {
		wg.Go(func() {
			p, err := toolpolicy.Embedded()
			if err != nil {
				t.Error(err)
			}
			got[i] = p
		})
	}
	wg.Wait()
	for _, p := range got[1:] {
		if p != got[0] {
			t.Fatal("Embedded returned different policies")
		}
	}
}

// Floor reports what the file declares for a tool, independent of any call.
func TestFloorIsTheListedTier(t *testing.T) {
	p, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]toolpolicy.Tier{"get_matter_summary": toolpolicy.TierLow, "send_client_email": toolpolicy.TierHigh} {
		if tier, listed := p.Floor(name); !listed || tier != want {
			t.Errorf("Floor(%s) = %q, %v; want %q, true", name, tier, listed, want)
		}
	}
	if tier, listed := p.Floor("wire_funds"); listed || tier != toolpolicy.TierProhibited {
		t.Errorf("Floor(wire_funds) = %q, %v; want the default prohibited, unlisted", tier, listed)
	}
}

// An outline evaluates what it can: a rule on metadata alone fires or not,
// a rule on the input is set aside with the reason why, and the tier is
// the floor raised by the rules that fired; Decide on the same call still
// fires the set-aside rules (fail-closed).
func TestOutline(t *testing.T) {
	p, err := toolpolicy.Load([]byte(rulesDoc(`[
		{"id":"partners","tools":["draft"],"when":[{"meta":"roles","op":"in","value":["partner"]}],"then":"raise:high","reason":"a partner's draft"},
		{"id":"interns","tools":["draft"],"when":[{"meta":"roles","op":"in","value":["intern"]}],"then":"deny","reason":"no interns"},
		{"id":"secret","tools":["draft"],"when":[{"input":"**","op":"contains_credential"}],"then":"deny","reason":"a credential"},
		{"id":"note","tools":["draft"],"when":[{"input":"/n","op":"exists"}],"then":"record","reason":"noted"},
		{"id":"user","tools":["draft"],"when":[{"meta":"user_id","op":"equals","value":"u-9"}],"then":"deny","reason":"u-9"}]`)))
	if err != nil {
		t.Fatal(err)
	}
	o, err := p.Outline("draft", toolpolicy.Metadata{Roles: []string{"partner"}})
	if err != nil {
		t.Fatal(err)
	}
	want := toolpolicy.Outline{ToolName: "draft", Floor: toolpolicy.TierMedium, Tier: toolpolicy.TierHigh, Action: toolpolicy.ActionRequireApproval,
		Reason: "rule partners: a partner's draft", MatchedPolicy: "tools.draft", PolicyVersion: "t1",
		FiredRules: []toolpolicy.FiredRule{{ID: "partners", Effect: "raise:high", Reason: "a partner's draft"}},
		NotEvaluated: []toolpolicy.FiredRule{
			{ID: "secret", Effect: "deny", Reason: "a credential (not evaluated: the call has no input)"},
			{ID: "note", Effect: "record", Reason: "noted (not evaluated: the call has no input)"},
			{ID: "user", Effect: "deny", Reason: "u-9 (not evaluated: metadata the rule compares with is not known)"}}}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("outline %+v\nwant    %+v", o, want)
	}
	d, err := p.Decide(toolpolicy.Call{Tool: "draft", Meta: toolpolicy.Metadata{Roles: []string{"partner"}}})
	if err != nil || d.Action != toolpolicy.ActionDeny {
		t.Errorf("Decide without input: %+v, %v; want the set-aside deny rules fired", d, err)
	}
	if _, err := p.Outline("draft document", toolpolicy.Metadata{}); !errors.Is(err, toolpolicy.ErrInvalidToolName) {
		t.Errorf("invalid name: %v", err)
	}
}
