package contracts

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// SchemaVersion is the only ledger schema this build understands.
const SchemaVersion = "1"

// ErrUnknownEvent is returned for a ledger line whose type or schema_version this
// build does not know. Readers halt there instead of guessing.
var ErrUnknownEvent = errors.New("unknown ledger event")

// EventType names a ledger event (closed).
type EventType string

// The ledger event types.
const (
	TypeRunStarted      EventType = "run.started"
	TypeTurnDelta       EventType = "turn.delta"
	TypeTurnCompleted   EventType = "turn.completed"
	TypeModelUsage      EventType = "model.usage"
	TypeToolRequested   EventType = "tool.requested"
	TypeToolCompleted   EventType = "tool.completed"
	TypeRunBlocked      EventType = "run.blocked"
	TypeApprovalDecided EventType = "approval.decided"
	TypeRunReleased     EventType = "run.released"
	TypeRunCompleted    EventType = "run.completed"
	TypeRunFailed       EventType = "run.failed"
	// TypeEffectReconciled is counsel's record of an effect whose outcome
	// was unknown; a line a finished run still takes.
	TypeEffectReconciled EventType = "effect.reconciled"
	// TypeContentDestroyed records that a finished run's privileged content
	// was destroyed by destroying its data key (issue 26); the other line a
	// finished run takes, once. Its payload is in the clear.
	TypeContentDestroyed EventType = "content.destroyed"
)

// Event is the payload of a ledger line. It is sealed: the implementations are
// *RunStarted, *TurnDelta, *TurnCompleted, *ModelUsage, *ToolRequested,
// *ToolCompleted, *RunBlocked, *ApprovalDecided, *RunReleased, *RunCompleted,
// *RunFailed, *EffectReconciled and *ContentDestroyed.
type Event interface {
	EventType() EventType
	validate() error
	isEvent()
}

var eventTypes = map[EventType]reflect.Type{
	TypeRunStarted:       reflect.TypeFor[RunStarted](),
	TypeTurnDelta:        reflect.TypeFor[TurnDelta](),
	TypeTurnCompleted:    reflect.TypeFor[TurnCompleted](),
	TypeModelUsage:       reflect.TypeFor[ModelUsage](),
	TypeToolRequested:    reflect.TypeFor[ToolRequested](),
	TypeToolCompleted:    reflect.TypeFor[ToolCompleted](),
	TypeRunBlocked:       reflect.TypeFor[RunBlocked](),
	TypeApprovalDecided:  reflect.TypeFor[ApprovalDecided](),
	TypeRunReleased:      reflect.TypeFor[RunReleased](),
	TypeRunCompleted:     reflect.TypeFor[RunCompleted](),
	TypeRunFailed:        reflect.TypeFor[RunFailed](),
	TypeEffectReconciled: reflect.TypeFor[EffectReconciled](),
	TypeContentDestroyed: reflect.TypeFor[ContentDestroyed](),
}

// RunStarted is line 1 of every run. It carries the opening conversation, so a
// resume rebuilds the transcript from the ledger alone.
type RunStarted struct {
	AgentKey      string `json:"agent_key"`
	Mode          string `json:"mode"`
	ModelID       string `json:"model_id"`
	PromptVersion string `json:"prompt_version"`
	SchemaVersion string `json:"schema_version"`
	CostCapUSD    string `json:"cost_cap_usd"`
	MaxTokens     int64  `json:"max_tokens"`
	MatterID      string `json:"matter_id"`
	UserID        string `json:"user_id"`
	// UserName is the starting user's display name (the token's name or
	// email claim): shown to people, never used to authorize; absent when
	// the token has none.
	UserName string `json:"user_name,omitempty"`
	// UserRoles are the roles the user held when starting the run (the
	// token's roles claim, as the API checked it): metadata the risk
	// policy's rules may weigh for every call of the run.
	UserRoles      []string         `json:"user_roles,omitempty"`
	CorrelationID  string           `json:"correlation_id,omitempty"`
	ChatSessionID  string           `json:"chat_session_id,omitempty"`
	FormID         string           `json:"form_id,omitempty"`
	History        []HistoryMessage `json:"history"`
	CounselMessage string           `json:"counsel_message,omitempty"`
	// AgentsVersion and CatalogVersion are the hashes of the agents
	// document and the tool catalog the run was started under (absent on
	// lines written before they were configuration).
	AgentsVersion  string `json:"agents_version,omitempty"`
	CatalogVersion string `json:"catalog_version,omitempty"`
	// PolicySHA256 is the SHA-256 of the risk policy document (and its
	// overlay) the run was started under, which receipts name (absent on
	// lines written before receipts).
	PolicySHA256 string `json:"policy_sha256,omitempty"`
}

// TurnDelta is one streamed text fragment of a model turn.
type TurnDelta struct {
	Turn int64  `json:"turn"`
	Text string `json:"text"`
}

// Content block types of a turn (closed).
const (
	BlockText    = "text"
	BlockToolUse = "tool_use"
)

// ContentBlock is one block of an assistant message.
type ContentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

// TurnCompleted is one whole assistant message.
type TurnCompleted struct {
	Turn       int64          `json:"turn"`
	Text       string         `json:"text"`
	StopReason string         `json:"stop_reason"`
	Content    []ContentBlock `json:"content"`
}

