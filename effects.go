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
}

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
}

// Completion is the outcome of a claimed effect.
type Completion struct {
	State      ClaimState // completed|failed
	ToolStatus string
	Result     json.RawMessage
}

// ResumeClaim is the resume critical section's input. For an approved
// warrant the effect of ToolName/InputSHA256 at Attempt is claimed with
// EffectRef by Owner until LeaseUntil; for a denied one the same key is
// claimed declined, so no later path in the run can execute that call.
type ResumeClaim struct {
	FirmID, RunID, ApprovalID, ToolName, InputSHA256, EffectRef, Owner string
	Attempt                                                            int
	Decision                                                           Decision
	LeaseUntil                                                         time.Time
}

// Outbound is one record in the reference tools' outbox: a court filing,
// e-mail or draft, recorded once per effect_ref (the downstream idempotency
// key).
type Outbound struct {
	FirmID, RunID, EffectRef, ToolName, Kind string
	Body                                     json.RawMessage
	CreatedAt                                time.Time
}
