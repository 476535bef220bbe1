package provenance

import (
	"strconv"
)

// Effect is what the policy is to do with a call, given its findings.
type Effect string

const (
	// EffectNone: every destination has a trusted origin.
	EffectNone Effect = ""
	// EffectUntrusted: some destination appears only in tool results;
	// the call is raised at least to counsel.
	EffectUntrusted Effect = "untrusted"
	// EffectUnknown: some destination appears nowhere, or could not be
	// read; the call is raised (fail closed).
	EffectUnknown Effect = "unknown"
)

// The rules a Decision fires, as they will appear in FiredRules.
const (
	RuleUntrusted = "provenance.untrusted_destination"
	RuleUnknown   = "provenance.unknown_destination"
)

// Decision is Verdict's answer. For EffectUntrusted, Origin is the first
// tool result (by seq) the destination at Pointer came from.
type Decision struct {
	Effect  Effect
	Rule    string
	Pointer string
	Kind    Kind
	Origin  Origin
	// Reason names the pointer, and the seq and tool, never the value:
	// reasons are recorded and logged, and the value is privileged. The
	// desk shows the value from the opened input.
	Reason string
}

// Verdict is the effect findings call for. Unknown takes precedence over
// untrusted, both being raised: a destination the run cannot account for
// is the stronger reason to stop, and is the one counsel must look at
// without a document to compare it with. Among findings of the same
// effect, the first in declaration and input order is named.
func Verdict(findings []Finding) Decision {
	var untrusted *Finding
	for i := range findings {
		f := &findings[i]
		if f.Unreadable != "" {
			return Decision{Effect: EffectUnknown, Rule: RuleUnknown, Pointer: f.Pointer, Kind: f.Kind,
				Reason: "the " + string(f.Kind) + " at " + f.Pointer + " cannot be traced (" + f.Unreadable + ")"}
		}
		if len(f.Origins) == 0 {
			return Decision{Effect: EffectUnknown, Rule: RuleUnknown, Pointer: f.Pointer, Kind: f.Kind,
				Reason: "the " + string(f.Kind) + " at " + f.Pointer + " appears in no source of the run"}
		}
		if untrusted == nil && !f.Trusted() {
			untrusted = f
		}
	}
	if untrusted == nil {
		return Decision{}
	}
	o := untrusted.Origins[0] // sorted: the first result by seq
	return Decision{Effect: EffectUntrusted, Rule: RuleUntrusted, Pointer: untrusted.Pointer, Kind: untrusted.Kind, Origin: o,
		Reason: "the " + string(untrusted.Kind) + " at " + untrusted.Pointer + " appears only in tool results, first in the result of " +
			o.Tool + " at seq " + strconv.FormatInt(o.Seq, 10)}
}