// Usage is the token count of one model call.
type Usage struct {
	InputTokens           int64 `json:"input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	CacheReadInputTokens  int64 `json:"cache_read_input_tokens"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
}

// ModelUsage prices one model call; cost_usd is a decimal string.
// reserved_usd, when present, is the worst case the call was held to before
// it was made (its reservation against the run's cap and the firm's budget),
// so the ledger shows every call's bound next to its cost.
type ModelUsage struct {
	Turn        int64  `json:"turn"`
	ModelID     string `json:"model_id"`
	Usage       Usage  `json:"usage"`
	CostUSD     string `json:"cost_usd"`
	ReservedUSD string `json:"reserved_usd,omitempty"`
}

// ToolRequested records a tool call the model proposed and the policy decision.
type ToolRequested struct {
	Turn          int64           `json:"turn"`
	ToolUseID     string          `json:"tool_use_id"`
	ToolName      string          `json:"tool_name"`
	Input         json.RawMessage `json:"input"`
	InputSHA256   string          `json:"input_sha256"`
	RiskTier      string          `json:"risk_tier"`
	Action        string          `json:"action"`
	Reason        string          `json:"reason"`
	MatchedPolicy string          `json:"matched_policy"`
	// PolicyVersion is the policy (and overlay) the decision was made
	// under; FiredRules the argument rules that fired, in order. Both are
	// absent on lines written before rules existed.
	PolicyVersion string      `json:"policy_version,omitempty"`
	FiredRules    []FiredRule `json:"fired_rules,omitempty"`
	// PolicyMetadata is what the policy decided on beyond the input
	// (PolicyMetadata, canonical JSON), PolicyMetadataSHA256 its hash, which
	// the effect's receipt carries. Absent on lines written before
	// decisions recorded it.
	PolicyMetadata       json.RawMessage `json:"policy_metadata,omitempty"`
	PolicyMetadataSHA256 string          `json:"policy_metadata_sha256,omitempty"`
	// ToolClass is the catalog's class of the tool ("read" or "effect"):
	// an effect is an action of the run whatever its tier (issue 27).
	// Absent on lines written before it, and for a tool the catalog does
	// not know.
	ToolClass string `json:"tool_class,omitempty"`
	// Provenance is where each destination the policy declares for the
	// tool (pkg/provenance) was found in the run: pointer, kind and
	// origins, never the value. Absent when the tool declares none, on
	// lines written before provenance, and where the decision did not
	// trace it.
	Provenance []ProvenanceFinding `json:"provenance,omitempty"`
	// LimitsReached are the ids of the policy's limits (counts over a
	// window) that the call found at their bound when its effect was
	// claimed: the decision recorded is the policy's with them reached
	// (their fired rules appended, the call raised or denied). The count
	// is not in the ledger, so this is what an audit re-derives the
	// decision from. Absent for every other call.
	LimitsReached []string `json:"limits_reached,omitempty"`
	// MatterSteps are the steps of the matter's other runs that decided a
	// prior condition with scope "matter" (the one that satisfied it, and
	// those whose result could not be read), read from the matter's record
	// of completed steps: the run, the seq and the hash of each
	// tool.completed line, which an audit checks in those runs' exports.
	// MatterUnread: that record could not be read, so such a condition not
	// satisfied by the run's own steps was undecided (fail closed). Absent
	// for every other call.
	MatterSteps  []MatterStep `json:"matter_steps,omitempty"`
	MatterUnread bool         `json:"matter_unread,omitempty"`
}

// MatterStep names a tool.completed line of another run of the matter
// that a decision's prior condition read (tool.requested's matter_steps):
// its run, seq and hash, and its tool and status as the line records them.
// Unread: its result could not be read as the condition needs (sealed and
// not opened, destroyed, or not of the shape).
type MatterStep struct {
	RunID  string `json:"run_id"`
	Seq    int64  `json:"seq"`
	Hash   string `json:"hash"`
	Tool   string `json:"tool"`
	Status string `json:"status"`
	Unread bool   `json:"unread,omitempty"`
}

// A tool's class as tool.requested records it (closed).
const (
	ToolClassRead   = "read"
	ToolClassEffect = "effect"
)

// FiredRule is one risk-policy rule that fired on a call's arguments.
type FiredRule = warrant.FiredRule

// Tool call outcomes (closed).
const (
	ToolSuccess  = "success"
	ToolError    = "error"
	ToolDenied   = "denied"
	ToolDeclined = "declined"
	// ToolUnknown: the effect was claimed and its executor was lost before
	// recording the outcome; nobody knows whether it happened (the sweeper
	// writes it, and counsel reconciles it).
	ToolUnknown = "unknown"
)

// ToolCompleted records the result the model was given for a tool call.
type ToolCompleted struct {
	ToolUseID   string          `json:"tool_use_id"`
	ToolName    string          `json:"tool_name"`
	InputSHA256 string          `json:"input_sha256"`
	Status      string          `json:"status"`
	EffectRef   string          `json:"effect_ref,omitempty"`
	Result      json.RawMessage `json:"result"`
	// ExecutedInputSHA256 is the hash of the input that ran when counsel
	// edited the call before approving it (absent: the requested input ran).
	ExecutedInputSHA256 string `json:"executed_input_sha256,omitempty"`
	// ResultSHA256 and ResultBytes are set when the tool's result was too
	// large to keep: Result is then its truncated form (what the model saw),
	// and these are the hash and size of the whole result.
	ResultSHA256 string `json:"result_sha256,omitempty"`
	ResultBytes  int64  `json:"result_bytes,omitempty"`
	// Reused: the call was answered from its effect's record (a repeat of
	// a call that already ran, or that counsel declined); nothing ran for
	// this line, so it calls for no receipt of its own.
	Reused bool `json:"reused,omitempty"`
	// ErrorKind says, in the clear, why a call's status is error (its
	// result, which the model saw, is content): the firm's system could
	// not be reached and nothing was sent, the system answered with an
	// error, or the input was refused before any call. Absent on lines
	// written before it, and on every other status.
	ErrorKind string `json:"error_kind,omitempty"`
}

