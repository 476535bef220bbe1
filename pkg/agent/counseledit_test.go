package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/internal/wire"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy/policytest"
)

// emailEdit is the demo's e-mail as counsel edits it: the outside copy
// dropped, the body reworded.
func (h *harness) emailEdit() json.RawMessage {
	b, _ := json.Marshal(map[string]any{"matter_id": h.matter, "to": bedrocktest.DemoClientAddress,
		"subject": "Discovery update", "body": "We have moved to compel; I will call you after the hearing."})
	return b
}

func (h *harness) decideEdit(res agent.Result, d warrant.CounselDecision) (warrant.Warrant, error) {
	p := res.State.PendingApproval
	if d.PresentedHash == "" {
		d.PresentedHash = p.ToolInputHash
	}
	if d.DecidedBy == "" {
		d.DecidedBy = uuid.NewString()
	}
	d.DecidedAs = contracts.RoleCounsel
	return agent.Decider{Store: h.store, Heads: h.keys, Edits: h.brain, Keys: h.dataKeys}.Decide(context.Background(), h.firm, res.State.RunID, p.ApprovalRequestID, d)
}

func firedIDs(rules []contracts.FiredRule) []string {
	var ids []string
	for _, r := range rules {
		ids = append(ids, r.ID)
	}
	return ids
}

// The e-mail is held with the rules that fired on its arguments; counsel
// approves an edit, and exactly the edited bytes run, once, with both hashes
// in the ledger and the model told that its input did not run.
func TestCounselEditRunsTheEditedCall(t *testing.T) {
	h := newHarness(t, demo, options{})
	res := h.start("Please e-mail the client an update.", "")
	p := res.State.PendingApproval
	if res.State.Status != warrant.RunHeld || p == nil || p.ToolName != "send_client_email" {
		t.Fatalf("not held on the e-mail: %+v", res.State)
	}
	if ids := firedIDs(p.FiredRules); !slices.Contains(ids, "email.copy_outside_firm") || !slices.Contains(ids, "email.recipient_outside_client") || p.PolicyVersion == "" {
		t.Fatalf("hold: fired %v, policy version %q", ids, p.PolicyVersion)
	}
	edit := h.emailEdit()
	w, err := h.decideEdit(res, warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: edit})
	if err != nil {
		t.Fatal(err)
	}
	canonical, hash, _ := contracts.CanonicalInput(edit)
	if w.EditedHash != hash || string(w.EditedInput) != string(canonical) || w.ToolInputHash != p.ToolInputHash {
		t.Fatalf("warrant edit %q %s, want %q %s", w.EditedInput, w.EditedHash, canonical, hash)
	}
	var decided *contracts.ApprovalDecided
	for _, l := range h.ledger(res.State.RunID) {
		if d, ok := l.Event.(*contracts.ApprovalDecided); ok {
			decided = d
		}
	}
	if decided == nil || decided.ToolInputHash != p.ToolInputHash || decided.EditedInputSHA256 != hash || decided.EditedRiskTier != "high" ||
		slices.Contains(firedIDs(decided.EditedFiredRules), "email.copy_outside_firm") || !slices.Contains(firedIDs(decided.EditedFiredRules), "email.recipient_outside_client") {
		t.Fatalf("approval.decided = %+v", decided)
	}

	done, err := h.resume(res)
	if err != nil {
		t.Fatal(err)
	}
	if done.State.Status != warrant.RunCompleted || done.State.FinalText != bedrocktest.DemoEmailedText {
		t.Fatalf("after resume: %+v", done.State)
	}
	out := h.outbound(res.State.RunID)
	if len(out) != 1 || out[0].Kind != "client_email" || strings.Contains(string(out[0].Body), bedrocktest.DemoCopyAddress) ||
		!strings.Contains(string(out[0].Body), "I will call you after the hearing.") {
		t.Fatalf("effects = %+v", out)
	}
	tcs := h.completions(res.State.RunID)
	if len(tcs) != 1 || tcs[0].Status != contracts.ToolSuccess || tcs[0].InputSHA256 != p.ToolInputHash || tcs[0].ExecutedInputSHA256 != hash {
		t.Fatalf("tool.completed = %+v", tcs)
	}
	reqs := h.fake.Requests()
	if !lastRequestHasToolResult(reqs[len(reqs)-1], "success", agent.NoteEditedByCounsel) {
		t.Fatal("the model was not told that counsel edited the call")
	}
	// The audit ties the executed input to counsel's edit.
	prov, err := reducer.Audit(h.ledger(res.State.RunID))
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, pv := range prov {
		if pv.ToolName == "send_client_email" {
			found = pv.ExecutedInputSHA256 == hash && slices.Contains(firedIDs(pv.FiredRules), "email.copy_outside_firm")
		}
	}
	if !found {
		t.Fatalf("audit = %+v", prov)
	}
}

