package contracts

import (
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// ModeInvoke is the only mode of an AgentInvoke: a resume is driven by the
// run's stored ledger and warrant, never by a second copy of the command
// (docs/DECISIONS.md).
const ModeInvoke = "invoke"

// RoleCounsel is the role that may decide a warrant, as approval.decided
// records it.
const RoleCounsel = "counsel"

// Roles of a HistoryMessage (closed).
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// AgentInvoke is the command the broker hands the brain: which agent, for
// whom, with what conversation.
type AgentInvoke struct {
	AgentKey       string           `json:"agent_key"`
	Mode           string           `json:"mode"`
	Meta           InvokeMeta       `json:"meta"`
	History        []HistoryMessage `json:"history"`
	CounselMessage string           `json:"counsel_message,omitempty"`
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

// HistoryMessage is one prior message of the conversation.
type HistoryMessage struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// Validate checks the closed enumerations and the UUIDs.
func (a AgentInvoke) Validate() error {
	if err := mustNotEmpty("agent_key", a.AgentKey); err != nil {
		return err
	}
	if err := oneOf("mode", a.Mode, ModeInvoke); err != nil {
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
		check := CheckUUID
		if f.name == "user_id" {
			check = CheckUserID
		}
		if err := check(joinPath(path, f.name), f.v); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the role enumeration.
func (h HistoryMessage) Validate(path string) error {
	if err := oneOf(joinPath(path, "role"), h.Role, RoleUser, RoleAssistant); err != nil {
		return err
	}
	return mustNotEmpty(joinPath(path, "text"), h.Text)
}

// MaxUserID bounds a user id (characters).
const MaxUserID = 128

// CheckUserID accepts a user id as the firm's identity provider issues it,
// opaque: Cognito's sub (a UUID), Entra ID's oid (a GUID), Okta's sub
// (00u…), Auth0's (auth0|…). 1 to MaxUserID characters of letters, digits
// and . _ - @ | : + = (no spaces, no controls, nothing that needs
// escaping), compared byte for byte: one user has one spelling.
func CheckUserID(path, s string) error {
	if s == "" {
		return fieldErr(path, "required user id is missing")
	}
	if len(s) > MaxUserID {
		return fieldErr(path, "a user id is at most %d characters", MaxUserID)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-@|:+=", c) >= 0) {
			return fieldErr(path, "a user id is letters, digits and . _ - @ | : + = only")
		}
	}
	return nil
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
