package rie_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/internal/proc"
	"github.com/seed-f6d3920e/warrant/internal/rie"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
)

const (
	module  = "github.com/seed-f6d3920e/warrant"
	modelID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
)

var functions = []string{"invoke", "approve", "resume", "runs", "stream-reduce"}

// repoRoot is two levels up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// fixture reads events/<name>.json as a generic JSON document.
func fixture(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "events", name+".json"))
	if err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	return m
}

func obj(m map[string]any, path ...string) map[string]any {
	for _, p := range path {
		m = m[p].(map[string]any)
	}
	return m
}

// retarget points an API Gateway fixture at run (and approval) ids.
func retarget(t *testing.T, ev map[string]any, oldRun, run, oldApproval, approval string) {
	t.Helper()
	fix := func(s string) string {
		s = strings.ReplaceAll(s, oldRun, run)
		if oldApproval != "" {
			s = strings.ReplaceAll(s, oldApproval, approval)
		}
		return s
	}
	ev["rawPath"] = fix(ev["rawPath"].(string))
	http := obj(ev, "requestContext", "http")
	http["path"] = fix(http["path"].(string))
	if pp, ok := ev["pathParameters"].(map[string]any); ok {
		for k, v := range pp {
			pp[k] = fix(v.(string))
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// buildAll builds the five bootstraps for the host with one go build.
func buildAll(t *testing.T, ctx context.Context, dir string) map[string]string {
	t.Helper()
	pkgs := map[string]string{}
	for _, fn := range functions {
		pkgs[fn] = module + "/functions/" + fn
	}
	out, err := rie.BuildAll(ctx, pkgs, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range functions {
		if st, err := os.Stat(out[fn]); err != nil || st.Size() == 0 || filepath.Base(out[fn]) != "bootstrap" {
			t.Fatalf("%s: bootstrap %q: %v", fn, out[fn], err)
		}
	}
	return out
}

func invokeAPI(t *testing.T, ctx context.Context, e *rie.Emulator, ev map[string]any) (events.APIGatewayV2HTTPResponse, map[string]any) {
	t.Helper()
	out, err := e.Invoke(ctx, mustJSON(t, ev))
	if err != nil {
		t.Fatalf("%s: invoke: %v\nlog tail:\n%s", e.Name(), err, e.LogTail(4096))
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("%s: response %s: %v", e.Name(), out, err)
	}
	var body map[string]any
	if strings.HasPrefix(resp.Headers["Content-Type"], "application/json") || strings.HasPrefix(resp.Headers["Content-Type"], "application/problem+json") {
		if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
			t.Fatalf("%s: body %q: %v", e.Name(), resp.Body, err)
		}
	}
	return resp, body
}

func wantStatus(t *testing.T, what string, resp events.APIGatewayV2HTTPResponse, want int) {
	t.Helper()
	if resp.StatusCode != want {
		t.Fatalf("%s: status %d, want %d; body %s", what, resp.StatusCode, want, resp.Body)
	}
}

// TestFunctionsUnderEmulator runs each of the five functions' bootstraps under
// its own emulator against minidyn and the fake Bedrock, and walks the
// events/ fixtures through a held, approved and resumed run.
func TestFunctionsUnderEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds five bootstraps; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bins := buildAll(t, ctx, filepath.Join(dir, "build"))

	ddb := dynamotest.Minidyn(t) // a real loopback listener the bootstraps can reach
	table := dynamotest.NewTable(t, ddb)
	model, err := bedrocktest.NewOn("127.0.0.1:0", bedrocktest.DemoScript())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(model.Close)

	common := []string{
		"AWS_ENDPOINT_URL_DYNAMODB=" + ddb.URL,
		"AWS_ENDPOINT_URL_BEDROCK_RUNTIME=" + model.URL(),
		"AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"LOG_LEVEL=INFO",
		"MODEL_ID=" + modelID,
	}
	var (
		pidsMu sync.Mutex
		pids   []int
	)
	start := func(name string, env []string) (*rie.Emulator, string) {
		t.Helper()
		logPath := filepath.Join(dir, name+".log")
		e, err := rie.Start(ctx, rie.Options{Name: name, Bootstrap: bins[strings.TrimSuffix(name, "-noconfig")], Env: env,
			LogPath: logPath, Timeout: 60 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			pidsMu.Lock()
			pids = append(pids, e.PIDs()...)
			pidsMu.Unlock()
			if err := e.Stop(); err != nil {
				t.Error(err)
			}
			if t.Failed() {
				b, _ := os.ReadFile(logPath)
				t.Logf("%s log:\n%s", name, b)
			}
		})
		return e, logPath
	}
	// Registered first, so it runs after every emulator's Stop.
	t.Cleanup(func() {
		pidsMu.Lock()
		defer pidsMu.Unlock()
		if len(pids) < 2*len(functions) {
			t.Errorf("saw only PIDs %v: each emulator should have started a bootstrap", pids)
		}
		for _, pid := range pids {
			if proc.Alive(pid) {
				t.Errorf("process %d is still running after Stop", pid)
			}
		}
	})

	emus := map[string]*rie.Emulator{}
	for _, fn := range functions {
		emus[fn], _ = start(fn, append(append([]string{}, common...), "TABLE_NAME="+table))
	}
	for _, fn := range functions {
		for _, other := range functions {
			if fn != other && emus[fn].RuntimeAPIAddr() == emus[other].RuntimeAPIAddr() {
				t.Fatalf("%s and %s share the runtime API address", fn, other)
			}
		}
	}

	// invoke: the demo model files a motion, which the policy holds.
	resp, run := invokeAPI(t, ctx, emus["invoke"], fixture(t, "invoke"))
	wantStatus(t, "invoke", resp, 202)
	if run["status"] != "held" {
		t.Fatalf("invoke: status %v, want held: %s", run["status"], resp.Body)
	}
	runID := run["run_id"].(string)
	pending := run["pending_approval"].(map[string]any)
	approvalID, hash := pending["approval_request_id"].(string), pending["tool_input_hash"].(string)
	if pending["tool_name"] != bedrocktest.ToolFileCourtDocument || len(hash) != 64 {
		t.Fatalf("invoke: pending approval %v", pending)
	}

	// approve, with the run's ids and the hash counsel was shown.
	ev := fixture(t, "approve")
	pp := obj(ev, "pathParameters")
	retarget(t, ev, pp["run_id"].(string), runID, pp["approval_id"].(string), approvalID)
	ev["body"] = string(mustJSON(t, map[string]string{"decision": "approve", "tool_input_hash": hash}))
	resp, w := invokeAPI(t, ctx, emus["approve"], ev)
	wantStatus(t, "approve", resp, 200)
	if w["status"] != "approved" {
		t.Fatalf("approve: warrant %v", w)
	}

	// resume: the filing executes, the run completes.
	ev = fixture(t, "resume")
	retarget(t, ev, obj(ev, "pathParameters")["run_id"].(string), runID, "", "")
	ev["body"] = string(mustJSON(t, map[string]string{"approval_request_id": approvalID}))
	resp, run = invokeAPI(t, ctx, emus["resume"], ev)
	wantStatus(t, "resume", resp, 200)
	if run["status"] != "completed" || run["final_text"] != bedrocktest.DemoFiledText {
		t.Fatalf("resume: %s", resp.Body)
	}
	// A replay is a precise 409, never a second filing.
	resp, _ = invokeAPI(t, ctx, emus["resume"], ev)
	wantStatus(t, "resume replay", resp, 409)

	// runs: the run, its ledger and the (now empty) pending list.
	getRun := fixture(t, "get-run")
	retarget(t, getRun, obj(getRun, "pathParameters")["run_id"].(string), runID, "", "")
	resp, run = invokeAPI(t, ctx, emus["runs"], getRun)
	wantStatus(t, "get-run", resp, 200)
	if run["run_id"] != runID {
		t.Fatalf("get-run: %s", resp.Body)
	}
	ev = fixture(t, "get-run-events")
	retarget(t, ev, obj(ev, "pathParameters")["run_id"].(string), runID, "", "")
	resp, _ = invokeAPI(t, ctx, emus["runs"], ev)
	wantStatus(t, "get-run-events", resp, 200)
	lines := strings.Split(strings.TrimSpace(resp.Body), "\n")
	if len(lines) < 5 || !strings.Contains(resp.Body, `"type":"run.completed"`) {
		t.Fatalf("get-run-events: %d lines:\n%s", len(lines), resp.Body)
	}
	resp, _ = invokeAPI(t, ctx, emus["runs"], fixture(t, "list-approvals"))
	wantStatus(t, "list-approvals", resp, 200)

	// stream-reduce: the fixture as it is names a run this table does not
	// hold, so its records are reported as failures; pointed at our run it
	// folds the whole ledger into the projection.
	sr := fixture(t, "stream-reduce")
	out, err := emus["stream-reduce"].Invoke(ctx, mustJSON(t, sr))
	if err != nil {
		t.Fatalf("stream-reduce: %v", err)
	}
	var br events.DynamoDBEventResponse
	if err := json.Unmarshal(out, &br); err != nil {
		t.Fatalf("stream-reduce: %s: %v", out, err)
	}
	if n := len(sr["Records"].([]any)); len(br.BatchItemFailures) != n {
		t.Fatalf("stream-reduce (unknown run): %d failures, want %d: %s", len(br.BatchItemFailures), n, out)
	}
	raw, _ := json.Marshal(sr)
	firm := obj(fixture(t, "invoke"), "requestContext", "authorizer", "jwt", "claims")["firm_id"].(string)
	oldPK := obj(sr["Records"].([]any)[0].(map[string]any), "dynamodb", "Keys", "PK")["S"].(string)
	raw = bytes.ReplaceAll(raw, []byte(oldPK), []byte("FIRM#"+firm+"#RUN#"+runID))
	out, err = emus["stream-reduce"].Invoke(ctx, raw)
	if err != nil {
		t.Fatalf("stream-reduce: %v", err)
	}
	br = events.DynamoDBEventResponse{}
	if err := json.Unmarshal(out, &br); err != nil || len(br.BatchItemFailures) != 0 {
		t.Fatalf("stream-reduce (our run): %s (%v)", out, err)
	}
	resp, run = invokeAPI(t, ctx, emus["runs"], getRun)
	wantStatus(t, "get-run after reduce", resp, 200)
	if got := run["projected_through_seq"].(float64); int(got) != len(lines) || run["status"] != "completed" {
		t.Fatalf("get-run after reduce: projected_through_seq %v status %v, want %d completed", got, run["status"], len(lines))
	}
}

// TestConfigFailure starts invoke without TABLE_NAME: the invocation fails
// and the function logs one failure envelope with failure_kind config_invalid.
func TestConfigFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a bootstrap; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin, err := rie.Build(ctx, module+"/functions/invoke", filepath.Join(dir, "invoke"))
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "invoke.log")
	e, err := rie.Start(ctx, rie.Options{Name: "invoke", Bootstrap: bin, LogPath: logPath,
		Env: []string{"LOG_LEVEL=INFO", "MODEL_ID=" + modelID, "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9"}})
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	defer func() {
		pids = e.PIDs()
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
		for _, pid := range pids {
			if proc.Alive(pid) {
				t.Errorf("process %d is still running after Stop", pid)
			}
		}
	}()
	out, err := e.Invoke(ctx, mustJSON(t, fixture(t, "invoke")))
	if err == nil {
		t.Fatalf("invoke without TABLE_NAME answered %s", out)
	}
	var fe *rie.FunctionError
	if !errors.As(err, &fe) || fe.Type != "Runtime.ExitError" {
		t.Fatalf("invoke without TABLE_NAME: %v, want a Runtime.ExitError function error", err)
	}
	t.Logf("invocation failed as expected: %v", err)

	var envelope map[string]any
	if !waitFor(5*time.Second, func() bool {
		envelope = findEnvelope(logPath)
		return envelope != nil
	}) {
		b, _ := os.ReadFile(logPath)
		t.Fatalf("no failure envelope in the emulator log:\n%s", b)
	}
	if envelope["failure_kind"] != "config_invalid" || envelope["failure_stage"] != "config" {
		t.Fatalf("envelope %v", envelope)
	}
	if testing.Verbose() {
		b, _ := os.ReadFile(logPath)
		t.Logf("emulator log:\n%s", b)
	}
}

