package failure_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// checkEMF validates line against the EMF specification's rules that matter
// here: one JSON object, _aws.Timestamp in epoch milliseconds, every
// dimension key a non-empty string member of the root, every metric a
// numeric root member.
func checkEMF(t *testing.T, line string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, line)
	}
	if dec.More() {
		t.Fatalf("data after the JSON object: %s", line)
	}
	aws, ok := root["_aws"].(map[string]any)
	if !ok {
		t.Fatalf("_aws missing: %s", line)
	}
	if ts, ok := aws["Timestamp"].(json.Number); !ok {
		t.Errorf("Timestamp = %v", aws["Timestamp"])
	} else if _, err := ts.Int64(); err != nil {
		t.Errorf("Timestamp %v is not an integer", ts)
	}
	directives, ok := aws["CloudWatchMetrics"].([]any)
	if !ok || len(directives) != 1 {
		t.Fatalf("CloudWatchMetrics = %v", aws["CloudWatchMetrics"])
	}
	d := directives[0].(map[string]any)
	if d["Namespace"] != "Warrant" {
		t.Errorf("Namespace = %v", d["Namespace"])
	}
	if got := fmt.Sprint(d["Dimensions"]); got != "[[failure_kind failure_stage]]" {
		t.Errorf("Dimensions = %s", got)
	}
	for _, set := range d["Dimensions"].([]any) {
		for _, key := range set.([]any) {
			if v, ok := root[key.(string)].(string); !ok || v == "" {
				t.Errorf("dimension %v = %v, want non-empty string at root", key, root[key.(string)])
			}
		}
	}
	metrics := d["Metrics"].([]any)
	if len(metrics) != 1 || fmt.Sprint(metrics[0]) != "map[Name:Failures Unit:Count]" {
		t.Errorf("Metrics = %v", metrics)
	}
	if v, ok := root["Failures"].(json.Number); !ok || v.String() != "1" {
		t.Errorf("Failures = %v", root["Failures"])
	}
	return root
}

func TestLogIsOneEMFLineWithEveryField(t *testing.T) {
	env := fixed.Build(failure.Classified(failure.KindModelThrottled, code("ThrottlingException")), failure.StageModelCall, "agent.Loop", ident)
	var buf bytes.Buffer
	failure.NewLogger(&buf).Log(context.Background(), env)

	out := buf.String()
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("want exactly one line, got %q", out)
	}
	root := checkEMF(t, out)

	created, _ := time.Parse(time.RFC3339, env.CreatedAt)
	if got := root["_aws"].(map[string]any)["Timestamp"].(json.Number).String(); got != fmt.Sprint(created.UnixMilli()) {
		t.Errorf("Timestamp = %s, want created_at %d", got, created.UnixMilli())
	}
	envJSON, _ := json.Marshal(env)
	var fields map[string]any
	dec := json.NewDecoder(bytes.NewReader(envJSON))
	dec.UseNumber()
	if err := dec.Decode(&fields); err != nil {
		t.Fatal(err)
	}
	for k, v := range fields {
		if fmt.Sprint(root[k]) != fmt.Sprint(v) {
			t.Errorf("%s = %v, want %v", k, root[k], v)
		}
	}
	if _, ok := root["time"]; ok {
		t.Error("slog time key should be dropped in favour of created_at")
	}
}

func TestLogRepairsDimensions(t *testing.T) {
	var buf bytes.Buffer
	failure.NewLogger(&buf).Log(context.Background(), failure.Envelope{CreatedAt: "garbage"})
	root := checkEMF(t, buf.String())
	if root["failure_kind"] != "internal" || root["failure_stage"] != "unknown" {
		t.Errorf("dimensions = %v / %v", root["failure_kind"], root["failure_stage"])
	}
}

func TestLogConcurrent(t *testing.T) {
	var buf bytes.Buffer // slog's handler serialises writes
	l := failure.NewLogger(&buf)
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			id := ident
			id.RunID = fmt.Sprint("run-", i)
			l.Log(context.Background(), failure.Build(context.Canceled, failure.StageInvoke, "c", id))
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 32 {
		t.Fatalf("got %d lines", len(lines))
	}
	for _, line := range lines {
		checkEMF(t, line)
	}
}

// Issue 25 item 1: a tool_changed envelope logs its tool_change (the
// tool, its server, both schema hashes, the warrant) on the same line as
// the metric; an envelope without one logs no such member.
func TestLogCarriesToolChange(t *testing.T) {
	env := fixed.Build(failure.New(failure.KindToolChanged, ""), failure.StageResume, "agent", ident)
	env.ToolChange = &failure.ToolChange{Tool: "file_court_document", Server: "dms", PinnedSchemaSHA256: strings.Repeat("a1", 32),
		CurrentSchemaSHA256: strings.Repeat("b2", 32), ApprovalRequestID: "7d444840-9dc0-4d5c-a4a1-1e2b3c4d5e6f"}
	var buf bytes.Buffer
	failure.NewLogger(&buf).Log(context.Background(), env)
	root := checkEMF(t, buf.String())
	raw, _ := json.Marshal(root["tool_change"])
	var got failure.ToolChange
	if err := json.Unmarshal(raw, &got); err != nil || got != *env.ToolChange || root["failure_kind"] != "tool_changed" {
		t.Fatalf("logged tool_change %s (kind %v), want %+v", raw, root["failure_kind"], *env.ToolChange)
	}
	buf.Reset()
	env.ToolChange = nil
	failure.NewLogger(&buf).Log(context.Background(), env)
	if root := checkEMF(t, buf.String()); root["tool_change"] != nil {
		t.Fatalf("an envelope without a tool change logged one: %s", buf.String())
	}
}
