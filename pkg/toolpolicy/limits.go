package toolpolicy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The scopes and windows a limit counts over (closed sets).
const (
	PerRun    = "run"
	PerMatter = "matter"
	PerFirm   = "firm"

	WindowHour = "hour"
	WindowDay  = "day"
)

// maxLimitMax bounds a limit's max, so the number is one a reviewer can read
// and a counter can hold.
const maxLimitMax = 1_000_000_000

// limitFile is a limit as the policy file writes it (see doc.go, Limits).
// Max is read from its JSON text, so a fraction or a quoted number is
// refused by name rather than as a decoding error.
type limitFile struct {
	ID     string          `json:"id"`
	Tools  []string        `json:"tools"`
	When   []condFile      `json:"when,omitempty"`
	Per    string          `json:"per"`
	Window string          `json:"window"`
	Max    json.RawMessage `json:"max,omitempty"`
	Then   string          `json:"then"`
	Reason string          `json:"reason"`
}

// limit is a compiled limit.
type limit struct {
	id          string
	tools       []string
	when        []cond
	per, window string
	max         int64
	then        string // "deny" or "raise:high", as FiredRule.Effect
	tier        Tier
	reason      string
}

// LimitCharge is a limit that counts a call: the call is one more of at
// most Max calls per Per (the run, its matter or its firm) per Window (a
// UTC hour or day). Decide reports them; it does not know the count, so a
// charge never changes the tier there. Whoever claims the call's effect
// counts it, atomically with the claim, and a call that finds the count at
// Max is decided again with the limit reached (Decision.LimitsReached).
type LimitCharge struct {
	ID     string `json:"id"`
	Per    string `json:"per"`
	Window string `json:"window"`
	Max    int64  `json:"max"`
	Then   string `json:"then"` // "deny" or "raise:high"
	// Reason is the limit's reason, as the fired rule of a reached limit
	// states it.
	Reason string `json:"reason"`
}

// compileLimits validates and compiles a document's limits against its
// tools and its rules' ids (a limit id is unique among both: fired rules
// name either). The conditions are compiled by the rules' compiler into
// tables of their own. The error path of a problem is limits[i]...
func compileLimits(files []limitFile, tools map[string]*toolEntry, rules []*rule) ([]*limit, tables, error) {
	if len(files) > maxRules {
		return nil, tables{}, invalid("limits", "at most %d limits", maxRules)
	}
	ruleAt := make(map[string]int, len(rules))
	for i, r := range rules {
		ruleAt[r.id] = i
	}
	leaves, ptrs, firsts := map[string]int{}, map[string]int{}, map[string]int{}
	seen := make(map[string]int, len(files))
	out := make([]*limit, 0, len(files))
	for i, f := range files {
		path := "limits[" + strconv.Itoa(i) + "]"
		if !ruleIDPattern.MatchString(f.ID) {
			return nil, tables{}, invalid(path+".id", "limit id must match %s", ruleIDPattern)
		}
		if j, dup := ruleAt[f.ID]; dup {
			return nil, tables{}, invalid(path+".id", "duplicate id %q (also rules[%d]): a fired rule names a rule or a limit", f.ID, j)
		}
		if j, dup := seen[f.ID]; dup {
			return nil, tables{}, invalid(path+".id", "duplicate limit id %q (also limits[%d])", f.ID, j)
		}
		seen[f.ID] = i
		l := &limit{id: f.ID, per: f.Per, window: f.Window, then: f.Then, reason: f.Reason}
		if err := checkTools(path, f.Tools, tools); err != nil {
			return nil, tables{}, err
		}
		l.tools = slices.Clone(f.Tools)
		switch f.Per {
		case PerRun, PerMatter, PerFirm:
		default:
			return nil, tables{}, invalid(path+".per", `unknown scope %q (want "run", "matter" or "firm")`, f.Per)
		}
		switch f.Window {
		case WindowHour, WindowDay:
		default:
			return nil, tables{}, invalid(path+".window", `unknown window %q (want "hour" or "day")`, f.Window)
		}
		max, err := strconv.ParseInt(string(f.Max), 10, 64)
		if err != nil || max < 1 || max > maxLimitMax {
			// Missing, zero, negative, a fraction, an exponent, a string:
			// a counter without a bound limits nothing.
			return nil, tables{}, invalid(path+".max", "a limit needs a bound: an integer from 1 to %d", maxLimitMax)
		}
		l.max = max
		switch f.Then {
		case "deny":
			l.tier = TierProhibited
		case "raise:high":
			l.tier = TierHigh
		default:
			return nil, tables{}, invalid(path+".then", `unknown effect %q (want "deny" or "raise:high")`, f.Then)
		}
		if strings.TrimSpace(f.Reason) == "" {
			return nil, tables{}, invalid(path+".reason", "must not be empty")
		}
		if err := limitReachable(l, tools, path); err != nil {
			return nil, tables{}, err
		}
		c := compiler{budget: maxRuleConds, leaves: leaves, ptrs: ptrs, firsts: firsts}
		for _, name := range l.tools {
			if tools[name].sendsOutside {
				c.outbound = name
				break
			}
		}
		if l.when, err = c.conds(f.When, path+".when", 0); err != nil {
			return nil, tables{}, err
		}
		out = append(out, l)
	}
	return out, tables{leaves: len(leaves), ptrs: len(ptrs), firsts: firsts}, nil
}

