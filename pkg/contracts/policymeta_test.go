package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/seed-f6d3920e/warrant"
)

func recordedMeta(t *testing.T, clientDomain string) (json.RawMessage, string) {
	t.Helper()
	raw, sum, err := RecordMetadata(PolicyMetadata{FirmID: uFirm, MatterID: uMatter, AgentKey: "matter_assistant", UserID: "u-1",
		Roles: []string{"associate"}, FirmDomains: []string{"smith-law.example"}, ClientDomains: []string{clientDomain}})
	if err != nil {
		t.Fatal(err)
	}
	return raw, sum
}

// Issue 25, item 4: the metadata a decision was made on is recorded as
// canonical JSON that hashes to its stated digest: a resealed line whose
// metadata was rewritten does not parse, on every line that records one.
func TestRecordedMetadataMustHashToItsDigest(t *testing.T) {
	raw, sum := recordedMeta(t, "ridgeway-logistics.example")
	if back, err := ReadMetadata(raw); err != nil || back.ClientDomains[0] != "ridgeway-logistics.example" || back.Roles[0] != "associate" {
		t.Fatalf("read back %+v, %v", back, err)
	}
	if h, _ := InputHash(raw); h != sum {
		t.Fatalf("the hash is not the recorded form's: %s, %s", h, sum)
	}
	req := *sampleLedger(t)[4].Event.(*ToolRequested)
	req.PolicyMetadata, req.PolicyMetadataSHA256 = raw, sum
	edit := approvedWithEdit(t)
	edit.EditedPolicyVersion, edit.EditedPolicyMetadata, edit.EditedPolicyMetadataSHA256 = "2026-12-03", raw, sum
	check := &PolicyCheck{ToolName: "send_client_email", InputSHA256: edit.EditedInputSHA256, RiskTier: "high", Action: "require_approval",
		Reason: "r", MatchedPolicy: "tools.send_client_email", PolicyVersion: "2026-12-03", PolicyMetadata: raw, PolicyMetadataSHA256: sum}
	released := &RunReleased{ApprovalRequestID: uApprove, Decision: warrant.DecisionApproved, EffectRef: "1d2c3b4a-5e6f-4789-8abc-def012345678", PolicyCheck: check}
	denied := *check
	denied.Action = "deny"
	failed := &RunFailed{ErrorClass: "*failure.Error", ErrorMessage: "m", FailureStage: "resume", FailureKind: "policy_changed",
		Failure: json.RawMessage(`{}`), PolicyCheck: &denied}

	for _, c := range []struct {
		name string
		ev   Event
		path string
	}{
		{"tool.requested", &req, "payload.policy_metadata_sha256"},
		{"approval.decided", edit, "payload.edited_policy_metadata_sha256"},
		{"run.released", released, "payload.policy_check.policy_metadata_sha256"},
		{"run.failed", failed, "payload.policy_check.policy_metadata_sha256"},
	} {
		t.Run(c.name, func(t *testing.T) {
			good, err := fixedChain().Append(c.ev)
			if err != nil {
				t.Fatalf("append: %v", err)
			}
			if _, err := ParseEventLine(good.Raw); err != nil {
				t.Fatalf("parse: %v", err)
			}
			// An insider changes the client's domain and reseals the line.
			forged := reseal(t, bytes.Replace(good.Raw, []byte(`"ridgeway-logistics.example"`), []byte(`"harbor-freight.example"`), 1))
			var fe *FieldError
			if _, err := ParseEventLine(forged); !errors.As(err, &fe) || fe.Path != c.path {
				t.Fatalf("rewritten metadata parsed: %v", err)
			}
		})
	}

	other, _ := recordedMeta(t, "harbor-freight.example")
	unknown := json.RawMessage(`{"firm_id":"` + uFirm + `","tier":"low"}`)
	unknownSum, _ := InputHash(unknown)
	for name, ev := range map[string]func() Event{
		"metadata without its hash": func() Event { r := req; r.PolicyMetadataSHA256 = ""; return &r },
		"a hash without metadata":   func() Event { r := req; r.PolicyMetadata = nil; return &r },
		"another metadata's hash":   func() Event { r := req; r.PolicyMetadata = other; return &r },
		"a member the policy lacks": func() Event { r := req; r.PolicyMetadata, r.PolicyMetadataSHA256 = unknown, unknownSum; return &r },
		"an edit's metadata, no edit": func() Event {
			d := *edit
			d.EditedInput, d.EditedInputSHA256, d.EditedRiskTier = nil, "", ""
			return &d
		},
		"a release the policy denies": func() Event { r := *released; r.PolicyCheck = &denied; return &r },
		"a declined warrant checked": func() Event {
			r := *released
			r.Decision, r.EffectRef = warrant.DecisionDenied, ""
			return &r
		},
		"a refusal the policy allows": func() Event { f := *failed; f.PolicyCheck = check; return &f },
		"a check with no metadata": func() Event {
			c := *check
			c.PolicyMetadata, c.PolicyMetadataSHA256 = nil, ""
			r := *released
			r.PolicyCheck = &c
			return &r
		},
		"a check of no version": func() Event {
			c := *check
			c.PolicyVersion = ""
			r := *released
			r.PolicyCheck = &c
			return &r
		},
	} {
		if _, err := fixedChain().Append(ev()); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
}
