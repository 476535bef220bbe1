package agent

import (
	"context"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// DecideStore is what counsel's decision needs of the store.
type DecideStore interface {
	LastLine(ctx context.Context, firm, run string) (dynamo.LedgerItem, error)
	DecideWarrant(ctx context.Context, firm, run, approvalID string, d dynamo.Decision, line contracts.Line) (dynamo.Warrant, error)
}

// Decide records counsel's signature (approved) or refusal (denied) of a pending
// warrant, presenting the tool_input_hash counsel was shown. The store's
// conditional update is the guard (pending, same hash, unexpired); the
// approval.decided line is written in the same transaction.
//
// Errors (failure kinds): not_found, conflict (not pending, hash mismatch, a
// concurrent ledger write), expired, invalid_request (decision not closed).
func Decide(ctx context.Context, st DecideStore, firm, run, approvalID string, d dynamo.Decision, now func() time.Time) (dynamo.Warrant, error) {
	if d.Decision != contracts.DecisionApproved && d.Decision != contracts.DecisionDenied {
		return dynamo.Warrant{}, failure.New(failure.KindInvalidRequest, "field decision: must be one of [approve deny]")
	}
	if !contracts.IsHash(d.PresentedHash) {
		return dynamo.Warrant{}, failure.New(failure.KindInvalidRequest, "field tool_input_hash: must be a lowercase hex SHA-256 digest")
	}
	last, err := st.LastLine(ctx, firm, run)
	if err != nil {
		return dynamo.Warrant{}, storeError(err)
	}
	head, err := contracts.ParseEventLine(last.Raw)
	if err != nil {
		return dynamo.Warrant{}, failure.Wrap(failure.KindLedgerCorrupt, "the run's ledger does not parse", err)
	}
	chain := contracts.ChainAfter(head)
	if now != nil {
		chain.Now = now
	}
	line, err := chain.Next(&contracts.ApprovalDecided{ApprovalRequestID: approvalID, Decision: d.Decision,
		DecidedBy: d.DecidedBy, ToolInputHash: d.PresentedHash, Note: d.Note})
	if err != nil {
		return dynamo.Warrant{}, failure.Wrap(failure.KindInvalidRequest, err.Error(), err)
	}
	w, err := st.DecideWarrant(ctx, firm, run, approvalID, d, line)
	if err != nil {
		return dynamo.Warrant{}, storeError(err)
	}
	return w, nil
}
