package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// recordedMeta is what a ledger payload records of the metadata a decision
// was made on, read from the raw line (not through the typed event), with
// the member's hash re-computed here.
type recordedMeta struct {
	meta   toolpolicy.Metadata
	hash   string // as recorded
	rehash string // of the recorded member's RFC 8785 form
}

func metaOf(t *testing.T, payload map[string]json.RawMessage, prefix string) recordedMeta {
	t.Helper()
	raw, ok := payload[prefix+"policy_metadata"]
	if !ok {
		t.Fatalf("the payload records no %spolicy_metadata: %s", prefix, keys(payload))
	}
	var r recordedMeta
	if err := contracts.DecodeStrict(raw, &r.meta); err != nil {
		t.Fatalf("%spolicy_metadata: %v", prefix, err)
	}
	_ = json.Unmarshal(payload[prefix+"policy_metadata_sha256"], &r.hash)
	r.rehash, _ = contracts.InputHash(raw)
	return r
}

// members are a JSON object's members.
func members(t *testing.T, raw json.RawMessage) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not an object: %s", raw)
	}
	return m
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// payloads are a run's ledger payloads of one type, in order, as raw JSON.
func (h *harness) payloads(runID string, typ contracts.EventType) []map[string]json.RawMessage {
	h.t.Helper()
	var out []map[string]json.RawMessage
	for _, l := range h.ledger(runID) {
		if l.Type != typ {
			continue
		}
		// The payload as written (opened, when the line is sealed).
		raw, err := json.Marshal(l.Event)
		if err != nil {
			h.t.Fatal(err)
		}
		var payload map[string]json.RawMessage
		if err := json.Unmarshal(raw, &payload); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, payload)
	}
	return out
}