// Why a tool call failed (ToolCompleted.ErrorKind; closed).
const (
	ToolErrUnreachable  = "unreachable"   // the firm's system could not be reached: nothing was sent
	ToolErrToolFailed   = "tool_failed"   // the system answered with an error (or no valid result)
	ToolErrInvalidInput = "invalid_input" // refused before any call: the input did not fit the tool
)

// BlockedApproval is the warrant a held run waits on. ToolInput is the exact
// input counsel is asked to sign (canonical, re-hashed against ToolInputHash
// whenever the line is parsed), so the record of what counsel was shown is
// in the ledger itself.
type BlockedApproval struct {
	ApprovalRequestID string          `json:"approval_request_id"`
	ToolUseID         string          `json:"tool_use_id"`
	ToolName          string          `json:"tool_name"`
	ToolInput         json.RawMessage `json:"tool_input"`
	ToolInputHash     string          `json:"tool_input_hash"`
	// Attempt is the effect attempt the warrant covers, when it is a retry
	// of a warranted attempt that failed (2, 3, ...); omitted for the first.
	Attempt      int64  `json:"attempt,omitempty"`
	RiskTier     string `json:"risk_tier"`
	Reason       string `json:"reason"`
	HumanSummary string `json:"human_summary"`
	ExpiresAt    string `json:"expires_at"`
	// PolicyVersion and FiredRules are the policy's decision that asked for
	// the warrant, as tool.requested recorded it (what counsel is shown).
	PolicyVersion string      `json:"policy_version,omitempty"`
	FiredRules    []FiredRule `json:"fired_rules,omitempty"`
	// ToolServer names the system that serves the tool (the catalog's
	// server) and ToolSchemaSHA256 the hash of the input schema the catalog
	// gives it (an MCP tool's pin on its server); both absent for Warrant's
	// own builtin tools.
	ToolServer       string `json:"tool_server,omitempty"`
	ToolSchemaSHA256 string `json:"tool_schema_sha256,omitempty"`
}

// RunBlocked holds the run on a warrant request.
type RunBlocked struct {
	Approval BlockedApproval `json:"approval"`
}

// ApprovalDecided records counsel's signature or refusal.
type ApprovalDecided struct {
	ApprovalRequestID string           `json:"approval_request_id"`
	Decision          warrant.Decision `json:"decision"`
	DecidedBy         string           `json:"decided_by"`
	ToolInputHash     string           `json:"tool_input_hash"`
	Note              string           `json:"note,omitempty"`
	// RequestedBy is the user who started the run, and Separation whether
	// the firm's separation of duties applied to this decision (absent on
	// lines written before it was recorded: read as enforced).
	RequestedBy string `json:"requested_by,omitempty"`
	Separation  string `json:"separation,omitempty"`
	// DecidedAs is the role the decider held ("counsel"); absent on lines
	// written before it was recorded.
	DecidedAs string `json:"decided_as,omitempty"`
	// DecidedByName is the decider's display name (the token's name or
	// email claim), shown, never used to authorize.
	DecidedByName string `json:"decided_by_name,omitempty"`
	// EditedInput is the call as counsel edited it before approving
	// (canonical, re-hashed against EditedInputSHA256 whenever the line is
	// parsed); the warrant then covers this call only. EditedRiskTier and
	// EditedFiredRules are the risk policy's decision on the edit.
	EditedInput       json.RawMessage `json:"edited_input,omitempty"`
	EditedInputSHA256 string          `json:"edited_input_sha256,omitempty"`
	EditedRiskTier    string          `json:"edited_risk_tier,omitempty"`
	EditedFiredRules  []FiredRule     `json:"edited_fired_rules,omitempty"`
	// EditedPolicyVersion is the policy that decided the edit, and
	// EditedPolicyMetadata (with its hash) what it decided on beyond the
	// edit itself (absent on lines written before edits recorded them).
	EditedPolicyVersion        string          `json:"edited_policy_version,omitempty"`
	EditedPolicyMetadata       json.RawMessage `json:"edited_policy_metadata,omitempty"`
	EditedPolicyMetadataSHA256 string          `json:"edited_policy_metadata_sha256,omitempty"`
	// EditedMatterSteps and EditedMatterUnread are what the decision on the
	// edit read of the matter's other runs, as tool.requested records them.
	EditedMatterSteps  []MatterStep `json:"edited_matter_steps,omitempty"`
	EditedMatterUnread bool         `json:"edited_matter_unread,omitempty"`
}

// Separation of duties, as approval.decided records it (closed).
const (
	SeparationEnforced = "enforced" // the decider is not the requester
	SeparationWaived   = "waived"   // the firm allows self-approval
)

