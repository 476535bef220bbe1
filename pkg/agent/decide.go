package agent

import (
	"context"
	"time"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// DecideStore is what counsel's decision needs of the store.
type DecideStore interface {
	reducer.Source
	GetRun(ctx context.Context, firm, run string) (warrant.Run, error)
	GetFirmSettings(ctx context.Context, firm string) (warrant.FirmSettings, error)
	DecideWarrant(ctx context.Context, firm, run, approvalID string, d warrant.CounselDecision, line contracts.Line) (warrant.Warrant, error)
}

// Decider records counsel's decisions.
type Decider struct {
	Store DecideStore
	// Heads verifies the run's signed ledger head before the decision
	// extends the ledger (nil: seq and hash only).
	Heads reducer.HeadVerifier
	Now   func() time.Time // the line's clock (nil: time.Now)
}

// Decide records counsel's signature (approved) or refusal (denied) of a pending
// warrant, presenting the tool_input_hash counsel was shown. The ledger is
// folded first and held to its signed head, so the approval.decided line
// extends a chain that verifies; the store's conditional update is the guard
// (pending, same hash, unexpired), and the line is written in the same
// transaction.
//
// Under the firm's separation of duties (on unless the firm turned it off),
// the user who started the run cannot decide its warrant; the line records
// the requester and whether separation applied.
//
// Errors (failure kinds): not_found, conflict (not pending, hash mismatch, a
// concurrent ledger write), expired, self_approval, invalid_request
// (decision not closed, hash not a digest), ledger_corrupt.
func (dc Decider) Decide(ctx context.Context, firm, run, approvalID string, d warrant.CounselDecision) (warrant.Warrant, error) {
	if !d.Decision.Valid() {
		return warrant.Warrant{}, failure.New(failure.KindInvalidRequest, "field decision: must be approved or denied")
	}
	if !contracts.IsHash(d.PresentedHash) {
		return warrant.Warrant{}, failure.New(failure.KindInvalidRequest, "field tool_input_hash: must be a lowercase hex SHA-256 digest")
	}
	r, err := dc.Store.GetRun(ctx, firm, run)
	if err != nil {
		return warrant.Warrant{}, err
	}
	folded, err := reducer.Fold(ctx, dc.Store, firm, run, reducer.FoldOptions{Head: &r.Head, Keys: dc.Heads})
	if err != nil {
		return warrant.Warrant{}, err
	}
	settings, err := dc.Store.GetFirmSettings(ctx, firm)
	if err != nil {
		return warrant.Warrant{}, err
	}
	separation := contracts.SeparationWaived
	if settings.SeparationOfDuties {
		separation = contracts.SeparationEnforced
		if d.DecidedBy == folded.State.UserID {
			return warrant.Warrant{}, failure.New(failure.KindSelfApproval,
				"separation of duties: the counsel who decides a warrant must not be the user who started the run")
		}
	}
	chain := contracts.ChainAfter(folded.Last)
	if dc.Now != nil {
		chain.Now = dc.Now
	}
	line, err := chain.Next(&contracts.ApprovalDecided{ApprovalRequestID: approvalID, Decision: d.Decision,
		DecidedBy: d.DecidedBy, ToolInputHash: d.PresentedHash, Note: d.Note,
		RequestedBy: folded.State.UserID, Separation: separation, DecidedAs: d.DecidedAs})
	if err != nil {
		return warrant.Warrant{}, failure.Wrap(failure.KindInvalidRequest, err.Error(), err)
	}
	return dc.Store.DecideWarrant(ctx, firm, run, approvalID, d, line)
}
