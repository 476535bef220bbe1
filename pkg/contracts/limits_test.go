package contracts

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// tool.requested records the limits a call found at their bound: ids of
// rules the recorded decision fired, never empty.
func TestToolRequestedLimitsReached(t *testing.T) {
	req := *sampleLedger(t)[4].Event.(*ToolRequested)
	req.PolicyVersion = "firm-policy-3"
	req.RiskTier, req.Action = "prohibited", "deny"
	req.FiredRules = []FiredRule{{ID: "drafts.per_matter_day", Effect: "deny", Reason: "two a day (limit: at most 2 per matter per day; reached)"}}
	req.LimitsReached = []string{"drafts.per_matter_day"}
	l, err := fixedChain().Append(&req)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	back, err := ParseEventLine(l.Raw)
	if err != nil || !slices.Equal(back.Event.(*ToolRequested).LimitsReached, req.LimitsReached) {
		t.Fatalf("round trip: %v", err)
	}
	for _, tc := range []struct {
		name string
		ids  []string
		path string
	}{
		{"an empty id", []string{""}, "payload.limits_reached[0]"},
		{"an id no rule of the line has", []string{"drafts.per_matter_day", "other.limit"}, "payload.limits_reached[1]"},
	} {
		req.LimitsReached = tc.ids
		_, err := fixedChain().Append(&req)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Path != tc.path {
			t.Errorf("%s: %v, want a field error at %s", tc.name, err, tc.path)
		}
	}
	// Absent on every other call: the member is not written.
	req.LimitsReached = nil
	l, err = fixedChain().Append(&req)
	if err != nil || strings.Contains(string(l.Raw), "limits_reached") {
		t.Errorf("a call with no limit reached records the member: %s (%v)", l.Raw, err)
	}
}