// RunReleased records that a held run resumed under its warrant. EffectRef is
// empty when the warrant was declined (nothing is claimed).
type RunReleased struct {
	ApprovalRequestID string           `json:"approval_request_id"`
	Decision          warrant.Decision `json:"decision"`
	EffectRef         string           `json:"effect_ref,omitempty"`
	// PolicyCheck is the policy's decision on the warranted call at the
	// resume, which let it run (approved warrants; absent on lines written
	// before the resume recorded it).
	PolicyCheck *PolicyCheck `json:"policy_check,omitempty"`
}

// RunCompleted ends a run normally.
type RunCompleted struct {
	StopReason string `json:"stop_reason"`
	FinalText  string `json:"final_text"`
}

// RunFailed ends a run with a failure. Failure is the sanitized envelope
// (pkg/failure owns its schema); ErrorMessage is sanitized too.
type RunFailed struct {
	ErrorClass   string          `json:"error_class"`
	ErrorMessage string          `json:"error_message"`
	FailureStage string          `json:"failure_stage"`
	FailureKind  string          `json:"failure_kind"`
	Failure      json.RawMessage `json:"failure"`
	// PolicyCheck is the policy's decision that refused a warranted call
	// at the resume (failure kind policy_changed only).
	PolicyCheck *PolicyCheck `json:"policy_check,omitempty"`
	// ToolChange names the tool whose system no longer offers it as the
	// catalog pinned it, with the pinned and the current schema hash
	// (failure kind tool_changed, which always carries it; absent on every
	// other line).
	ToolChange *failure.ToolChange `json:"tool_change,omitempty"`
}

// EffectReconciled records what really happened to an effect whose outcome
// was unknown, as counsel established it with the downstream system: it was
// executed (ExternalRef: that system's reference) or it was not. Nothing is
// executed because of it.
type EffectReconciled struct {
	EffectRef    string `json:"effect_ref"`
	ToolName     string `json:"tool_name"`
	InputSHA256  string `json:"input_sha256"`
	Outcome      string `json:"outcome"`
	ExternalRef  string `json:"external_ref,omitempty"`
	ReconciledBy string `json:"reconciled_by"`
	Note         string `json:"note,omitempty"`
	// RequestedBy is the user who started the run, and Separation whether
	// the firm's separation of duties applied to this reconciliation, as
	// approval.decided records them (absent on lines written before:
	// read as enforced).
	RequestedBy string `json:"requested_by,omitempty"`
	Separation  string `json:"separation,omitempty"`
}

// ContentDestroyed records that a finished run's privileged content was
// destroyed: its data key, the only key its sealed members open under, was
// removed from the run item in the transaction that stored this line
// (crypto-shredding). The ledger is not edited: every line, hash and the
// signed head stay as they were, and verify without the key.
//
// Reason says why: the retention in force when the run ended passed
// (RetentionDays, and RetentionSource: the matter's or the firm's), or
// the firm instructed it (RequestedBy asked and ConfirmedBy, another user,
// confirmed). BackupsUntil is when the last copy of the wrapped key leaves
// the table's backups (point-in-time recovery keeps 35 days): until then a
// restore of the table could still open the content; after it, nothing
// can.
type ContentDestroyed struct {
	MatterID        string `json:"matter_id"`
	Reason          string `json:"reason"`
	RetentionDays   int    `json:"retention_days,omitempty"`
	RetentionSource string `json:"retention_source,omitempty"`
	RequestedBy     string `json:"requested_by,omitempty"`
	ConfirmedBy     string `json:"confirmed_by,omitempty"`
	BackupsUntil    string `json:"backups_until"`
}

// Why a run's content was destroyed (closed), and whose retention applied.
const (
	DestroyedRetention   = "retention"
	DestroyedInstruction = "instruction"
	RetentionOfMatter    = "matter" // warrant.Retention's sources
	RetentionOfFirm      = "firm"
)

// MaxRetentionDays bounds a retention (100 years).
const MaxRetentionDays = warrant.MaxRetentionDays

func (*RunStarted) EventType() EventType       { return TypeRunStarted }
func (*TurnDelta) EventType() EventType        { return TypeTurnDelta }
func (*TurnCompleted) EventType() EventType    { return TypeTurnCompleted }
func (*ModelUsage) EventType() EventType       { return TypeModelUsage }
func (*ToolRequested) EventType() EventType    { return TypeToolRequested }
func (*ToolCompleted) EventType() EventType    { return TypeToolCompleted }
func (*RunBlocked) EventType() EventType       { return TypeRunBlocked }
func (*ApprovalDecided) EventType() EventType  { return TypeApprovalDecided }
func (*RunReleased) EventType() EventType      { return TypeRunReleased }
func (*RunCompleted) EventType() EventType     { return TypeRunCompleted }
func (*RunFailed) EventType() EventType        { return TypeRunFailed }
func (*EffectReconciled) EventType() EventType { return TypeEffectReconciled }
func (*ContentDestroyed) EventType() EventType { return TypeContentDestroyed }

func (*RunStarted) isEvent()       {}
func (*TurnDelta) isEvent()        {}
func (*TurnCompleted) isEvent()    {}
func (*ModelUsage) isEvent()       {}
func (*ToolRequested) isEvent()    {}
func (*ToolCompleted) isEvent()    {}
func (*RunBlocked) isEvent()       {}
func (*ApprovalDecided) isEvent()  {}
func (*RunReleased) isEvent()      {}
func (*RunCompleted) isEvent()     {}
func (*RunFailed) isEvent()        {}
func (*EffectReconciled) isEvent() {}
func (*ContentDestroyed) isEvent() {}

