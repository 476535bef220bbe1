package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant/internal/proc"
	"github.com/seed-f6d3920e/warrant/internal/walkthrough"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
)

// TestMain lets the tests run this binary as localapi itself: with
// LOCALAPI_TEST_MAIN=1 it is main, not the test runner (no second build).
func TestMain(m *testing.M) {
	if os.Getenv("LOCALAPI_TEST_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	dynamotest.Main(m) // stops the moto_server a test started
}

const repo = "../.."

// localapi runs this test binary as localapi from the repository root.
func localapi(ctx context.Context, args ...string) *exec.Cmd {
	if !slices.Contains(args, "-tools-addr") {
		// Never the developer's 127.0.0.1:3001 (a stack of theirs may hold it).
		args = append(args, "-tools-addr", "127.0.0.1:0")
	}
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "LOCALAPI_TEST_MAIN=1")
	// Never the caller's endpoints or real Bedrock in a test.
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool {
		return strings.HasPrefix(kv, "DYNAMODB_ENDPOINT=") || strings.HasPrefix(kv, "MODEL_BACKEND=") || strings.HasPrefix(kv, "TABLE_NAME=")
	})
	cmd.SysProcAttr = proc.Group()
	cmd.Cancel = func() error { proc.KillGroup(cmd.Process.Pid, syscall.SIGKILL); return nil }
	return cmd
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestDemoHeadless brings the whole stack up as a subprocess, walks the demo
// and checks that localapi exits 0 and leaves no process behind.
func TestDemoHeadless(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the whole stack; skipped with -short")
	}
	stderr := demoHeadless(t, nil)
	if !strings.Contains(stderr, "dynamodb: minidyn on 127.0.0.1:") || !strings.Contains(stderr, "stream: polling the run partitions") {
		t.Errorf("start-up lines:\n%s", stderr)
	}
	// The stack's TSA on loopback (openssl ts -reply) timestamps the
	// checkpoints, and the walk required the timestamp of each run's
	// evidence (issue 30 item 3).
	if !strings.Contains(stderr, "timestamps: a TSA on http://127.0.0.1:") {
		t.Errorf("the stack started no TSA:\n%s", stderr)
	}
	// And its witness on loopback cosigns them; the walk required each
	// run's evidence to be cosigned, and the firm log's latest checkpoint
	// to extend the first one it kept (issue 30 items 2 and 4).
	if !strings.Contains(stderr, "witness: localhost/witness on http://127.0.0.1:") {
		t.Errorf("the stack started no witness:\n%s", stderr)
	}
}

// TestDemoHeadlessStreams runs the demo against moto_server
// (DYNAMODB_ENDPOINT), whose table has a real stream: ledger lines reach
// stream-reduce from the Streams API.
func TestDemoHeadlessStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the whole stack; skipped with -short")
	}
	// moto_server applies requests on threads without a lock, and a
	// canceled transaction restores a copy of the table taken before it
	// ran, erasing what another process committed meanwhile (a receipt's
	// log entry, once: the destruction's receipt never reached a
	// checkpoint). DynamoDB serializes transactions; the stack's functions
	// reach moto through a proxy that sends it one request at a time.
	endpoint := dynamotest.MotoForProcesses(t) // skips without moto_server (fails with CI=true)
	table := "warrant-localapi-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	stderr := demoHeadless(t, []string{"DYNAMODB_ENDPOINT=" + endpoint, "TABLE_NAME=" + table})
	if !strings.Contains(stderr, "stream: reading arn:aws:dynamodb:") {
		t.Errorf("localapi did not read the table's stream:\n%s", stderr)
	}
}

// TestSlowModelFastAPI: the walkthrough on a model whose turns take 13.5 s
// each (the filing run's three: 40.5 s, far past API Gateway's 30 s; ten
// in the whole walkthrough: 135 s), with every HTTP call of the client
// bounded: the API records and hands runs to the worker, so no call waits
// for the model. A call that did would take at least a turn's latency, so
// the bound is derived from it, half a turn: any call that waited on the
// model for half a turn or more fails the walkthrough, while an honest call
// has half a turn (6.75 s) for a cold start on a loaded machine, where a 1 s
// bound once failed by chance. Nothing here measures time.
func TestSlowModelFastAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the whole stack with a slow model (95 s); skipped with -short")
	}
	t.Parallel()
	const latency = 13500 * time.Millisecond
	// -retention-day 0: the retention step's two runs (another 54 s of
	// turns) are TestDemoHeadless's to walk.
	stderr := demoHeadless(t, nil, "-model-latency", latency.String(), "-client-timeout", (latency / 2).String(), "-retention-day", "0")
	if !strings.Contains(stderr, "(demo script, 13.5s per turn)") {
		t.Errorf("the fake model was not slowed:\n%s", stderr)
	}
}

