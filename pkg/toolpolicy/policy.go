package toolpolicy

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// Tier is how much harm a tool call can do if the model gets it wrong.
type Tier string

const (
	TierLow        Tier = "low"
	TierMedium     Tier = "medium"
	TierHigh       Tier = "high"
	TierProhibited Tier = "prohibited"
)

// Action is what the caller must do with a tool call.
type Action string

const (
	ActionAllow           Action = "allow"
	ActionRequireApproval Action = "require_approval"
	ActionDeny            Action = "deny"
)

// actionFor is the only place tiers become actions, so a new tier cannot slip
// through as allowed: anything unknown is denied.
func actionFor(t Tier) (Action, bool) {
	switch t {
	case TierLow, TierMedium:
		// Medium runs without a warrant; the caller's ledger entry is its audit.
		return ActionAllow, true
	case TierHigh:
		return ActionRequireApproval, true
	case TierProhibited:
		return ActionDeny, true
	}
	return ActionDeny, false
}

// Decision is the policy's answer for one tool call. Its fields are what the
// ledger records next to the call, so a reviewer can see which rule applied.
type Decision struct {
	ToolName string `json:"tool_name"`
	Tier     Tier   `json:"tier"`
	Action   Action `json:"action"`
	Reason   string `json:"reason"`
	// MatchedPolicy is "tools.<name>" for a listed tool, or "default".
	MatchedPolicy string `json:"matched_policy"`
	PolicyVersion string `json:"policy_version"`
	// Replayable means the effect is a read, so re-running it after a crash
	// cannot duplicate anything outside the firm.
	Replayable bool `json:"replayable"`
}

var (
	// ErrInvalidToolName is returned for a tool name Bedrock itself would refuse.
	ErrInvalidToolName = errors.New("toolpolicy: invalid tool name")
	// ErrInvalidPolicy is matched by every Load error; such errors also match
	// contracts.ErrInvalid and unwrap to a *contracts.FieldError.
	ErrInvalidPolicy = errors.New("toolpolicy: invalid policy")
)

// toolNamePattern is Bedrock Converse's rule for toolSpec.name. Enforcing it
// both in the file and on lookups means no name can match a rule by accident
// of encoding (spaces, dots, Unicode look-alikes).
var toolNamePattern = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]{0,63}$`)

type rule struct {
	tier       Tier
	reason     string
	replayable bool
}

// Policy is a validated, immutable risk policy; it is safe for concurrent use.
type Policy struct {
	version string
	def     rule
	tools   map[string]rule
}

// The file format. Fields without omitempty are required by DecodeStrict.
type policyFile struct {
	Version string              `json:"version"`
	Default defaultRule         `json:"default"`
	Tools   map[string]toolRule `json:"tools"`
}

// defaultRule has no replayable field: the default can never be low, so a
// replayable default is meaningless and is rejected as an unknown field.
type defaultRule struct {
	Tier   Tier   `json:"tier"`
	Reason string `json:"reason"`
}

type toolRule struct {
	Tier       Tier   `json:"tier"`
	Reason     string `json:"reason"`
	Replayable bool   `json:"replayable,omitempty"`
}

func invalid(path, format string, args ...any) error {
	return fmt.Errorf("%w: %w", ErrInvalidPolicy, &contracts.FieldError{Path: path, Reason: fmt.Sprintf(format, args...)})
}

// Load parses and validates a policy document.
func Load(data []byte) (*Policy, error) {
	var f policyFile
	if err := contracts.DecodeStrict(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPolicy, err)
	}
	if strings.TrimSpace(f.Version) == "" {
		return nil, invalid("version", "must not be empty")
	}
	if _, ok := actionFor(f.Default.Tier); !ok {
		return nil, invalid("default.tier", "unknown tier %q", f.Default.Tier)
	}
	if a, _ := actionFor(f.Default.Tier); a == ActionAllow {
		// The default is what an unknown tool gets; letting it allow would
		// turn every typo or newly added tool into an unreviewed action.
		return nil, invalid("default.tier", "the default tier must not allow (got %q)", f.Default.Tier)
	}
	if strings.TrimSpace(f.Default.Reason) == "" {
		return nil, invalid("default.reason", "must not be empty")
	}
	if f.Tools == nil {
		// DecodeStrict lets null through for maps; an absent rule set is
		// more likely a broken file than a deliberate deny-everything policy.
		return nil, invalid("tools", "must be an object")
	}
	p := &Policy{
		version: f.Version,
		def:     rule{tier: f.Default.Tier, reason: f.Default.Reason},
		tools:   make(map[string]rule, len(f.Tools)),
	}
	folded := make(map[string]string, len(f.Tools))
	for name, r := range f.Tools {
		path := "tools." + name
		if !toolNamePattern.MatchString(name) {
			return nil, invalid(path, "tool name must match %s", toolNamePattern)
		}
		// Two rules differing only in case would leave a reviewer guessing
		// which one a call matched.
		if other, dup := folded[strings.ToLower(name)]; dup {
			return nil, invalid(path, "tool name differs only in case from %q", other)
		}
		folded[strings.ToLower(name)] = name
		if _, ok := actionFor(r.Tier); !ok {
			return nil, invalid(path+".tier", "unknown tier %q", r.Tier)
		}
		if strings.TrimSpace(r.Reason) == "" {
			return nil, invalid(path+".reason", "must not be empty")
		}
		if r.Replayable && r.Tier != TierLow {
			// Replaying after a crash repeats the effect; only reads are safe.
			return nil, invalid(path+".replayable", "only a low-tier tool may be replayable (tier is %q)", r.Tier)
		}
		p.tools[name] = rule{tier: r.Tier, reason: r.Reason, replayable: r.Replayable}
	}
	return p, nil
}

// LoadFile reads and validates a policy file.
func LoadFile(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("toolpolicy: %w", err)
	}
	p, err := Load(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

//go:embed hitl_risk_policy.json
var embeddedPolicy []byte

var embedded = sync.OnceValues(func() (*Policy, error) { return Load(embeddedPolicy) })

// Embedded returns the policy compiled into the binary, parsed once.
func Embedded() (*Policy, error) { return embedded() }

// Version identifies the policy revision a decision was made under.
func (p *Policy) Version() string { return p.version }

// GetToolRiskDecision returns the decision for one tool call.
//
// metadata is accepted so callers need not change when the policy format gains
// conditions; the current format has none, decisions do not depend on it, and
// nothing from it is copied into the Decision.
func (p *Policy) GetToolRiskDecision(name string, metadata map[string]string) (Decision, error) {
	_ = metadata
	if p == nil {
		return Decision{}, errors.New("toolpolicy: nil policy")
	}
	if !toolNamePattern.MatchString(name) {
		return Decision{}, fmt.Errorf("%w: %q", ErrInvalidToolName, name)
	}
	r, listed := p.tools[name]
	matched := "tools." + name
	if !listed {
		r, matched = p.def, "default"
	}
	action, _ := actionFor(r.tier) // Load rejected every tier actionFor does not know
	return Decision{
		ToolName:      name,
		Tier:          r.tier,
		Action:        action,
		Reason:        r.reason,
		MatchedPolicy: matched,
		PolicyVersion: p.version,
		Replayable:    r.replayable,
	}, nil
}

// GetToolRiskDecision decides against the embedded policy.
func GetToolRiskDecision(name string, metadata map[string]string) (Decision, error) {
	p, err := Embedded()
	if err != nil {
		return Decision{}, err
	}
	return p.GetToolRiskDecision(name, metadata)
}
