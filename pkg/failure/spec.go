package failure

import (
	"net/http"
	"time"
)

// spec is everything fixed about a kind. Keeping status, retry policy and
// every text in one row means a new kind cannot ship half-described:
// TestEveryKindIsDescribed fails until its row is complete.
type spec struct {
	status     int
	retryable  bool
	retryAfter time.Duration
	title      string
	summary    string // completed with " during <stage>."
	recommend  string
	userMsg    string
}

// Throttling and unavailability of a dependency (Bedrock, DynamoDB) map to
// 503 with Retry-After rather than 429: 429 tells a client that it sent too
// many requests, which would send it hunting for a client-side rate limit
// that does not exist. 503 + Retry-After (RFC 9110 §15.6.4) says "we are
// temporarily unable, come back later", which is what happened.
var specs = map[Kind]spec{
	KindInvalidRequest: {status: http.StatusBadRequest,
		title:     "Invalid request",
		summary:   "The request failed validation",
		recommend: "Correct the request and send it again; resending it unchanged will fail the same way.",
		userMsg:   "The request is invalid."},
	KindUnauthenticated: {status: http.StatusUnauthorized,
		title:     "Authentication required",
		summary:   "The caller could not be authenticated",
		recommend: "Check the caller's credentials or token and authenticate again.",
		userMsg:   "Authentication is required."},
	KindForbidden: {status: http.StatusForbidden,
		title:     "Forbidden",
		summary:   "The caller is not permitted to perform the action",
		recommend: "Ask a firm administrator for access to this firm or matter.",
		userMsg:   "You do not have permission to perform this action."},
	KindNotFound: {status: http.StatusNotFound,
		title:     "Not found",
		summary:   "A referenced resource does not exist",
		recommend: "Check the identifiers in the request.",
		userMsg:   "The requested resource was not found."},
	KindConflict: {status: http.StatusConflict,
		title:     "Conflict",
		summary:   "The request conflicts with the current state of the resource",
		recommend: "Reload the resource and apply the change again.",
		userMsg:   "The request conflicts with the current state of the resource."},
	KindExpired: {status: http.StatusGone,
		title:     "Expired",
		summary:   "A time-limited item such as a warrant or approval has expired",
		recommend: "Obtain a new warrant or approval and try again.",
		userMsg:   "This item has expired."},
	KindPayloadTooLarge: {status: http.StatusRequestEntityTooLarge,
		title:     "Payload too large",
		summary:   "The request body exceeds the size limit",
		recommend: "Reduce the size of the request, for example by splitting documents.",
		userMsg:   "The request is too large."},
	KindUnknownAgent: {status: http.StatusUnprocessableEntity,
		title:     "Unknown agent",
		summary:   "The request names an agent that is not configured",
		recommend: "Use a configured agent identifier, or deploy the agent's configuration first.",
		userMsg:   "The requested agent is not configured."},
	KindUnknownModel: {status: http.StatusUnprocessableEntity,
		title:     "Unknown model",
		summary:   "The request or agent refers to a model that is not configured",
		recommend: "Configure an available model for this agent.",
		userMsg:   "The requested model is not available."},
	KindCostCapExceeded: {status: http.StatusUnprocessableEntity,
		title:     "Cost cap exceeded",
		summary:   "The run reached its configured cost cap",
		recommend: "Raise the cost cap for this matter, or narrow the task and start a new run.",
		userMsg:   "The run stopped because it reached its cost limit."},
	KindStepLimitExceeded: {status: http.StatusInternalServerError,
		title:     "Step limit exceeded",
		summary:   "The run reached its maximum number of agent steps",
		recommend: "Review the run in the ledger; raise the step limit or split the task.",
		userMsg:   "The run stopped because it reached its step limit."},
	KindModelThrottled: {status: http.StatusServiceUnavailable, retryable: true, retryAfter: 5 * time.Second,
		title:     "Model temporarily unavailable",
		summary:   "The model provider throttled the request or a service quota was reached",
		recommend: "Retry after the indicated delay; if this persists, request a Bedrock quota increase.",
		userMsg:   "The AI model is busy. Please try again shortly."},
	KindModelTimeout: {status: http.StatusGatewayTimeout, retryable: true, retryAfter: 5 * time.Second,
		title:     "Model timed out",
		summary:   "The model did not respond in time",
		recommend: "Retry; if this persists, reduce the prompt size or the maximum output tokens.",
		userMsg:   "The AI model did not respond in time. Please try again."},
	KindModelValidation: {status: http.StatusInternalServerError,
		title:     "Model request rejected",
		summary:   "The model provider rejected the request as invalid",
		recommend: "Check the agent's model configuration: model identifier, inference parameters and tool schemas.",
		userMsg:   "The AI model rejected the request."},
	KindModelAccessDenied: {status: http.StatusInternalServerError,
		title:     "Model access denied",
		summary:   "The runtime is not permitted to invoke the model",
		recommend: "Grant the function role bedrock:InvokeModel on the model and enable model access in the region.",
		userMsg:   "The AI model is not available to this service."},
	KindModelError: {status: http.StatusInternalServerError,
		title:     "Model error",
		summary:   "The model provider failed while processing the request",
		recommend: "Retry if the failure is marked retryable; otherwise check the model provider's status.",
		userMsg:   "The AI model failed to process the request."},
	KindModelMalformedOutput: {status: http.StatusInternalServerError,
		title:     "Malformed model output",
		summary:   "The model returned output the runtime could not interpret",
		recommend: "Retry the run; if this persists, review the agent's tool schemas and system prompt.",
		userMsg:   "The AI model returned an unusable response."},
	KindStoreThrottled: {status: http.StatusServiceUnavailable, retryable: true, retryAfter: time.Second,
		title:     "Storage temporarily unavailable",
		summary:   "The ledger store throttled the request",
		recommend: "Retry after the indicated delay; if this persists, review the table's capacity.",
		userMsg:   "The service is busy. Please try again shortly."},
	KindStoreConflict: {status: http.StatusConflict,
		title:     "Storage conflict",
		summary:   "A conditional write failed because the stored item had changed",
		recommend: "Re-read the current state before deciding whether to try again.",
		userMsg:   "The record was changed by another request."},
	KindStoreUnavailable: {status: http.StatusServiceUnavailable, retryable: true, retryAfter: 2 * time.Second,
		title:     "Storage unavailable",
		summary:   "The ledger store was unreachable or reported an internal error",
		recommend: "Retry after the indicated delay.",
		userMsg:   "The service is temporarily unavailable. Please try again shortly."},
	KindEffectOutcomeUnknown: {status: http.StatusInternalServerError,
		title:     "Outcome unknown",
		summary:   "A tool's side effect may or may not have been applied",
		recommend: "Do not retry automatically: check the target system for the effect, then record the outcome.",
		userMsg:   "The action's outcome could not be confirmed; it may have been applied. Check before retrying."},
	KindToolError: {status: http.StatusInternalServerError,
		title:     "Tool failed",
		summary:   "A tool reported an error",
		recommend: "Check the tool's target system, then retry the run if appropriate.",
		userMsg:   "A tool used by the agent failed."},
	KindLedgerCorrupt: {status: http.StatusInternalServerError,
		title:     "Ledger integrity failure",
		summary:   "The ledger hash chain failed verification",
		recommend: "Stop using this run and escalate to an operator; do not edit ledger items by hand.",
		userMsg:   "A record integrity check failed, so the run was stopped."},
	KindUnknownEvent: {status: http.StatusInternalServerError,
		title:     "Unknown ledger event",
		summary:   "The ledger holds an event type this runtime version does not recognise",
		recommend: "Deploy a runtime version that understands the event before reading this run.",
		userMsg:   "This run was recorded by a newer version of the service."},
	KindConfigInvalid: {status: http.StatusInternalServerError,
		title:     "Invalid configuration",
		summary:   "The runtime or agent configuration is invalid",
		recommend: "Fix the configuration and redeploy.",
		userMsg:   "The service is misconfigured."},
	KindTimeout: {status: http.StatusGatewayTimeout, retryable: true, retryAfter: time.Second,
		title:     "Timed out",
		summary:   "The operation exceeded its deadline",
		recommend: "Retry; if this persists, raise the function timeout or reduce the work per invocation.",
		userMsg:   "The request timed out. Please try again."},
	KindCanceled: {status: http.StatusInternalServerError,
		title:     "Canceled",
		summary:   "The operation was canceled before it completed",
		recommend: "Retry if the cancellation was not intended.",
		userMsg:   "The request was canceled."},
	KindSelfApproval: {status: http.StatusForbidden,
		title:     "Self-approval",
		summary:   "Counsel tried to decide a warrant of a run they started themselves",
		recommend: "Ask another counsel of the firm to decide the warrant.",
		userMsg:   "The counsel who decides a warrant must not be the user who started the run."},
	KindWorkerLost: {status: http.StatusInternalServerError,
		title:     "Worker lost",
		summary:   "The run's worker stopped before the run ended, and nothing irreversible was pending",
		recommend: "Start the run again; no effect of this run is in doubt.",
		userMsg:   "The run stopped unexpectedly before it finished. Nothing was sent or filed on its behalf since its last recorded step."},
	KindWarrantExpired: {status: http.StatusGone,
		title:     "Warrant expired",
		summary:   "The run was held on a warrant that expired before it was used",
		recommend: "Start a new run if the action is still wanted; counsel will be asked again.",
		userMsg:   "The approval request expired before the run continued, so the run was stopped."},
	KindFirmBudgetExceeded: {status: http.StatusUnprocessableEntity,
		title:     "Firm budget exceeded",
		summary:   "The firm's monthly model budget could not cover the worst case of the next model call",
		recommend: "Raise the firm's monthly budget (monthly_budget_usd in its settings) or wait for the next month, then start a new run.",
		userMsg:   "The run stopped because your firm's monthly AI budget is used up."},
	KindInternal: {status: http.StatusInternalServerError,
		title:     "Internal error",
		summary:   "An unexpected internal error occurred",
		recommend: "Report the failure_id and internal_debug_ref to an operator.",
		userMsg:   "An internal error occurred. Please contact support and quote the failure ID."},
}

