package agent

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
)

// ReconcileStore is what counsel's reconciliation needs of the store.
type ReconcileStore interface {
	reducer.Source
	GetRun(ctx context.Context, firm, run string) (warrant.Run, error)
	LatestEffect(ctx context.Context, firm, run, tool, inputSHA256 string) (*warrant.Claim, error)
	GetFirmSettings(ctx context.Context, firm string) (warrant.FirmSettings, error)
	ReconcileEffect(ctx context.Context, firm, run string, k warrant.EffectKey, r warrant.Reconciliation, line contracts.Line) error
}

// Reconciler records what really happened to effects whose outcome was
// lost with their worker.
type Reconciler struct {
	Store ReconcileStore
	// Heads verifies the run's signed ledger head before the line extends
	// the ledger (nil: seq and hash only).
	Heads reducer.HeadVerifier
	Now   func() time.Time // the line's clock (nil: time.Now)
	// Keys opens the run's data key (DATA_KEY): counsel's note is sealed
	// under it in a run whose content is sealed. nil: such a run's
	// effects cannot be reconciled here (config_invalid).
	Keys seal.Keyring
}

// Limits of a reconciliation's free text.
const (
	MaxExternalRef = 256  // characters
	MaxNote        = 2000 // characters
)

// Reconcile records counsel's finding about the effect effectRef of a run:
// executed (with the downstream system's reference) or not_executed. The
// effect must be one the ledger answered "unknown" and nobody reconciled
// yet; the effect.reconciled line and the claim's new state are written in
// one transaction, after the ledger was folded against its signed head.
// Nothing is executed, whatever the outcome: a not_executed effect stays not
// executed until a new run asks for it (and counsel signs again).
//
// Under the firm's separation of duties (as for counsel's decision), the
// user who started the run does not reconcile its effects; the line records
// the requester and whether separation applied.
//
// After the run's content was destroyed, a reconciliation is recorded in
// the clear and without a note (a note is invalid_request then).
//
// Errors (failure kinds): invalid_request (outcome, external_ref, note),
// not_found (no such run in this firm, no effect of unknown outcome with
// that effect_ref), self_approval, conflict (already reconciled, a
// concurrent write), ledger_corrupt.
func (rc Reconciler) Reconcile(ctx context.Context, firm, run, effectRef string, r warrant.Reconciliation) (contracts.EffectReconciled, error) {
	var zero contracts.EffectReconciled
	switch r.Outcome {
	case warrant.OutcomeExecuted:
		if r.ExternalRef == "" {
			return zero, failure.New(failure.KindInvalidRequest, "field external_ref: required when the outcome is executed")
		}
	case warrant.OutcomeNotExecuted:
		if r.ExternalRef != "" {
			return zero, failure.New(failure.KindInvalidRequest, "field external_ref: an effect that was not executed has no external reference")
		}
	default:
		return zero, failure.New(failure.KindInvalidRequest, "field outcome: must be one of [executed not_executed]")
	}
	if utf8.RuneCountInString(r.ExternalRef) > MaxExternalRef || contracts.Printable(r.ExternalRef) != r.ExternalRef {
		return zero, failure.New(failure.KindInvalidRequest, "field external_ref: at most 256 printable characters")
	}
	if utf8.RuneCountInString(r.Note) > MaxNote {
		return zero, failure.New(failure.KindInvalidRequest, "field note: at most 2000 characters")
	}
	if r.By == "" {
		return zero, failure.New(failure.KindInvalidRequest, "the reconciling counsel is not named")
	}
	folded, err := reducer.Fold(ctx, rc.Store, firm, run, reducer.FoldOptions{KeepLines: true, Keys: rc.Heads})
	if err != nil {
		return zero, err
	}
	// After the run's content was destroyed its effects are still
	// reconciled (what became of an effect is never lost with the
	// content), in the clear, with no content: a note, which would be
	// content, is refused.
	destroyed := !folded.Run.ContentDestroyedAt.IsZero() || folded.State.ContentDestroyed != nil
	if destroyed && r.Note != "" {
		return zero, failure.Wrap(failure.KindInvalidRequest, "field note: the run's content was destroyed; a reconciliation records no note after it",
			warrant.ErrContentDestroyed)
	}
	var unknown *contracts.ToolCompleted
	for _, l := range folded.Lines {
		if tc, ok := l.Event.(*contracts.ToolCompleted); ok && tc.Status == contracts.ToolUnknown && tc.EffectRef == effectRef {
			unknown = tc
		}
	}
	if unknown == nil {
		return zero, failure.Wrap(failure.KindNotFound, "the run has no effect of unknown outcome with that effect_ref", warrant.ErrNotFound)
	}
	open := false
	for _, ref := range folded.State.Unreconciled {
		open = open || ref == effectRef
	}
	if !open {
		return zero, warrant.ErrNotReconcilable
	}
	// The effect is the call that may have run: counsel's edit when the
	// unknown line names one, and its claim is keyed by that hash.
	executed := unknown.InputSHA256
	if unknown.ExecutedInputSHA256 != "" {
		executed = unknown.ExecutedInputSHA256
	}
	claim, err := rc.Store.LatestEffect(ctx, firm, run, unknown.ToolName, executed)
	if err != nil {
		return zero, err
	}
	if claim == nil || claim.EffectRef != effectRef {
		return zero, failure.New(failure.KindLedgerCorrupt, "the effect's claim does not match the ledger")
	}
	// The firm's separation of duties holds here as for the warrant: the
	// user who started the run does not record what became of its effect
	// (a requester who is also counsel could otherwise clear the record of
	// a filing that went out).
	settings, err := rc.Store.GetFirmSettings(ctx, firm)
	if err != nil {
		return zero, err
	}
	separation := contracts.SeparationWaived
	if settings.SeparationOfDuties {
		separation = contracts.SeparationEnforced
		if r.By == folded.State.UserID {
			return zero, failure.New(failure.KindSelfApproval,
				"separation of duties: the counsel who reconciles an effect must not be the user who started the run")
		}
	}
	ev := contracts.EffectReconciled{EffectRef: effectRef, ToolName: unknown.ToolName, InputSHA256: executed,
		Outcome: r.Outcome, ExternalRef: r.ExternalRef, ReconciledBy: r.By, Note: r.Note,
		RequestedBy: folded.State.UserID, Separation: separation}
	rk := newRunKey(rc.Keys)
	defer rk.close()
	chain := contracts.ChainAfter(folded.Last)
	if !destroyed {
		if chain.Sealer, err = rk.sealer(ctx, folded.Run); err != nil {
			return zero, err
		}
	}
	if rc.Now != nil {
		chain.Now = rc.Now
	}
	line, err := chain.Next(&ev)
	if err != nil {
		return zero, failure.Wrap(failure.KindInvalidRequest, err.Error(), err)
	}
	if err := rc.Store.ReconcileEffect(ctx, firm, run, claim.Key(), r, line); err != nil {
		return zero, err
	}
	return ev, nil
}
