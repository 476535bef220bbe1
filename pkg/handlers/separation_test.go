package handlers_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// Issue 11, item 10: by default the counsel who decides a warrant is not the
// user who started the run (403 self_approval, nothing written); a firm that
// turns separation of duties off may, and approval.decided records which rule
// applied and who requested.
func TestSeparationOfDuties(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.startHeld(t)
	self := approveReq(t, h, "approve", h.hash).claim("sub", fixUser) // fixUser started the run (events/invoke.json)
	before := s.scan()
	resp := s.call(self)
	if p := s.wantProblem("self-approval", resp, 403); p.Kind != string(failure.KindSelfApproval) {
		t.Fatalf("self-approval: %+v", p)
	}
	if after := s.scan(); !reflect.DeepEqual(before, after) {
		t.Fatal("a refused self-approval wrote to the table")
	}

	// Another counsel of the firm may sign; the line says separation was enforced.
	if resp := s.call(approveReq(t, h, "approve", h.hash)); resp.StatusCode != 200 {
		t.Fatalf("approve: %d %s", resp.StatusCode, resp.Body)
	}
	d := lastDecision(t, s, h.runID)
	if d.Separation != contracts.SeparationEnforced || d.RequestedBy != fixUser || d.DecidedBy != fixCounsel {
		t.Fatalf("approval.decided = %+v", d)
	}

	// A firm with separation off: the requester may decide their own warrant.
	s2 := newStack(t, stackOptions{})
	if err := s2.store.PutFirmSettings(context.Background(), warrant.FirmSettings{FirmID: fixFirm, SeparationOfDuties: false}); err != nil {
		t.Fatal(err)
	}
	h2 := s2.startHeld(t)
	if resp := s2.call(approveReq(t, h2, "approve", h2.hash).claim("sub", fixUser)); resp.StatusCode != 200 {
		t.Fatalf("self-approval with separation off: %d %s", resp.StatusCode, resp.Body)
	}
	if d := lastDecision(t, s2, h2.runID); d.Separation != contracts.SeparationWaived || d.DecidedBy != fixUser || d.RequestedBy != fixUser {
		t.Fatalf("approval.decided = %+v", d)
	}
}

func lastDecision(t *testing.T, s *stack, runID string) *contracts.ApprovalDecided {
	t.Helper()
	items, _, err := s.store.ReadLedger(context.Background(), fixFirm, runID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var d *contracts.ApprovalDecided
	for _, it := range items {
		l, err := contracts.ParseEventLine(it.Raw)
		if err != nil {
			t.Fatal(err)
		}
		if ev, ok := l.Event.(*contracts.ApprovalDecided); ok {
			d = ev
		}
	}
	if d == nil {
		t.Fatal("no approval.decided line")
	}
	return d
}

// Issue 17, item 11: reconciliation follows the same rule: the user who
// started the run, holding counsel, cannot record what became of its
// effect (403 self_approval, nothing written); another counsel can.
func TestReconciliationSeparationOfDuties(t *testing.T) {
	s := newStack(t, stackOptions{})
	h, ref := s.lostEffect(t)
	reconcile := func(sub string) *event {
		ev := fixture(t, "reconcile-effect.json").runPath(h.runID, "").pathParam("effect_ref", ref).
			editBody(func(m map[string]any) {
				m["outcome"], m["external_ref"] = "not_executed", nil
				delete(m, "external_ref")
			})
		return ev.claim("sub", sub)
	}
	before := s.scan()
	if p := s.wantProblem("self-reconciliation", s.call(reconcile(fixUser)), 403); p.Kind != string(failure.KindSelfApproval) {
		t.Fatalf("self-reconciliation: %+v", p)
	}
	if after := s.scan(); !reflect.DeepEqual(before, after) {
		t.Fatal("a refused self-reconciliation wrote to the table")
	}
	if resp := s.call(reconcile(fixCounsel)); resp.StatusCode != 200 {
		t.Fatalf("reconcile by another counsel: %d %s", resp.StatusCode, resp.Body)
	}
}