// limitReachable refuses a limit that could never act: a limit refuses or
// raises a call the policy allows, and a call of a tool whose floor is high
// waits for counsel anyway (counsel's signature is not held to the limit),
// while a prohibited tool never runs.
func limitReachable(l *limit, tools map[string]*toolEntry, path string) error {
	for _, name := range l.tools {
		if rank(tools[name].tier) < rank(TierHigh) {
			return nil
		}
	}
	return invalid(path+".tools", "unreachable limit: every tool it lists needs counsel's warrant or is prohibited, and a limit acts on calls the policy allows")
}

// indexLimits lists each limit under the tools it names, keeping file order.
func (p *Policy) indexLimits() {
	p.limitsOf = nil
	for _, l := range p.limits {
		if p.limitsOf == nil {
			p.limitsOf = map[string][]*limit{}
		}
		for _, name := range l.tools {
			p.limitsOf[name] = append(p.limitsOf[name], l)
		}
	}
}

// HasLimits reports whether any limit lists the tool: only then can a
// decision on a call of it carry charges.
func (p *Policy) HasLimits(tool string) bool { return len(p.limitsOf[tool]) > 0 }

// LimitIDs lists the policy's limits in file order.
func (p *Policy) LimitIDs() []string {
	ids := make([]string, len(p.limits))
	for i, l := range p.limits {
		ids[i] = l.id
	}
	return ids
}

// chargeLimits puts on d the limits that count the call: those listing the
// tool whose conditions hold, or cannot be evaluated (a call the policy
// cannot read is counted: fail closed).
func (p *Policy) chargeLimits(d *Decision, c *Call) {
	ls := p.limitsOf[c.Tool]
	if len(ls) == 0 {
		return
	}
	var e *evaluator
	for _, l := range ls {
		if len(l.when) > 0 {
			if e == nil {
				e = newEvaluator(c, p.limitTables)
			}
			e.cause = causeNone
			if e.all(l.when) == tFalse {
				continue
			}
		}
		d.Limits = append(d.Limits, LimitCharge{ID: l.id, Per: l.per, Window: l.window, Max: l.max, Then: l.then, Reason: l.reason})
	}
	if e != nil {
		e.release()
	}
}

// LimitNote is what a reached limit's reason gains in its fired rule.
func LimitNote(c LimitCharge) string {
	return fmt.Sprintf(" (limit: at most %d per %s per %s; reached)", c.Max, c.Per, c.Window)
}

// LimitsReached is d for a call that found the limits ids at their bound
// when its effect was claimed: each is appended to FiredRules (its effect
// "deny" or "raise:high", its reason the limit's with LimitNote), deny
// makes the tier prohibited and raise:high makes it at least high, and
// Reason and Action follow as for a rule. Each id must be a limit d
// charges, once; otherwise it is an error (a record that names a limit the
// decision does not count cannot be re-derived). The runtime and the audit
// both decide a call whose limit was reached with it.
func (d Decision) LimitsReached(ids []string) (Decision, error) {
	out := d
	out.FiredRules = slices.Clone(d.FiredRules)
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		k := slices.IndexFunc(d.Limits, func(c LimitCharge) bool { return c.ID == id })
		if k < 0 {
			return d, fmt.Errorf("toolpolicy: limit %q does not count this call of %s under policy %s", id, d.ToolName, d.PolicyVersion)
		}
		if seen[id] {
			return d, fmt.Errorf("toolpolicy: limit %q is named twice", id)
		}
		seen[id] = true
		c := d.Limits[k]
		reason := c.Reason + LimitNote(c)
		out.FiredRules = append(out.FiredRules, FiredRule{ID: c.ID, Effect: c.Then, Reason: reason})
		tier := TierHigh
		if c.Then == "deny" {
			tier = TierProhibited
		}
		if rank(tier) > rank(out.Tier) {
			out.Tier, out.Reason = tier, "rule "+c.ID+": "+reason
		}
	}
	out.Action, _ = actionFor(out.Tier)
	if len(ids) > 0 {
		out.Replayable = false
	}
	return out, nil
}
