package contracts

import (
	"bytes"
	"errors"
	"testing"

	"github.com/seed-f6d3920e/warrant"
)

// Issue 31 item 14: separation of duties is the contract's, for a
// reconciliation as for a decision. An effect.reconciled (or an
// approval.decided) that says separation was enforced and is recorded by
// the user who started the run is refused when the line is made and when a
// stored one is read (a store reads every line it is given), naming the
// recorder's field. The requester may reconcile where the firm waived
// separation, another counsel may always, and a line from before
// separation was recorded (no requested_by) still reads.
//
// Checked: with the refusal taken out of EffectReconciled.validate, this
// fails with "a self-reconciliation: <nil>, want an error at
// payload.reconciled_by" and "a stored self-reconciliation read back:
// <nil>, ...".
func TestSeparationOfDutiesInTheContract(t *testing.T) {
	const counsel = "4d3c2b1a-0f9e-4d8c-b7a6-5f4e3d2c1b0a"
	h := sha256Hex([]byte("the motion as filed"))
	reconciled := func(by, requester, separation string) *EffectReconciled {
		return &EffectReconciled{EffectRef: "1d2c3b4a-5e6f-4789-8abc-def012345678", ToolName: "file_court_document", InputSHA256: h,
			Outcome: "executed", ExternalRef: "F-1", ReconciledBy: by, RequestedBy: requester, Separation: separation}
	}
	decided := func(by, requester, separation string) *ApprovalDecided {
		return &ApprovalDecided{ApprovalRequestID: uApprove, Decision: warrant.DecisionApproved, DecidedBy: by, ToolInputHash: h,
			RequestedBy: requester, Separation: separation}
	}
	for name, c := range map[string]struct {
		ev   Event
		path string // "" when the line is one of a ledger
	}{
		"a self-reconciliation":                     {reconciled(uUser, uUser, SeparationEnforced), "payload.reconciled_by"},
		"a self-approval":                           {decided(uUser, uUser, SeparationEnforced), "payload.decided_by"},
		"a reconciliation by another counsel":       {reconciled(counsel, uUser, SeparationEnforced), ""},
		"a self-reconciliation, separation waived":  {reconciled(uUser, uUser, SeparationWaived), ""},
		"a reconciliation from before requested_by": {reconciled(uUser, "", ""), ""},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := fixedChain().Append(c.ev)
			var fe *FieldError
			if c.path == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.As(err, &fe) || fe.Path != c.path {
				t.Fatalf("%s: %v, want an error at %s", name, err, c.path)
			}
		})
	}

	// A stored self-reconciliation, its hash made good: refused on reading.
	l, err := fixedChain().Append(reconciled(counsel, uUser, SeparationEnforced))
	if err != nil {
		t.Fatal(err)
	}
	forged := reseal(t, bytes.Replace(l.Raw, []byte(`"reconciled_by":"`+counsel+`"`), []byte(`"reconciled_by":"`+uUser+`"`), 1))
	if bytes.Equal(forged, reseal(t, l.Raw)) {
		t.Fatal("the forgery changed nothing")
	}
	_, err = ParseEventLine(forged)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Path != "payload.reconciled_by" {
		t.Fatalf("a stored self-reconciliation read back: %v, want an error at payload.reconciled_by", err)
	}
}
