package deploy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	stdmaps "maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/internal/proc"
)

// rehearsalCatalog and rehearsalToolFunction are the template parameters
// the walk deploys with: the functions read their tool catalog from SSM
// (localapi puts it there, naming the firm's HTTPS endpoint and Lambda
// function), and the worker may invoke the reference tools' function.
const (
	rehearsalCatalog      = "/warrant/dev/tool-catalog"
	rehearsalToolFunction = "arn:aws:lambda:us-east-1:123456789012:function:warrant-reference-tools"
)

// TestDeployRehearsalWalk (issue 28, items 2 and 3): the demo walked on the
// stand-up. The translated template stood up in moto with IAM enforcement
// on (as TestDeployRehearsal does, with the tool catalog in SSM and the
// firm's tool function named), then the local stack in rehearsal mode
// (`localapi -rehearsal`): every function under its emulator with exactly
// its stand-up environment and its own role's credentials, the worker
// queue, the table's stream, the keys, the checkpoint bucket and the bus
// moto's, the queue and the stream polled with the worker's and
// stream-reduce's credentials. The walkthrough runs once, to its end; then
// moto's decision log holds no denial, every function's role made at least
// one allowed call, and moto answered no request with a 403 after the
// stand-up (a refused signature makes no decision, so the log alone would
// not show it).
func TestDeployRehearsalWalk(t *testing.T) {
	if testing.Short() {
		t.Skip("stands the stack up in moto and walks the demo on it; skipped with -short")
	}
	python := requirePython(t, "moto", "boto3", "werkzeug", "samtranslator")
	start := time.Now()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The walk's stack; the build cache makes this a link on a warm cache.
	bin := filepath.Join(dir, "localapi")
	build := exec.Command("go", "build", "-o", bin, "./cmd/localapi")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/localapi: %v\n%s", err, out)
	}

	translated := filepath.Join(dir, "translated.json")
	runPython(t, root, python, "deploy/translate.py", "template.yaml", "--out", translated)
	decisions := filepath.Join(dir, "decisions.jsonl")
	motoLog := filepath.Join(dir, "moto.log")
	endpoint := startMotoIAMLog(t, root, python, decisions, motoLog)
	state := filepath.Join(dir, "standup.json")
	runPython(t, root, python, "deploy/rehearsal/standup.py", "--endpoint", endpoint, "--translated", translated,
		"--samconfig", "samconfig.toml", "--parameter", "ToolCatalogParameter="+rehearsalCatalog,
		"--parameter", "ToolFunctionArns="+rehearsalToolFunction, "--out", state)
	var r rehearsal
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	// Requests before this are the stand-up's (its enforcement check is a
	// 403 on purpose).
	setup, err := os.ReadFile(motoLog)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("build, translate and stand-up: %s", time.Since(start).Round(time.Millisecond))

	walked := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute) // a liveness bound, not a measure
	defer cancel()
	logDir := filepath.Join(dir, "logs")
	cmd := exec.CommandContext(ctx, bin, "-rehearsal", state, "-demo", "-headless", "-addr", "127.0.0.1:0",
		"-tools-addr", "127.0.0.1:0", "-log-dir", logDir)
	cmd.Dir = root
	// Nothing of the caller's AWS settings or endpoints reaches the stack.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "AWS_") || strings.HasPrefix(kv, "DYNAMODB_ENDPOINT=") || strings.HasPrefix(kv, "MODEL_BACKEND=") ||
			strings.HasPrefix(kv, "TABLE_NAME=") || strings.HasPrefix(kv, "TOOL_CATALOG=") || strings.HasPrefix(kv, "AGENTS=") || strings.HasPrefix(kv, "TOOL_POLICY=")
	})
	cmd.SysProcAttr = proc.Group()
	cmd.Cancel = func() error { proc.KillGroup(cmd.Process.Pid, syscall.SIGKILL); return nil }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	t.Logf("the walk on the rehearsal (localapi start, demo, stop): %s", time.Since(walked).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("localapi -rehearsal -demo -headless: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	if !regexp.MustCompile(`(?m)^demo: all \d+ checks passed`).MatchString(out) {
		t.Fatalf("the walk did not reach its end:\n%s", out)
	}
	// What the walk leaves out, it says, with the reason.
	if !strings.Contains(out, "demo: retention and legal hold: left out on this stack: a retention day is 24 hours on AWS") {
		t.Errorf("the walk does not say it leaves the retention step out:\n%s", out)
	}
	for _, want := range []string{"rehearsal: tool catalog in SSM " + rehearsalCatalog, "rehearsal: Bedrock stays on the fake", "stream: reading arn:aws:dynamodb:", "(moto) -> lambda worker, received and deleted as its role"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("localapi's start-up does not say %q:\n%s", want, stderr.String())
		}
	}

	// The catalog's tools on the firm's systems ran: the filing on its
	// HTTPS endpoint (the reference tools' server), the e-mail on its
	// Lambda function (the local Lambda API).
	for file, tool := range map[string]string{"toolserver.log": "file_court_document", "functions.log": "send_client_email"} {
		b, err := os.ReadFile(filepath.Join(logDir, file))
		if err != nil || !strings.Contains(string(b), `"tool":"`+tool+`","outcome":"ok"`) {
			t.Errorf("%s does not show %s run (%v)", file, tool, err)
		}
	}

	// Moto's decisions: none denied, each role allowed at least once.
	f, err := os.Open(decisions)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	allowed := map[string][]string{} // role -> its allowed actions
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var d decision
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("decision log: %v: %s", err, sc.Text())
		}
		if d.Decision != "allowed" {
			t.Errorf("moto decided %s: role %q, %s on %s", d.Decision, d.Role, d.Action, d.Resource)
			continue
		}
		if !slices.Contains(allowed[d.Role], d.Action) {
			allowed[d.Role] = append(allowed[d.Role], d.Action)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(stdmaps.Keys(r.Functions)) {
		fn := r.Functions[name]
		acts := allowed[fn.RoleName]
		if len(acts) == 0 {
			t.Errorf("%s made no allowed call with its role %s", name, fn.RoleName)
			continue
		}
		slices.Sort(acts)
		t.Logf("%s as %s: %s", name, fn.RoleName, strings.Join(acts, ", "))
	}
	// The calls the event source mappings make with the functions' roles,
	// and the notifications, the receipts and the checkpoint.
	for _, c := range []struct{ function, action string }{
		{"WorkerFunction", "sqs:ReceiveMessage"}, {"WorkerFunction", "sqs:DeleteMessage"},
		{"StreamReduceFunction", "dynamodb:GetRecords"}, {"StreamReduceFunction", "events:PutEvents"},
		{"StreamReduceFunction", "kms:Sign"}, {"SweeperFunction", "s3:PutObject"}, {"WorkerFunction", "ssm:GetParameter"},
	} {
		if !slices.Contains(allowed[r.Functions[c.function].RoleName], c.action) {
			t.Errorf("%s made no allowed %s with its role", c.function, c.action)
		}
	}
	all, err := os.ReadFile(motoLog)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(all[len(setup):]), "\n") {
		if strings.Contains(line, `" 403 `) {
			t.Errorf("moto answered 403 during the walk: %s (see %s)", line, filepath.Join(logDir, "*.log"))
		}
	}
	t.Logf("TestDeployRehearsalWalk: %s in all", time.Since(start).Round(time.Millisecond))
}
