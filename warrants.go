package warrant

import (
	"encoding/json"
	"time"
)

// DefaultWarrantTTL is how long a warrant request stays signable when the
// brain is not configured otherwise.
const DefaultWarrantTTL = 24 * time.Hour

// WarrantStatus is the state of a warrant.
type WarrantStatus string

// Warrant statuses (closed). pending -> approved|denied -> consumed; a
// warrant past its expires_at is treated as expired whatever its status
// says, except consumed, which is final.
const (
	WarrantPending  WarrantStatus = "pending"
	WarrantApproved WarrantStatus = "approved"
	WarrantDenied   WarrantStatus = "denied"
	WarrantConsumed WarrantStatus = "consumed"
	WarrantExpired  WarrantStatus = "expired"
	// WarrantRefused is an approved warrant the running risk policy denied
	// when the run was resumed (policy_changed): never used.
	WarrantRefused WarrantStatus = "refused"
)

// Decision is counsel's verdict on a warrant, as the ledger, the store and
// the reducer record it. The HTTP API's words ("approve", "deny") are mapped
// to it at the edge and nowhere else.
type Decision string

// Decisions (closed).
const (
	DecisionApproved Decision = "approved"
	DecisionDenied   Decision = "denied"
)

// Valid reports whether d is one of the closed decisions.
func (d Decision) Valid() bool { return d == DecisionApproved || d == DecisionDenied }

// Warrant is a request for counsel's signature on one exact tool call, and
// its outcome.
type Warrant struct {
	FirmID, RunID, ApprovalID, MatterID, ToolName, ToolUseID, ToolInputHash string
	// Attempt is the attempt of the effect this warrant covers: 1, or n+1
	// for the retry of a warranted attempt n that failed.
	Attempt                                     int
	Input                                       json.RawMessage
	RiskTier, Reason, HumanSummary, RequestedBy string
	RequestedAt, ExpiresAt                      time.Time
	Status                                      WarrantStatus
	Decision                                    Decision // once decided, kept after consume
	DecidedBy                                   string
	DecidedAt                                   time.Time
	// RequestedByName and DecidedByName are the requester's and the
	// decider's display names (the tokens' name or email claims): shown,
	// never used to authorize.
	RequestedByName, DecidedByName string
	Note                           string
	// EditedInput and EditedHash are the call as counsel edited it before
	// approving: the warrant then covers that call, and only it.
	EditedInput json.RawMessage
	EditedHash  string
	// FiredRules are the risk policy's rules that fired on the requested
	// call, and PolicyVersion the policy that decided it.
	FiredRules    []FiredRule
	PolicyVersion string
	// ToolServer names the system that serves the tool and ToolSchemaSHA256
	// the catalog's pin of its input schema (both empty for Warrant's own
	// builtin tools): what counsel is shown of a tool the firm connected.
	ToolServer, ToolSchemaSHA256 string
}

// FiredRule is one risk-policy rule that fired on a call: its id in the
// policy file, its effect (raise:<tier>, deny or record) and its reason. The
// ledger (contracts.FiredRule), the warrant item and the API's views carry
// it in this one shape.
type FiredRule struct {
	ID     string `json:"id"`
	Effect string `json:"effect"`
	Reason string `json:"reason"`
	// Pointer is the input's value the rule is about, by JSON pointer
	// ("/bcc/0"): a provenance rule's destination, which the desk shows
	// next to the reason (the reason never quotes the value). Absent for
	// the policy's own rules.
	Pointer string `json:"pointer,omitempty"`
}

// Executes is the call the warrant lets run: counsel's edit, or the call as
// requested.
func (w Warrant) Executes() (input json.RawMessage, hash string) {
	if w.EditedHash != "" {
		return w.EditedInput, w.EditedHash
	}
	return w.Input, w.ToolInputHash
}

// CounselDecision is counsel's answer to one warrant request. PresentedHash
// is the tool_input_hash counsel was shown: the decision binds to it.
type CounselDecision struct {
	Decision                       Decision
	PresentedHash, DecidedBy, Note string
	// DecidedAs is the role the decider held when deciding ("counsel"), as
	// the API checked it from the token; the ledger records it for audits.
	DecidedAs string
	// DecidedByName is the decider's display name (recorded, shown).
	DecidedByName string
	// EditedInput and EditedHash are counsel's edit of the call (canonical
	// JSON and its hash), approving that call instead (approvals only).
	EditedInput json.RawMessage
	EditedHash  string
}
