package toolpolicy

import (
	"cmp"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/provenance"
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

// Metadata is what the runtime knows of a call beyond its input. Rules read
// it by the snake_case names of its JSON form. A string field left empty
// means "not known": a comparison with it cannot be evaluated, which fires
// a raise or deny rule (fail-closed). An empty list is a list with nothing
// in it. It is the ledger's type, so what the ledger records next to a
// decision is exactly what the policy read.
type Metadata = contracts.PolicyMetadata

// Call is one tool call the model proposed, as the policy judges it.
type Call struct {
	Tool string
	// Input is the canonical (RFC 8785) JSON object the model proposed. Any
	// other JSON object is read the same way; anything that is not a JSON
	// object (nil included) makes every condition on the input impossible
	// to evaluate.
	Input json.RawMessage
	Meta  Metadata
	// Sources are what the run's values may have come from (counsel's
	// message and the results of its earlier calls; the registry's and the
	// firm's domains are taken from Meta). A tool that declares
	// destinations has each traced to them (pkg/provenance); nil traces
	// them to nothing, so every destination is unknown and the call is
	// raised (fail closed). Sources are not safe for concurrent use: one
	// run's calls are decided one at a time.
	Sources *provenance.Sources
	// History is the run's earlier steps, in ledger order, which a rule's
	// prior conditions read. nil: not known, and a prior condition cannot
	// be evaluated (fail closed); empty: the run has none.
	History []Step
	// Matter is the steps of the matter's other runs (their tool.completed
	// lines, as the store's per-matter record holds them), which a prior
	// condition with scope "matter" reads after History. nil: not known
	// (not read, or the read failed), and such a condition that History
	// does not satisfy cannot be evaluated (fail closed); empty: none.
	Matter []Step
	// Signed: the input is one counsel signed (counsel's edit of a held
	// call, or a warranted call re-decided at dispatch). Counsel's
	// signature over the exact bytes is the trusted source of every value
	// in them, so destinations are not traced; every other rule applies.
	Signed bool
}

// Step is one earlier tool call of the run as its tool.completed line
// records it.
type Step struct {
	// RunID is the run of a step of Call.Matter (another run of the
	// matter); empty for a step of the run's own History.
	RunID string
	Seq   int64
	// Hash is the tool.completed line's hash (Call.Matter's steps): a
	// decision records it beside the run and the seq (MatterSteps).
	Hash   string
	Tool   string
	Status string // tool.completed's: success, error, denied, declined, unknown
	// Result is the result the model saw (JSON); nil where it is sealed.
	Result json.RawMessage
}

// FiredRule is a rule that applied to a call.
type FiredRule struct {
	ID     string `json:"id"`
	Effect string `json:"effect"` // "raise:<tier>", "deny" or "record"
	// Reason is the rule's reason; for a rule fired because its conditions
	// could not be evaluated, it says so.
	Reason string `json:"reason"`
	// Pointer is, for a provenance rule, the destination it is about
	// (its JSON pointer in the input); absent otherwise.
	Pointer string `json:"pointer,omitempty"`
}

// Decision is the policy's answer for one tool call. Its fields are what the
// ledger records next to the call, so a reviewer can see which rule applied.
type Decision struct {
	ToolName string `json:"tool_name"`
	Tier     Tier   `json:"tier"`
	Action   Action `json:"action"`
	// Reason is the tool's reason, or, when a rule raised the tier above the
	// tool's floor or denied the call, "rule <id>: <its reason>" of the rule
	// that set the final tier.
	Reason string `json:"reason"`
	// MatchedPolicy is "tools.<name>" for a listed tool, or "default".
	MatchedPolicy string `json:"matched_policy"`
	PolicyVersion string `json:"policy_version"`
	// Replayable means the effect is a read, so re-running it after a crash
	// cannot duplicate anything outside the firm. It holds only for a
	// replayable tool whose final tier is low and on which no rule fired.
	Replayable bool `json:"replayable"`
	// FiredRules are the rules that applied, in the policy's order; the
	// provenance rule (provenance.RuleUntrusted or RuleUnknown), when it
	// fires, comes last.
	FiredRules []FiredRule `json:"fired_rules,omitempty"`
	// Provenance is where each destination the tool declares was found
	// (pkg/provenance's recorded form; no values), when they were traced.
	Provenance []contracts.ProvenanceFinding `json:"provenance,omitempty"`
	// Limits are the limits that count the call (limits.go), in the
	// policy's order; they do not change the tier (see LimitsReached).
	Limits []LimitCharge `json:"limits,omitempty"`
	// MatterSteps are the steps of the matter's other runs (Call.Matter)
	// that decided a prior condition with scope "matter" in this decision,
	// in the order they were read: the one that satisfied it, and those
	// before it whose result could not be read as its where needs (Unread).
	// A step that did not match decides nothing and is not listed. It is
	// what an audit asks those runs' exports for (tool.requested's
	// matter_steps).
	MatterSteps []PriorStep `json:"matter_steps,omitempty"`
}

// PriorStep names a tool.completed line of another run of the matter: the
// run, the seq, the line's hash, and its tool and status (in the clear).
type PriorStep struct {
	RunID  string `json:"run_id"`
	Seq    int64  `json:"seq"`
	Hash   string `json:"hash"`
	Tool   string `json:"tool"`
	Status string `json:"status"`
	// Unread: its result could not be read as the condition needs (sealed
	// and not opened, its content destroyed, or not of the shape): the
	// condition was undecided on it.
	Unread bool `json:"unread,omitempty"`
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

// toolEntry is a tool's floor and the rules that list it, in file order.
type toolEntry struct {
	tier         Tier
	reason       string
	replayable   bool
	sendsOutside bool
	matched      string // "tools.<name>" or "default"
	rules        []*rule
	// dests are the tool's declared destinations (Destinations), their
	// pointers parsed.
	dests []provenance.Spec
}

// Policy is a validated, immutable risk policy; it is safe for concurrent use.
type Policy struct {
	version string
	digest  string // hex SHA-256 of the document loaded (Digest)
	def     toolEntry
	tools   map[string]*toolEntry
	rules   []*rule // file order
	tables  tables  // sizes of the per-decision memos
	// limits, in file order, and by tool (limits.go); their conditions
	// have memo tables of their own.
	limits      []*limit
	limitsOf    map[string][]*limit
	limitTables tables
}

// The file format. Fields without omitempty are required by DecodeStrict.
type policyFile struct {
	Version string              `json:"version"`
	Default defaultRule         `json:"default"`
	Tools   map[string]toolRule `json:"tools"`
	Rules   []ruleFile          `json:"rules,omitempty"`
	Limits  []limitFile         `json:"limits,omitempty"`
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
	// SendsOutside declares that the tool sends its input out of the firm:
	// a detector on it must read every string of the input ("**").
	SendsOutside bool `json:"sends_outside,omitempty"`
	// Destinations declares, by JSON pointer, the values of a call's input
	// that are destinations or identifiers (recipients, URLs, hosts,
	// account or docket numbers, paths): each is traced to where the run
	// got it, and one found only in tool results, or nowhere, raises the
	// call to counsel (pkg/provenance).
	Destinations []provenance.Spec `json:"destinations,omitempty"`
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
		def:     toolEntry{tier: f.Default.Tier, reason: f.Default.Reason, matched: "default"},
		tools:   make(map[string]*toolEntry, len(f.Tools)),
	}
	folded := make(map[string]string, len(f.Tools))
	for name, r := range f.Tools {
		path := "tools." + name
		if !validToolName(name) {
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
		if err := provenance.ValidateSpecs(r.Destinations); err != nil {
			var fe *contracts.FieldError
			if errors.As(err, &fe) {
				return nil, invalid(path+".destinations"+fe.Path, "%s", fe.Reason)
			}
			return nil, invalid(path+".destinations", "%v", err)
		}
		p.tools[name] = &toolEntry{tier: r.Tier, reason: r.Reason, replayable: r.Replayable, sendsOutside: r.SendsOutside, matched: path,
			dests: r.Destinations}
	}
	rules, tables, err := compileRules(f.Rules, p.tools)
	if err != nil {
		return nil, err
	}
	p.rules, p.tables = rules, tables
	p.index()
	if p.limits, p.limitTables, err = compileLimits(f.Limits, p.tools, rules); err != nil {
		return nil, err
	}
	p.indexLimits()
	p.digest = digestOf(data)
	return p, nil
}

// index lists each rule under the tools it names, keeping file order.
func (p *Policy) index() {
	for _, t := range p.tools {
		t.rules = nil
	}
	for _, r := range p.rules {
		for _, name := range r.tools {
			t := p.tools[name]
			t.rules = append(t.rules, r)
		}
	}
}

// LoadFile reads and validates a policy file: a full policy or an overlay
// of the embedded one (see LoadDocument).
func LoadFile(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("toolpolicy: %w", err)
	}
	p, err := LoadDocument(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

//go:embed hitl_risk_policy.json
var embeddedPolicy []byte

var embedded = sync.OnceValues(func() (*Policy, error) { return Load(embeddedPolicy) })

// EmbeddedDocument is a copy of the policy file compiled into the binary.
func EmbeddedDocument() []byte { return append([]byte(nil), embeddedPolicy...) }

// Embedded returns the policy compiled into the binary, parsed once.
func Embedded() (*Policy, error) { return embedded() }

// Version identifies the policy revision a decision was made under.
func (p *Policy) Version() string { return p.version }

// Digest is the hex SHA-256 of the document the policy was loaded from: the
// policy file, or for an overlay the overlay file (its version names the
// embedded policy it extends). `sha256sum` of the deployed file equals it;
// receipts name it.
func (p *Policy) Digest() string { return p.digest }

func digestOf(doc []byte) string {
	sum := sha256.Sum256(doc)
	return hex.EncodeToString(sum[:])
}

// Floor is a tool's listed tier, the tier Decide starts from before any rule
// fires, and whether the tool is listed at all (an unlisted tool's floor is
// the default tier). It says what the policy file declares; only Decide says
// what a call gets.
func (p *Policy) Floor(name string) (Tier, bool) {
	if t, ok := p.tools[name]; ok {
		return t.tier, true
	}
	return p.def.tier, false
}

// SendsOutside reports whether the policy declares that the tool sends its
// input outside the firm ("sends_outside": true): every detector on such a
// tool reads every string of the input.
func (p *Policy) SendsOutside(name string) bool {
	t, ok := p.tools[name]
	return ok && t.sendsOutside
}

// TracesDestinations reports whether the policy declares destinations for
// the tool, whose calls' decisions then trace them to the run's sources.
func (p *Policy) TracesDestinations(name string) bool {
	t, ok := p.tools[name]
	return ok && len(t.dests) > 0
}

// MatterPriorTools lists the tools that the prior conditions with scope
// "matter" of the rules deciding tool ask about (sorted, once each): the
// steps of the matter's other runs a decision on tool reads (Call.Matter).
// Empty when none of its rules looks beyond the run.
func (p *Policy) MatterPriorTools(tool string) []string {
	t, ok := p.tools[tool]
	if !ok {
		t = &p.def
	}
	var out []string
	for _, r := range t.rules {
		out = matterTools(r.when, out)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// MatterStepTools lists every tool some rule's prior condition with scope
// "matter" asks about (sorted, once each): the tools whose completed steps
// the store records for the matter (warrant.MatterSteps).
func (p *Policy) MatterStepTools() []string {
	var out []string
	for _, r := range p.rules {
		out = matterTools(r.when, out)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func matterTools(cs []cond, out []string) []string {
	for i := range cs {
		c := &cs[i]
		if c.kind == condPrior && c.prior.matter {
			out = append(out, c.prior.tool)
		}
		out = matterTools(c.kids, out)
	}
	return out
}

// RuleIDs lists the policy's rules in file order.
func (p *Policy) RuleIDs() []string {
	ids := make([]string, len(p.rules))
	for i, r := range p.rules {
		ids[i] = r.id
	}
	return ids
}

// GetToolRiskDecision is the decision for a call of which only the tool's
// name is known: Decide with no input and empty metadata. Rules that do not
// read the input or the metadata apply as usual; a raise or deny rule whose
// conditions read them cannot be evaluated and fires (fail-closed), so this
// decision is never less strict than the decision for any actual call of
// the tool. Callers that hold the call's input should use Decide.
//
// metadata is ignored; it remains so existing callers compile.
func (p *Policy) GetToolRiskDecision(name string, metadata map[string]string) (Decision, error) {
	_ = metadata
	return p.Decide(Call{Tool: name})
}

// Decide returns the decision for one tool call. It starts from the tool's
// floor (its listed tier; an unlisted tool gets the default, and no rule
// applies to it) and evaluates, in file order, every rule that lists the
// tool. Each rule that fires is appended to FiredRules: "raise:T" makes the
// tier the higher of the two, "deny" makes it prohibited, "record" changes
// nothing; no rule lowers a tier. The action follows the final tier.
//
// A condition that cannot be evaluated (the input is not a JSON object, a
// pointer crosses a value of the wrong type, a value cannot be compared with
// the comparand, a metadata string it needs is empty) never makes a call
// safer: a raise or deny rule whose conditions cannot be decided fires, and
// its FiredRule reason says so. A record rule fires only when its
// conditions hold.
//
// The error is non-nil only for a nil policy or an invalid tool name
// (ErrInvalidToolName); whatever the input, a valid name gets a decision.
func (p *Policy) Decide(c Call) (Decision, error) {
	return p.decide(c, nil)
}

// DecideOrDeny is Decide for a caller that must have a decision for every
// call (the runtime): a tool name the policy cannot read is denied like an
// unlisted tool. An audit re-deriving a recorded decision calls it too, so
// both read the same fallback.
func (p *Policy) DecideOrDeny(c Call) Decision {
	d, err := p.Decide(c)
	if err != nil {
		return Decision{ToolName: c.Tool, Tier: TierProhibited, Action: ActionDeny,
			Reason: "malformed tool name", MatchedPolicy: "default", PolicyVersion: p.Version()}
	}
	return d
}

// Outline is what the policy says of a tool when no call's input is known:
// the tool's floor, the tier the rules that need no input give it, and the
// rules that could not be evaluated. It is for people asking about a tool
// (warrant policy decide TOOL); the runtime always decides on the call's
// input, and a rule it cannot evaluate there fires (fail-closed).
type Outline struct {
	ToolName string `json:"tool_name"`
	// Floor is the tool's listed tier (the default's, for an unlisted tool).
	Floor Tier `json:"floor"`
	// Tier and Action are the floor raised by the rules in FiredRules.
	Tier          Tier        `json:"tier"`
	Action        Action      `json:"action"`
	Reason        string      `json:"reason"`
	MatchedPolicy string      `json:"matched_policy"`
	PolicyVersion string      `json:"policy_version"`
	FiredRules    []FiredRule `json:"fired_rules,omitempty"`
	// NotEvaluated are the rules whose conditions need what is not known
	// (the input, or metadata not given), with their effect and reason; the
	// reason ends "(not evaluated: <why>)".
	NotEvaluated []FiredRule `json:"not_evaluated,omitempty"`
}

// Outline describes tool with the metadata meta and no input (see Outline).
func (p *Policy) Outline(tool string, meta Metadata) (Outline, error) {
	var aside []FiredRule
	d, err := p.decide(Call{Tool: tool, Meta: meta}, &aside)
	if err != nil {
		return Outline{}, err
	}
	floor, _ := p.Floor(tool)
	return Outline{ToolName: d.ToolName, Floor: floor, Tier: d.Tier, Action: d.Action, Reason: d.Reason,
		MatchedPolicy: d.MatchedPolicy, PolicyVersion: d.PolicyVersion, FiredRules: d.FiredRules, NotEvaluated: aside}, nil
}

// decide is Decide; with aside set, a rule whose conditions cannot be
// evaluated is appended there instead of firing.
func (p *Policy) decide(c Call, aside *[]FiredRule) (Decision, error) {
	if p == nil {
		return Decision{}, errors.New("toolpolicy: nil policy")
	}
	if !validToolName(c.Tool) {
		return Decision{}, fmt.Errorf("%w: %q", ErrInvalidToolName, c.Tool)
	}
	t, listed := p.tools[c.Tool]
	if !listed {
		t = &p.def
	}
	d := Decision{
		ToolName:      c.Tool,
		Tier:          t.tier,
		Reason:        t.reason,
		MatchedPolicy: t.matched,
		PolicyVersion: p.version,
		Replayable:    t.replayable,
	}
	if len(t.rules) > 0 {
		e := newEvaluator(&c, p.tables)
		for i, r := range t.rules {
			e.cause = causeNone
			res := e.all(r.when)
			if res == tFalse || (res == tUnknown && r.kind == effectRecord && aside == nil) {
				continue
			}
			why := causeNone
			if res == tUnknown {
				why = cmp.Or(e.cause, causeNotEvaluable)
				if aside != nil {
					*aside = append(*aside, FiredRule{ID: r.id, Effect: r.effect, Reason: r.reason + " (not evaluated: " + causeText[why] + ")"})
					continue
				}
			}
			e.fired, e.why = append(e.fired, int32(i)), append(e.why, why)
		}
		if len(e.fired) > 0 {
			d.FiredRules = make([]FiredRule, len(e.fired))
		}
		for k, i := range e.fired {
			r := t.rules[i]
			reason, tierReason := r.reason, r.tierReason
			if why := e.why[k]; why != causeNone {
				reason, tierReason = r.unknownReason[why], r.unknownTierReason[why]
			}
			d.FiredRules[k] = FiredRule{ID: r.id, Effect: r.effect, Reason: reason}
			if r.kind != effectRecord && rank(r.tier) > rank(d.Tier) {
				d.Tier, d.Reason = r.tier, tierReason
			}
		}
		if len(e.matterHits) > 0 {
			d.MatterSteps = slices.Clone(e.matterHits)
		}
		e.release()
	}
	if len(t.dests) > 0 && !c.Signed {
		p.traceDestinations(&d, &c, t, aside)
	}
	p.chargeLimits(&d, &c)
	d.Action, _ = actionFor(d.Tier) // Load rejected every tier actionFor does not know
	if d.Tier != TierLow || len(d.FiredRules) > 0 {
		d.Replayable = false
	}
	return d, nil
}

// destinationsReason is the provenance rule's reason where no destination
// could be read.
const destinationsReason = "Each destination the tool declares (a recipient, URL, host, identifier or path) must come from counsel, " +
	"the matter registry or the firm, not only from a tool's result; one that cannot be traced needs counsel's eye"

// traceDestinations traces the call's declared destinations to the run's
// sources and applies the verdict: a destination found only in tool
// results, or nowhere (or the input cannot be read), fires the provenance
// rule, which raises the call to high (counsel). It never lowers a tier.
// With aside set (Outline: no input), the rule is set aside as not
// evaluated.
func (p *Policy) traceDestinations(d *Decision, c *Call, t *toolEntry, aside *[]FiredRule) {
	src := c.Sources
	if src == nil {
		src = &provenance.Sources{}
	}
	// The registry's and the firm's domains are the metadata's, the form
	// the ledger records beside the decision.
	src.Matter.ClientDomains, src.Firm.Domains = c.Meta.ClientDomains, c.Meta.FirmDomains
	findings, err := provenance.Trace(c.Input, t.dests, src)
	v := provenance.Verdict(findings)
	if err != nil {
		why := causeInput
		if len(c.Input) == 0 {
			why = causeNoInput
		}
		v = provenance.Decision{Effect: provenance.EffectUnknown, Rule: provenance.RuleUnknown, Reason: destinationsReason + unknownNote(why)}
	}
	if v.Effect == provenance.EffectNone {
		d.Provenance = provenance.Store(findings)
		return
	}
	fired := FiredRule{ID: v.Rule, Effect: "raise:" + string(TierHigh), Reason: v.Reason, Pointer: v.Pointer}
	if aside != nil && err != nil {
		fired.Reason = destinationsReason + " (not evaluated: " + causeText[causeNoInput] + ")"
		*aside = append(*aside, fired)
		return
	}
	d.Provenance = provenance.Store(findings)
	d.FiredRules = append(d.FiredRules, fired)
	if rank(TierHigh) > rank(d.Tier) {
		d.Tier, d.Reason = TierHigh, "rule "+v.Rule+": "+v.Reason
	}
}

// validToolName is toolNamePattern without the regexp machinery, as it runs
// on every decision.
func validToolName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// GetToolRiskDecision decides against the embedded policy.
func GetToolRiskDecision(name string, metadata map[string]string) (Decision, error) {
	p, err := Embedded()
	if err != nil {
		return Decision{}, err
	}
	return p.GetToolRiskDecision(name, metadata)
}