// recommendOverrides refine the advice where the stage changes what the
// right next step is; a store conflict on an effect claim means the warrant
// was already spent, which is a very different situation from a lost race
// on a ledger append.
var recommendOverrides = map[Kind]map[Stage]string{
	KindStoreConflict: {
		StageEffectClaim: "The warrant or effect was already claimed; do not repeat the action, and obtain a new warrant if it is still needed.",
		StageLedgerWrite: "Another writer appended to the ledger first; re-read the chain head and append again.",
	},
}

// stageText completes summaries ("... during the model call.").
var stageText = map[Stage]string{
	StageRequest:     "request validation",
	StageAuthorize:   "authorization",
	StageConfig:      "configuration loading",
	StageInvoke:      "run invocation",
	StageModelCall:   "the model call",
	StageToolPolicy:  "tool policy evaluation",
	StageToolExecute: "tool execution",
	StageEffectClaim: "the effect claim",
	StageApproval:    "approval",
	StageResume:      "run resumption",
	StageLedgerWrite: "a ledger write",
	StageLedgerRead:  "a ledger read",
	StageReduce:      "state reduction",
	StageProjection:  "projection",
	StageHandOver:    "the hand-over to the worker",
	StageSweep:       "the sweep of stopped runs",
	StageUnknown:     "an unrecorded stage",
}

func specOf(k Kind) spec {
	if s, ok := specs[k]; ok {
		return s
	}
	return specs[KindInternal]
}