func (e *RunStarted) validate() error {
	const p = "payload."
	if err := checkDisplayName(p+"user_name", e.UserName); err != nil {
		return err
	}
	if err := mustNotEmpty(p+"agent_key", e.AgentKey); err != nil {
		return err
	}
	if err := oneOf(p+"mode", e.Mode, ModeInvoke); err != nil {
		return err
	}
	if err := mustNotEmpty(p+"model_id", e.ModelID); err != nil {
		return err
	}
	if err := mustNotEmpty(p+"prompt_version", e.PromptVersion); err != nil {
		return err
	}
	if err := oneOf(p+"schema_version", e.SchemaVersion, SchemaVersion); err != nil {
		return err
	}
	if err := checkDecimal(p+"cost_cap_usd", e.CostCapUSD); err != nil {
		return err
	}
	if e.MaxTokens <= 0 {
		return fieldErr(p+"max_tokens", "must be positive")
	}
	if err := CheckUUID(p+"matter_id", e.MatterID); err != nil {
		return err
	}
	if err := CheckUserID(p+"user_id", e.UserID); err != nil {
		return err
	}
	for i, r := range e.UserRoles {
		if !isShortKey(r) {
			return fieldErr(p+"user_roles["+itoa(i)+"]", "must be a role name (letters, digits, '_' or '-')")
		}
	}
	for i, h := range e.History {
		if err := h.Validate(p + "history[" + itoa(i) + "]"); err != nil {
			return err
		}
	}
	return nil
}

func (e *TurnDelta) validate() error {
	if e.Turn < 1 {
		return fieldErr("payload.turn", "must be at least 1")
	}
	return nil
}

func (e *TurnCompleted) validate() error {
	if e.Turn < 1 {
		return fieldErr("payload.turn", "must be at least 1")
	}
	if err := mustNotEmpty("payload.stop_reason", e.StopReason); err != nil {
		return err
	}
	for i, b := range e.Content {
		p := "payload.content[" + itoa(i) + "]"
		switch b.Type {
		case BlockText:
			if b.ToolUseID != "" || b.Name != "" || b.Input != nil {
				return fieldErr(p, "a text block carries only text")
			}
		case BlockToolUse:
			if b.ToolUseID == "" || b.Name == "" || len(b.Input) == 0 || b.Input[0] != '{' {
				return fieldErr(p, "a tool_use block needs tool_use_id, name and an object input")
			}
		default:
			return fieldErr(p+".type", "must be one of [text tool_use]")
		}
	}
	return nil
}

func (e *ModelUsage) validate() error {
	if err := mustNotEmpty("payload.model_id", e.ModelID); err != nil {
		return err
	}
	u := e.Usage
	if u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadInputTokens < 0 || u.CacheWriteInputTokens < 0 {
		return fieldErr("payload.usage", "token counts must not be negative")
	}
	if e.ReservedUSD != "" {
		if err := checkDecimal("payload.reserved_usd", e.ReservedUSD); err != nil {
			return err
		}
	}
	return checkDecimal("payload.cost_usd", e.CostUSD)
}

func (e *ToolRequested) validate() error {
	if err := mustNotEmpty("payload.tool_use_id", e.ToolUseID); err != nil {
		return err
	}
	if err := mustNotEmpty("payload.tool_name", e.ToolName); err != nil {
		return err
	}
	if err := checkHash("payload.input_sha256", e.InputSHA256); err != nil {
		return err
	}
	if err := oneOf("payload.action", e.Action, "allow", "require_approval", "deny"); err != nil {
		return err
	}
	if e.ToolClass != "" {
		if err := oneOf("payload.tool_class", e.ToolClass, ToolClassRead, ToolClassEffect); err != nil {
			return err
		}
	}
	if err := mustNotEmpty("payload.risk_tier", e.RiskTier); err != nil {
		return err
	}
	if err := checkFiredRules("payload.fired_rules", e.FiredRules); err != nil {
		return err
	}
	if err := checkProvenance("payload.provenance", e.Provenance); err != nil {
		return err
	}
	for i, id := range e.LimitsReached {
		p := fmt.Sprintf("payload.limits_reached[%d]", i)
		if err := mustNotEmpty(p, id); err != nil {
			return err
		}
		// A reached limit is a rule of the decision recorded.
		if !slices.ContainsFunc(e.FiredRules, func(r FiredRule) bool { return r.ID == id }) {
			return fieldErr(p, "must name a rule in fired_rules")
		}
	}
	if err := checkMatterRead("payload", e.MatterSteps, e.MatterUnread); err != nil {
		return err
	}
	return checkMetadata("payload.policy_metadata", e.PolicyMetadata, e.PolicyMetadataSHA256)
}

// checkMatterRead validates a decision's record of the matter's other runs
// (path.matter_steps, path.matter_unread; prefix "edited_" on
// approval.decided).
func checkMatterRead(path string, steps []MatterStep, unread bool) error {
	return checkMatterReadAs(path, "", steps, unread)
}

func checkMatterReadAs(path, prefix string, steps []MatterStep, unread bool) error {
	if err := checkMatterSteps(path+"."+prefix+"matter_steps", steps); err != nil {
		return err
	}
	if unread && len(steps) > 0 {
		return fieldErr(path+"."+prefix+"matter_unread", "a decision that could not read the matter's steps names none")
	}
	return nil
}

