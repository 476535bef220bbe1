package agent

import (
	"context"
	"time"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// counterGrace is how long a counter outlives its window before the store
// may forget it.
const counterGrace = 24 * time.Hour

// counters are the counts the policy's charges on a call add to when its
// effect is claimed: per the run, its matter or its firm, over the UTC hour
// or day the claim's clock is in. bounded: an allowed call, refused at a
// limit's max; otherwise a call counsel signed, counted only (counsel's
// signature is not held to a limit). Deny limits come first, so the limit
// a refused claim names (the first at its bound, in this order) is a deny
// whenever one is reached.
func (s *session) counters(charges []toolpolicy.LimitCharge, bounded bool) []warrant.Counter {
	if len(charges) == 0 {
		return nil
	}
	now := s.b.cfg.Now().UTC()
	var deny, raise []warrant.Counter
	for _, c := range charges {
		scope := s.meta.RunID
		switch c.Per {
		case toolpolicy.PerMatter:
			scope = s.meta.MatterID
		case toolpolicy.PerFirm:
			scope = s.meta.FirmID
		}
		start, length := now.Truncate(time.Hour), time.Hour
		if c.Window == toolpolicy.WindowDay {
			start, length = time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC), 24*time.Hour
		}
		k := warrant.Counter{Limit: c.ID, Per: c.Per, Scope: scope, Window: start, Expires: start.Add(length + counterGrace)}
		if bounded {
			k.Max = c.Max
		}
		if c.Then == "deny" {
			deny = append(deny, k)
		} else {
			raise = append(raise, k)
		}
	}
	return append(deny, raise...)
}

// limitReached handles an allowed call whose claim found the limit at its
// bound (nothing of the claim was written): the call is decided again with
// the limit reached (d, the decision made, with the limit's rule fired),
// recorded so on its tool.requested (limits_reached), and then denied or
// held for counsel exactly as a policy decision would be.
func (s *session) limitReached(ctx context.Context, req *contracts.ToolRequested, tool registeredTool, d toolpolicy.Decision, limit string,
	finish func(status, msg string) (*contracts.ToolCompleted, bool, error)) (*contracts.ToolCompleted, bool, error) {
	d, err := d.LimitsReached([]string{limit})
	if err != nil {
		// The store named a limit the decision did not charge: a bug.
		return nil, false, staged(failure.StageToolPolicy, failure.Wrap(failure.KindInternal, "a limit the call was not counted by refused its claim", err))
	}
	req.RiskTier, req.Action, req.Reason = string(d.Tier), string(d.Action), d.Reason
	req.FiredRules, req.LimitsReached = firedRules(d.FiredRules), []string{limit}
	if d.Action == toolpolicy.ActionRequireApproval {
		return s.warranted(ctx, req, tool, finish)
	}
	return finish(contracts.ToolDenied, "denied by policy: "+d.Reason)
}