// Every edit counsel may not make is refused before anything is written.
func TestCounselEditRefusals(t *testing.T) {
	h := newHarness(t, demo, options{})
	res := h.start("Please e-mail the client an update.", "")
	p := res.State.PendingApproval
	before := len(h.ledger(res.State.RunID))
	walled, _ := json.Marshal(map[string]any{"matter_id": bedrocktest.DemoOtherMatter, "to": bedrocktest.DemoClientAddress,
		"subject": "x", "body": "y"})
	ssn, _ := json.Marshal(map[string]any{"matter_id": h.matter, "to": bedrocktest.DemoClientAddress,
		"subject": "x", "body": "Her SSN is 123-45-6789."})
	for _, c := range []struct {
		name string
		d    warrant.CounselDecision
		kind failure.Kind
		msg  string
	}{
		{"denial with an edit", warrant.CounselDecision{Decision: warrant.DecisionDenied, EditedInput: h.emailEdit()}, failure.KindInvalidRequest, "field edited_input: only an approval"},
		{"the call as requested", warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: p.ToolInput}, failure.KindInvalidRequest, "is the call as requested"},
		{"the same call, other whitespace", warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: json.RawMessage(" " + string(p.ToolInput) + "\n")}, failure.KindInvalidRequest, "is the call as requested"},
		{"not JSON", warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: json.RawMessage(`{"to":`)}, failure.KindInvalidRequest, "field edited_input"},
		{"duplicate keys", warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: json.RawMessage(`{"to":"a@b.example","to":"c@d.example"}`)}, failure.KindInvalidRequest, "field edited_input"},
		{"not an object", warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: json.RawMessage(`["x"]`)}, failure.KindInvalidRequest, "must be a JSON object"},
		{"the schema", warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: json.RawMessage(`{"matter_id":"` + h.matter + `"}`)}, failure.KindInvalidRequest,
			"field edited_input/to, edited_input/subject, edited_input/body: does not match the tool's input schema"},
		{"an address that is not one", warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: json.RawMessage(`{"matter_id":"` + h.matter +
			`","to":"` + bedrocktest.DemoClientAddress + `","cc":["ok@warrant-law.example","123-45-6789"],"subject":"x","body":"y"}`)}, failure.KindInvalidRequest,
			"field edited_input/cc/1: does not match the tool's input schema"},
		{"a member the schema does not have", warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: json.RawMessage(`{"matter_id":"` + h.matter +
			`","to":"` + bedrocktest.DemoClientAddress + `","subject":"x","body":"y","123-45-6789":"z"}`)}, failure.KindInvalidRequest,
			"field edited_input: does not match the tool's input schema"},
		{"the matter wall", warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: walled}, failure.KindPolicyDenied, "matter.wall"},
		{"an SSN outside the firm", warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: ssn}, failure.KindPolicyDenied, "email.ssn_outside_firm"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.decideEdit(res, c.d)
			if failureKind(err) != c.kind || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want %s containing %q", err, c.kind, c.msg)
			}
			if strings.Contains(err.Error(), "123-45-6789") {
				t.Fatalf("the error echoes the edit: %v", err)
			}
		})
	}
	if n := len(h.ledger(res.State.RunID)); n != before {
		t.Fatalf("refused edits wrote %d lines", n-before)
	}
	w, err := h.store.GetWarrant(context.Background(), h.firm, res.State.RunID, p.ApprovalRequestID)
	if err != nil || w.Status != warrant.WarrantPending || w.EditedHash != "" {
		t.Fatalf("warrant after refusals: %+v %v", w, err)
	}
	// Without an edit checker, an edit is refused, never silently dropped.
	_, err = agent.Decider{Store: h.store, Heads: h.keys, Keys: h.dataKeys}.Decide(context.Background(), h.firm, res.State.RunID, p.ApprovalRequestID,
		warrant.CounselDecision{Decision: warrant.DecisionApproved, PresentedHash: p.ToolInputHash, DecidedBy: uuid.NewString(), EditedInput: h.emailEdit()})
	if failureKind(err) != failure.KindInvalidRequest {
		t.Fatalf("edit without a checker: %v", err)
	}
}