// Issue 25, item 4: the policy weighs the firm's domains and the matter's
// client domains, read from mutable items when it decides. The demo e-mail
// is held (a copy outside the firm), then the matter's client domains
// change: the record alone must still say what the decision was made on
// (tool.requested carries the metadata and its hash), and the decision must
// follow from it, though the registry today would decide otherwise.
func TestDecisionRecordsWhatItWasMadeOn(t *testing.T) {
	h := newHarness(t, demo, options{})
	ctx := context.Background()
	const firmDomain, clientDomain = "smith-law.example", "ridgeway-logistics.example"
	if err := h.store.PutFirmSettings(ctx, warrant.FirmSettings{FirmID: h.firm, SeparationOfDuties: true, Domains: []string{firmDomain}}); err != nil {
		t.Fatal(err)
	}
	putMatter(t, h, []string{clientDomain})
	res := h.start("Please e-mail the client an update.", "")
	if res.State.Status != warrant.RunHeld {
		t.Fatalf("not held: %+v", res.State)
	}
	// The client's domains change after the hold.
	putMatter(t, h, []string{"another-client.example"})

	p, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("tool.requested", func(t *testing.T) {
		reqs := h.payloads(res.State.RunID, contracts.TypeToolRequested)
		if len(reqs) != 1 {
			t.Fatalf("%d tool.requested lines", len(reqs))
		}
		m := metaOf(t, reqs[0], "")
		want := toolpolicy.Metadata{FirmID: h.firm, MatterID: h.matter, AgentKey: "matter_assistant", UserID: h.user,
			FirmDomains: []string{firmDomain}, ClientDomains: []string{clientDomain}}
		if !sameMeta(m.meta, want) || m.hash != m.rehash || m.hash == "" {
			t.Fatalf("recorded metadata %+v (hash %q, re-hashed %q), want %+v", m.meta, m.hash, m.rehash, want)
		}
		// The decision follows from what was recorded, and not from the
		// registry as it now stands.
		var req contracts.ToolRequested
		if err := json.Unmarshal(mustJSON(t, reqs[0]), &req); err != nil {
			t.Fatal(err)
		}
		again, err := p.Decide(toolpolicy.Call{Tool: req.ToolName, Input: req.Input, Meta: m.meta})
		if err != nil {
			t.Fatal(err)
		}
		if string(again.Tier) != req.RiskTier || !slices.Equal(ruleIDsOf(again.FiredRules), firedIDs(req.FiredRules)) {
			t.Fatalf("re-decided %s %v, recorded %s %v", again.Tier, ruleIDsOf(again.FiredRules), req.RiskTier, firedIDs(req.FiredRules))
		}
		now := m.meta
		now.ClientDomains = []string{"another-client.example"}
		if d, _ := p.Decide(toolpolicy.Call{Tool: req.ToolName, Input: req.Input, Meta: now}); slices.Equal(ruleIDsOf(d.FiredRules), firedIDs(req.FiredRules)) {
			t.Fatalf("the registry's change makes no difference to the decision (%v): the test proves nothing", ruleIDsOf(d.FiredRules))
		}
	})

	// Counsel's edit is decided on the registry as it is at the decision,
	// and approval.decided records that.
	if _, err := h.decideEdit(res, warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: h.emailEdit()}); err != nil {
		t.Fatal(err)
	}
	moved := toolpolicy.Metadata{FirmID: h.firm, MatterID: h.matter, AgentKey: "matter_assistant", UserID: h.user,
		FirmDomains: []string{firmDomain}, ClientDomains: []string{"another-client.example"}}
	t.Run("approval.decided", func(t *testing.T) {
		ds := h.payloads(res.State.RunID, contracts.TypeApprovalDecided)
		if len(ds) != 1 {
			t.Fatalf("%d approval.decided lines", len(ds))
		}
		m := metaOf(t, ds[0], "edited_")
		var version string
		_ = json.Unmarshal(ds[0]["edited_policy_version"], &version)
		if !sameMeta(m.meta, moved) || m.hash != m.rehash || version != p.Version() {
			t.Fatalf("recorded edit metadata %+v (hash %q, re-hashed %q, policy %q), want %+v", m.meta, m.hash, m.rehash, version, moved)
		}
	})

	// The resume decides the call again, and run.released records it.
	if _, err := h.resume(res); err != nil {
		t.Fatal(err)
	}
	t.Run("run.released", func(t *testing.T) {
		rs := h.payloads(res.State.RunID, contracts.TypeRunReleased)
		if len(rs) != 1 {
			t.Fatalf("%d run.released lines", len(rs))
		}
		if rs[0]["policy_check"] == nil {
			t.Fatalf("run.released records no policy_check: %s", keys(rs[0]))
		}
		m := metaOf(t, members(t, rs[0]["policy_check"]), "")
		var c struct {
			InputSHA256   string `json:"input_sha256"`
			PolicyVersion string `json:"policy_version"`
			Action        string `json:"action"`
		}
		if err := json.Unmarshal(rs[0]["policy_check"], &c); err != nil {
			t.Fatal(err)
		}
		_, editHash, _ := contracts.CanonicalInput(h.emailEdit())
		if !sameMeta(m.meta, moved) || m.hash != m.rehash || c.InputSHA256 != editHash || c.PolicyVersion != p.Version() || c.Action != "require_approval" {
			t.Fatalf("run.released's check %+v, metadata %+v, want %+v on %s", c, m.meta, moved, editHash)
		}
	})

	// What the brain records, the audit decides again to the same end.
	ds, err := reducer.Rederive(h.ledger(res.State.RunID), p)
	if err != nil {
		t.Fatal(err)
	}
	var types []contracts.EventType
	for _, d := range ds {
		types = append(types, d.Type)
	}
	if !slices.Equal(types, []contracts.EventType{contracts.TypeToolRequested, contracts.TypeApprovalDecided, contracts.TypeRunReleased}) {
		t.Fatalf("re-derived %v", types)
	}
}

func putMatter(t *testing.T, h *harness, domains []string) {
	t.Helper()
	ctx := context.Background()
	var version int64
	switch cur, err := h.store.GetMatter(ctx, h.firm, h.matter); {
	case err == nil:
		version = cur.Version
	case !errors.Is(err, warrant.ErrNotFound):
		t.Fatal(err)
	}
	m := warrant.Matter{FirmID: h.firm, MatterID: h.matter, Title: "Ridgeway v. Harbor", ClientDomains: domains, UpdatedBy: h.user}
	if _, err := h.store.PutMatter(ctx, m, version); err != nil {
		t.Fatal(err)
	}
}

