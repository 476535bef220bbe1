package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/witness"
)

const (
	firmID = "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b"
	runID  = "5b0c6a2e-7d4f-4c8e-9a51-0b8f2f3c1d01"
)

// runBundle is a small ended run's evidence bundle: its start and end
// receipts signed with k, a firm log of just them, and checkpoint 1 over it,
// with its signed note.
func runBundle(t *testing.T, k *evidence.P256) evidence.Bundle {
	t.Helper()
	ctx := context.Background()
	c := contracts.NewChain(runID, firmID)
	c.Now = func() time.Time { return time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC) }
	var lines []contracts.Line
	var raws []string
	for _, e := range []contracts.Event{
		&contracts.RunStarted{AgentKey: "matter_assistant", Mode: contracts.ModeInvoke, ModelID: "anthropic.claude-sonnet-4", PromptVersion: "v1",
			SchemaVersion: contracts.SchemaVersion, CostCapUSD: "1.00", MaxTokens: 1024,
			MatterID: "3a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", UserID: "b7c6d5e4-f3a2-4b1c-9d8e-7f6a5b4c3d2e"},
		&contracts.RunCompleted{StopReason: "end_turn", FinalText: "Done."},
	} {
		l, err := c.Append(e)
		if err != nil {
			t.Fatal(err)
		}
		lines, raws = append(lines, l), append(raws, string(l.Raw))
	}
	derived, err := evidence.Derive(lines)
	if err != nil {
		t.Fatal(err)
	}
	at := contracts.FormatTime(time.Date(2026, 12, 2, 10, 0, 1, 0, time.UTC))
	seg := evidence.Segment{From: 1, Prev: evidence.Genesis, Entries: []string{}}
	head := evidence.Genesis
	var receipts []evidence.Signed
	for i, r := range derived {
		s, err := evidence.Issue(ctx, k, r, at)
		if err != nil {
			t.Fatal(err)
		}
		e := evidence.Entry{Index: int64(i + 1), At: at, RunID: runID, Seq: r.Seq, Kind: r.Kind, ReceiptSHA256: s.SHA256()}
		seg.Entries = append(seg.Entries, e.Line())
		head = evidence.Link(head, e.Line())
		receipts = append(receipts, s)
	}
	cp := evidence.Checkpoint{FirmID: firmID, Number: 1, Size: int64(len(derived)), Head: head,
		CreatedAt: contracts.FormatTime(time.Date(2026, 12, 2, 10, 1, 0, 0, time.UTC))}
	signed, err := evidence.SignCheckpoint(ctx, k, cp)
	if err != nil {
		t.Fatal(err)
	}
	if signed.Note, err = evidence.SignCheckpointNote(ctx, k, evidence.Origin("", firmID), cp); err != nil {
		t.Fatal(err)
	}
	return evidence.Bundle{Schema: evidence.BundleSchema, FirmID: firmID, RunID: runID, Ledger: raws, Receipts: receipts,
		Log: seg, Checkpoint: &signed, KeyIDs: []string{k.KeyID()}}
}

func runMain(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// keygen writes the private key (0600, never over an existing file) and
// prints the vkey; vkey prints it again; a witness made from the key has it.
func TestKeygen(t *testing.T) {
	file := filepath.Join(t.TempDir(), "witness.key")
	code, vk, stderr := runMain("keygen", "-name", "witness.example/w1", "-key", file)
	if code != 0 || !strings.HasPrefix(vk, "witness.example/w1+") {
		t.Fatalf("keygen: %d %q %q", code, vk, stderr)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key file: %v %v", fi.Mode(), err)
	}
	if code, _, stderr := runMain("keygen", "-name", "witness.example/w1", "-key", file); code != 1 || !strings.Contains(stderr, "exists") {
		t.Fatalf("keygen over an existing key: %d %q", code, stderr)
	}
	if code, again, _ := runMain("vkey", "-key", file); code != 0 || again != vk {
		t.Fatalf("vkey: %d %q, keygen said %q", code, again, vk)
	}
	if _, err := evidence.ParseWitnessKey(vk); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{}, {"keygen"}, {"keygen", "-name", "a b", "-key", file + "2"}, {"nope"}, {"serve"}} {
		if code, _, _ := runMain(args...); code == 0 {
			t.Fatalf("%q succeeded", args)
		}
	}
}