// A warrant item whose edit was changed, added or dropped behind the
// ledger's back is refused at resume and nothing runs.
func TestTamperedEditIsRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		edit   bool
		update string
		vals   map[string]types.AttributeValue
	}{
		// (minidyn ignores REMOVE; an empty edit reads as none.)
		{"edit dropped", true, "SET edited_input = :e, edited_hash = :e", map[string]types.AttributeValue{":e": &types.AttributeValueMemberS{Value: ""}}},
		{"edit changed", true, "SET edited_input = :i", map[string]types.AttributeValue{":i": &types.AttributeValueMemberS{Value: `{"body":"x","matter_id":"m","subject":"s","to":"evil@x.example"}`}}},
		{"edit added", false, "SET edited_input = :i, edited_hash = :h", map[string]types.AttributeValue{
			":i": &types.AttributeValueMemberS{Value: `{"body":"x"}`},
			":h": &types.AttributeValueMemberS{Value: "d2d19a1e94ebb9a9b6b7d2fd2a8bbf0a4e4ab2d1f3b40e39c7d4c3c1c9b1b3a1"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, demo, options{})
			res := h.start("Please e-mail the client an update.", "")
			d := warrant.CounselDecision{Decision: warrant.DecisionApproved}
			if c.edit {
				d.EditedInput = h.emailEdit()
			}
			if _, err := h.decideEdit(res, d); err != nil {
				t.Fatal(err)
			}
			h.tamperWarrant(res, c.update, nil, c.vals)
			h.wantResumeRefused(res)
		})
	}
}

// The policy is decided again at dispatch: a call the running policy now
// denies is refused with policy_changed, recorded in one write (warrant
// refused, run failed), and never executed.
func TestPolicyChangedAtDispatch(t *testing.T) {
	for _, edited := range []bool{false, true} {
		t.Run(map[bool]string{false: "as requested", true: "edited"}[edited], func(t *testing.T) {
			h := newHarness(t, demo, options{})
			res := h.start("Please e-mail the client an update.", "")
			d := warrant.CounselDecision{Decision: warrant.DecisionApproved}
			if edited {
				d.EditedInput = h.emailEdit()
			}
			if _, err := h.decideEdit(res, d); err != nil {
				t.Fatal(err)
			}
			denying := policytest.Denying(t, "2026-12-04", "email.recipient_outside_client")
			stricter, err := wire.NewBrain(wire.Deps{Config: h.cfg, Keys: h.keys, DataKeys: h.dataKeys, Store: h.store, Model: h.model,
				Logger: failure.NewLogger(h.logs), Policy: denying})
			if err != nil {
				t.Fatal(err)
			}
			req := agent.ResumeRequest{FirmID: h.firm, RunID: res.State.RunID, ApprovalID: res.State.PendingApproval.ApprovalRequestID, UserID: h.user}
			_, err = stricter.Resume(context.Background(), req)
			if failureKind(err) != failure.KindPolicyChanged || !strings.Contains(err.Error(), "2026-12-04") {
				t.Fatalf("resume under the stricter policy: %v", err)
			}
			if n := len(h.outbound(res.State.RunID)); n != 0 {
				t.Fatalf("%d effects", n)
			}
			lines := h.ledger(res.State.RunID)
			st, err := reducer.ReduceAgentRun(lines)
			if err != nil || st.Status != warrant.RunFailed || st.FailureKind != string(failure.KindPolicyChanged) {
				t.Fatalf("state = %+v, %v", st, err)
			}
			// Issue 25, item 4: the refusal records the decision it made
			// and what it was made on.
			failed := h.payloads(res.State.RunID, contracts.TypeRunFailed)
			var check struct {
				InputSHA256   string          `json:"input_sha256"`
				PolicyVersion string          `json:"policy_version"`
				Action        string          `json:"action"`
				Metadata      json.RawMessage `json:"policy_metadata"`
			}
			if len(failed) != 1 || json.Unmarshal(failed[0]["policy_check"], &check) != nil {
				t.Fatalf("run.failed records no policy_check: %d lines", len(failed))
			}
			execHash := res.State.PendingApproval.ToolInputHash
			if edited {
				_, execHash, _ = contracts.CanonicalInput(h.emailEdit())
			}
			if m := metaOf(t, members(t, failed[0]["policy_check"]), ""); check.Action != "deny" || check.PolicyVersion != "2026-12-04" ||
				check.InputSHA256 != execHash || m.meta.MatterID != h.matter || m.hash != m.rehash {
				t.Fatalf("run.failed's policy_check = %+v (metadata %+v)", check, m)
			}
			// The audit decides the refusal again under the policy that made it.
			embedded, _ := toolpolicy.Embedded()
			if ds, err := reducer.Rederive(lines, embedded, denying); err != nil || ds[len(ds)-1].Type != contracts.TypeRunFailed || ds[len(ds)-1].Action != "deny" {
				t.Fatalf("re-derived %+v, %v", ds, err)
			}
			w, err := h.store.GetWarrant(context.Background(), h.firm, res.State.RunID, req.ApprovalID)
			if err != nil || w.Status != warrant.WarrantRefused {
				t.Fatalf("warrant = %+v, %v", w, err)
			}
			// Neither brain can use the refused warrant afterwards.
			for _, b := range []*agent.Brain{stricter, h.brain} {
				if _, err := b.Resume(context.Background(), req); err == nil {
					t.Fatal("a refused warrant resumed the run")
				}
			}
			if n := len(h.outbound(res.State.RunID)); n != 0 || len(h.ledger(res.State.RunID)) != len(lines) {
				t.Fatalf("after refusal: %d effects, %d lines (was %d)", n, len(h.ledger(res.State.RunID)), len(lines))
			}
			if !strings.Contains(h.logs.String(), `"failure_kind":"policy_changed"`) {
				t.Fatalf("no policy_changed envelope in %s", h.logs.String())
			}
		})
	}
}

