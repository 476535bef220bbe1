package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/internal/proc"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/httpstarget"
	"github.com/seed-f6d3920e/warrant/pkg/remote"
)

// TestMain lets the tests run this binary as toolserver itself: with
// TOOLSERVER_TEST_MAIN=1 it is main, not the test runner (no second build).
func TestMain(m *testing.M) {
	if os.Getenv("TOOLSERVER_TEST_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// lockedBuffer collects a child's stderr while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var urlLine = regexp.MustCompile(`^http://127\.0\.0\.1:[0-9]+/mcp$`)

// TestServe starts toolserver as its own process on 127.0.0.1:0 with the
// environment the functions get on the local stack (a minidyn table),
// reads the one URL line it prints, lists the tools and files once through
// an SDK client, finds the filing's OUT# row in the table, then stops it
// with SIGTERM: exit 0, one line on stdout, no input in its log.
func TestServe(t *testing.T) {
	ep := dynamotest.Minidyn(t)
	table := dynamotest.NewTable(t, ep)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	cmd := exec.CommandContext(ctx, os.Args[0], "-addr", "127.0.0.1:0")
	cmd.Env = []string{"TOOLSERVER_TEST_MAIN=1", "PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"TABLE_NAME=" + table, "AWS_ENDPOINT_URL_DYNAMODB=" + ep.URL, "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_CONFIG_FILE=/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true"}
	cmd.SysProcAttr = proc.Group()
	cmd.Cancel = func() error { proc.KillGroup(cmd.Process.Pid, syscall.SIGKILL); return nil }
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 1)
	var rest bytes.Buffer
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- line
		io.Copy(&rest, r)
		exited <- cmd.Wait() // after stdout is drained, as Wait wants
	}()
	var url string
	select {
	case line := <-lines:
		url = strings.TrimSuffix(line, "\n")
	case <-time.After(30 * time.Second):
		t.Fatalf("no URL line in 30 s; stderr:\n%s", stderr)
	}
	if !urlLine.MatchString(url) {
		t.Fatalf("first stdout line %q is not the endpoint's URL; stderr:\n%s", url, stderr)
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "toolserver-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != 6 {
		t.Fatalf("tools/list: %v, %d tools", err, len(list.Tools))
	}
	firm, run, matter, ref := uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "file_court_document",
		Arguments: map[string]any{"matter_id": matter, "court": "Superior Court", "document_title": "Motion", "document_text": "PRIVILEGED-BODY"},
		Meta:      mcp.Meta{agent.MetaEffectRef: ref, agent.MetaFirmID: firm, agent.MetaRunID: run, agent.MetaMatterID: matter}})
	if err != nil || res.IsError {
		t.Fatalf("filing: %v %+v; stderr:\n%s", err, res, stderr)
	}
	cs.Close()

	// The same tools at /https/, as Warrant's https target calls them.
	https, err := httpstarget.New(httpstarget.Config{Name: "reference", URL: strings.TrimSuffix(url, "/mcp") + "/https/",
		Auth: remote.Auth{Kind: remote.AuthNone}, FinalClientErrors: true})
	if err != nil {
		t.Fatal(err)
	}
	emailRef := uuid.NewString()
	hres, err := https.Call(ctx, agent.TargetCall{Tool: "send_client_email", EffectRef: emailRef, FirmID: firm, RunID: run, MatterID: matter,
		Input: json.RawMessage(`{"body":"PRIVILEGED-BODY","matter_id":"` + matter + `","subject":"Update","to":"gc@client.example"}`)})
	if err != nil || hres.IsError {
		t.Fatalf("e-mail over /https/: %s %v; stderr:\n%s", hres.Content, err, stderr)
	}
	out, err := dynamo.New(ep.Client, table).ListOutbound(ctx, firm, run)
	if err != nil || len(out) != 2 || !slices.ContainsFunc(out, func(o warrant.Outbound) bool { return o.EffectRef == ref }) ||
		!slices.ContainsFunc(out, func(o warrant.Outbound) bool { return o.EffectRef == emailRef }) {
		t.Fatalf("the table holds %+v (%v), want the filing's and the e-mail's rows", out, err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("after SIGTERM: %v; stderr:\n%s", err, stderr)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("still running 15 s after SIGTERM; stderr:\n%s", stderr)
	}
	if rest.Len() != 0 {
		t.Errorf("stdout has more than the URL line: %q", rest.String())
	}
	log := stderr.String()
	if strings.Contains(log, "PRIVILEGED-BODY") || strings.Contains(log, "submitted") {
		t.Errorf("the log carries an input or a result:\n%s", log)
	}
	if !strings.Contains(log, `"outcome":"ok"`) || !strings.Contains(log, `"msg":"stopped"`) {
		t.Errorf("the log does not show the call and the stop:\n%s", log)
	}
}

// TestRefusesNonLoopback: an -addr that is not a loopback IP and a port is a
// usage error, refused before anything is read or listened on.
func TestRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.10:8080", "localhost:0", "example.com:80", "127.0.0.1", "127.0.0.1:x"} {
		var stdout, stderr bytes.Buffer
		looked := false
		lookup := func(string) (string, bool) { looked = true; return "t", true }
		if code := run(context.Background(), []string{"-addr", addr}, lookup, &stdout, &stderr); code != 2 || looked || stdout.Len() != 0 {
			t.Errorf("-addr %s: exit %d, environment read %v, stdout %q", addr, code, looked, stdout.String())
		}
		if !strings.Contains(stderr.String(), addr) {
			t.Errorf("-addr %s: stderr %q does not name it", addr, stderr.String())
		}
	}
}

// TestNeedsTable: without TABLE_NAME the command says so (a config_invalid
// envelope on stderr), prints no URL and exits 1.
func TestNeedsTable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), nil, func(string) (string, bool) { return "", false }, &stdout, &stderr)
	if code != 1 || stdout.Len() != 0 || !strings.Contains(stderr.String(), `"failure_kind":"config_invalid"`) {
		t.Errorf("exit %d, stdout %q, stderr %s", code, stdout.String(), stderr.String())
	}
}

// TestUsage: stray arguments are a usage error.
func TestUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"serve"}, nil, &stdout, &stderr); code != 2 {
		t.Errorf("exit %d", code)
	}
	if code := run(context.Background(), []string{"-nope"}, nil, &stdout, &stderr); code != 2 {
		t.Errorf("exit %d", code)
	}
	if err := loopback("[::1]:0"); err != nil {
		t.Errorf("[::1]:0 is refused: %v", err)
	}
}