func sameMeta(a, b toolpolicy.Metadata) bool {
	return a.FirmID == b.FirmID && a.MatterID == b.MatterID && a.AgentKey == b.AgentKey && a.UserID == b.UserID &&
		slices.Equal(a.Roles, b.Roles) && slices.Equal(a.FirmDomains, b.FirmDomains) && slices.Equal(a.ClientDomains, b.ClientDomains)
}

func ruleIDsOf(rules []toolpolicy.FiredRule) []string {
	var ids []string
	for _, r := range rules {
		ids = append(ids, r.ID)
	}
	return ids
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The largest decision the runtime records fits one ledger line: an input
// of MaxToolInputBytes with the most domains the firm's settings and the
// matter registry accept (100 each, of 253 bytes), every rule of the
// embedded policy fired. Recording the metadata whole, not a hash of it, is
// chosen on this bound (docs/DECISIONS.md).
func TestLargestDecisionFitsALine(t *testing.T) {
	domains := func(prefix string) []string {
		out := make([]string, 100)
		for i := range out {
			label := fmt.Sprintf("%s%03d", prefix, i)
			d := label
			for len(d)+len(".example")+1+63 <= 253 {
				d += "." + strings.Repeat("x", 63)
			}
			d += "." + strings.Repeat("y", 253-len(d)-len(".example")-1) + ".example"
			if len(d) != 253 {
				t.Fatalf("domain of %d bytes", len(d))
			}
			out[i] = d
		}
		return out
	}
	meta := toolpolicy.Metadata{FirmID: newID(), MatterID: newID(), AgentKey: "matter_assistant", UserID: newID(),
		Roles: []string{"associate", "counsel", "firm_admin"}, FirmDomains: domains("f"), ClientDomains: domains("c")}
	if err := warrant.CheckDomains("firm_domains", meta.FirmDomains); err != nil {
		t.Fatal(err)
	}
	raw, sum, err := contracts.RecordMetadata(meta)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("a", agent.MaxToolInputBytes-64)
	input, hash, err := contracts.CanonicalInput(mustJSON(t, map[string]any{"matter_id": meta.MatterID, "body": body}))
	if err != nil || len(input) > agent.MaxToolInputBytes {
		t.Fatalf("input of %d bytes, %v", len(input), err)
	}
	p, err := toolpolicy.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	var fired []contracts.FiredRule
	for _, id := range p.RuleIDs() {
		fired = append(fired, contracts.FiredRule{ID: id, Effect: "raise:high", Reason: strings.Repeat("r", 300)})
	}
	req := &contracts.ToolRequested{Turn: 1, ToolUseID: "tooluse_" + strings.Repeat("x", 64), ToolName: "send_client_email", Input: input,
		InputSHA256: hash, RiskTier: "high", Action: "require_approval", Reason: strings.Repeat("r", 300), MatchedPolicy: "tools.send_client_email",
		PolicyVersion: p.Version(), FiredRules: fired, PolicyMetadata: raw, PolicyMetadataSHA256: sum}
	_, oh, _ := contracts.CanonicalInput([]byte(`{"a":1}`))
	decided := &contracts.ApprovalDecided{ApprovalRequestID: newID(), Decision: warrant.DecisionApproved, DecidedBy: newID(),
		ToolInputHash: oh, Note: strings.Repeat("n", 2000*4), DecidedAs: contracts.RoleCounsel, EditedInput: input, EditedInputSHA256: hash,
		EditedRiskTier: "high", EditedFiredRules: fired, EditedPolicyVersion: p.Version(), EditedPolicyMetadata: raw, EditedPolicyMetadataSHA256: sum}
	for _, ev := range []contracts.Event{req, decided} {
		l, err := contracts.NewChain(newID(), newID()).Append(ev)
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Raw) > contracts.MaxLineBytes {
			t.Errorf("%s: %d bytes, at most %d", ev.EventType(), len(l.Raw), contracts.MaxLineBytes)
		}
		t.Logf("%s: %d bytes of %d (metadata %d)", ev.EventType(), len(l.Raw), contracts.MaxLineBytes, len(raw))
	}
}