// The starting user's roles are recorded in run.started and are metadata
// for the policy's rules at every step: a rule that denies paralegals the
// document search denies it in a paralegal's run only.
func TestRolesAreRuleMetadata(t *testing.T) {
	h := newHarness(t, demo, options{})
	policy := policytest.WithRule(t, "2026-12-04", `{"id": "search.no_paralegals", "tools": ["search_matter_documents"],
		"when": [{"meta": "roles", "op": "in", "value": ["paralegal"]}], "then": "deny",
		"reason": "Paralegals do not search matter documents through the agent."}`)
	brain, err := wire.NewBrain(wire.Deps{Config: h.cfg, Keys: h.keys, DataKeys: h.dataKeys, Store: h.store, Model: h.model, Logger: failure.NewLogger(h.logs), Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	start := func(roles ...string) agent.Result {
		inv := contracts.AgentInvoke{AgentKey: "matter_assistant", Mode: contracts.ModeInvoke,
			Meta:    contracts.InvokeMeta{RunID: uuid.NewString(), FirmID: h.firm, UserID: h.user, MatterID: h.matter},
			History: []contracts.HistoryMessage{}, CounselMessage: "Please file the motion to compel."}
		res, err := brain.Run(context.Background(), inv, agent.StartOptions{CostCapUSD: "1.00", UserRoles: roles})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	searches := func(runID string) (action string, fired []string, roles []string) {
		for _, l := range h.ledger(runID) {
			switch e := l.Event.(type) {
			case *contracts.RunStarted:
				roles = e.UserRoles
			case *contracts.ToolRequested:
				if e.ToolName == "search_matter_documents" {
					action, fired = e.Action, firedIDs(e.FiredRules)
				}
			}
		}
		return action, fired, roles
	}
	para := start("paralegal")
	if action, fired, roles := searches(para.State.RunID); action != "deny" || !slices.Contains(fired, "search.no_paralegals") || !slices.Equal(roles, []string{"paralegal"}) {
		t.Fatalf("paralegal's run: search %s, fired %v, run.started roles %v", action, fired, roles)
	}
	assoc := start("associate")
	if action, fired, roles := searches(assoc.State.RunID); action != "allow" || slices.Contains(fired, "search.no_paralegals") || !slices.Equal(roles, []string{"associate"}) {
		t.Fatalf("associate's run: search %s, fired %v, run.started roles %v", action, fired, roles)
	}
	if st, err := reducer.ReduceAgentRun(h.ledger(assoc.State.RunID)); err != nil || !slices.Equal(st.UserRoles, []string{"associate"}) {
		t.Fatalf("folded roles %v, %v", st.UserRoles, err)
	}
}

// Issue 31, item 11: what the policy decides again at dispatch is the call
// that would run, counsel's edit, not the call as the model requested it.
// A rule added after the approval that denies only the edited body (the
// requested body does not match it) refuses the resume with policy_changed,
// and nothing is sent.
//
// Checked: with PrepareResume deciding w.Input (the requested input)
// instead of execInput, this test fails with "resume under the rule added
// after the approval: <nil>" (the e-mail then goes out); without that bug
// it passes.
func TestPolicyChangedAtDispatchDecidesCounselsEdit(t *testing.T) {
	h := newHarness(t, demo, options{})
	res := h.start("Please e-mail the client an update.", "")
	p := res.State.PendingApproval
	if res.State.Status != warrant.RunHeld || p == nil || p.ToolName != "send_client_email" {
		t.Fatalf("not held on the e-mail: %+v", res.State)
	}
	if _, err := h.decideEdit(res, warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: h.emailEdit()}); err != nil {
		t.Fatal(err)
	}
	const rule = "email.no_promised_calls"
	later := policytest.WithRule(t, "2026-12-05", `{"id": "`+rule+`", "tools": ["send_client_email"],
		"when": [{"input": "/body", "op": "matches", "value": "call you"}], "then": "deny",
		"reason": "Promises of a call are made by counsel in person."}`)
	// The premise: the new rule fires on the edit and not on the requested call.
	editInput, editHash, _ := contracts.CanonicalInput(h.emailEdit())
	meta := toolpolicy.Metadata{FirmID: h.firm, MatterID: h.matter, AgentKey: "matter_assistant", UserID: h.user}
	onEdit := later.DecideOrDeny(toolpolicy.Call{Tool: p.ToolName, Input: editInput, Meta: meta})
	onRequested := later.DecideOrDeny(toolpolicy.Call{Tool: p.ToolName, Input: p.ToolInput, Meta: meta})
	if !slices.Contains(firedIDsOf(onEdit.FiredRules), rule) || slices.Contains(firedIDsOf(onRequested.FiredRules), rule) ||
		onRequested.Action == toolpolicy.ActionDeny {
		t.Fatalf("the rule must deny the edit only: on the edit %v, on the request %s %v", firedIDsOf(onEdit.FiredRules),
			onRequested.Action, firedIDsOf(onRequested.FiredRules))
	}
	brain, err := wire.NewBrain(wire.Deps{Config: h.cfg, Keys: h.keys, DataKeys: h.dataKeys, Store: h.store, Model: h.model,
		Logger: failure.NewLogger(h.logs), Policy: later})
	if err != nil {
		t.Fatal(err)
	}
	req := agent.ResumeRequest{FirmID: h.firm, RunID: res.State.RunID, ApprovalID: p.ApprovalRequestID, UserID: h.user}
	_, err = brain.Resume(context.Background(), req)
	if failureKind(err) != failure.KindPolicyChanged || !strings.Contains(err.Error(), rule) {
		t.Fatalf("resume under the rule added after the approval: %v", err)
	}
	if n := len(h.outbound(res.State.RunID)); n != 0 {
		t.Fatalf("%d effects", n)
	}
	for _, tc := range h.completions(res.State.RunID) {
		if tc.Status == contracts.ToolSuccess || tc.EffectRef != "" {
			t.Fatalf("the e-mail was answered %+v", tc)
		}
	}
	failed := h.payloads(res.State.RunID, contracts.TypeRunFailed)
	var check struct {
		InputSHA256 string `json:"input_sha256"`
		Action      string `json:"action"`
	}
	if len(failed) != 1 || json.Unmarshal(failed[0]["policy_check"], &check) != nil || check.Action != "deny" || check.InputSHA256 != editHash {
		t.Fatalf("run.failed's policy_check = %+v (%d run.failed), want deny of the edit %s", check, len(failed), editHash)
	}
	w, err := h.store.GetWarrant(context.Background(), h.firm, res.State.RunID, p.ApprovalRequestID)
	if err != nil || w.Status != warrant.WarrantRefused {
		t.Fatalf("warrant = %+v, %v", w, err)
	}
}

func firedIDsOf(rules []toolpolicy.FiredRule) []string {
	var ids []string
	for _, r := range rules {
		ids = append(ids, r.ID)
	}
	return ids
}
