package toolpolicy

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// overlayFile is a deployment's change to the embedded policy, applied
// without a rebuild. It cannot add rules or lower a tier: it can only
// switch rules off (a decision the overlay's version records in every
// Decision) and raise tools to require counsel's approval.
type overlayFile struct {
	Extends         string   `json:"extends"`
	Version         string   `json:"version"`
	Disable         []string `json:"disable,omitempty"`
	RequireApproval []string `json:"require_approval,omitempty"`
}

// overlayVersionPattern keeps "<embedded>+<overlay>" unambiguous.
var overlayVersionPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// LoadDocument parses and validates a policy document: either a full policy
// (as Load), or an overlay of the embedded policy, told apart by its
// "extends" member:
//
//	{"extends": "embedded", "version": "firm-7",
//	 "disable": ["email.attachment_count"],
//	 "require_approval": ["draft_document"]}
//
// disable removes the named rules; require_approval raises the named tools'
// floor to high (a prohibited tool stays prohibited, and the tool is no
// longer replayable). An unknown rule id or an unlisted tool is an error,
// as is any other mistake in the overlay: a bad overlay never falls back to
// the embedded policy, let alone to allowing anything. The result's Version
// is "<embedded version>+<overlay version>". Errors match ErrInvalidPolicy.
func LoadDocument(data []byte) (*Policy, error) {
	var probe map[string]json.RawMessage
	if err := contracts.DecodeStrict(data, &probe); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPolicy, err)
	}
	if _, ok := probe["extends"]; !ok {
		return Load(data)
	}
	if _, ok := probe["limits"]; ok {
		return nil, invalid("limits", "an overlay cannot add limits (it may disable one by id)")
	}
	var o overlayFile
	if err := contracts.DecodeStrict(data, &o); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPolicy, err)
	}
	if o.Extends != "embedded" {
		return nil, invalid("extends", `an overlay extends "embedded" (the policy compiled into the binary)`)
	}
	if !overlayVersionPattern.MatchString(o.Version) {
		return nil, invalid("version", "an overlay version must match %s", overlayVersionPattern)
	}
	base, err := Embedded()
	if err != nil {
		return nil, err
	}
	q, err := base.overlay(&o)
	if err != nil {
		return nil, err
	}
	q.digest = digestOf(data)
	return q, nil
}

// overlay returns a copy of p with o applied. Compiled rules are immutable
// and shared.
func (p *Policy) overlay(o *overlayFile) (*Policy, error) {
	q := &Policy{version: p.version + "+" + o.Version, def: p.def, tools: make(map[string]*toolEntry, len(p.tools)), tables: p.tables}
	q.def.rules = nil
	for name, t := range p.tools {
		c := *t
		q.tools[name] = &c
	}
	known := make(map[string]bool, len(p.rules)+len(p.limits))
	for _, r := range p.rules {
		known[r.id] = true
	}
	for _, l := range p.limits {
		known[l.id] = true
	}
	disabled := make(map[string]bool, len(o.Disable))
	for i, id := range o.Disable {
		path := "disable[" + strconv.Itoa(i) + "]"
		switch {
		case !known[id]:
			return nil, invalid(path, "the embedded policy has no rule %q", id)
		case disabled[id]:
			return nil, invalid(path, "rule %q is disabled twice", id)
		}
		disabled[id] = true
	}
	for _, r := range p.rules {
		if !disabled[r.id] {
			q.rules = append(q.rules, r)
		}
	}
	q.limitTables = p.limitTables
	for _, l := range p.limits {
		if !disabled[l.id] {
			q.limits = append(q.limits, l)
		}
	}
	q.indexLimits()
	raised := make(map[string]bool, len(o.RequireApproval))
	for i, name := range o.RequireApproval {
		path := "require_approval[" + strconv.Itoa(i) + "]"
		t, ok := q.tools[name]
		switch {
		case !ok:
			// An unlisted tool already gets the default, which never allows.
			return nil, invalid(path, "tool %q is not listed in the embedded policy", name)
		case raised[name]:
			return nil, invalid(path, "tool %q is named twice", name)
		}
		raised[name] = true
		if rank(t.tier) < rank(TierHigh) {
			t.tier, t.replayable = TierHigh, false
			t.reason += " Overlay " + o.Version + " requires counsel's approval for this tool."
		}
	}
	q.index()
	return q, nil
}