// Lambda runs the bootstrap with no arguments: that is serve.
func TestLambdaRunsServe(t *testing.T) {
	t.Setenv("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9")
	t.Setenv("WITNESS_CONFIG", "")
	if code, _, stderr := runMain(); code != 2 || !strings.Contains(stderr, "serve needs -config") {
		t.Fatalf("no arguments under Lambda: %d %q", code, stderr)
	}
}

// The Lambda adapter: API Gateway HTTP API / function URL events (payload
// 2.0, a base64 body) reach the witness and its answers come back, the
// 409's content type included.
func TestLambdaHandler(t *testing.T) {
	k, err := evidence.GenerateP256()
	if err != nil {
		t.Fatal(err)
	}
	b := runBundle(t, k)
	vk, _ := evidence.VerifierKey(evidence.Origin("", firmID), k.Public())
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "witness.key")
	if code, _, stderr := runMain("keygen", "-name", "witness.example/w1", "-key", keyFile); code != 0 {
		t.Fatal(stderr)
	}
	w, err := build(context.Background(), serveConfig{config: `{"logs": [{"vkey": "` + vk + `"}]}`, keyFile: keyFile, stateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	h := LambdaHandler(w.Handler("/witness", nil))
	ev := func(method, path string, body []byte) events.APIGatewayV2HTTPResponse {
		e := events.APIGatewayV2HTTPRequest{RawPath: path, Body: base64.StdEncoding.EncodeToString(body), IsBase64Encoded: true,
			Headers:        map[string]string{"content-type": "text/plain"},
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path}}}
		resp, err := h(context.Background(), e)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	req := witness.FormatRequest(0, nil, []byte(b.Checkpoint.Note))
	resp := ev("POST", "/witness/add-checkpoint", req)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Body, "— witness.example/w1 ") {
		t.Fatalf("add-checkpoint: %d %q", resp.StatusCode, resp.Body)
	}
	wk, _ := evidence.ParseWitnessKey(w.VerifierKey())
	if err := evidence.VerifyCosignature(b.Checkpoint.Note, strings.Split(strings.TrimSuffix(resp.Body, "\n"), "\n"), wk); err != nil {
		t.Fatal(err)
	}
	resp = ev("POST", "/witness/add-checkpoint", req)
	if resp.StatusCode != 409 || resp.Headers["Content-Type"] != "text/x.tlog.size" || resp.Body != "2\n" {
		t.Fatalf("again: %d %v %q", resp.StatusCode, resp.Headers, resp.Body)
	}
	if resp = ev("POST", "/add-checkpoint", req); resp.StatusCode != 404 {
		t.Fatalf("outside the prefix: %d", resp.StatusCode)
	}
}

// docCommands reads the commands of the ```sh blocks of section in doc:
// comment and blank lines left out, lines ending in a backslash joined.
func docCommands(t *testing.T, doc, section string) []string {
	t.Helper()
	raw, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	in, inSh, cur := false, false, ""
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case !inSh && strings.HasPrefix(line, "## "):
			in = strings.TrimPrefix(line, "## ") == section
			continue
		case in && trimmed == "```sh":
			inSh = true
			continue
		case inSh && trimmed == "```":
			inSh = false
			continue
		}
		if !inSh || (cur == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#"))) {
			continue
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur += s + " "
			continue
		}
		out = append(out, cur+line)
		cur = ""
	}
	return out
}

