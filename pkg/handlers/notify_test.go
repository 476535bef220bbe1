package handlers_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/notify"

	"github.com/seed-f6d3920e/warrant"
)

// notifications reads the events the fake bus accepted, by type.
func (s *stack) notifications() []notify.Event {
	s.t.Helper()
	var out []notify.Event
	for _, e := range s.bus.Entries() {
		var ev notify.Event
		if err := json.Unmarshal([]byte(e.Detail), &ev); err != nil {
			s.t.Fatalf("an event's detail does not decode: %v", err)
		}
		if e.Source != notify.Source || e.DetailType != ev.Type || e.EventBusName != "warrant-test-notifications" {
			s.t.Fatalf("entry %+v", e)
		}
		out = append(out, ev)
	}
	return out
}

// stringsOf lists every string leaf of a JSON document.
func stringsOf(t *testing.T, doc []byte) []string {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if len(x) > 3 {
				out = append(out, x)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// TestNotifications: a held run, its decision, its end, and a run whose
// effect's outcome was lost each tell counsel, by name and link, through the
// event bus; a redelivered stream record sends the same events again with
// the same ids; and no event of any type carries a tool input, the prompt,
// model output or an error's words.
func TestNotifications(t *testing.T) {
	s := newStack(t, stackOptions{})
	ctx := context.Background()
	if _, err := s.store.PutMatter(ctx, warrant.Matter{FirmID: fixFirm, MatterID: "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99",
		Title: "Ridgeway Logistics v. Harbor Freight Systems", ClientDomains: []string{"ridgeway-logistics.example"}, UpdatedBy: fixFirm}, 0); err != nil {
		t.Fatal(err)
	}
	v := decode[struct {
		RunID           string `json:"run_id"`
		PendingApproval struct {
			ApprovalRequestID  string `json:"approval_request_id"`
			ToolInputHash      string `json:"tool_input_hash"`
			ToolInputCanonical string `json:"tool_input_canonical"`
		} `json:"pending_approval"`
	}](t, s.call(fixture(t, "invoke.json").claim("name", "Avery Associate")))
	h := held{runID: v.RunID, approvalID: v.PendingApproval.ApprovalRequestID, hash: v.PendingApproval.ToolInputHash}
	secrets := append(stringsOf(t, []byte(v.PendingApproval.ToolInputCanonical)), "Please file the motion to compel discovery.",
		bedrocktest.DemoFiledText)
	// EventBridge refuses the first entry: nothing is lost, the record is
	// retried and the event goes out then.
	s.bus.FailNext = 3 // each of the bus's three tries
	if resp := s.deliver(s.records(fixFirm, h.runID, 0)); len(resp.BatchItemFailures) == 0 {
		t.Fatalf("a refused event did not fail its stream record")
	}
	if evs := s.notifications(); len(evs) != 0 {
		t.Fatalf("refused events kept: %+v", evs)
	}
	s.deliver(s.records(fixFirm, h.runID, 0))
	evs := s.notifications()
	if len(evs) != 1 || evs[0].Type != notify.WarrantPending {
		t.Fatalf("after the hold: %+v", evs)
	}
	p := evs[0]
	if p.ApprovalRequestID != h.approvalID || p.ToolName != bedrocktest.ToolFileCourtDocument || p.RiskTier != "high" ||
		p.MatterName != "Ridgeway Logistics v. Harbor Freight Systems" || p.RequestedByName != "Avery Associate" ||
		p.DeskURL != "https://desk.warrant.example/desk#/runs/"+h.runID+"/warrants/"+h.approvalID || p.ExpiresAt == "" ||
		p.ID != notify.EventID(notify.WarrantPending, fixFirm, h.runID, p.Seq, h.approvalID) {
		t.Fatalf("warrant.pending %+v", p)
	}
	s.call(approveReq(t, h, "approve", h.hash).claim("name", "Casey Counsel"))
	s.call(resumeReq(t, h))
	s.deliver(s.records(fixFirm, h.runID, 0)) // from line 1 again: the hold is redelivered too
	evs = s.notifications()
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	if !slices.Equal(types, []string{notify.WarrantPending, notify.WarrantDecided, notify.RunCompleted}) {
		t.Fatalf("events %v", types)
	}
	if d := evs[1]; d.Decision != "approved" || d.DecidedByName != "Casey Counsel" || d.ToolName != bedrocktest.ToolFileCourtDocument {
		t.Errorf("warrant.decided %+v", d)
	}
	// A record delivered again once the projection moved on folds nothing
	// new and publishes nothing.
	s.deliver(s.records(fixFirm, h.runID, 0))
	if got := s.notifications(); len(got) != 3 {
		t.Fatalf("a redelivered record published again: %d events", len(got))
	}

	// A run whose worker was lost holding the filing: the outcome is unknown.
	h2 := s.startHeld(t)
	s.loseWarrantedEffect(t, h2)
	s.deliver(s.records(fixFirm, h2.runID, 0))
	all := s.notifications()
	seen := map[string]int{}
	for _, e := range all {
		seen[e.Type]++
		raw, _ := json.Marshal(e)
		for _, secret := range secrets {
			if contracts.CheckUUID("", secret) == nil {
				continue // the input's matter id is the run's: an id, not content
			}
			if strings.Contains(string(raw), secret) {
				t.Errorf("a %s event carries %q", e.Type, secret)
			}
		}
		if e.FirmID != fixFirm || e.RunID == "" || e.ID == "" || e.OccurredAt == "" || !strings.HasPrefix(e.DeskURL, "https://desk.warrant.example/desk#/runs/") {
			t.Errorf("event %+v", e)
		}
	}
	for _, typ := range []string{notify.WarrantPending, notify.WarrantDecided, notify.RunCompleted, notify.RunFailed, notify.EffectOutcomeUnknown} {
		if seen[typ] == 0 {
			t.Errorf("no %s event: %v", typ, seen)
		}
	}
	for _, e := range all {
		if e.Type == notify.RunFailed && e.FailureKind != "effect_outcome_unknown" {
			t.Errorf("run.failed %+v", e)
		}
	}
	ids := map[string]bool{}
	for _, e := range all {
		if ids[e.ID] {
			t.Errorf("two events share id %s", e.ID)
		}
		ids[e.ID] = true
	}
}

// TestExpiringNotice: the sweeper announces a warrant still pending an hour
// before it expires, once; a decided warrant is never announced.
func TestExpiringNotice(t *testing.T) {
	s := newStack(t, stackOptions{})
	waiting := s.startHeld(t)
	decided := s.startHeld(t)
	if resp := s.call(approveReq(t, decided, "approve", decided.hash)); resp.StatusCode != 200 {
		t.Fatal(resp.Body)
	}
	w, err := s.store.GetWarrant(context.Background(), fixFirm, waiting.runID, waiting.approvalID)
	if err != nil {
		t.Fatal(err)
	}
	if rep := s.sweep(); rep.ExpiringNotices != 0 {
		t.Fatalf("a warrant a day from expiry announced: %+v", rep)
	}
	s.clock.Advance(time.Until(w.ExpiresAt) - 30*time.Minute)
	if rep := s.sweep(); rep.ExpiringNotices != 1 || rep.NoticeErrors != 0 {
		t.Fatalf("sweep half an hour before expiry: %+v", rep)
	}
	var exp []notify.Event
	for _, e := range s.notifications() {
		if e.Type == notify.WarrantExpiring {
			exp = append(exp, e)
		}
	}
	if len(exp) != 1 || exp[0].ApprovalRequestID != waiting.approvalID || exp[0].ToolName != bedrocktest.ToolFileCourtDocument ||
		exp[0].ExpiresAt != contracts.FormatTime(w.ExpiresAt) || !strings.Contains(exp[0].DeskURL, waiting.approvalID) {
		t.Fatalf("warrant.expiring events %+v", exp)
	}
	raw, _ := json.Marshal(exp[0])
	for _, secret := range stringsOf(t, w.Input) {
		if contracts.CheckUUID("", secret) != nil && strings.Contains(string(raw), secret) {
			t.Errorf("warrant.expiring carries the input's %q", secret)
		}
	}
	if rep := s.sweep(); rep.ExpiringNotices != 0 {
		t.Fatalf("announced twice: %+v", rep)
	}
	// The EMF metrics an alarm watches: the unanswered warrant, and per
	// firm how many wait and the oldest one's age.
	logs := s.logs.String()
	for _, want := range []string{`"WarrantsExpiringUnanswered":1`, `"PendingWarrants":1`, `"OldestPendingWarrantSeconds":`,
		`"Dimensions":[["firm_id"]]`, `"firm_id":"` + fixFirm + `"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the sweeper's metrics lack %s:\n%s", want, logs)
		}
	}
}
