package contracts

import (
	"strconv"

	"github.com/google/uuid"
)

// Modes of an AgentInvoke (closed).
const (
	ModeInvoke = "invoke"
	ModeResume = "resume"
)

// Roles of a HistoryMessage (closed).
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// AgentInvoke is the command the broker hands the brain: which agent, for whom,
// with what conversation, and (on resume only) which warrant.
type AgentInvoke struct {
	AgentKey       string           `json:"agent_key"`
	Mode           string           `json:"mode"`
	Meta           InvokeMeta       `json:"meta"`
	History        []HistoryMessage `json:"history"`
	CounselMessage string           `json:"counsel_message,omitempty"`
	Approval       *ApprovalGrant   `json:"approval,omitempty"`
}

// InvokeMeta identifies the run. IDs are canonical lowercase UUID strings.
// FirmID and UserID come from JWT claims, never from a request body.
type InvokeMeta struct {
	RunID         string `json:"run_id"`
	FirmID        string `json:"firm_id"`
	UserID        string `json:"user_id"`
	CorrelationID string `json:"correlation_id,omitempty"`
	FormID        string `json:"form_id,omitempty"`
	MatterID      string `json:"matter_id,omitempty"`
	ChatSessionID string `json:"chat_session_id,omitempty"`
}

// ApprovalGrant names the warrant a resume runs under.
type ApprovalGrant struct {
	ApprovalRequestID string `json:"approval_request_id"`
	ToolName          string `json:"tool_name"`
	ToolInputHash     string `json:"tool_input_hash"`
}

// HistoryMessage is one prior message of the conversation.
type HistoryMessage struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// DecodeAgentInvoke strictly decodes and validates an AgentInvoke.
func DecodeAgentInvoke(data []byte) (AgentInvoke, error) {
	var a AgentInvoke
	if err := DecodeStrict(data, &a); err != nil {
		return AgentInvoke{}, err
	}
	return a, a.Validate()
}

// Validate checks the closed enumerations, the UUIDs and the rule that an
// approval is present if and only if the mode is resume.
func (a AgentInvoke) Validate() error {
	if err := mustNotEmpty("agent_key", a.AgentKey); err != nil {
		return err
	}
	if err := oneOf("mode", a.Mode, ModeInvoke, ModeResume); err != nil {
		return err
	}
	if err := a.Meta.Validate("meta"); err != nil {
		return err
	}
	for i, h := range a.History {
		if err := h.Validate("history[" + itoa(i) + "]"); err != nil {
			return err
		}
	}
	switch {
	case a.Mode == ModeResume && a.Approval == nil:
		return fieldErr("approval", "required when mode is resume")
	case a.Mode != ModeResume && a.Approval != nil:
		return fieldErr("approval.approval_request_id", "only a resume may carry an approval")
	case a.Approval != nil:
		return a.Approval.Validate("approval")
	}
	return nil
}

// Validate checks every ID of the meta block.
func (m InvokeMeta) Validate(path string) error {
	for _, f := range []struct {
		name, v  string
		required bool
	}{
		{"run_id", m.RunID, true}, {"firm_id", m.FirmID, true}, {"user_id", m.UserID, true},
		{"correlation_id", m.CorrelationID, false}, {"form_id", m.FormID, false},
		{"matter_id", m.MatterID, false}, {"chat_session_id", m.ChatSessionID, false},
	} {
		if f.v == "" && !f.required {
			continue
		}
		if err := CheckUUID(joinPath(path, f.name), f.v); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the grant's id, tool name and hash.
func (g ApprovalGrant) Validate(path string) error {
	if err := CheckUUID(joinPath(path, "approval_request_id"), g.ApprovalRequestID); err != nil {
		return err
	}
	if err := mustNotEmpty(joinPath(path, "tool_name"), g.ToolName); err != nil {
		return err
	}
	return checkHash(joinPath(path, "tool_input_hash"), g.ToolInputHash)
}

// Validate checks the role enumeration.
func (h HistoryMessage) Validate(path string) error {
	if err := oneOf(joinPath(path, "role"), h.Role, RoleUser, RoleAssistant); err != nil {
		return err
	}
	return mustNotEmpty(joinPath(path, "text"), h.Text)
}

// CheckUUID accepts only the canonical lowercase 8-4-4-4-12 form, so one id has
// exactly one spelling in every key it appears in.
func CheckUUID(path, s string) error {
	if s == "" {
		return fieldErr(path, "required UUID is missing")
	}
	u, err := uuid.Parse(s)
	if err != nil || u.String() != s {
		return fieldErr(path, "must be a canonical lowercase UUID")
	}
	return nil
}

func itoa(i int) string { return strconv.Itoa(i) }