// checkDataKey: the stack kept its local DATA_KEY in <logDir>/data.key,
// mode 0600, a key pkg/seal reads as a local key.
func checkDataKey(t *testing.T, logDir string) {
	t.Helper()
	path := filepath.Join(logDir, "data.key")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("no data.key in the log directory: %v", err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("data.key has mode %v, want 0600", st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := seal.ParseKeySpec(strings.TrimSpace(string(b)))
	if err != nil || !spec.Local() {
		t.Errorf("data.key does not hold a local key pkg/seal reads: %v", err)
	}
}

// TestNewDataKey: a fresh aes: key per call, pkg/seal's local key form,
// kept in the log directory (0600) when there is one.
func TestNewDataKey(t *testing.T) {
	dir := t.TempDir()
	a, err := newDataKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkDataKey(t, dir)
	if b, _ := os.ReadFile(filepath.Join(dir, "data.key")); strings.TrimSpace(string(b)) != a {
		t.Errorf("data.key holds another key than the one returned")
	}
	b, err := newDataKey("")
	if err != nil {
		t.Fatal(err)
	}
	if a == b || !regexp.MustCompile(`^aes:[0-9a-f]{64}$`).MatchString(b) {
		t.Errorf("newDataKey gave %q then %q, want two fresh aes:<64 hex> keys", a, b)
	}
}

// logTails are the last lines of the functions' logs a failed walk leaves
// (its log directory is the test's, removed after it): the receipts and
// checkpoints a walk waits on come from the sweeper and stream-reduce, and
// their logs (failure envelopes, never content) say why one did not come.
func logTails(dir string, names ...string) string {
	var b strings.Builder
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		lines = lines[max(0, len(lines)-60):]
		fmt.Fprintf(&b, "\n%s (last %d lines):\n%s\n", name, len(lines), strings.Join(lines, "\n"))
	}
	return b.String()
}

// demoHeadless runs localapi -demo -headless with extra env and arguments,
// checks the exit and the processes, and returns its stderr.
func demoHeadless(t *testing.T, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute) // a bound for a loaded CI machine, not a measure
	defer cancel()
	logDir := t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd := localapi(ctx, append([]string{"-demo", "-headless", "-addr", freeAddr(t), "-log-dir", logDir}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	t.Logf("localapi -demo -headless: %v in %s", err, time.Since(t0).Round(100*time.Millisecond))
	if err != nil {
		t.Fatalf("localapi -demo -headless: %v\nstdout:\n%s\nstderr:\n%s%s", err, stdout.String(), stderr.String(),
			logTails(logDir, "sweeper.log", "stream-reduce.log"))
	}
	if !strings.Contains(stdout.String(), "checks passed") {
		t.Fatalf("no walkthrough summary:\n%s", stdout.String())
	}
	checkDataKey(t, logDir)
	b, err := os.ReadFile(filepath.Join(logDir, "pids"))
	if err != nil {
		t.Fatal(err)
	}
	var emulators, bootstraps, firmFunctions int
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		pid, err := strconv.Atoi(f[0])
		if err != nil || len(f) != 2 {
			t.Fatalf("pids line %q", line)
		}
		switch {
		case strings.HasPrefix(f[1], "emulator:"):
			emulators++
		case strings.HasPrefix(f[1], "bootstrap:"):
			bootstraps++
		case f[1] == "function-emulator:"+ReferenceFunction:
			firmFunctions++
		}
		if proc.Alive(pid) {
			t.Errorf("%s (pid %d) is still running after localapi exited", f[1], pid)
		}
	}
	if emulators != 7 || bootstraps < 5 || firmFunctions != 1 {
		t.Errorf("pids lists %d emulators, %d bootstraps and %d reference functions' emulators, want 7, at least 5 and 1:\n%s", emulators, bootstraps, firmFunctions, b)
	}
	// The walkthrough's four runs (six with the retention step's two)
	// went through the worker queue: each started, the filing, the e-mail
	// and the e-mail a document asked to copy (declined) resumed too,
	// every message delivered once and deleted.
	ql, err := os.ReadFile(filepath.Join(logDir, "queue.log"))
	if err != nil {
		t.Errorf("queue.log: %v", err)
	}
	started := 4
	if strings.Contains(stdout.String(), "demo: retention and legal hold") {
		started = 6
		if !strings.Contains(stdout.String(), "of the held matter: past its retention too, its content kept") ||
			!strings.Contains(stdout.String(), "the last a destruction receipt, verified offline") {
			t.Errorf("the retention step did not show the held matter kept and the destruction's evidence:\n%s", stdout.String())
		}
	} else if !slices.Contains(args, "-retention-day") {
		t.Errorf("the walkthrough left out the retention step:\n%s", stdout.String())
	}
	for reason, want := range map[string]int{"started": started, "resumed": 3} {
		if n := strings.Count(string(ql), ", "+reason+") (receive 1) -> worker ok in"); n != want {
			t.Errorf("queue.log has %d %s deliveries to the worker, want %d:\n%s", n, reason, want, ql)
		}
	}
	if strings.Contains(string(ql), "failed in") || strings.Contains(string(ql), "moved to") {
		t.Errorf("queue.log reports failures:\n%s", ql)
	}
	for _, f := range []string{"invoke.log", "worker.log", "stream-reduce.log", "api.log", "stream.log", "queue.log"} {
		if st, err := os.Stat(filepath.Join(logDir, f)); err != nil || st.Size() == 0 {
			t.Errorf("log %s missing or empty (%v)", f, err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(logDir, "ledger-*.ndjson")); len(m) != 2 {
		t.Errorf("ledger exports %v, want two (the filing's and the e-mail's)", m)
	}
	return stderr.String()
}

// TestPortInUse: a taken port is one line naming it and a non-zero exit,
// before anything is built or started.
func TestPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := l.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := localapi(ctx, "-addr", addr, "-log-dir", t.TempDir())
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() == 0 {
		t.Fatalf("localapi on a taken port: %v, want a non-zero exit", err)
	}
	out := strings.TrimRight(stderr.String(), "\n")
	if strings.Count(out, "\n") != 0 || !strings.Contains(out, addr) || !strings.Contains(out, "in use") {
		t.Fatalf("stderr %q: want one line naming %s", stderr.String(), addr)
	}
	if stdout.Len() != 0 {
		t.Fatalf("stdout %q, want nothing", stdout.String())
	}
}

func TestTemplate(t *testing.T) {
	const key = "hmac:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	const queueURL = "http://127.0.0.1:9324/000000000000/WorkerQueue"
	const dataKey = "aes:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	tpl, err := LoadTemplate(filepath.Join(repo, "template.yaml"), Locals{"TABLE_NAME": "warrant-local", "MODEL_ID": DefaultModelID, "LEDGER_KEY": key,
		"RECEIPT_KEY": "p256:00", "RECEIPT_RETIRED_KEYS": "", "CHECKPOINT_BUCKET": "", "EVENT_BUS_NAME": "warrant-local-notifications",
		"DESK_URL": "http://127.0.0.1:3000/desk", "!Ref WorkerQueue": queueURL, "DATA_KEY": dataKey})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range tpl.Functions {
		names = append(names, f.LogicalID+"="+f.Name)
	}
	want := []string{"InvokeFunction=invoke", "ApproveFunction=approve", "ResumeFunction=resume", "RunsFunction=runs",
		"WorkerFunction=worker", "SweeperFunction=sweeper", "StreamReduceFunction=stream-reduce"}
	if !slices.Equal(names, want) {
		t.Fatalf("functions %v, want %v", names, want)
	}
	var keys []string
	for _, r := range tpl.Routes {
		keys = append(keys, r.Key()+" -> "+r.Function)
	}
	slices.Sort(keys)
	wantKeys := []string{
		"DELETE /v1/matters/{matter_id}/hold -> approve",
		"GET /desk -> runs",
		"GET /desk/{proxy+} -> runs",
		"GET /v1/approvals -> runs",
		"GET /v1/budget -> runs",
		"GET /v1/evidence/log -> runs",
		"GET /v1/keys -> runs",
		"GET /v1/matters -> runs",
		"GET /v1/matters/{matter_id} -> runs",
		"GET /v1/matters/{matter_id}/hold -> runs",
		"GET /v1/matters/{matter_id}/versions -> runs",
		"GET /v1/runs/{run_id} -> runs",
		"GET /v1/runs/{run_id}/events -> runs",
		"GET /v1/runs/{run_id}/evidence -> runs",
		"GET /v1/runs/{run_id}/receipts -> runs",
		"GET /v1/settings -> runs",
		"GET /v1/tools -> approve",
		"POST /v1/matters/{matter_id}/destroy -> approve",
		"POST /v1/runs -> invoke",
		"POST /v1/runs/{run_id}/approvals/{approval_id} -> approve",
		"POST /v1/runs/{run_id}/effects/{effect_ref}/reconcile -> approve",
		"POST /v1/runs/{run_id}/resume -> resume",
		"PUT /v1/matters/{matter_id} -> approve",
		"PUT /v1/matters/{matter_id}/hold -> approve",
		"PUT /v1/settings -> approve",
	}
	if !slices.Equal(keys, wantKeys) {
		t.Fatalf("routes %v, want %v", keys, wantKeys)
	}
	inv := tpl.Function("invoke")
	for _, kv := range []string{"TABLE_NAME=warrant-local", "MODEL_ID=" + DefaultModelID, "FIRM_CLAIM=firm_id", "ROLES_CLAIM=roles", "LEDGER_KEY=" + key} {
		if !slices.Contains(inv.Env, kv) {
			t.Errorf("invoke env %v lacks %s", inv.Env, kv)
		}
	}
	if inv.Timeout < 10*time.Second {
		t.Errorf("invoke timeout %s", inv.Timeout)
	}
	// The local data key goes to the functions that read content, and to
	// no other (stream-reduce and the sweeper never read it).
	for _, f := range tpl.Functions {
		want := f.Name != "stream-reduce" && f.Name != "sweeper"
		if got := slices.Contains(f.Env, "DATA_KEY="+dataKey); got != want {
			t.Errorf("%s: DATA_KEY set %v, want %v (env %v)", f.Name, got, want, f.Env)
		}
	}
	sr := tpl.Function("StreamReduceFunction")
	if !sr.Stream || sr.BatchSize != 100 || len(sr.Routes) != 0 {
		t.Errorf("stream-reduce: stream %v batch %d routes %v", sr.Stream, sr.BatchSize, sr.Routes)
	}
	for _, fn := range []string{"invoke", "resume", "sweeper"} {
		if f := tpl.Function(fn); !slices.Contains(f.Env, "QUEUE_URL="+queueURL) {
			t.Errorf("%s env %v lacks QUEUE_URL=%s", fn, f.Env, queueURL)
		}
	}
	// TOOL_POLICY is !If [HasToolPolicy, ..., !Ref AWS::NoValue]; the
	// parameter's default is "", so locally the variable is not set.
	for _, fn := range []string{"approve", "resume", "worker"} {
		for _, kv := range tpl.Function(fn).Env {
			if strings.HasPrefix(kv, "TOOL_POLICY=") {
				t.Errorf("%s env sets %s; the default ToolPolicyParameter is empty", fn, kv)
			}
		}
	}
	w := tpl.Function("worker")
	if want := []QueueEvent{{Name: "WorkerMessages", Queue: "WorkerQueue", BatchSize: 1, ReportBatchItemFailures: true}}; !slices.Equal(w.Queues, want) {
		t.Errorf("worker SQS events %+v, want %+v", w.Queues, want)
	}
	if w.Timeout != 600*time.Second || w.Stream || len(w.Routes)+len(w.Schedules) != 0 {
		t.Errorf("worker: %+v", w)
	}
	sw := tpl.Function("sweeper")
	if want := []Schedule{{Name: "Sweep", Type: "ScheduleV2", Expression: "rate(1 minute)", Rate: time.Minute}}; !slices.Equal(sw.Schedules, want) {
		t.Errorf("sweeper schedules %+v, want %+v", sw.Schedules, want)
	}
	wq, dlq := tpl.Queues["WorkerQueue"], tpl.Queues["WorkerDeadLetterQueue"]
	if wq == nil || *wq != (Queue{LogicalID: "WorkerQueue", VisibilityTimeout: time.Hour, DeadLetter: "WorkerDeadLetterQueue", MaxReceiveCount: 3}) {
		t.Errorf("WorkerQueue %+v", wq)
	}
	if dlq == nil || dlq.DeadLetter != "" || tpl.Queues["StreamDeadLetterQueue"] == nil || tpl.Queues["NotificationDeadLetterQueue"] == nil || len(tpl.Queues) != 4 {
		t.Errorf("queues %v", tpl.Queues)
	}
	qs, err := ReadQueues(filepath.Join(repo, "template.yaml"))
	if err != nil || len(qs) != 4 || *qs["WorkerQueue"] != *wq {
		t.Errorf("ReadQueues: %v %v", qs, err)
	}
}

