package warrant

import "github.com/seed-f6d3920e/warrant/pkg/failure"

// The store's typed outcomes. Each is a *failure.Error, so it carries its
// failure kind and the client-safe message an API answer shows; match them
// with errors.Is. A store wraps them with detail and the SDK error that
// caused them, and neither reaches a client or a log.
var (
	ErrNotFound          = failure.New(failure.KindNotFound, "run or warrant not found")
	ErrRunExists         = failure.New(failure.KindConflict, "the run already exists")
	ErrSeqTaken          = failure.New(failure.KindConflict, "another writer advanced the run's ledger")
	ErrRunNotInState     = failure.New(failure.KindConflict, "the run is not held on this warrant")
	ErrWarrantNotPending = failure.New(failure.KindConflict, "the warrant is not pending")
	ErrHashMismatch      = failure.New(failure.KindConflict, "tool_input_hash does not match the warrant")
	ErrWarrantExpired    = failure.New(failure.KindExpired, "the warrant has expired")
	ErrWarrantConsumed   = failure.New(failure.KindConflict, "the warrant was already used")
	ErrWarrantRefused    = failure.New(failure.KindPolicyChanged, "the risk policy denied the warranted call when the run was resumed; the warrant was refused")
	ErrWarrantNotDecided = failure.New(failure.KindConflict, "the warrant is still pending: counsel has not decided")
	ErrEffectClaimed     = failure.New(failure.KindConflict, "the warranted effect was already claimed")
	ErrLeaseHeld         = failure.New(failure.KindConflict, "another worker holds the run")
	ErrNotReconcilable   = failure.New(failure.KindConflict, "the effect is not waiting for reconciliation")
	// ErrContentDestroyed: the run's content was destroyed with its data
	// key; nothing of it opens, and nothing of it is written in the clear.
	// ErrMatterOnHold: the matter is under a legal hold, which keeps every
	// run's content (a destruction is refused; a second hold finds it).
	// ErrContentNotSealed: the run has no data key of its own (its content
	// is in the clear), so there is no key whose destruction destroys it.
	ErrContentDestroyed = failure.New(failure.KindConflict, "the run's content was destroyed")
	ErrMatterOnHold     = failure.New(failure.KindConflict, "the matter is under a legal hold")
	ErrContentNotSealed = failure.New(failure.KindConflict, "the run's content is not sealed under a data key of its own: there is no key to destroy")
	// ErrDestructionPending: a destruction of the matter's content was
	// requested and waits for another counsel's confirmation (or, once
	// confirmed, is being carried out); ErrNoOrder: there is no request to
	// confirm (none was made, or it expired).
	ErrDestructionPending = failure.New(failure.KindConflict, "a destruction of the matter's content is already requested")
	ErrNoOrder            = failure.New(failure.KindConflict, "there is no pending request to destroy the matter's content")
	// ErrSelfConfirm: the user who requested a destruction cannot confirm
	// it; another counsel must.
	ErrSelfConfirm = failure.New(failure.KindSelfApproval, "a destruction is confirmed by another counsel than the one who requested it")
	// ErrMatterVersion: a matter write named a version the matter is not at
	// (it moved on, or it has no record); ErrMatterExists: a write meant to
	// create a matter found one. Nothing was written.
	ErrMatterVersion = failure.New(failure.KindPreconditionFailed, "the matter is not at the version the write names")
	ErrMatterExists  = failure.New(failure.KindPreconditionFailed, "the matter already exists")
	// ErrTooLarge: what was to be stored passes DynamoDB's 400 KB item
	// limit; nothing was written. The store wraps it with a message that
	// names what was too large.
	ErrTooLarge = failure.New(failure.KindPayloadTooLarge, "too large to record: DynamoDB holds at most 400 KB an item")
	// ErrFirmBudgetExceeded: the firm's monthly budget cannot hold the
	// worst case of the next model call; nothing was reserved.
	ErrFirmBudgetExceeded = failure.New(failure.KindFirmBudgetExceeded, "the firm's monthly budget cannot cover the next model call")

	// A tool's system (an MCP server, a Lambda function, an HTTPS
	// endpoint) as its target reached it (see agent.Target). Unreachable:
	// the call never left, nothing happened. Outcome unknown: the call left
	// and its answer was lost, so an effect may have happened.
	ErrTargetUnreachable    = failure.New(failure.KindToolError, "the tool's system could not be reached; nothing was sent")
	ErrTargetOutcomeUnknown = failure.New(failure.KindEffectOutcomeUnknown, "the tool's answer was lost after the call was sent")

	// Races between writers of the service itself: the request may be
	// repeated.
	ErrWarrantExists      = failure.New(failure.KindStoreConflict, "the approval id already exists")
	ErrNotClaimOwner      = failure.New(failure.KindStoreConflict, "the effect claim is owned by another writer")
	ErrProjectionConflict = failure.New(failure.KindStoreConflict, "another writer advanced the projection")
	// ErrLogMoved: another receipt or checkpoint advanced the firm's log
	// first; nothing was written.
	ErrLogMoved = failure.New(failure.KindStoreConflict, "another writer advanced the firm's log")
	// ErrOrderMoved: a matter's destruction order changed while it was
	// written (read again).
	ErrOrderMoved = failure.New(failure.KindStoreConflict, "the matter's destruction order changed meanwhile")
	// ErrBudgetLimitChanged: the firm's settings no longer say what the
	// reserver read (its monthly budget changed); it reads them again and
	// reserves with the limit in force.
	ErrBudgetLimitChanged = failure.New(failure.KindStoreConflict, "the firm's monthly budget limit changed")
)
