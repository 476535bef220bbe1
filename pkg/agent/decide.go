package agent

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// DecideStore is what counsel's decision needs of the store.
type DecideStore interface {
	reducer.Source
	GetRun(ctx context.Context, firm, run string) (warrant.Run, error)
	GetFirmSettings(ctx context.Context, firm string) (warrant.FirmSettings, error)
	GetWarrant(ctx context.Context, firm, run, approvalID string) (warrant.Warrant, error)
	// LatestEffect is the latest claim of a call in the run (nil: none).
	LatestEffect(ctx context.Context, firm, run, tool, inputSHA256 string) (*warrant.Claim, error)
	DecideWarrant(ctx context.Context, firm, run, approvalID string, d warrant.CounselDecision, line contracts.Line) (warrant.Warrant, error)
}

// Decider records counsel's decisions.
type Decider struct {
	Store DecideStore
	// Heads verifies the run's signed ledger head before the decision
	// extends the ledger (nil: seq and hash only).
	Heads reducer.HeadVerifier
	Now   func() time.Time // the line's clock (nil: time.Now)
	// Edits decides counsel's edit of a call (the Brain's CheckEdit); nil:
	// edits are refused.
	Edits EditChecker
	// Keys opens the run's data key (DATA_KEY): counsel's note and edit
	// are sealed under it in a run whose content is sealed. nil: such a
	// run's warrant cannot be decided here (config_invalid).
	Keys seal.Keyring
}