// TestTemplateQueueAndScheduleEvents: the SQS and schedule event forms the
// local stack reads, and the ones it refuses.
func TestTemplateQueueAndScheduleEvents(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "functions", "job"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "functions", "job", "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	load := func(events, env string) (*Template, error) {
		tpl := `Resources:
  Jobs:
    Type: AWS::SQS::Queue
    Properties:
      RedrivePolicy: {deadLetterTargetArn: {"Fn::GetAtt": [Dead, Arn]}, maxReceiveCount: 5}
  Dead: {Type: AWS::SQS::Queue, Properties: {VisibilityTimeout: 0}}
  JobFunction:
    Type: AWS::Serverless::Function
    Properties:
      Environment:
        Variables:
` + env + `
      Events:
` + events
		path := filepath.Join(dir, "t.yaml")
		if err := os.WriteFile(path, []byte(tpl), 0o644); err != nil {
			t.Fatal(err)
		}
		return LoadTemplate(path, Locals{"!Ref Jobs": "http://q/000000000000/Jobs", "!GetAtt Jobs.Arn": "arn:aws:sqs:us-east-1:000000000000:Jobs"})
	}
	tpl, err := load(`        A:
          Type: SQS
          Properties: {Queue: !GetAtt [Jobs, Arn]}
        B:
          Type: SQS
          Properties: {Queue: {"Fn::GetAtt": Jobs.Arn}, BatchSize: 5, FunctionResponseTypes: [ReportBatchItemFailures]}
        Hourly:
          Type: Schedule
          Properties: {Schedule: rate(2 hours), Input: '{"x":1}'}
        Nightly:
          Type: ScheduleV2
          Properties: {ScheduleExpression: "cron(0 3 * * ? *)", State: DISABLED}
`, `          URL: !Ref Jobs
          ARN: {"Fn::GetAtt": [Jobs, Arn]}
          LONG: {Ref: Jobs}`)
	if err != nil {
		t.Fatal(err)
	}
	f := tpl.Function("job")
	wantQ := []QueueEvent{{Name: "A", Queue: "Jobs", BatchSize: 10}, {Name: "B", Queue: "Jobs", BatchSize: 5, ReportBatchItemFailures: true}}
	wantS := []Schedule{{Name: "Hourly", Type: "Schedule", Expression: "rate(2 hours)", Rate: 2 * time.Hour, Input: `{"x":1}`},
		{Name: "Nightly", Type: "ScheduleV2", Expression: "cron(0 3 * * ? *)", Disabled: true}}
	if !slices.Equal(f.Queues, wantQ) || !slices.Equal(f.Schedules, wantS) {
		t.Fatalf("queues %+v schedules %+v", f.Queues, f.Schedules)
	}
	wantEnv := []string{"ARN=arn:aws:sqs:us-east-1:000000000000:Jobs", "LONG=http://q/000000000000/Jobs", "URL=http://q/000000000000/Jobs"}
	if !slices.Equal(f.Env, wantEnv) {
		t.Fatalf("env %v, want %v", f.Env, wantEnv)
	}
	if q := tpl.Queues["Jobs"]; q.VisibilityTimeout != 30*time.Second || q.DeadLetter != "Dead" || q.MaxReceiveCount != 5 || tpl.Queues["Dead"].VisibilityTimeout != 0 {
		t.Fatalf("queues %+v %+v", q, tpl.Queues["Dead"])
	}
	for _, bad := range []struct{ events, want string }{
		{"        A: {Type: SQS, Properties: {Queue: arn:aws:sqs:us-east-1:1:x}}\n", "Queue must be"},
		{"        A: {Type: SQS, Properties: {Queue: !GetAtt Jobs.QueueName}}\n", "Queue must be"},
		{"        A: {Type: SQS, Properties: {Queue: !GetAtt Jobs.Arn, BatchSize: 0}}\n", "BatchSize"},
		{"        A: {Type: ScheduleV2, Properties: {ScheduleExpression: rate(1 minutes)}}\n", "singular"},
		{"        A: {Type: ScheduleV2, Properties: {ScheduleExpression: rate(5 minute)}}\n", "singular"},
		{"        A: {Type: ScheduleV2, Properties: {ScheduleExpression: rate(0 minutes)}}\n", "rate("},
		{"        A: {Type: ScheduleV2, Properties: {ScheduleExpression: every minute}}\n", "not rate"},
	} {
		if _, err := load(bad.events, "          X: y"); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want an error with %q", bad.events, err, bad.want)
		}
	}
}

