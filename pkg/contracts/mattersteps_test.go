package contracts

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// tool.requested records the steps of the matter's other runs that a prior
// condition with scope "matter" read (run, seq, hash, tool, status), or
// that the matter's record could not be read; each member is validated.
func TestToolRequestedMatterSteps(t *testing.T) {
	req := *sampleLedger(t)[4].Event.(*ToolRequested)
	hash := strings.Repeat("ab", 32)
	req.MatterSteps = []MatterStep{{RunID: "run-1", Seq: 4, Hash: hash, Tool: "check_conflicts", Status: ToolSuccess},
		{RunID: "run-2", Seq: 9, Hash: hash, Tool: "check_conflicts", Status: ToolSuccess, Unread: true}}
	l, err := fixedChain().Append(&req)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	back, err := ParseEventLine(l.Raw)
	if err != nil || !slices.Equal(back.Event.(*ToolRequested).MatterSteps, req.MatterSteps) {
		t.Fatalf("round trip: %v", err)
	}
	good := req.MatterSteps[0]
	for _, tc := range []struct {
		name   string
		step   MatterStep
		unread bool
		path   string
	}{
		{"no run", MatterStep{Seq: 4, Hash: hash, Tool: "t", Status: ToolSuccess}, false, "payload.matter_steps[0].run_id"},
		{"seq 0", MatterStep{RunID: "r", Hash: hash, Tool: "t", Status: ToolSuccess}, false, "payload.matter_steps[0].seq"},
		{"a bad hash", MatterStep{RunID: "r", Seq: 4, Hash: "x", Tool: "t", Status: ToolSuccess}, false, "payload.matter_steps[0].hash"},
		{"no tool", MatterStep{RunID: "r", Seq: 4, Hash: hash, Status: ToolSuccess}, false, "payload.matter_steps[0].tool"},
		{"an unknown status", MatterStep{RunID: "r", Seq: 4, Hash: hash, Tool: "t", Status: ToolUnknown}, false, "payload.matter_steps[0].status"},
		{"unread, with steps", good, true, "payload.matter_unread"},
	} {
		req.MatterSteps, req.MatterUnread = []MatterStep{tc.step}, tc.unread
		_, err := fixedChain().Append(&req)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Path != tc.path {
			t.Errorf("%s: %v, want a field error at %s", tc.name, err, tc.path)
		}
	}
	req.MatterSteps, req.MatterUnread = nil, true
	if l, err = fixedChain().Append(&req); err != nil || !strings.Contains(string(l.Raw), `"matter_unread":true`) {
		t.Errorf("unread: %s (%v)", l.Raw, err)
	}
	req.MatterUnread = false
	if l, err = fixedChain().Append(&req); err != nil || strings.Contains(string(l.Raw), "matter_steps") || strings.Contains(string(l.Raw), "matter_unread") {
		t.Errorf("a call no matter prior decided records the members: %s (%v)", l.Raw, err)
	}
}
