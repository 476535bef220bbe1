package reducer_test

import (
	"errors"
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// heldReleased is the golden held-released scenario's events.
func heldReleased(t *testing.T) []contracts.Event {
	t.Helper()
	for _, sc := range scenarios {
		if sc.name == "held-released" {
			return sc.events()
		}
	}
	t.Fatal("no held-released scenario")
	return nil
}

// Issue 11 (audit): every executed effect traces to its request, the policy
// decision and, for a warranted call, counsel's approval and the release that
// burned the warrant.
func TestAuditTracesEveryEffect(t *testing.T) {
	lines := buildLines(t, fixedChain(runID), heldReleased(t)...)
	got, err := reducer.Audit(lines)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d effects, want the filing", len(got))
	}
	p := got[0]
	if p.EffectRef != effectID || p.ToolName != filing.name || p.InputSHA256 != filing.hash() || p.Action != "require_approval" ||
		p.ApprovalID != approvalID || p.DecidedBy != counselID || p.DecidedAs != "counsel" || p.Separation != "enforced" ||
		!(p.RequestedSeq < p.BlockedSeq && p.BlockedSeq < p.DecidedSeq && p.DecidedSeq < p.ReleasedSeq && p.ReleasedSeq < p.CompletedSeq) {
		t.Fatalf("provenance %+v", p)
	}
	for _, sc := range scenarios {
		if _, err := reducer.Audit(buildLines(t, fixedChain(runID), sc.events()...)); err != nil {
			t.Errorf("%s: %v", sc.name, err)
		}
	}
}

// Each way a warranted effect can lack provenance is named, at the
// tool.completed line of the effect.
func TestAuditNamesTheFirstEffectWithoutProvenance(t *testing.T) {
	replace := func(events []contracts.Event, match func(contracts.Event) bool, with contracts.Event) []contracts.Event {
		out := make([]contracts.Event, 0, len(events))
		for _, e := range events {
			switch {
			case !match(e):
				out = append(out, e)
			case with != nil:
				out = append(out, with)
			}
		}
		return out
	}
	isDecided := func(e contracts.Event) bool { _, ok := e.(*contracts.ApprovalDecided); return ok }
	isReleased := func(e contracts.Event) bool { _, ok := e.(*contracts.RunReleased); return ok }
	decided := func(edit func(d *contracts.ApprovalDecided)) contracts.Event {
		d := &contracts.ApprovalDecided{ApprovalRequestID: approvalID, Decision: warrant.DecisionApproved, DecidedBy: counselID,
			ToolInputHash: filing.hash(), RequestedBy: userID, Separation: contracts.SeparationEnforced, DecidedAs: contracts.RoleCounsel}
		edit(d)
		return d
	}
	for name, events := range map[string][]contracts.Event{
		"no decision":             replace(heldReleased(t), isDecided, nil),
		"no release":              replace(heldReleased(t), isReleased, nil),
		"decider not counsel":     replace(heldReleased(t), isDecided, decided(func(d *contracts.ApprovalDecided) { d.DecidedAs = "" })),
		"requester decided":       replace(heldReleased(t), isDecided, decided(func(d *contracts.ApprovalDecided) { d.DecidedBy, d.RequestedBy = userID, "" })),
		"signed another input":    replace(heldReleased(t), isDecided, decided(func(d *contracts.ApprovalDecided) { d.ToolInputHash = search.hash() })),
		"released another effect": replace(heldReleased(t), isReleased, &contracts.RunReleased{ApprovalRequestID: approvalID, Decision: warrant.DecisionApproved, EffectRef: otherID}),
		"a reuse of an effect that never ran": func() []contracts.Event {
			var out []contracts.Event
			for _, e := range heldReleased(t) {
				if tc, ok := e.(*contracts.ToolCompleted); ok && tc.EffectRef == effectID {
					c := *tc
					c.Reused = true
					e = &c
				}
				out = append(out, e)
			}
			return out
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			lines := buildLines(t, fixedChain(runID), events...)
			_, err := reducer.Audit(lines)
			var ae *reducer.AuditError
			if !errors.As(err, &ae) || ae.EffectRef != effectID || ae.ToolName != filing.name {
				t.Fatalf("Audit = %v, want an AuditError naming the filing's effect", err)
			}
			for _, l := range lines {
				if tc, ok := l.Event.(*contracts.ToolCompleted); ok && tc.EffectRef == effectID && l.Seq != ae.Seq {
					t.Fatalf("error at seq %d, the effect completed at seq %d", ae.Seq, l.Seq)
				}
			}
		})
	}
}

// Counsel's edit is what runs: an effect under an edited warrant must report
// the edited input's hash as the input that ran, and an effect that reports
// another input than the one counsel approved (edited or not) has no
// provenance.
func TestAuditEditedCalls(t *testing.T) {
	edited := []byte(`{"court":"Superior Court","document_text":"Amended.","document_title":"Motion","matter_id":"` + matterID + `"}`)
	eh, err := contracts.InputHash(edited)
	if err != nil {
		t.Fatal(err)
	}
	withEdit := func(executed string) []contracts.Event {
		var out []contracts.Event
		for _, e := range heldReleased(t) {
			switch ev := e.(type) {
			case *contracts.ApprovalDecided:
				d := *ev
				d.EditedInput, d.EditedInputSHA256, d.EditedRiskTier = edited, eh, "high"
				e = &d
			case *contracts.ToolCompleted:
				if ev.EffectRef == effectID {
					tc := *ev
					tc.ExecutedInputSHA256 = executed
					e = &tc
				}
			}
			out = append(out, e)
		}
		return out
	}
	got, err := reducer.Audit(buildLines(t, fixedChain(runID), withEdit(eh)...))
	if err != nil || len(got) != 1 || got[0].ExecutedInputSHA256 != eh || got[0].InputSHA256 != filing.hash() {
		t.Fatalf("an edited call: %+v %v", got, err)
	}
	for name, executed := range map[string]string{"the requested input ran": "", "a third input ran": search.hash()} {
		var ae *reducer.AuditError
		if _, err := reducer.Audit(buildLines(t, fixedChain(runID), withEdit(executed)...)); !errors.As(err, &ae) || ae.EffectRef != effectID {
			t.Errorf("%s: %v, want an AuditError naming the filing", name, err)
		}
	}
}
