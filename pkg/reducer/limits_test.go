package reducer_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// limitPolicy lets drafts run, at most two a matter a day (then denied),
// and drafts naming a "rush" subject at most five a run an hour (then
// held for counsel).
const limitPolicy = `{"version":"limits-1","default":{"tier":"high","reason":"unlisted"},
	"tools":{"draft_document":{"tier":"medium","reason":"drafts"}},
	"limits":[
	  {"id":"drafts.per_matter_day","tools":["draft_document"],"per":"matter","window":"day","max":2,"then":"deny","reason":"Two drafts a matter a day."},
	  {"id":"drafts.rush","tools":["draft_document"],"when":[{"input":"/subject","op":"equals","value":"rush"}],
	   "per":"run","window":"hour","max":5,"then":"raise:high","reason":"Rush drafts."}]}`

// limitRun is a run whose draft found the matter's limit reached and was
// denied, as the runtime records it; edit changes its tool.requested
// before it is chained.
func limitRun(t *testing.T, p *toolpolicy.Policy, edit func(*contracts.ToolRequested)) []contracts.Line {
	t.Helper()
	input := json.RawMessage(`{"matter_id":"` + matterID + `","subject":"memo"}`)
	hash, err := contracts.InputHash(input)
	if err != nil {
		t.Fatal(err)
	}
	meta := toolpolicy.Metadata{FirmID: firmID, MatterID: matterID, AgentKey: "matter_assistant", UserID: userID}
	raw, sum, err := contracts.RecordMetadata(meta)
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.DecideOrDeny(toolpolicy.Call{Tool: "draft_document", Input: input, Meta: meta}).LimitsReached([]string{"drafts.per_matter_day"})
	if err != nil {
		t.Fatal(err)
	}
	var fired []contracts.FiredRule
	for _, f := range d.FiredRules {
		fired = append(fired, contracts.FiredRule{ID: f.ID, Effect: f.Effect, Reason: f.Reason})
	}
	req := &contracts.ToolRequested{Turn: 1, ToolUseID: "t1", ToolName: "draft_document", Input: input, InputSHA256: hash,
		RiskTier: string(d.Tier), Action: string(d.Action), Reason: d.Reason, MatchedPolicy: d.MatchedPolicy, PolicyVersion: d.PolicyVersion,
		FiredRules: fired, PolicyMetadata: raw, PolicyMetadataSHA256: sum, LimitsReached: []string{"drafts.per_matter_day"}}
	if edit != nil {
		edit(req)
	}
	return buildLines(t, fixedChain(runID), started("1.00"), req,
		&contracts.ToolCompleted{ToolUseID: "t1", ToolName: "draft_document", InputSHA256: hash, Status: contracts.ToolDenied,
			Result: json.RawMessage(`{"error":"denied by policy"}`)},
		&contracts.RunCompleted{StopReason: "end_turn", FinalText: "I could not draft it."})
}

// A call that found a limit at its bound re-derives with the limit
// reached; a record that names a limit the decision does not count, or
// that does not say the limit was reached, does not.
func TestRederiveLimitsReached(t *testing.T) {
	p, err := toolpolicy.Load([]byte(limitPolicy))
	if err != nil {
		t.Fatal(err)
	}
	got, err := reducer.Rederive(limitRun(t, p, nil), p)
	if err != nil {
		t.Fatalf("Rederive: %v", err)
	}
	if len(got) != 1 || got[0].Action != "deny" || got[0].RiskTier != "prohibited" ||
		!slices.Equal(got[0].FiredRules, []string{"drafts.per_matter_day"}) || !slices.Equal(got[0].LimitsReached, []string{"drafts.per_matter_day"}) {
		t.Fatalf("re-derived %+v", got)
	}
	for _, tc := range []struct {
		name string
		edit func(*contracts.ToolRequested)
		want string
	}{
		{"a limit the policy does not have", func(r *contracts.ToolRequested) {
			r.LimitsReached, r.FiredRules[0].ID = []string{"drafts.other"}, "drafts.other"
		}, `limit "drafts.other" does not count this call`},
		{"a limit whose conditions do not count the call", func(r *contracts.ToolRequested) {
			r.LimitsReached, r.FiredRules[0].ID = []string{"drafts.rush"}, "drafts.rush"
		}, `limit "drafts.rush" does not count this call`},
		{"the limit's rule without limits_reached", func(r *contracts.ToolRequested) { r.LimitsReached = nil },
			`recorded tier "prohibited", the policy decides "medium"`},
		{"a raise recorded for a deny limit", func(r *contracts.ToolRequested) {
			r.RiskTier, r.Action, r.FiredRules[0].Effect = "high", "require_approval", "raise:high"
		}, `recorded tier "high", the policy decides "prohibited"`},
		{"another reason", func(r *contracts.ToolRequested) { r.FiredRules[0].Reason = "Two drafts a matter a day." },
			"fired rules"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := reducer.Rederive(limitRun(t, p, tc.edit), p)
			var re *reducer.RederiveError
			if !errors.As(err, &re) || re.Seq != 2 || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Rederive: %v, want a RederiveError at seq 2 saying %q", err, tc.want)
			}
		})
	}
}
