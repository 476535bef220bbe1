package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// Issue 25 item 1: run.failed of kind tool_changed names the changed tool
// with the pinned and the current schema hash; the record parses strictly,
// a line of another kind carries none, and a run.failed written before
// (no tool_change) still parses.
func TestRunFailedToolChange(t *testing.T) {
	pinned, current := strings.Repeat("a1", 32), strings.Repeat("b2", 32)
	changed := func(c failure.ToolChange) *RunFailed {
		return &RunFailed{ErrorClass: "*failure.Error", ErrorMessage: "m", FailureStage: "resume", FailureKind: "tool_changed",
			Failure: json.RawMessage(`{}`), ToolChange: &c}
	}
	good := failure.ToolChange{Tool: "file_court_document", Server: "dms", PinnedSchemaSHA256: pinned, CurrentSchemaSHA256: current,
		ApprovalRequestID: uApprove}
	l, err := fixedChain().Append(changed(good))
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseEventLine(l.Raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Event.(*RunFailed).ToolChange; got == nil || *got != good {
		t.Fatalf("read back %+v, want %+v", got, good)
	}
	gone := good
	gone.CurrentSchemaSHA256, gone.ApprovalRequestID = "", ""
	if _, err := fixedChain().Append(changed(gone)); err != nil {
		t.Fatalf("a tool the system no longer lists: %v", err)
	}
	old := &RunFailed{ErrorClass: "*failure.Error", ErrorMessage: "m", FailureStage: "tool_execute", FailureKind: "tool_error", Failure: json.RawMessage(`{}`)}
	ol, err := fixedChain().Append(old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseEventLine(ol.Raw); err != nil {
		t.Fatalf("a run.failed of before: %v", err)
	}

	for name, c := range map[string]struct {
		ev   *RunFailed
		path string
	}{
		"tool_changed naming no tool":  {func() *RunFailed { f := changed(good); f.ToolChange = nil; return f }(), "payload.tool_change"},
		"another kind naming one":      {func() *RunFailed { f := changed(good); f.FailureKind = "tool_error"; return f }(), "payload.tool_change"},
		"no tool name":                 {changed(failure.ToolChange{Server: "dms", PinnedSchemaSHA256: pinned}), "payload.tool_change.tool_name"},
		"a server name with a newline": {changed(failure.ToolChange{Tool: "t", Server: "d\nms", PinnedSchemaSHA256: pinned}), "payload.tool_change.tool_server"},
		"a pin that is no hash":        {changed(failure.ToolChange{Tool: "t", Server: "dms", PinnedSchemaSHA256: "A1"}), "payload.tool_change.pinned_schema_sha256"},
		"a current hash that is none": {changed(failure.ToolChange{Tool: "t", Server: "dms", PinnedSchemaSHA256: pinned, CurrentSchemaSHA256: "x"}),
			"payload.tool_change.current_schema_sha256"},
		"no change at all": {changed(failure.ToolChange{Tool: "t", Server: "dms", PinnedSchemaSHA256: pinned, CurrentSchemaSHA256: pinned}),
			"payload.tool_change.current_schema_sha256"},
		"a warrant that is no id": {changed(failure.ToolChange{Tool: "t", Server: "dms", PinnedSchemaSHA256: pinned, ApprovalRequestID: "w-1"}),
			"payload.tool_change.approval_request_id"},
	} {
		_, err := fixedChain().Append(c.ev)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Path != c.path {
			t.Errorf("%s: %v, want an error at %s", name, err, c.path)
		}
	}

	// A member the record does not know is refused, as everywhere.
	forged := reseal(t, bytes.Replace(l.Raw, []byte(`"tool_server":"dms"`), []byte(`"tool_server":"dms","note":"x"`), 1))
	if _, err := ParseEventLine(forged); err == nil {
		t.Fatal("a tool_change with an unknown member parsed")
	}
}
