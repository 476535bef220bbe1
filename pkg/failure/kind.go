package failure

import "slices"

// Kind says what went wrong. Kinds are persisted in envelopes, used as metric
// dimensions and exposed as problem types, so this list is append-only: never
// rename or remove a value, only add one (together with its row in specs).
type Kind string

const (
	KindInvalidRequest       Kind = "invalid_request"
	KindUnauthenticated      Kind = "unauthenticated"
	KindForbidden            Kind = "forbidden"
	KindNotFound             Kind = "not_found"
	KindConflict             Kind = "conflict"
	KindExpired              Kind = "expired"
	KindPayloadTooLarge      Kind = "payload_too_large"
	KindUnknownAgent         Kind = "unknown_agent"
	KindUnknownModel         Kind = "unknown_model"
	KindCostCapExceeded      Kind = "cost_cap_exceeded"
	KindStepLimitExceeded    Kind = "step_limit_exceeded"
	KindModelThrottled       Kind = "model_throttled"
	KindModelTimeout         Kind = "model_timeout"
	KindModelValidation      Kind = "model_validation"
	KindModelAccessDenied    Kind = "model_access_denied"
	KindModelError           Kind = "model_error"
	KindModelMalformedOutput Kind = "model_malformed_output"
	KindStoreThrottled       Kind = "store_throttled"
	KindStoreConflict        Kind = "store_conflict"
	KindStoreUnavailable     Kind = "store_unavailable"
	KindEffectOutcomeUnknown Kind = "effect_outcome_unknown"
	KindToolError            Kind = "tool_error"
	KindLedgerCorrupt        Kind = "ledger_corrupt"
	KindUnknownEvent         Kind = "unknown_event"
	KindConfigInvalid        Kind = "config_invalid"
	KindTimeout              Kind = "timeout"
	KindCanceled             Kind = "canceled"
	KindInternal             Kind = "internal"
	KindSelfApproval         Kind = "self_approval"
	// KindWorkerLost: the run's worker stopped (timeout, crash) with nothing
	// irreversible pending, and the sweeper's restarts ran out.
	KindWorkerLost Kind = "worker_lost"
	// KindWarrantExpired: the run was held on a warrant that expired before
	// anyone resumed it; the sweeper ended the run.
	KindWarrantExpired Kind = "warrant_expired"
	// KindPolicyDenied: the risk policy denies the call counsel edited
	// (the edit is refused; nothing is recorded).
	KindPolicyDenied Kind = "policy_denied"
	// KindPolicyChanged: the policy running at dispatch would deny the
	// call a warrant covers (the warrant is refused, recorded, and the call
	// never executes).
	KindPolicyChanged Kind = "policy_changed"
	// KindFirmBudgetExceeded: the firm's monthly budget could not cover the
	// worst case of the run's next model call, so the call was not made.
	KindFirmBudgetExceeded Kind = "firm_budget_exceeded"
	// KindLogDiverged: a firm's log in the table does not extend the last
	// checkpoint the sweeper signed, as kept outside the table (rolled
	// back, forked, or a checkpoint missing): the sweeper refuses to sign.
	KindLogDiverged Kind = "firm_log_diverged"
	// KindModelAnswerLost: a model call was made and paid for (its
	// model.usage line is on the ledger) but its answer was never recorded;
	// the call is not made again, so the run ends.
	KindModelAnswerLost Kind = "model_answer_lost"
	// KindPreconditionFailed: a conditional request (If-Match,
	// If-None-Match) named a version the resource is not at; nothing was
	// written.
	KindPreconditionFailed Kind = "precondition_failed"
	// KindPreconditionRequired: an update that must name the version it
	// replaces (If-Match) came without it; nothing was written.
	KindPreconditionRequired Kind = "precondition_required"
	// KindToolChanged: a tool's system no longer offers the tool with the
	// input schema the catalog pinned (another schema, or not at all), so
	// its call was not sent and the run ended; the envelope's tool_change
	// gives both hashes.
	KindToolChanged Kind = "tool_changed"
)

var allKinds = []Kind{
	KindInvalidRequest, KindUnauthenticated, KindForbidden, KindNotFound,
	KindConflict, KindExpired, KindPayloadTooLarge, KindUnknownAgent,
	KindUnknownModel, KindCostCapExceeded, KindStepLimitExceeded,
	KindModelThrottled, KindModelTimeout, KindModelValidation,
	KindModelAccessDenied, KindModelError, KindModelMalformedOutput,
	KindStoreThrottled, KindStoreConflict, KindStoreUnavailable,
	KindEffectOutcomeUnknown, KindToolError, KindLedgerCorrupt,
	KindUnknownEvent, KindConfigInvalid, KindTimeout, KindCanceled,
	KindInternal, KindSelfApproval, KindWorkerLost, KindWarrantExpired,
	KindPolicyDenied, KindPolicyChanged,
	KindFirmBudgetExceeded, KindLogDiverged, KindModelAnswerLost,
	KindPreconditionFailed, KindPreconditionRequired, KindToolChanged,
}

// AllKinds returns every kind; the caller may modify the returned slice.
func AllKinds() []Kind { return slices.Clone(allKinds) }

// Valid reports whether k is one of the closed list of kinds.
func (k Kind) Valid() bool { return slices.Contains(allKinds, k) }

// Stage says where in the run the failure happened. Same rule as Kind: this
// list is append-only.
type Stage string

const (
	StageRequest     Stage = "request"
	StageAuthorize   Stage = "authorize"
	StageConfig      Stage = "config"
	StageInvoke      Stage = "invoke"
	StageModelCall   Stage = "model_call"
	StageToolPolicy  Stage = "tool_policy"
	StageToolExecute Stage = "tool_execute"
	StageEffectClaim Stage = "effect_claim"
	StageApproval    Stage = "approval"
	StageResume      Stage = "resume"
	StageLedgerWrite Stage = "ledger_write"
	StageLedgerRead  Stage = "ledger_read"
	StageReduce      Stage = "reduce"
	StageProjection  Stage = "projection"
	// StageHandOver is the hand-over of a recorded run to the worker queue.
	StageHandOver Stage = "hand_over"
	// StageSweep is the sweeper's pass over runs whose lease passed.
	StageSweep Stage = "sweep"
	// StageUnknown is what Build records when a caller passes an invalid
	// stage: a CloudWatch dimension value must not be empty, and guessing a
	// real stage would mislead whoever reads the dashboard.
	StageUnknown Stage = "unknown"
)

var allStages = []Stage{
	StageRequest, StageAuthorize, StageConfig, StageInvoke, StageModelCall,
	StageToolPolicy, StageToolExecute, StageEffectClaim, StageApproval,
	StageResume, StageLedgerWrite, StageLedgerRead, StageReduce,
	StageProjection, StageHandOver, StageSweep, StageUnknown,
}

// AllStages returns every stage; the caller may modify the returned slice.
func AllStages() []Stage { return slices.Clone(allStages) }

// Valid reports whether s is one of the closed list of stages.
func (s Stage) Valid() bool { return slices.Contains(allStages, s) }