// checkMatterSteps validates the recorded steps of a matter's other runs.
func checkMatterSteps(path string, steps []MatterStep) error {
	for i, st := range steps {
		p := fmt.Sprintf("%s[%d]", path, i)
		if err := mustNotEmpty(p+".run_id", st.RunID); err != nil {
			return err
		}
		if st.Seq < 1 {
			return fieldErr(p+".seq", "must be at least 1")
		}
		if err := checkHash(p+".hash", st.Hash); err != nil {
			return err
		}
		if err := mustNotEmpty(p+".tool", st.Tool); err != nil {
			return err
		}
		if err := oneOf(p+".status", st.Status, ToolSuccess, ToolError, ToolDenied, ToolDeclined); err != nil {
			return err
		}
	}
	return nil
}

// checkFiredRules validates recorded rule firings.
func checkFiredRules(path string, rules []FiredRule) error {
	for i, r := range rules {
		p := fmt.Sprintf("%s[%d]", path, i)
		if err := mustNotEmpty(p+".id", r.ID); err != nil {
			return err
		}
		if err := oneOf(p+".effect", r.Effect, "raise:low", "raise:medium", "raise:high", "deny", "record"); err != nil {
			return err
		}
		if err := mustNotEmpty(p+".reason", r.Reason); err != nil {
			return err
		}
		if r.Pointer != "" {
			if _, err := ParsePointer(r.Pointer); err != nil {
				return fieldErr(p+".pointer", "must be a JSON pointer into the input")
			}
		}
	}
	return nil
}

func (e *ToolCompleted) validate() error {
	if err := mustNotEmpty("payload.tool_use_id", e.ToolUseID); err != nil {
		return err
	}
	if err := mustNotEmpty("payload.tool_name", e.ToolName); err != nil {
		return err
	}
	if err := checkHash("payload.input_sha256", e.InputSHA256); err != nil {
		return err
	}
	if err := oneOf("payload.status", e.Status, ToolSuccess, ToolError, ToolDenied, ToolDeclined, ToolUnknown); err != nil {
		return err
	}
	if e.ExecutedInputSHA256 != "" {
		if err := checkHash("payload.executed_input_sha256", e.ExecutedInputSHA256); err != nil {
			return err
		}
		if e.ExecutedInputSHA256 == e.InputSHA256 {
			return fieldErr("payload.executed_input_sha256", "present only when another input ran")
		}
	}
	switch {
	case e.ResultSHA256 == "" && e.ResultBytes != 0:
		return fieldErr("payload.result_bytes", "present only with result_sha256")
	case e.ResultSHA256 != "":
		if err := checkHash("payload.result_sha256", e.ResultSHA256); err != nil {
			return err
		}
		if e.ResultBytes <= 0 || e.Status != ToolSuccess {
			return fieldErr("payload.result_bytes", "a truncated result is a success's, of a positive size")
		}
	}
	if e.ErrorKind != "" {
		if e.Status != ToolError {
			return fieldErr("payload.error_kind", "present only with status error")
		}
		if err := oneOf("payload.error_kind", e.ErrorKind, ToolErrUnreachable, ToolErrToolFailed, ToolErrInvalidInput); err != nil {
			return err
		}
	}
	if e.Status == ToolUnknown {
		return CheckUUID("payload.effect_ref", e.EffectRef)
	}
	return nil
}

func (e *EffectReconciled) validate() error {
	if err := CheckUUID("payload.effect_ref", e.EffectRef); err != nil {
		return err
	}
	if err := mustNotEmpty("payload.tool_name", e.ToolName); err != nil {
		return err
	}
	if err := checkHash("payload.input_sha256", e.InputSHA256); err != nil {
		return err
	}
	if err := oneOf("payload.outcome", e.Outcome, "executed", "not_executed"); err != nil {
		return err
	}
	if e.Outcome == "not_executed" && e.ExternalRef != "" {
		return fieldErr("payload.external_ref", "an effect that was not executed has no external reference")
	}
	if e.Separation != "" {
		if err := oneOf("payload.separation", e.Separation, SeparationEnforced, SeparationWaived); err != nil {
			return err
		}
	}
	if err := mustNotEmpty("payload.reconciled_by", e.ReconciledBy); err != nil {
		return err
	}
	// As for a decision: under separation of duties the user who started
	// the run does not record what became of its effect. Refused when the
	// line is made and whenever it is read (a store among its readers).
	if e.Separation == SeparationEnforced && e.RequestedBy == e.ReconciledBy {
		return fieldErr("payload.reconciled_by", "separation of duties: the requester cannot reconcile")
	}
	return nil
}