// EditChecker validates an edited call and runs the risk policy on it.
type EditChecker interface {
	// history is the run's steps before the decision (the policy's prior
	// conditions read it).
	CheckEdit(ctx context.Context, run reducer.RunState, history []toolpolicy.Step, tool string, input json.RawMessage) (EditVerdict, error)
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
// Counsel may approve an edited call instead (d.EditedInput): the edit is
// canonicalized and hashed here (d.EditedHash is set from it), must differ
// from the requested call, must satisfy the tool's schema, and the risk
// policy is run on it with the run's metadata. A denied edit is
// policy_denied and nothing is written. approval.decided records the
// presented hash, the edit, its hash and the policy's decision on it; the
// warrant then covers the edited call only.
//
// Errors (failure kinds): not_found, conflict (not pending, hash mismatch, a
// concurrent ledger write), expired, self_approval, invalid_request
// (decision not closed, hash not a digest, an edit that is not canonical
// JSON, equals the request, fails the schema or comes with a denial),
// policy_denied (the edit), ledger_corrupt.
func (dc Decider) Decide(ctx context.Context, firm, run, approvalID string, d warrant.CounselDecision) (warrant.Warrant, error) {
	if !d.Decision.Valid() {
		return warrant.Warrant{}, failure.New(failure.KindInvalidRequest, "field decision: must be approved or denied")
	}
	if !contracts.IsHash(d.PresentedHash) {
		return warrant.Warrant{}, failure.New(failure.KindInvalidRequest, "field tool_input_hash: must be a lowercase hex SHA-256 digest")
	}
	rk := newRunKey(dc.Keys)
	defer rk.close()
	opts := reducer.FoldOptions{Keys: dc.Heads}
	if len(d.EditedInput) > 0 {
		// The edit is decided on the run's steps as they stand (opened:
		// a prior condition may read an earlier result).
		opts.KeepLines, opts.Open = true, rk.open
	}
	folded, err := reducer.Fold(ctx, dc.Store, firm, run, opts)
	if err != nil {
		return warrant.Warrant{}, err
	}
	var verdict EditVerdict
	if len(d.EditedInput) > 0 {
		var steps reducer.Sources
		for _, l := range folded.Lines {
			steps.Fold(l)
		}
		if verdict, err = dc.checkEdit(ctx, folded.State, steps.History(), approvalID, &d); err != nil {
			return warrant.Warrant{}, err
		}
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
	if chain.Sealer, err = rk.sealer(ctx, folded.Run); err != nil {
		return warrant.Warrant{}, err
	}
	if dc.Now != nil {
		chain.Now = dc.Now
	}
	stored, err := sealDecision(rk.key, approvalID, d)
	if err != nil {
		return warrant.Warrant{}, err
	}
	line, err := chain.Next(&contracts.ApprovalDecided{ApprovalRequestID: approvalID, Decision: d.Decision,
		DecidedBy: d.DecidedBy, ToolInputHash: d.PresentedHash, Note: d.Note,
		RequestedBy: folded.State.UserID, Separation: separation, DecidedAs: d.DecidedAs, DecidedByName: d.DecidedByName,
		EditedInput: d.EditedInput, EditedInputSHA256: d.EditedHash, EditedRiskTier: verdict.RiskTier, EditedFiredRules: verdict.FiredRules,
		EditedPolicyVersion: verdict.PolicyVersion, EditedPolicyMetadata: verdict.Metadata, EditedPolicyMetadataSHA256: verdict.MetadataSHA256,
		EditedMatterSteps: verdict.MatterSteps, EditedMatterUnread: verdict.MatterUnread})
	if err != nil {
		return warrant.Warrant{}, failure.Wrap(failure.KindInvalidRequest, err.Error(), err)
	}
	w, err := dc.Store.DecideWarrant(ctx, firm, run, approvalID, stored, line)
	if err != nil {
		return w, err
	}
	return OpenWarrant(rk.key, w)
}

func claimWord(s warrant.ClaimState) string {
	switch s {
	case warrant.ClaimDeclined:
		return "declined"
	case warrant.ClaimCompleted, warrant.ClaimFailed:
		return "executed"
	}
	return "claimed"
}

// checkEdit canonicalizes counsel's edit into d and has the policy decide
// it. It reads the warrant for the tool and the requested hash; the store's
// conditional write still guards the decision itself.
func (dc Decider) checkEdit(ctx context.Context, r reducer.RunState, history []toolpolicy.Step, approvalID string, d *warrant.CounselDecision) (EditVerdict, error) {
	if d.Decision != warrant.DecisionApproved {
		return EditVerdict{}, failure.New(failure.KindInvalidRequest, "field edited_input: only an approval may edit the call")
	}
	if dc.Edits == nil {
		return EditVerdict{}, failure.New(failure.KindInvalidRequest, "field edited_input: edits are not accepted here")
	}
	canonical, hash, err := contracts.CanonicalInput(d.EditedInput)
	if err != nil {
		var fe *contracts.FieldError
		if errors.As(err, &fe) && fe.Path != "" && contracts.ValidPath(fe.Path) {
			return EditVerdict{}, failure.Wrap(failure.KindInvalidRequest, "field edited_input: "+fe.Path+": "+fe.Reason, err)
		}
		return EditVerdict{}, failure.Wrap(failure.KindInvalidRequest, "field edited_input: not canonicalizable JSON", err)
	}
	if len(canonical) == 0 || canonical[0] != '{' {
		return EditVerdict{}, failure.New(failure.KindInvalidRequest, "field edited_input: must be a JSON object")
	}
	w, err := dc.Store.GetWarrant(ctx, r.FirmID, r.RunID, approvalID)
	if err != nil {
		return EditVerdict{}, err
	}
	if hash == w.ToolInputHash {
		return EditVerdict{}, failure.New(failure.KindInvalidRequest, "field edited_input: is the call as requested; approve it without an edit")
	}
	// An edit that was already claimed in this run (executed, declined, or
	// of unknown outcome) could never be released: its claim exists, so the
	// resume would be refused and the run would wait on this warrant until
	// it expired. Refused now, before anything is written.
	if c, err := dc.Store.LatestEffect(ctx, r.FirmID, r.RunID, w.ToolName, hash); err != nil {
		return EditVerdict{}, err
	} else if c != nil {
		return EditVerdict{}, failure.New(failure.KindConflict,
			"field edited_input: this exact call was already "+claimWord(c.State)+" in this run; approve the call as requested or edit it differently")
	}
	v, err := dc.Edits.CheckEdit(ctx, r, history, w.ToolName, canonical)
	if err != nil {
		return EditVerdict{}, err
	}
	d.EditedInput, d.EditedHash = canonical, hash
	return v, nil
}