// TestDocWitness runs docs/EVIDENCE.md's "A witness" as a reader would:
// each command of its ```sh blocks, in order, with bash, in a directory
// holding key.pem and bundle.json (a run's bundle with a signed note, as
// "Check a run with warrant" leaves them). What the test changes, and
// nothing else: `go run ./cmd/witness` and `go run ./cmd/warrant` are the
// binaries built once; 127.0.0.1:8090 is a free port; the serve command,
// which the reader starts in another terminal, runs in the background until
// the test ends, and the next command waits until it listens. Every command
// must exit 0; the last must print the witness among those verified; and
// the refusal the section states (bundle.json, with no cosignature) holds.
func TestDocWitness(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/witness and cmd/warrant; skipped with -short")
	}
	cmds := docCommands(t, filepath.Join("..", "..", "docs", "EVIDENCE.md"), "A witness")
	if len(cmds) < 5 {
		t.Fatalf("the section has %d commands: %q", len(cmds), cmds)
	}
	bin := t.TempDir()
	for _, c := range []string{"witness", "warrant"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(bin, c), "../"+c).CombinedOutput()
		if err != nil {
			t.Fatalf("go build %s: %v\n%s", c, err, out)
		}
	}
	work := t.TempDir()
	k, err := evidence.GenerateP256()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := evidence.NewPublicKey(k.Public())
	raw, _ := json.Marshal(runBundle(t, k))
	if err := os.WriteFile(filepath.Join(work, "key.pem"), []byte(pub.PEM()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "bundle.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	rewrite := strings.NewReplacer("go run ./cmd/witness", filepath.Join(bin, "witness"), "go run ./cmd/warrant", filepath.Join(bin, "warrant"),
		"127.0.0.1:8090", addr)
	served := false
	var last []byte
	for _, c := range cmds {
		text := rewrite.Replace(c)
		if strings.Contains(c, "witness serve") {
			cmd := exec.Command("bash", "-c", "exec "+text)
			cmd.Dir = work
			var logs bytes.Buffer
			cmd.Stderr = &logs
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
				_ = cmd.Wait()
				if t.Failed() {
					t.Logf("the witness's log:\n%s", logs.String())
				}
				// It logged the request, and nothing of the log's entries.
				if !strings.Contains(logs.String(), `"status":200`) || strings.Contains(logs.String(), runID) {
					t.Errorf("the witness's log:\n%s", logs.String())
				}
			})
			waitListening(t, addr)
			served = true
			continue
		}
		cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+text)
		cmd.Dir = work
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", c, err, stdout.String(), stderr.String())
		}
		t.Logf("ran: %s", c)
		last = stdout.Bytes()
	}
	if !served {
		t.Fatal("the section starts no witness (witness serve)")
	}
	var out struct {
		Verified  bool     `json:"verified"`
		Witnesses []string `json:"witnesses"`
	}
	if err := json.Unmarshal(last, &out); err != nil || !out.Verified || len(out.Witnesses) != 1 || out.Witnesses[0] != "witness.example/w1" {
		t.Fatalf("the last command printed %s (%v)", last, err)
	}
	cmd := exec.Command(filepath.Join(bin, "warrant"), "evidence", "verify", "--public-key", "key.pem", "--witness", "witness.vkey", "bundle.json")
	cmd.Dir = work
	msg, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "witness: checkpoint 1: the checkpoint has no cosignature by witness witness.example/w1") {
		t.Fatalf("bundle.json without a cosignature: %v %s", err, msg)
	}
	// Sending request.txt again: 409 and the size the witness holds.
	body, _ := os.ReadFile(filepath.Join(work, "request.txt"))
	resp, err := http.Post("http://"+addr+"/add-checkpoint", "text/plain", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 409 || resp.Header.Get("Content-Type") != "text/x.tlog.size" {
		t.Fatalf("request.txt again: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// waitListening waits until addr accepts a connection (a minute at most:
// a bound, not a timing assertion).
func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the witness does not listen on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