func TestTemplateIntrinsics(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "functions", "do-thing"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "functions", "do-thing", "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tpl := `Parameters:
  Cap: {Type: String, Default: "2.50"}
  Stage: {Type: String, Default: dev}
Globals:
  Function:
    Timeout: 7
    Environment:
      Variables:
        TABLE_NAME: !Ref Table
        PLAIN: "yes"
Resources:
  Table: {Type: AWS::DynamoDB::Table}
  DoThingFunction:
    Type: AWS::Serverless::Function
    Properties:
      Environment:
        Variables:
          CAP: !Ref Cap
          LONG: {"Fn::Sub": "warrant-${Stage}"}
          ARN: !GetAtt Table.Arn
      Events:
        Any:
          Type: HttpApi
          Properties: {Method: any, Path: "/x/{proxy+}"}
`
	path := filepath.Join(dir, "t.yaml")
	if err := os.WriteFile(path, []byte(tpl), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTemplate(path, Locals{"TABLE_NAME": "tbl"}); err == nil || !strings.Contains(err.Error(), "ARN") {
		t.Fatalf("an intrinsic without a local value: %v, want an error naming ARN", err)
	}
	got, err := LoadTemplate(path, Locals{"TABLE_NAME": "tbl", "ARN": "arn:local"})
	if err != nil {
		t.Fatal(err)
	}
	f := got.Function("do-thing")
	want := []string{"ARN=arn:local", "CAP=2.50", "LONG=warrant-dev", "PLAIN=yes", "TABLE_NAME=tbl"}
	if !slices.Equal(f.Env, want) || f.Timeout != 7*time.Second {
		t.Fatalf("env %v timeout %s, want %v 7s", f.Env, f.Timeout, want)
	}
	r, p := match(got.Routes, "DELETE", "/x/a/b")
	if r == nil || p["proxy"] != "a/b" {
		t.Fatalf("greedy route: %v %v", r, p)
	}
}

func TestMatch(t *testing.T) {
	rs := []Route{
		{Method: "GET", Path: "/v1/runs/{run_id}", Function: "runs"},
		{Method: "GET", Path: "/v1/runs/{run_id}/events", Function: "runs"},
		{Method: "POST", Path: "/v1/runs/{run_id}/resume", Function: "resume"},
		{Method: "POST", Path: "/v1/runs/{run_id}/approvals/{approval_id}", Function: "approve"},
		{Method: "GET", Path: "/v1/approvals", Function: "runs"},
	}
	for i := range rs {
		rs[i].segs = splitPath(rs[i].Path)
	}
	sortRoutes(rs)
	for _, tc := range []struct{ method, path, key, params string }{
		{"GET", "/v1/runs/abc", "GET /v1/runs/{run_id}", "run_id=abc"},
		{"GET", "/v1/runs/abc/events", "GET /v1/runs/{run_id}/events", "run_id=abc"},
		{"POST", "/v1/runs/r/approvals/a", "POST /v1/runs/{run_id}/approvals/{approval_id}", "approval_id=a run_id=r"},
		{"GET", "/v1/approvals", "GET /v1/approvals", ""},
		{"POST", "/v1/runs/abc", "", ""},
		{"GET", "/v1/runs/abc/other", "", ""},
		{"GET", "/v1/runs/", "", ""},
	} {
		r, p := match(rs, tc.method, tc.path)
		key := ""
		if r != nil {
			key = r.Key()
		}
		var ps []string
		for k, v := range p {
			ps = append(ps, k+"="+v)
		}
		slices.Sort(ps)
		if key != tc.key || strings.Join(ps, " ") != tc.params {
			t.Errorf("%s %s: %q %v, want %q %q", tc.method, tc.path, key, ps, tc.key, tc.params)
		}
	}
}

func TestToEvent(t *testing.T) {
	route := &Route{Method: "POST", Path: "/v1/runs/{run_id}/resume", Function: "resume"}
	req := httptest.NewRequest("POST", "http://127.0.0.1:3000/v1/runs/r1/resume?a=1&a=2&b=x", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Dev-Roles", "counsel, associate")
	req.Header.Set("Cookie", "s=1; t=2")
	ev := toEvent(req, route, map[string]string{"run_id": "r1"}, []byte("{}"), "rid", time.Unix(1796232700, 0), "firm_id", "roles")
	claims := ev.RequestContext.Authorizer.JWT.Claims
	if claims["firm_id"] != DevFirm || claims["sub"] != DevUser || claims["roles"] != "[counsel associate]" {
		t.Fatalf("claims %v", claims)
	}
	if ev.Version != "2.0" || ev.RouteKey != "POST /v1/runs/{run_id}/resume" || ev.RawPath != "/v1/runs/r1/resume" ||
		ev.RawQueryString != "a=1&a=2&b=x" || ev.QueryStringParameters["a"] != "1,2" || ev.PathParameters["run_id"] != "r1" {
		t.Fatalf("event %+v", ev)
	}
	if ev.Headers["content-type"] != "application/json" || ev.Headers["x-dev-roles"] != "" || !slices.Equal(ev.Cookies, []string{"s=1", "t=2"}) {
		t.Fatalf("headers %v cookies %v", ev.Headers, ev.Cookies)
	}
	if ev.Body != "{}" || ev.IsBase64Encoded || ev.RequestContext.HTTP.Method != "POST" || ev.RequestContext.HTTP.SourceIP == "" || ev.RequestContext.RequestID != "rid" {
		t.Fatalf("event %+v", ev)
	}
	bin := []byte{0xff, 0x00, 0xfe}
	ev = toEvent(req, route, nil, bin, "rid", time.Now(), "", "")
	if !ev.IsBase64Encoded || ev.Body != base64.StdEncoding.EncodeToString(bin) {
		t.Fatalf("binary body: %q base64 %v", ev.Body, ev.IsBase64Encoded)
	}
}

// tokenPayload decodes the payload of the bearer token an event carries.
func tokenPayload(t *testing.T, ev events.APIGatewayV2HTTPRequest) map[string]any {
	t.Helper()
	h := ev.Headers["authorization"]
	parts := strings.Split(strings.TrimPrefix(h, "Bearer "), ".")
	if !strings.HasPrefix(h, "Bearer ") || len(parts) != 3 || parts[2] != "" {
		t.Fatalf("authorization %q is not an unsigned bearer JWT", h)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestToEventToken: the event carries the bearer token the authorizer would
// have verified, whose payload holds the claims (the functions read the
// roles there), and the authorizer's claims as API Gateway renders them.
// X-Dev-Roles may be a JSON array, taken exactly; the client's own
// Authorization header is replaced.
func TestToEventToken(t *testing.T) {
	route := &Route{Method: "GET", Path: "/v1/approvals", Function: "runs"}
	for _, tc := range []struct {
		header   string
		want     any
		rendered string
	}{
		{"counsel, associate", []any{"counsel", "associate"}, "[counsel associate]"},
		{`["associate counsel"]`, []any{"associate counsel"}, "[associate counsel]"},
		{`["associate","counsel"]`, []any{"associate", "counsel"}, "[associate counsel]"},
		{`["unterminated"`, `["unterminated"`, `["unterminated"`},
	} {
		req := httptest.NewRequest("GET", "http://127.0.0.1:3000/v1/approvals", nil)
		req.Header.Set("X-Dev-Roles", tc.header)
		req.Header.Set("Authorization", "Bearer a.b.c")
		ev := toEvent(req, route, nil, nil, "rid", time.Unix(1796232700, 0), "custom:firm", "cognito:groups")
		p := tokenPayload(t, ev)
		if !reflect.DeepEqual(p["cognito:groups"], tc.want) || p["sub"] != DevUser || p["custom:firm"] != DevFirm || p["exp"] != float64(1796232700+3600) {
			t.Errorf("X-Dev-Roles %s: token %v", tc.header, p)
		}
		if c := ev.RequestContext.Authorizer.JWT.Claims; c["cognito:groups"] != tc.rendered || c["custom:firm"] != DevFirm {
			t.Errorf("X-Dev-Roles %s: claims %v", tc.header, c)
		}
	}
}

func TestUnknownRoute(t *testing.T) {
	gw := &Gateway{Routes: []Route{{Method: "GET", Path: "/v1/approvals", Function: "runs", segs: splitPath("/v1/approvals")}}}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/v1/nothing")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "application/problem+json" || p["kind"] != "not_found" {
		t.Fatalf("unknown route: %d %s %v", resp.StatusCode, resp.Header.Get("Content-Type"), p)
	}
}

// keysOf lists the member names of a JSON object, recursively (values of
// attribute maps excluded: their names are the item's).
func keysOf(prefix string, v any, out map[string]bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k, e := range m {
		out[prefix+k] = true
		if k != "Keys" && k != "NewImage" {
			keysOf(prefix+k+".", e, out)
		}
	}
}

// TestPumpRecordShape: a record the pump builds has the members of the
// event source mapping's (events/stream-reduce.json), and the same image.
func TestPumpRecordShape(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repo, "events", "stream-reduce.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx struct{ Records []map[string]any }
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	keysOf("", fx.Records[0], want)

	img := fx.Records[0]["dynamodb"].(map[string]any)["NewImage"].(map[string]any)
	item := map[string]types.AttributeValue{}
	for k, v := range img {
		for typ, val := range v.(map[string]any) {
			switch typ {
			case "S":
				item[k] = &types.AttributeValueMemberS{Value: val.(string)}
			case "N":
				item[k] = &types.AttributeValueMemberN{Value: val.(string)}
			}
		}
	}
	p := NewPump(nil, "warrant-local", "us-east-1", 100, nil)
	p.arn = "arn:aws:dynamodb:us-east-1:000000000000:table/warrant-local/stream/x"
	rb, err := json.Marshal(events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{p.record(item)}})
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Records []map[string]any }
	if err := json.Unmarshal(rb, &got); err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	keysOf("", got.Records[0], have)
	for k := range want {
		if !have[k] {
			t.Errorf("record lacks %s", k)
		}
	}
	for k := range have {
		if !want[k] {
			t.Errorf("record has %s, which the mapping does not send", k)
		}
	}
	d := got.Records[0]["dynamodb"].(map[string]any)
	if !reflect.DeepEqual(d["NewImage"], img) || d["StreamViewType"] != "NEW_IMAGE" || got.Records[0]["eventName"] != "INSERT" {
		t.Errorf("record %s", rb)
	}
	if keys := d["Keys"].(map[string]any); len(keys) != 2 || !reflect.DeepEqual(keys["SK"], img["SK"]) {
		t.Errorf("keys %v", keys)
	}
}

// TestBuildFailure: a function that does not compile is one line naming it
// and the compiler's message, and exit 1.
func TestBuildFailure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	logDir := t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd := localapi(ctx, "-template", "cmd/localapi/testdata/broken/template.yaml", "-addr", freeAddr(t), "-log-dir", logDir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("localapi with a broken function: %v, want exit 1\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "localapi: build functions/broken failed: ") || !strings.Contains(last, "undefined: undefinedThing") {
		t.Fatalf("last line %q, want the build failure naming functions/broken\n%s", last, stderr.String())
	}
	if b, err := os.ReadFile(filepath.Join(logDir, "build", "build.log")); err != nil || !bytes.Contains(b, []byte("undefinedThing")) {
		t.Fatalf("build.log: %v %s", err, b)
	}
}

// !If picks its branch by evaluating the template's conditions on the
// parameters' defaults; a branch of !Ref AWS::NoValue unsets the variable.
func TestTemplateConditions(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "functions", "invoke"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "functions", "invoke", "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := `Parameters:
  Source: {Type: String, Default: "ssm-param"}
  Empty: {Type: String, Default: ""}
Conditions:
  HasSource: !Not [!Equals [!Ref Source, ""]]
  HasEmpty: !Not [!Equals [!Ref Empty, ""]]
  Both: !And [!Condition HasSource, !Condition HasEmpty]
  Either: {"Fn::Or": [{Condition: HasSource}, !Condition HasEmpty]}
Resources:
  InvokeFunction:
    Type: AWS::Serverless::Function
    Properties:
      Environment:
        Variables:
          A: !If [HasSource, !Sub "ssm:${Source}", !Ref AWS::NoValue]
          B: !If [HasEmpty, "set", !Ref AWS::NoValue]
          C: !If [Both, "both", "not both"]
          D: {"Fn::If": [Either, "either", "neither"]}
`
	path := filepath.Join(dir, "template.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tpl, err := LoadTemplate(path, Locals{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tpl.Function("invoke").Env, []string{"A=ssm:ssm-param", "C=not both", "D=either"}; !slices.Equal(got, want) {
		t.Fatalf("env %v, want %v", got, want)
	}
	bad := strings.Replace(doc, "!If [HasEmpty,", "!If [Missing,", 1)
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTemplate(path, Locals{}); err == nil || !strings.Contains(err.Error(), `"Missing"`) || !strings.Contains(err.Error(), "environment variable B") {
		t.Fatalf("an undefined condition: err = %v", err)
	}
}

// TestGatewayRefusesForeignHostAndOrigin: the local gateway answers only
// requests addressed to this machine's loopback by name (a DNS-rebinding
// page's requests carry its own host name) and, when a browser says where a
// request comes from, only its own origin. Refusals are problem+json naming
// the header, and nothing reaches a function.
func TestGatewayRefusesForeignHostAndOrigin(t *testing.T) {
	gw := &Gateway{Routes: []Route{{Method: "GET", Path: "/v1/approvals", Function: "runs", segs: splitPath("/v1/approvals")}}, DevDesk: DevDeskConfig()}
	for _, tc := range []struct {
		name, host, origin string
		refused            string // the header named; "" means served
	}{
		{"127.0.0.1", "127.0.0.1:3000", "", ""},
		{"localhost", "localhost:3000", "", ""},
		{"ipv6 loopback", "[::1]:3000", "", ""},
		{"no port", "localhost", "", ""},
		{"own origin", "127.0.0.1:3000", "http://127.0.0.1:3000", ""},
		{"own origin, localhost", "LocalHost:3000", "http://localhost:3000", ""},

		{"rebinding host", "attacker.example:3000", "", "Host"},
		{"rebinding host, same origin", "attacker.example:3000", "http://attacker.example:3000", "Host"},
		{"loopback-looking name", "127.0.0.1.attacker.example:3000", "", "Host"},
		{"another loopback address", "127.0.0.2:3000", "", "Host"},
		{"the machine's LAN address", "192.168.1.20:3000", "", "Host"},
		{"empty host", "", "", "Host"},
		{"cross-site page", "127.0.0.1:3000", "https://attacker.example", "Origin"},
		{"opaque origin", "127.0.0.1:3000", "null", "Origin"},
		{"another local origin", "127.0.0.1:3000", "http://localhost:3000", "Origin"},
		{"another port", "127.0.0.1:3000", "http://127.0.0.1:5173", "Origin"},
		{"https", "127.0.0.1:3000", "https://127.0.0.1:3000", "Origin"},
	} {
		for _, path := range []string{"/v1/nothing", "/desk/config.json"} {
			req := httptest.NewRequest("GET", "http://placeholder"+path, nil)
			req.Host = tc.host
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			rec := httptest.NewRecorder()
			gw.ServeHTTP(rec, req)
			if tc.refused == "" {
				if rec.Code == http.StatusForbidden {
					t.Errorf("%s %s: refused: %s", tc.name, path, rec.Body)
				}
				continue
			}
			var p map[string]any
			_ = json.Unmarshal(rec.Body.Bytes(), &p)
			detail, _ := p["detail"].(string)
			if rec.Code != http.StatusForbidden || rec.Header().Get("Content-Type") != "application/problem+json" || p["kind"] != "forbidden" ||
				!strings.HasPrefix(detail, "header "+tc.refused+" ") {
				t.Errorf("%s %s: %d %s %s, want a 403 problem naming header %s", tc.name, path, rec.Code, rec.Header().Get("Content-Type"), rec.Body, tc.refused)
			}
			if tc.host != "" && strings.Contains(detail, tc.host) || tc.origin != "" && strings.Contains(detail, tc.origin) {
				t.Errorf("%s: the problem echoes the header: %s", tc.name, detail)
			}
		}
	}
}

// TestDefaultIdentityIsNotCounsel: a request without X-Dev-* headers is the
// dev firm's associate; counsel must be asked for (X-Dev-Roles: counsel).
func TestDefaultIdentityIsNotCounsel(t *testing.T) {
	route := &Route{Method: "POST", Path: "/v1/runs/{run_id}/approvals/{approval_id}", Function: "approve"}
	req := httptest.NewRequest("POST", "http://127.0.0.1:3000/v1/runs/r/approvals/a", strings.NewReader("{}"))
	p := tokenPayload(t, toEvent(req, route, nil, []byte("{}"), "rid", time.Now(), "firm_id", "roles"))
	if !reflect.DeepEqual(p["roles"], []any{"associate"}) || p["sub"] != walkthrough.Associate || p["firm_id"] != walkthrough.Firm {
		t.Fatalf("default identity %v, want the dev firm's associate", p)
	}
	req.Header.Set("X-Dev-Roles", "counsel")
	req.Header.Set("X-Dev-User", walkthrough.Counsel)
	p = tokenPayload(t, toEvent(req, route, nil, []byte("{}"), "rid", time.Now(), "firm_id", "roles"))
	if !reflect.DeepEqual(p["roles"], []any{"counsel"}) || p["sub"] != walkthrough.Counsel {
		t.Fatalf("asked for counsel: %v", p)
	}
}