func (e *ContentDestroyed) validate() error {
	const p = "payload."
	if err := CheckUUID(p+"matter_id", e.MatterID); err != nil {
		return err
	}
	switch e.Reason {
	case DestroyedRetention:
		if e.RetentionDays < 1 || e.RetentionDays > MaxRetentionDays {
			return fieldErr(p+"retention_days", "a retention is 1 to %d days", MaxRetentionDays)
		}
		if err := oneOf(p+"retention_source", e.RetentionSource, RetentionOfMatter, RetentionOfFirm); err != nil {
			return err
		}
		if e.RequestedBy != "" || e.ConfirmedBy != "" {
			return fieldErr(p+"requested_by", "a destruction under retention names nobody who asked for it")
		}
	case DestroyedInstruction:
		if err := CheckUserID(p+"requested_by", e.RequestedBy); err != nil {
			return err
		}
		if err := CheckUserID(p+"confirmed_by", e.ConfirmedBy); err != nil {
			return err
		}
		if e.ConfirmedBy == e.RequestedBy {
			return fieldErr(p+"confirmed_by", "a destruction on instruction is confirmed by another user than the one who asked")
		}
		if e.RetentionDays != 0 || e.RetentionSource != "" {
			return fieldErr(p+"retention_days", "a destruction on instruction names no retention")
		}
	default:
		return oneOf(p+"reason", e.Reason, DestroyedRetention, DestroyedInstruction)
	}
	return checkTime(p+"backups_until", e.BackupsUntil)
}

func (e *RunBlocked) validate() error {
	a := e.Approval
	if err := CheckUUID("payload.approval.approval_request_id", a.ApprovalRequestID); err != nil {
		return err
	}
	if err := mustNotEmpty("payload.approval.tool_name", a.ToolName); err != nil {
		return err
	}
	if err := checkHash("payload.approval.tool_input_hash", a.ToolInputHash); err != nil {
		return err
	}
	if a.Attempt == 1 || a.Attempt < 0 || a.Attempt > 9999 {
		return fieldErr("payload.approval.attempt", "a retry's attempt is 2 to 9999; the first attempt omits it")
	}
	if err := checkFiredRules("payload.approval.fired_rules", a.FiredRules); err != nil {
		return err
	}
	if (a.ToolServer == "") != (a.ToolSchemaSHA256 == "") {
		return fieldErr("payload.approval.tool_server", "a tool's server and its schema pin come together")
	}
	if a.ToolSchemaSHA256 != "" {
		if err := checkHash("payload.approval.tool_schema_sha256", a.ToolSchemaSHA256); err != nil {
			return err
		}
		if len(a.ToolServer) > 64 || Printable(a.ToolServer) != a.ToolServer {
			return fieldErr("payload.approval.tool_server", "at most 64 printable characters")
		}
	}
	return checkTime("payload.approval.expires_at", a.ExpiresAt)
}

func (e *ApprovalDecided) validate() error {
	if err := CheckUUID("payload.approval_request_id", e.ApprovalRequestID); err != nil {
		return err
	}
	if err := oneOf("payload.decision", string(e.Decision), string(warrant.DecisionApproved), string(warrant.DecisionDenied)); err != nil {
		return err
	}
	if err := mustNotEmpty("payload.decided_by", e.DecidedBy); err != nil {
		return err
	}
	if err := checkDisplayName("payload.decided_by_name", e.DecidedByName); err != nil {
		return err
	}
	if e.Separation != "" {
		if err := oneOf("payload.separation", e.Separation, SeparationEnforced, SeparationWaived); err != nil {
			return err
		}
	}
	if e.DecidedAs != "" {
		if err := oneOf("payload.decided_as", e.DecidedAs, RoleCounsel); err != nil {
			return err
		}
	}
	if e.Separation == SeparationEnforced && e.RequestedBy == e.DecidedBy {
		return fieldErr("payload.decided_by", "separation of duties: the requester cannot decide")
	}
	if len(e.EditedInput) > 0 || e.EditedInputSHA256 != "" {
		if e.Decision != warrant.DecisionApproved {
			return fieldErr("payload.edited_input", "only an approval edits the call")
		}
		if err := checkHash("payload.edited_input_sha256", e.EditedInputSHA256); err != nil {
			return err
		}
		if e.EditedInputSHA256 == e.ToolInputHash {
			return fieldErr("payload.edited_input", "an edit must change the call")
		}
		if err := mustNotEmpty("payload.edited_risk_tier", e.EditedRiskTier); err != nil {
			return err
		}
	} else if e.EditedRiskTier != "" || len(e.EditedFiredRules) > 0 {
		return fieldErr("payload.edited_risk_tier", "only an edit has a decision of its own")
	} else if e.EditedPolicyVersion != "" || len(e.EditedPolicyMetadata) > 0 || e.EditedPolicyMetadataSHA256 != "" {
		return fieldErr("payload.edited_policy_metadata", "only an edit has a decision of its own")
	} else if len(e.EditedMatterSteps) > 0 || e.EditedMatterUnread {
		return fieldErr("payload.edited_matter_steps", "only an edit has a decision of its own")
	}
	if err := checkMatterReadAs("payload", "edited_", e.EditedMatterSteps, e.EditedMatterUnread); err != nil {
		return err
	}
	if err := checkFiredRules("payload.edited_fired_rules", e.EditedFiredRules); err != nil {
		return err
	}
	if err := checkMetadata("payload.edited_policy_metadata", e.EditedPolicyMetadata, e.EditedPolicyMetadataSHA256); err != nil {
		return err
	}
	return checkHash("payload.tool_input_hash", e.ToolInputHash)
}

