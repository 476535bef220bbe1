package failure

import (
	"errors"
	"math"
	"time"

	"github.com/google/uuid"
)

// SchemaVersion is the envelope's schema_version; bump it only for changes
// a consumer cannot ignore.
const SchemaVersion = "1"

// createdAtLayout is RFC 3339 in UTC with exactly three fractional digits,
// so envelopes sort lexically and match CloudWatch's millisecond precision.
const createdAtLayout = "2006-01-02T15:04:05.000Z"

// Identity ties a failure to the run it belongs to. These are opaque ids and
// are logged as-is, so never put names or matter descriptions in them.
type Identity struct {
	RunID, FirmID, MatterID, CorrelationID string
}

// Envelope is the failure record shared by logs, metrics and API responses.
// Every string in it is either an id, a value from a closed list, a fixed
// text or, in ToolChange, a catalog name or a schema's hash; none is derived
// from an error message.
type Envelope struct {
	SchemaVersion          string `json:"schema_version"`
	FailureID              string `json:"failure_id"`
	RunID                  string `json:"run_id"`
	FirmID                 string `json:"firm_id"`
	MatterID               string `json:"matter_id"`
	CorrelationID          string `json:"correlation_id"`
	FailureStage           Stage  `json:"failure_stage"`
	FailureKind            Kind   `json:"failure_kind"`
	FailedComponent        string `json:"failed_component"`
	Retryable              bool   `json:"retryable"`
	RetryAfterSeconds      int    `json:"retry_after_seconds"`
	SanitizedSummary       string `json:"sanitized_summary"`
	RecoveryRecommendation string `json:"recovery_recommendation"`
	UserVisibleMessage     string `json:"user_visible_message"`
	InternalDebugRef       string `json:"internal_debug_ref"`
	CreatedAt              string `json:"created_at"`
	// ToolChange is set on a tool_changed failure (by the code that knows
	// the tool: Build leaves it nil).
	ToolChange *ToolChange `json:"tool_change,omitempty"`
}

// ToolChange is what a tool_changed failure says of the tool: its name and
// its system's name in the catalog, the catalog's pin of its input schema
// and the schema's hash as the system lists the tool now (empty: it no
// longer lists it, lists it twice, or with a schema that is not JSON), and
// the warrant whose signed call was refused, if counsel had signed one.
// None of it is privileged: the names are the catalog's, the hashes are of
// schemas, never of anything a run sent.
type ToolChange struct {
	Tool                string `json:"tool_name"`
	Server              string `json:"tool_server"`
	PinnedSchemaSHA256  string `json:"pinned_schema_sha256"`
	CurrentSchemaSHA256 string `json:"current_schema_sha256,omitempty"`
	ApprovalRequestID   string `json:"approval_request_id,omitempty"`
}

// Builder makes envelopes. The zero value uses the wall clock and random
// UUIDs; tests set Now and NewID for reproducible output.
type Builder struct {
	Now   func() time.Time
	NewID func() string
}

// Build makes an envelope with the default Builder.
func Build(err error, stage Stage, component string, id Identity) Envelope {
	return Builder{}.Build(err, stage, component, id)
}

// Build classifies err and fills the envelope from fixed tables. component
// names the code that failed (e.g. "ledger.Writer") and must be a code
// identifier, never data. An invalid stage is recorded as StageUnknown.
func (b Builder) Build(err error, stage Stage, component string, id Identity) Envelope {
	now, newID := b.Now, b.NewID
	if now == nil {
		now = time.Now
	}
	if newID == nil {
		newID = uuid.NewString
	}
	if !stage.Valid() {
		stage = StageUnknown
	}
	v := classify(err)
	s := specOf(v.kind)

	retryAfter := 0
	if v.retryable {
		retryAfter = max(1, int(math.Ceil(v.after.Seconds())))
	}
	recommend := s.recommend
	if r, ok := recommendOverrides[v.kind][stage]; ok {
		recommend = r
	}
	userMsg := s.userMsg
	// Msg is safe by construction, but only trust the *Error that decided the
	// kind; a message written for another kind would contradict the problem.
	var fe *Error
	if errors.As(err, &fe) && fe.Msg != "" && fe.Kind == v.kind && v.kind != KindInternal {
		userMsg = fe.Msg
	}

	return Envelope{
		SchemaVersion:          SchemaVersion,
		FailureID:              newID(),
		RunID:                  id.RunID,
		FirmID:                 id.FirmID,
		MatterID:               id.MatterID,
		CorrelationID:          id.CorrelationID,
		FailureStage:           stage,
		FailureKind:            v.kind,
		FailedComponent:        component,
		Retryable:              v.retryable,
		RetryAfterSeconds:      retryAfter,
		SanitizedSummary:       s.summary + " during " + stageText[stage] + ".",
		RecoveryRecommendation: recommend,
		UserVisibleMessage:     userMsg,
		InternalDebugRef:       DebugRef(err),
		CreatedAt:              now().UTC().Format(createdAtLayout),
	}
}
