package warrant

import (
	"encoding/json"
	"time"
)

// ClaimState is the state of an effect claim.
type ClaimState string

// Claim states (closed). A claim is created claimed (its creator executes)
// or declined (counsel declined the call: nobody ever executes it in this
// run); a claimed one ends completed or failed.
const (
	ClaimClaimed   ClaimState = "claimed"
	ClaimCompleted ClaimState = "completed"
	ClaimFailed    ClaimState = "failed"
	ClaimDeclined  ClaimState = "declined"
	// ClaimReconciled: its outcome was unknown, and counsel recorded what
	// really happened (Claim.Reconciled).
	ClaimReconciled ClaimState = "reconciled"
)

// EffectKey names one attempt at an effect in a run: the tool, the hash of
// its canonical input, and the attempt. Attempt 1 is the call itself; a
// warranted call whose attempt failed may be retried as attempt n+1, a new
// effect with its own claim and effect_ref, under a warrant of its own.
// Attempt 0 means 1.
type EffectKey struct {
	ToolName, InputSHA256 string
	Attempt               int
}

// Claim is the effect claim of one tool call and input in a run: the single
// linearization point of an irreversible act (DESIGN §10). Only the writer
// whose conditional put created it executes the act, passing EffectRef
// downstream as the idempotency key.
type Claim struct {
	FirmID, RunID, ToolName, InputSHA256, EffectRef, ApprovalID, Owner string
	Attempt                                                            int
	LeaseUntil, ClaimedAt, CompletedAt                                 time.Time
	State                                                              ClaimState
	ToolStatus                                                         string
	Result                                                             json.RawMessage
	NeedsReconciliation                                                bool
	Reconciled                                                         string // executed|not_executed, once reconciled
	ExternalRef                                                        string // the downstream reference counsel recorded
}

// Taken reports an open claim an executor took: the effect may have run,
// and only its executor (or counsel's reconciliation) can say. A claim a
// resume reserved and nobody took yet (no Owner) has not run.
func (c Claim) Taken() bool { return c.State == ClaimClaimed && c.Owner != "" }

// OutcomeUnknown reports a claim whose owner's lease passed before it
// completed: the act may or may not have happened, and nobody re-executes it
// on their own (DESIGN §10); the run fails with effect_outcome_unknown and
// the claim is flagged for reconciliation.
func (c Claim) OutcomeUnknown(now time.Time) bool {
	return c.State == ClaimClaimed && !now.Before(c.LeaseUntil)
}

// Key is the claim's effect key.
func (c Claim) Key() EffectKey {
	return EffectKey{ToolName: c.ToolName, InputSHA256: c.InputSHA256, Attempt: c.Attempt}
}

// ClaimInput asks for the claim of one effect (its first attempt: an
// allowed call never retries on its own).
type ClaimInput struct {
	FirmID, RunID, ToolName, InputSHA256, EffectRef, Owner string
	LeaseUntil                                             time.Time
	// Counters are the policy's counts the call adds to, in the claim's
	// write; one at its bound refuses the claim (*LimitReachedError).
	Counters []Counter
}

// Completion is the outcome of a claimed effect.
type Completion struct {
	State      ClaimState // completed|failed
	ToolStatus string
	Result     json.RawMessage
}

// ResumeClaim is the resume critical section's input. For an approved
// warrant the effect of ToolName/InputSHA256 at Attempt is reserved with
// EffectRef, owned by nobody until a worker takes it (TakeClaim); for a
// denied one the same key is claimed declined, so no later path in the run
// can execute that call. The released run waits for a worker until
// PickupBy.
type ResumeClaim struct {
	FirmID, RunID, ApprovalID, ToolName, InputSHA256, EffectRef string
	Attempt                                                     int
	Decision                                                    Decision
	PickupBy                                                    time.Time
}

// Reconciliation is counsel's record of what really happened to an effect
// whose outcome was unknown.
type Reconciliation struct {
	Outcome     string // executed|not_executed
	ExternalRef string // the downstream system's reference, when executed
	By, Note    string
}

// Reconciliation outcomes (closed).
const (
	OutcomeExecuted    = "executed"
	OutcomeNotExecuted = "not_executed"
)

// SweepFailure is how a run that cannot go on is ended. Exactly one of its
// shapes applies:
//   - a running run whose lease passed (LeaseExpiredBy), found by the
//     sweeper;
//   - a running run whose lease Owner holds, a worker that found an effect
//     of unknown outcome;
//   - a held run whose warrant passed its expiry (ExpireApproval): the
//     warrant becomes expired;
//   - a held run whose approved warrant the running risk policy now denies
//     at dispatch (RefuseApproval): the warrant becomes refused, unused.
//
// For a running run, Flag names the open effect claim to flag for
// reconciliation in the same transaction.
type SweepFailure struct {
	FirmID, RunID  string
	LeaseExpiredBy time.Time
	Owner          string
	ExpireApproval string
	RefuseApproval string
	Flag           *EffectKey
}

// Outbound is one record in the reference tools' outbox: a court filing,
// e-mail or draft, recorded once per effect_ref (the downstream idempotency
// key).
type Outbound struct {
	FirmID, RunID, EffectRef, ToolName, Kind string
	Body                                     json.RawMessage
	CreatedAt                                time.Time
}