// findEnvelope returns the first JSON log line carrying a failure_kind.
func findEnvelope(path string) map[string]any {
	b, _ := os.ReadFile(path)
	for _, line := range strings.Split(string(b), "\n") {
		i := strings.IndexByte(line, '{')
		if i < 0 || !strings.Contains(line, `"failure_kind"`) {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(line[i:]), &m) == nil {
			return m
		}
	}
	return nil
}

func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// TestSerializedInvokes sends concurrent invocations to one emulator: they
// are queued, and every one is answered.
func TestSerializedInvokes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a bootstrap; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin, err := rie.Build(ctx, module+"/functions/runs", filepath.Join(dir, "runs"))
	if err != nil {
		t.Fatal(err)
	}
	ddb := dynamotest.Minidyn(t)
	table := dynamotest.NewTable(t, ddb)
	e, err := rie.Start(ctx, rie.Options{Name: "runs", Bootstrap: bin, Log: &bytes.Buffer{},
		Env: []string{"TABLE_NAME=" + table, "AWS_ENDPOINT_URL_DYNAMODB=" + ddb.URL, "LOG_LEVEL=INFO"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	ev := mustJSON(t, fixture(t, "list-approvals"))
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := range 6 {
		wg.Go(func() {
			out, err := e.Invoke(ctx, ev)
			if err == nil && !bytes.Contains(out, []byte(`"statusCode":200`)) {
				err = fmt.Errorf("call %s: %s", strconv.Itoa(i), out)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestBuildFailure: a bootstrap that does not compile is a *BuildError
// carrying the compiler's message.
func TestBuildFailure(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { undefinedThing() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := rie.Build(context.Background(), src, filepath.Join(dir, "out"))
	var be *rie.BuildError
	if !errors.As(err, &be) {
		t.Fatalf("Build = %v, want a *BuildError", err)
	}
	if !strings.Contains(be.FirstLine(), "undefined: undefinedThing") || !strings.Contains(err.Error(), "undefinedThing") {
		t.Fatalf("build error %q (first line %q) does not carry the compiler output", err, be.FirstLine())
	}
}