func (e *RunReleased) validate() error {
	if err := CheckUUID("payload.approval_request_id", e.ApprovalRequestID); err != nil {
		return err
	}
	if err := oneOf("payload.decision", string(e.Decision), string(warrant.DecisionApproved), string(warrant.DecisionDenied)); err != nil {
		return err
	}
	if e.Decision == warrant.DecisionApproved {
		if err := CheckUUID("payload.effect_ref", e.EffectRef); err != nil {
			return err
		}
		if e.PolicyCheck != nil && e.PolicyCheck.Action == "deny" {
			return fieldErr("payload.policy_check.action", "a call the policy denies is not released")
		}
		return e.PolicyCheck.validate("payload.policy_check")
	}
	if e.EffectRef != "" {
		return fieldErr("payload.effect_ref", "a declined warrant claims no effect")
	}
	if e.PolicyCheck != nil {
		return fieldErr("payload.policy_check", "a declined warrant's call is not decided again")
	}
	return nil
}

func (e *RunCompleted) validate() error { return mustNotEmpty("payload.stop_reason", e.StopReason) }

func (e *RunFailed) validate() error {
	if err := mustNotEmpty("payload.failure_kind", e.FailureKind); err != nil {
		return err
	}
	if err := mustNotEmpty("payload.failure_stage", e.FailureStage); err != nil {
		return err
	}
	if e.PolicyCheck != nil && e.PolicyCheck.Action != "deny" {
		return fieldErr("payload.policy_check.action", "a refusal records the policy denying the call")
	}
	if (e.ToolChange != nil) != (e.FailureKind == string(failure.KindToolChanged)) {
		return fieldErr("payload.tool_change", "a tool_changed failure, and only one, names the changed tool")
	}
	if err := checkToolChange("payload.tool_change", e.ToolChange); err != nil {
		return err
	}
	return e.PolicyCheck.validate("payload.policy_check")
}

// checkToolChange checks a changed tool's record: catalog names, the pin,
// the current hash (absent: the system no longer lists the tool), which is
// another than the pin, and the warrant whose call was refused, if any.
func checkToolChange(path string, c *failure.ToolChange) error {
	if c == nil {
		return nil
	}
	for _, f := range []struct{ path, v string }{{path + ".tool_name", c.Tool}, {path + ".tool_server", c.Server}} {
		if f.v == "" || len(f.v) > 64 || Printable(f.v) != f.v {
			return fieldErr(f.path, "1 to 64 printable characters")
		}
	}
	if err := checkHash(path+".pinned_schema_sha256", c.PinnedSchemaSHA256); err != nil {
		return err
	}
	if c.CurrentSchemaSHA256 != "" {
		if err := checkHash(path+".current_schema_sha256", c.CurrentSchemaSHA256); err != nil {
			return err
		}
		if c.CurrentSchemaSHA256 == c.PinnedSchemaSHA256 {
			return fieldErr(path+".current_schema_sha256", "a changed tool's schema hash differs from its pin")
		}
	}
	if c.ApprovalRequestID != "" {
		return CheckUUID(path+".approval_request_id", c.ApprovalRequestID)
	}
	return nil
}

// checkDecimal accepts a non-negative decimal string like "0.004215".
func checkDecimal(path, s string) error {
	if s == "" {
		return fieldErr(path, "must be a decimal string")
	}
	intPart, frac, hasDot := strings.Cut(s, ".")
	if intPart == "" || (hasDot && frac == "") || (len(intPart) > 1 && intPart[0] == '0') {
		return fieldErr(path, "must be a decimal string like \"0.004215\"")
	}
	for _, part := range []string{intPart, frac} {
		for _, c := range part {
			if c < '0' || c > '9' {
				return fieldErr(path, "must be a decimal string like \"0.004215\"")
			}
		}
	}
	return nil
}

func unknownEvent(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUnknownEvent}, args...)...)
}

// digester is an event that states a digest of its own payload.
type digester interface{ checkDigests() error }

// checkDigests re-derives input_sha256: a rewritten input with its old digest
// is not a line of any ledger.
func (e *ToolRequested) checkDigests() error {
	h, err := InputHash(e.Input)
	if err != nil {
		return prefixed("payload.input", err)
	}
	if h != e.InputSHA256 {
		return fieldErr("payload.input_sha256", "does not match the input")
	}
	return nil
}

// checkDigests re-derives the edited call's hash from the edited input.
func (e *ApprovalDecided) checkDigests() error {
	if len(e.EditedInput) == 0 && e.EditedInputSHA256 == "" {
		return nil
	}
	h, err := InputHash(e.EditedInput)
	if err != nil {
		return prefixed("payload.edited_input", err)
	}
	if h != e.EditedInputSHA256 {
		return fieldErr("payload.edited_input_sha256", "does not match the edited input")
	}
	return nil
}

// checkDigests re-derives the warrant's hash from the input counsel is shown.
func (e *RunBlocked) checkDigests() error {
	h, err := InputHash(e.Approval.ToolInput)
	if err != nil {
		return prefixed("payload.approval.tool_input", err)
	}
	if h != e.Approval.ToolInputHash {
		return fieldErr("payload.approval.tool_input_hash", "does not match the tool input")
	}
	return nil
}

// prefixed re-roots a FieldError found inside a nested document at path.
func prefixed(path string, err error) error {
	var fe *FieldError
	if !errors.As(err, &fe) {
		return err
	}
	if fe.Path == "" {
		return fieldErr(path, "%s", fe.Reason)
	}
	if strings.HasPrefix(fe.Path, "[") {
		return fieldErr(path+fe.Path, "%s", fe.Reason)
	}
	return fieldErr(joinPath(path, fe.Path), "%s", fe.Reason)
}
