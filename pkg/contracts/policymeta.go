package contracts

import (
	"encoding/json"
)

// PolicyMetadata is what the risk policy weighs beyond a call's input
// (toolpolicy.Metadata is this type). Rules read it by the snake_case names
// of its JSON form. A string field left empty means "not known": a
// comparison with it cannot be evaluated, which fires a raise or deny rule
// (fail-closed). An empty list is a list with nothing in it.
//
// The ledger records it next to every decision (tool.requested, counsel's
// edit in approval.decided, the resume's PolicyCheck) because two of its
// members come from items that change: the firm's settings and the matter
// registry. With it, a decision can be re-derived from the record alone.
type PolicyMetadata struct {
	FirmID   string   `json:"firm_id,omitempty"`
	MatterID string   `json:"matter_id,omitempty"`
	AgentKey string   `json:"agent_key,omitempty"`
	UserID   string   `json:"user_id,omitempty"`
	Roles    []string `json:"roles,omitempty"`
	// FirmDomains are the firm's own e-mail domains, lower case.
	FirmDomains []string `json:"firm_domains,omitempty"`
	// ClientDomains are the e-mail domains of the matter's client, lower case.
	ClientDomains []string `json:"client_domains,omitempty"`
}

// RecordMetadata is the form the ledger records m in: its canonical (RFC
// 8785) JSON and that form's SHA-256, the policy_metadata_sha256 receipts
// carry.
func RecordMetadata(m PolicyMetadata) (json.RawMessage, string, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, "", err
	}
	return CanonicalInput(raw)
}

// ReadMetadata decodes recorded metadata strictly: an unknown member, a
// duplicate key or a wrong type is an error naming the member.
func ReadMetadata(raw json.RawMessage) (PolicyMetadata, error) {
	var m PolicyMetadata
	err := DecodeStrict(raw, &m)
	return m, err
}

// checkMetadata holds recorded metadata to its stated hash. Both are absent
// on lines written before decisions recorded them; one without the other is
// a line no writer makes.
func checkMetadata(path string, raw json.RawMessage, sum string) error {
	if len(raw) == 0 && sum == "" {
		return nil
	}
	if err := checkHash(path+"_sha256", sum); err != nil {
		return err
	}
	if _, err := ReadMetadata(raw); err != nil {
		return prefixed(path, err)
	}
	h, err := InputHash(raw)
	if err != nil {
		return prefixed(path, err)
	}
	if h != sum {
		return fieldErr(path+"_sha256", "does not match the recorded metadata")
	}
	return nil
}

// PolicyCheck is a decision of the risk policy recorded on a line of its
// own kind rather than in tool.requested: the resume deciding a warranted
// call again before it is released (run.released) or refused (run.failed,
// policy_changed). InputSHA256 is the call decided: the warrant's input, or
// counsel's edit of it.
type PolicyCheck struct {
	ToolName             string          `json:"tool_name"`
	InputSHA256          string          `json:"input_sha256"`
	RiskTier             string          `json:"risk_tier"`
	Action               string          `json:"action"`
	Reason               string          `json:"reason"`
	MatchedPolicy        string          `json:"matched_policy"`
	PolicyVersion        string          `json:"policy_version"`
	FiredRules           []FiredRule     `json:"fired_rules,omitempty"`
	PolicyMetadata       json.RawMessage `json:"policy_metadata"`
	PolicyMetadataSHA256 string          `json:"policy_metadata_sha256"`
	// MatterSteps and MatterUnread are what the decision read of the
	// matter's other runs, as tool.requested records them.
	MatterSteps  []MatterStep `json:"matter_steps,omitempty"`
	MatterUnread bool         `json:"matter_unread,omitempty"`
}

func (c *PolicyCheck) validate(path string) error {
	if c == nil {
		return nil
	}
	if err := mustNotEmpty(path+".tool_name", c.ToolName); err != nil {
		return err
	}
	if err := checkHash(path+".input_sha256", c.InputSHA256); err != nil {
		return err
	}
	if err := mustNotEmpty(path+".risk_tier", c.RiskTier); err != nil {
		return err
	}
	if err := oneOf(path+".action", c.Action, "allow", "require_approval", "deny"); err != nil {
		return err
	}
	if err := mustNotEmpty(path+".policy_version", c.PolicyVersion); err != nil {
		return err
	}
	if err := checkFiredRules(path+".fired_rules", c.FiredRules); err != nil {
		return err
	}
	if err := checkMatterRead(path, c.MatterSteps, c.MatterUnread); err != nil {
		return err
	}
	if len(c.PolicyMetadata) == 0 {
		return fieldErr(path+".policy_metadata", "must not be empty")
	}
	return checkMetadata(path+".policy_metadata", c.PolicyMetadata, c.PolicyMetadataSHA256)
}
