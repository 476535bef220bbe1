package toolpolicy

import (
	"cmp"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// Limits on a rule set, so a policy file cannot make a decision expensive.
const (
	maxRules        = 256
	maxRuleConds    = 64 // conditions (leaves and groups) in one rule
	maxCondDepth    = 8  // nesting of any/all/not
	maxPointerSegs  = contracts.MaxPointerTokens
	maxListValues   = 1024
	maxPatternBytes = 4096
)

var ruleIDPattern = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,63}$`)

// The file format of a rule (see doc.go). Fields without omitempty are
// required by DecodeStrict.
type ruleFile struct {
	ID            string     `json:"id"`
	Tools         []string   `json:"tools"`
	When          []condFile `json:"when,omitempty"`
	Then          string     `json:"then"`
	Reason        string     `json:"reason"`
	RestatesFloor bool       `json:"restates_floor,omitempty"`
}

// condFile is a leaf (input or meta, op, value or meta_value) or a group
// (any, all or not); which members may appear together is checked by
// (*compiler).cond.
type condFile struct {
	Input     *string         `json:"input,omitempty"`
	Meta      *string         `json:"meta,omitempty"`
	Op        *string         `json:"op,omitempty"`
	Value     json.RawMessage `json:"value,omitempty"`
	MetaValue *string         `json:"meta_value,omitempty"`
	Any       []condFile      `json:"any,omitempty"`
	All       []condFile      `json:"all,omitempty"`
	Not       *condFile       `json:"not,omitempty"`
	Prior     *priorFile      `json:"prior,omitempty"`
}

// priorFile is a condition on the run's history: an earlier call of a tool
// completed with a status (default success), its result satisfying where.
type priorFile struct {
	Tool   string `json:"tool"`
	Status string `json:"status,omitempty"`
	// Scope is where the earlier call is looked for: "run" (the default),
	// or "matter" (this run, or another run of the run's matter).
	Scope string `json:"scope,omitempty"`
	// Where are conditions over the earlier call's result: their "input"
	// pointers read the result, as a rule's read the call's input.
	Where []condFile `json:"where,omitempty"`
}

// effectKind is what a fired rule does.
type effectKind uint8

const (
	effectRecord effectKind = iota
	effectRaise
	effectDeny
)

// rule is a compiled rule.
type rule struct {
	id     string
	kind   effectKind
	tier   Tier   // the tier a raise rule raises to; prohibited for deny
	effect string // "raise:<tier>", "deny" or "record", as FiredRule.Effect
	reason string
	// tierReason is the Decision.Reason when this rule set the final tier.
	tierReason string
	// The same two reasons, with the note of a rule fired because its
	// conditions could not be evaluated, per cause.
	unknownReason, unknownTierReason [numCauses]string
	when                             []cond
	tools                            []string
	restatesFloor                    bool
}

// metaField names a Metadata field.
type metaField int8

const (
	metaNone metaField = iota - 1
	metaFirmID
	metaMatterID
	metaAgentKey
	metaUserID
	metaRoles
	metaFirmDomains
	metaClientDomains
)

var metaNames = map[string]metaField{
	"firm_id":        metaFirmID,
	"matter_id":      metaMatterID,
	"agent_key":      metaAgentKey,
	"user_id":        metaUserID,
	"roles":          metaRoles,
	"firm_domains":   metaFirmDomains,
	"client_domains": metaClientDomains,
}

func (m metaField) isList() bool { return m >= metaRoles }

func (m metaField) isDomains() bool { return m == metaFirmDomains || m == metaClientDomains }

// op is a condition's operator.
type op uint8

const (
	opEquals op = iota + 1
	opNotEquals
	opIn
	opNotIn
	opMatches
	opNotMatches
	opDomainIn
	opDomainNotIn
	opLengthGT
	opSumGT
	opExists
	opMissing
	opContainsCard
	opContainsSSN
	opContainsCredential
)

func isDetector(o op) bool {
	return o == opContainsCard || o == opContainsSSN || o == opContainsCredential
}

// detect runs the detector of a contains_* operator.
func detect(o op, s []byte) bool {
	switch o {
	case opContainsCard:
		return containsCardNumber(s)
	case opContainsSSN:
		return containsSSN(s)
	case opContainsCredential:
		return containsCredential(s)
	}
	return false
}

var opNames = map[string]op{
	"equals":               opEquals,
	"not_equals":           opNotEquals,
	"in":                   opIn,
	"not_in":               opNotIn,
	"matches":              opMatches,
	"not_matches":          opNotMatches,
	"domain_in":            opDomainIn,
	"domain_not_in":        opDomainNotIn,
	"length_gt":            opLengthGT,
	"sum_gt":               opSumGT,
	"exists":               opExists,
	"missing":              opMissing,
	"contains_card_number": opContainsCard,
	"contains_ssn":         opContainsSSN,
	"contains_credential":  opContainsCredential,
}

type condKind uint8

const (
	condLeaf condKind = iota
	condAny
	condAll
	condNot
	condPrior
)

// scalar is a literal a value is compared with.
type scalar struct {
	kind byte // kString, kNumber or kTrue (a boolean; b holds it)
	s    string
	n    float64
	b    bool
}

// segment is one reference token of a JSON pointer.
type segment struct {
	name  string
	index int  // the token as an array index, or -1
	wild  bool // "*": every element of an array
	first int  // the first token of a pointer: its id in tables.firsts
}

// everyString is the subject of a leaf that reads every string of the
// input: each string value, each member name and each number's text, at any
// depth. It is not a JSON pointer (those are "" or start with '/'), so no
// pointer can be mistaken for it.
const everyString = "**"

// cond is a compiled condition.
type cond struct {
	id   int // a leaf's index in the policy's leaf table; equal leaves share it
	kind condKind
	kids []cond // any, all; not has one
	// A leaf: the subject is ptr (input) unless subj names a Metadata field
	// or every is set (everyString).
	ptr   []segment
	ptrID int // the pointer's index in the policy's pointer table
	every bool
	subj  metaField
	op    op
	// The comparand: cmp names a Metadata field, or the literal fields hold it.
	cmp     metaField
	lit     scalar
	lits    []scalar
	domains []string
	re      *regexp.Regexp
	num     float64
	prior   *prior // condPrior
}

// prior is a compiled prior condition.
type prior struct {
	tool, status string
	// matter: the earlier call may be of another run of the matter
	// (Call.Matter), not only of this run (Call.History).
	matter bool
	where  []cond
}

// compileRules validates and compiles the rules of a document against its
// tools. The error path of a problem is rules[i]...
func compileRules(files []ruleFile, tools map[string]*toolEntry) ([]*rule, tables, error) {
	if len(files) > maxRules {
		return nil, tables{}, invalid("rules", "at most %d rules", maxRules)
	}
	leaves, ptrs, firsts := map[string]int{}, map[string]int{}, map[string]int{}
	seen := make(map[string]int, len(files))
	out := make([]*rule, 0, len(files))
	for i, f := range files {
		path := "rules[" + strconv.Itoa(i) + "]"
		if !ruleIDPattern.MatchString(f.ID) {
			return nil, tables{}, invalid(path+".id", "rule id must match %s", ruleIDPattern)
		}
		if j, dup := seen[f.ID]; dup {
			return nil, tables{}, invalid(path+".id", "duplicate rule id %q (also rules[%d])", f.ID, j)
		}
		seen[f.ID] = i
		r := &rule{id: f.ID, reason: f.Reason, restatesFloor: f.RestatesFloor}
		switch f.Then {
		case "raise:medium":
			r.kind, r.tier = effectRaise, TierMedium
		case "raise:high":
			r.kind, r.tier = effectRaise, TierHigh
		case "deny":
			r.kind, r.tier = effectDeny, TierProhibited
		case "record":
			r.kind = effectRecord
		default:
			return nil, tables{}, invalid(path+".then", `unknown effect %q (want "raise:medium", "raise:high", "deny" or "record")`, f.Then)
		}
		r.effect = f.Then
		if strings.TrimSpace(f.Reason) == "" {
			return nil, tables{}, invalid(path+".reason", "must not be empty")
		}
		r.tierReason = "rule " + f.ID + ": " + f.Reason
		for c := causeNone + 1; c < numCauses; c++ {
			r.unknownReason[c] = r.reason + unknownNote(c)
			r.unknownTierReason[c] = r.tierReason + unknownNote(c)
		}
		if f.RestatesFloor && r.kind != effectRaise {
			return nil, tables{}, invalid(path+".restates_floor", "only a raise rule can restate a floor")
		}
		if err := checkTools(path, f.Tools, tools); err != nil {
			return nil, tables{}, err
		}
		r.tools = append([]string(nil), f.Tools...)
		if err := reachable(r, tools, path); err != nil {
			return nil, tables{}, err
		}
		c := compiler{budget: maxRuleConds, leaves: leaves, ptrs: ptrs, firsts: firsts, tools: tools}
		for _, name := range r.tools {
			if tools[name].sendsOutside {
				c.outbound = name
				break
			}
		}
		when, err := c.conds(f.When, path+".when", 0)
		if err != nil {
			return nil, tables{}, err
		}
		r.when = when
		out = append(out, r)
	}
	return out, tables{leaves: len(leaves), ptrs: len(ptrs), firsts: firsts}, nil
}

// checkTools checks the tools a rule or a limit lists (path.tools): at
// least one, each listed in the policy's tools (rules never apply to
// unlisted tools: those get the default), none twice.
func checkTools(path string, names []string, tools map[string]*toolEntry) error {
	if len(names) == 0 {
		return invalid(path+".tools", "must list at least one tool")
	}
	listed := make(map[string]bool, len(names))
	for k, name := range names {
		tp := path + ".tools[" + strconv.Itoa(k) + "]"
		if _, ok := tools[name]; !ok {
			return invalid(tp, "tool %q is not listed in tools", name)
		}
		if listed[name] {
			return invalid(tp, "tool %q is listed twice", name)
		}
		listed[name] = true
	}
	return nil
}

// reachable refuses a rule that could never change a decision: a rule is a
// statement about risk, and one that silently does nothing (written for a
// prohibited tool, or raising to a tier every tool it lists already has) is
// almost always a mistake in the file. A record rule changes nothing by
// design and is always accepted. A raise rule that deliberately restates the
// floor of a tool (a guarantee that holds even if the floor is later
// lowered, and an entry in fired_rules each time it applies) says so with
// "restates_floor": true.
func reachable(r *rule, tools map[string]*toolEntry, path string) error {
	if r.kind == effectRecord {
		return nil
	}
	for _, name := range r.tools {
		floor := tools[name].tier
		switch {
		case floor == TierProhibited:
		case r.kind == effectDeny:
			return nil
		case rank(r.tier) > rank(floor):
			return nil
		case r.restatesFloor && r.tier == floor:
			return nil
		}
	}
	if r.kind == effectDeny {
		return invalid(path+".then", "unreachable rule: every tool it lists is already prohibited")
	}
	if r.restatesFloor {
		return invalid(path+".then", "unreachable rule: %s is below the floor of every tool it lists (or they are prohibited)", r.effect)
	}
	return invalid(path+".then", `unreachable rule: %s is not above the floor of any tool it lists (set "restates_floor": true to restate a floor deliberately)`, r.effect)
}

// rank orders the tiers; an unknown tier ranks above every known one.
func rank(t Tier) int {
	switch t {
	case TierLow:
		return 0
	case TierMedium:
		return 1
	case TierHigh:
		return 2
	}
	return 3
}

// tables are the sizes of the per-decision memos of a policy: its distinct
// leaf conditions and its distinct JSON pointers.
// firsts gives an id to every member name a pointer starts with, so the
// input's top-level members are looked up once per decision.
type tables struct {
	leaves, ptrs int
	firsts       map[string]int
}

// compiler compiles the conditions of one rule; leaves is the policy-wide
// table that gives equal leaves one id.
type compiler struct {
	budget int
	leaves map[string]int
	ptrs   map[string]int
	firsts map[string]int
	// outbound is a tool of the rule that sends its input outside the firm,
	// or "": a detector of such a rule must read every string.
	outbound string
	// tools are the policy's tools, which a prior condition names; inPrior
	// is set while compiling a prior's where (no prior inside it).
	tools   map[string]*toolEntry
	inPrior bool
}

func (c *compiler) conds(files []condFile, path string, depth int) ([]cond, error) {
	out := make([]cond, 0, len(files))
	for i := range files {
		cd, err := c.cond(&files[i], path+"["+strconv.Itoa(i)+"]", depth)
		if err != nil {
			return nil, err
		}
		out = append(out, cd)
	}
	return out, nil
}

func (c *compiler) cond(f *condFile, path string, depth int) (cond, error) {
	if c.budget--; c.budget < 0 {
		return cond{}, invalid(path, "a rule may hold at most %d conditions", maxRuleConds)
	}
	leaf := f.Input != nil || f.Meta != nil || f.Op != nil || f.Value != nil || f.MetaValue != nil
	groups := 0
	for _, set := range []bool{f.Any != nil, f.All != nil, f.Not != nil, f.Prior != nil} {
		if set {
			groups++
		}
	}
	switch {
	case leaf && groups > 0, groups > 1:
		return cond{}, invalid(path, "a condition is one of: a comparison (input or meta, op, value or meta_value), any, all, not or prior")
	case f.Prior != nil:
		return c.prior(f, path+".prior", depth)
	case groups == 1:
		if depth >= maxCondDepth {
			return cond{}, invalid(path, "conditions nest at most %d deep", maxCondDepth)
		}
		var (
			cd  cond
			err error
		)
		switch {
		case f.Any != nil:
			if len(f.Any) == 0 {
				return cond{}, invalid(path+".any", "must not be empty")
			}
			cd.kind = condAny
			cd.kids, err = c.conds(f.Any, path+".any", depth+1)
		case f.All != nil:
			if len(f.All) == 0 {
				return cond{}, invalid(path+".all", "must not be empty")
			}
			cd.kind = condAll
			cd.kids, err = c.conds(f.All, path+".all", depth+1)
		default:
			cd.kind = condNot
			var kid cond
			kid, err = c.cond(f.Not, path+".not", depth+1)
			cd.kids = []cond{kid}
		}
		return cd, err
	}
	cd, err := compileLeaf(f, path)
	if err != nil {
		return cd, err
	}
	if c.outbound != "" && f.Input != nil && !cd.every && isDetector(cd.op) {
		// What a narrower pointer leaves out (a recipient, an attachment's
		// name) would leave the firm unread.
		return cond{}, invalid(path+".input", `tool %q sends its input outside the firm ("sends_outside"): a detector on it reads every string it sends ("input": "**")`, c.outbound)
	}
	key := leafKey(f)
	id, ok := c.leaves[key]
	if !ok {
		id = len(c.leaves)
		c.leaves[key] = id
	}
	cd.id = id
	if f.Input != nil && !cd.every {
		pid, ok := c.ptrs[*f.Input]
		if !ok {
			pid = len(c.ptrs)
			c.ptrs[*f.Input] = pid
		}
		cd.ptrID = pid
		if len(cd.ptr) > 0 && !cd.ptr[0].wild {
			fid, ok := c.firsts[cd.ptr[0].name]
			if !ok {
				fid = len(c.firsts)
				c.firsts[cd.ptr[0].name] = fid
			}
			cd.ptr[0].first = fid
		}
	}
	return cd, nil
}

// The statuses a prior condition may ask for: tool.completed's.
var priorStatuses = []string{contracts.ToolSuccess, contracts.ToolError, contracts.ToolDenied, contracts.ToolDeclined}

// prior compiles a prior condition: the tool must be one the policy lists,
// the status one tool.completed records, the scope the run or the matter; where is
// compiled as a rule's conditions (its pointers read the earlier result),
// without a prior inside it.
func (c *compiler) prior(f *condFile, path string, depth int) (cond, error) {
	p := f.Prior
	if c.inPrior {
		return cond{}, invalid(path, "a prior condition's where cannot hold another prior")
	}
	if _, ok := c.tools[p.Tool]; !ok {
		return cond{}, invalid(path+".tool", "tool %q is not listed in tools", p.Tool)
	}
	status := cmp.Or(p.Status, contracts.ToolSuccess)
	if !slices.Contains(priorStatuses, status) {
		return cond{}, invalid(path+".status", "unknown status %q (want %s)", p.Status, strings.Join(priorStatuses, ", "))
	}
	var matter bool
	switch p.Scope {
	case "", "run":
	case "matter":
		// The matter's other runs' steps are Call.Matter (docs/DECISIONS.md,
		// issue 29: the matter's runs).
		matter = true
	default:
		return cond{}, invalid(path+".scope", `unknown scope %q (want "run" or "matter")`, p.Scope)
	}
	sub := *c
	sub.outbound, sub.inPrior = "", true
	where, err := sub.conds(p.Where, path+".where", depth+1)
	c.budget = sub.budget
	if err != nil {
		return cond{}, err
	}
	key, _ := json.Marshal(struct {
		Tool, Status string
		Matter       bool
		Where        []condFile
	}{p.Tool, status, matter, p.Where})
	id, ok := c.leaves["prior "+string(key)]
	if !ok {
		id = len(c.leaves)
		c.leaves["prior "+string(key)] = id
	}
	return cond{kind: condPrior, id: id, prior: &prior{tool: p.Tool, status: status, matter: matter, where: where}}, nil
}

// leafKey identifies a leaf by what it says. Two leaves written alike get
// one key; a leaf written differently (other spacing in its value) merely
// gets its own id.
func leafKey(f *condFile) string {
	str := func(p *string) string {
		if p == nil {
			return "-"
		}
		return strconv.Quote(*p)
	}
	return str(f.Input) + " " + str(f.Meta) + " " + str(f.Op) + " " + str(f.MetaValue) + " " + string(f.Value)
}

func compileLeaf(f *condFile, path string) (cond, error) {
	cd := cond{kind: condLeaf, subj: metaNone, cmp: metaNone}
	switch {
	case f.Input != nil && f.Meta != nil:
		return cd, invalid(path, "a condition has one subject: input or meta")
	case f.Input != nil && *f.Input == everyString:
		cd.every = true
	case f.Input != nil:
		segs, err := parsePointer(*f.Input)
		if err != nil {
			return cd, invalid(path+".input", "%s", err.Error())
		}
		cd.ptr = segs
	case f.Meta != nil:
		m, ok := metaNames[*f.Meta]
		if !ok {
			return cd, invalid(path+".meta", "unknown metadata field %q", *f.Meta)
		}
		cd.subj = m
	default:
		return cd, invalid(path, "a condition needs a subject: input (a JSON pointer) or meta (a metadata field)")
	}
	if f.Op == nil {
		return cd, invalid(path+".op", "required field is missing")
	}
	o, ok := opNames[*f.Op]
	if !ok {
		return cd, invalid(path+".op", "unknown operator %q", *f.Op)
	}
	cd.op = o
	if cd.every && !isDetector(o) && o != opMatches {
		return cd, invalid(path+".op", `"input": "**" (every string of the input) is read by contains_card_number, contains_ssn, contains_credential and matches only`)
	}
	if f.Value != nil && f.MetaValue != nil {
		return cd, invalid(path, "a condition has one comparand: value or meta_value")
	}
	if f.MetaValue != nil {
		m, ok := metaNames[*f.MetaValue]
		if !ok {
			return cd, invalid(path+".meta_value", "unknown metadata field %q", *f.MetaValue)
		}
		cd.cmp = m
	}
	var lit any
	if f.Value != nil {
		if err := json.Unmarshal(f.Value, &lit); err != nil {
			return cd, invalid(path+".value", "invalid JSON value")
		}
	}
	vpath, mpath := path+".value", path+".meta_value"
	hasValue, hasMeta := f.Value != nil, f.MetaValue != nil
	needComparand := func() error {
		if !hasValue && !hasMeta {
			return invalid(path, "operator %s needs a value or a meta_value", *f.Op)
		}
		return nil
	}
	onlyValue := func() error {
		if hasMeta {
			return invalid(mpath, "operator %s takes a literal value, not a meta_value", *f.Op)
		}
		if !hasValue {
			return invalid(vpath, "operator %s needs a value", *f.Op)
		}
		return nil
	}
	switch o {
	case opEquals, opNotEquals:
		if err := needComparand(); err != nil {
			return cd, err
		}
		if hasMeta {
			if cd.cmp.isList() {
				return cd, invalid(mpath, "operator %s compares with one value; %s is a list (use in or not_in)", *f.Op, *f.MetaValue)
			}
			break
		}
		s, ok := toScalar(lit)
		if !ok {
			return cd, invalid(vpath, "operator %s needs a string, number or boolean value", *f.Op)
		}
		if cd.subj != metaNone && s.kind != kString {
			return cd, invalid(vpath, "metadata fields are strings; the value must be a string")
		}
		cd.lit = s
	case opIn, opNotIn:
		if err := needComparand(); err != nil {
			return cd, err
		}
		if hasMeta {
			if !cd.cmp.isList() {
				return cd, invalid(mpath, "operator %s needs a list; %s is a single value (use equals or not_equals)", *f.Op, *f.MetaValue)
			}
			break
		}
		list, ok := lit.([]any)
		if !ok || len(list) == 0 || len(list) > maxListValues {
			return cd, invalid(vpath, "operator %s needs a list of 1 to %d values", *f.Op, maxListValues)
		}
		for k, v := range list {
			s, ok := toScalar(v)
			if !ok || s.kind != toScalarKind(list[0]) {
				return cd, invalid(vpath+"["+strconv.Itoa(k)+"]", "the values of a list must be strings, numbers or booleans, all of one type")
			}
			cd.lits = append(cd.lits, s)
		}
		if cd.subj != metaNone && cd.lits[0].kind != kString {
			return cd, invalid(vpath, "metadata fields are strings; the values must be strings")
		}
	case opMatches, opNotMatches:
		if err := onlyValue(); err != nil {
			return cd, err
		}
		pat, ok := lit.(string)
		if !ok || pat == "" || len(pat) > maxPatternBytes {
			return cd, invalid(vpath, "operator %s needs a pattern: a string of 1 to %d bytes", *f.Op, maxPatternBytes)
		}
		re, err := regexp.Compile(pat)
		if err != nil {
			return cd, invalid(vpath, "invalid RE2 pattern: %s", reErr(err))
		}
		cd.re = re
	case opDomainIn, opDomainNotIn:
		if err := needComparand(); err != nil {
			return cd, err
		}
		if hasMeta {
			if !cd.cmp.isDomains() {
				return cd, invalid(mpath, "operator %s compares with a domain list: firm_domains or client_domains", *f.Op)
			}
			break
		}
		list, ok := lit.([]any)
		if !ok || len(list) == 0 || len(list) > maxListValues {
			return cd, invalid(vpath, "operator %s needs a list of 1 to %d domains", *f.Op, maxListValues)
		}
		for k, v := range list {
			d, ok := v.(string)
			if !ok || !validDomain(d) {
				return cd, invalid(vpath+"["+strconv.Itoa(k)+"]", "not a lower-case domain name")
			}
			cd.domains = append(cd.domains, d)
		}
	case opLengthGT:
		if err := onlyValue(); err != nil {
			return cd, err
		}
		n, ok := lit.(float64)
		if !ok || n < 0 || n != math.Trunc(n) || n > math.MaxInt32 {
			return cd, invalid(vpath, "operator length_gt needs a non-negative integer")
		}
		cd.num = n
	case opSumGT:
		if cd.subj != metaNone {
			return cd, invalid(path+".meta", "operator sum_gt adds numbers of the input; metadata holds none")
		}
		if err := onlyValue(); err != nil {
			return cd, err
		}
		n, ok := lit.(float64)
		if !ok {
			return cd, invalid(vpath, "operator sum_gt needs a number")
		}
		cd.num = n
	case opExists, opMissing, opContainsCard, opContainsSSN, opContainsCredential:
		if hasValue {
			return cd, invalid(vpath, "operator %s takes no value", *f.Op)
		}
		if hasMeta {
			return cd, invalid(mpath, "operator %s takes no meta_value", *f.Op)
		}
	}
	return cd, nil
}

func toScalar(v any) (scalar, bool) {
	switch v := v.(type) {
	case string:
		return scalar{kind: kString, s: v}, true
	case float64:
		return scalar{kind: kNumber, n: v}, true
	case bool:
		return scalar{kind: kTrue, b: v}, true
	}
	return scalar{}, false
}

func toScalarKind(v any) byte {
	s, _ := toScalar(v)
	return s.kind
}

// reErr is the message of a regexp compile error without the pattern,
// which can be long; the path already says where it is.
func reErr(err error) string {
	var re *syntax.Error
	if errors.As(err, &re) {
		return string(re.Code)
	}
	return "does not compile"
}

// parsePointer parses a rule's JSON pointer (contracts.ParsePointer: RFC
// 6901, with "*" for every element of an array).
func parsePointer(p string) ([]segment, error) {
	toks, err := contracts.ParsePointer(p)
	if err != nil {
		return nil, err
	}
	segs := make([]segment, len(toks))
	for i, t := range toks {
		segs[i] = segment{name: t.Name, index: t.Index, wild: t.Wild}
	}
	return segs, nil
}
