package handlers_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// The runs routes record a bad path or query at the request stage and a
// failed read at ledger_read (issue 10): the dashboard's failure_stage says
// whose fault it was.
func TestRunsStages(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.startHeld(t)
	stageOf := func(name string, ev *event, status int) string {
		t.Helper()
		before := len(s.logs.String())
		p := s.wantProblem(name, s.call(ev), status)
		var env struct {
			FailureStage string `json:"failure_stage"`
			FailureID    string `json:"failure_id"`
		}
		for _, line := range strings.Split(s.logs.String()[before:], "\n") {
			if json.Unmarshal([]byte(line), &env) == nil && env.FailureID == p.FailureID {
				return env.FailureStage
			}
		}
		t.Fatalf("%s: no logged envelope for failure %s", name, p.FailureID)
		return ""
	}
	for _, tc := range []struct {
		name   string
		ev     *event
		status int
		stage  string
	}{
		{"unknown query", fixture(t, "get-run.json").runPath(h.runID, "").query(map[string]string{"bogus": "1"}), 400, "request"},
		{"bad consistent", fixture(t, "get-run.json").runPath(h.runID, "").query(map[string]string{"consistent": "maybe"}), 400, "request"},
		{"events limit", fixture(t, "get-run-events.json").runPath(h.runID, "").query(map[string]string{"limit": "0"}), 400, "request"},
		{"approvals status", fixture(t, "list-approvals.json").query(map[string]string{"status": "all"}), 400, "request"},
		{"run of another firm", fixture(t, "get-run.json").runPath(h.runID, "").claim("firm_id", otherFirm), 404, "ledger_read"},
	} {
		if got := stageOf(tc.name, tc.ev, tc.status); got != tc.stage {
			t.Errorf("%s: failure_stage %q, want %q", tc.name, got, tc.stage)
		}
	}
}
