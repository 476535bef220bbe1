package config

import (
	"strconv"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// CheckAgents holds the agents to the catalog and the price table, as the
// brain does when it is built: every tool an agent names is a tool of the
// catalog, and every agent's model (its model_id, else defaultModel) has a
// price. Each fault names the agent's field in agentsDoc; an empty
// defaultModel leaves agents without a model_id unchecked (the stack's
// MODEL_ID, which the functions check when they start).
func CheckAgents(agentsDoc Document, agents *catalog.Agents, catalogDoc Document, cat *catalog.Catalog,
	prices *pricing.Table, defaultModel string) []*DocumentError {
	var faults []*DocumentError
	for _, key := range agents.Keys() {
		a := agents.Agents[key]
		for i, tool := range a.Tools {
			if _, ok := cat.Tools[tool]; !ok {
				// An agent's tools are tool names (ParseAgents holds them to
				// the catalog's pattern): naming one quotes no free text.
				faults = append(faults, agentsDoc.At("agents."+key+".tools["+strconv.Itoa(i)+"]",
					"agent "+key+" names tool "+tool+", which "+catalogDoc.Name()+" does not have", ""))
			}
		}
		model, field := a.ModelID, "agents."+key+".model_id"
		if model == "" {
			model, field = defaultModel, "agents."+key
		}
		if model == "" || prices == nil {
			continue
		}
		if _, err := prices.Price(model); err != nil {
			reason := "agent " + key + "'s model has no price in the price table (PRICING_FILE, else the embedded table), so its runs could not be capped"
			if a.ModelID == "" {
				reason = "agent " + key + " names no model_id, and the stack's MODEL_ID has no price in the price table, so its runs could not be capped"
			}
			faults = append(faults, agentsDoc.At(field, reason, "model "+strconv.Quote(model)))
		}
	}
	return faults
}

// CheckPolicy holds the catalog to the risk policy: every catalog tool has
// an entry of its own in the policy's tools. A tool without one is not
// refused when the functions start: every call of it takes the policy's
// default tier, which is never allow (high: each call waits for counsel's
// warrant; prohibited, the embedded policy's: each call is denied). So it is
// a fault of warrant config check, not of a function's start.
func CheckPolicy(catalogDoc Document, cat *catalog.Catalog, policyDoc Document, policy *toolpolicy.Policy) []*DocumentError {
	var faults []*DocumentError
	for _, name := range cat.Names() {
		tier, listed := policy.Floor(name)
		if listed {
			continue
		}
		what := "every call of it waits for counsel's warrant"
		if tier == toolpolicy.TierProhibited {
			what = "every call of it is denied"
		}
		faults = append(faults, catalogDoc.At("tools."+name,
			"tool "+name+" has no entry in the tools of "+policyDoc.Name()+": it takes the policy's default tier, "+string(tier)+", and "+what, ""))
	}
	return faults
}
