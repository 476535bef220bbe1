package handlers_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
)

// recipe returns the ```bash block of docs/EVIDENCE.md whose first line is
// "# <name> ...": the exact script the document tells a verifier to run.
func recipe(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "EVIDENCE.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cur []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "```bash":
			in, cur = true, nil
		case line == "```" && in:
			in = false
			if len(cur) > 0 && strings.HasPrefix(cur[0], "# "+name+" ") {
				return strings.Join(cur, "\n") + "\n"
			}
		case in:
			cur = append(cur, line)
		}
	}
	t.Fatalf("docs/EVIDENCE.md has no bash block starting %q", "# "+name)
	return ""
}

// needTools: the recipe's tools. CI installs them (.ci/run); elsewhere a
// machine without them cannot run the recipe, and says so.
func needTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"bash", "jq", "openssl", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is missing (CI installs it: .ci/run)", tool)
			}
			t.Skipf("%s is not installed; the recipe needs it", tool)
		}
	}
}

// runRecipe writes files into a fresh directory and runs script there with
// args; it answers the output and whether the script succeeded.
func runRecipe(t *testing.T, script string, files map[string][]byte, args ...string) (string, bool) {
	t.Helper()
	dir := writeFiles(t, files)
	if err := os.WriteFile(filepath.Join(dir, "check.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", append([]string{"check.sh"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// writeFiles writes files (by relative path) into a fresh directory.
func writeFiles(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// cli is cmd/warrant built once for the test binary (TestMain removes it).
var cli struct {
	once      sync.Once
	dir, path string
	err       error
}

// buildCLI builds cmd/warrant, once for all the tests that run it.
func buildCLI(t *testing.T) string {
	t.Helper()
	cli.once.Do(func() {
		if cli.dir, cli.err = os.MkdirTemp("", "handlers-warrant-"); cli.err != nil {
			return
		}
		cli.path = filepath.Join(cli.dir, "warrant")
		if out, err := exec.Command("go", "build", "-o", cli.path, "github.com/seed-f6d3920e/warrant/cmd/warrant").CombinedOutput(); err != nil {
			cli.err = fmt.Errorf("go build cmd/warrant: %v\n%s", err, out)
		}
	})
	if cli.err != nil {
		t.Fatal(cli.err)
	}
	return cli.path
}

// runCLI runs `warrant evidence verify` in a fresh directory holding files.
func runCLI(t *testing.T, bin string, files map[string][]byte, args ...string) (string, bool) {
	t.Helper()
	dir := writeFiles(t, files)
	cmd := exec.Command(bin, append([]string{"evidence", "verify"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

func jsonOf(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// publicKeyPEM is the stack's one receipt key as GET /v1/keys publishes it.
func (s *stack) publicKeyPEM(t *testing.T) []byte {
	t.Helper()
	resp := s.post(getRoute(t, "GET /v1/keys", "/v1/keys", nil, nil))
	var keys struct {
		Keys []struct {
			PEM string `json:"public_key_pem"`
		} `json:"keys"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &keys); err != nil || len(keys.Keys) != 1 {
		t.Fatalf("keys: %v %s", err, resp.Body)
	}
	return []byte(keys.Keys[0].PEM)
}

// TestEvidenceRecipe runs docs/EVIDENCE.md's openssl recipe, exactly as
// written, on real bundles: the untampered one verifies; a rolled-back run,
// an altered receipt, a receipt signed by another key, a ledger that runs
// past its receipt and a deleted run are each refused, naming why.
func TestEvidenceRecipe(t *testing.T) {
	needTools(t)
	checkRun, checkLog := recipe(t, "check-evidence.sh"), recipe(t, "check-firm-log.sh")
	s := newStack(t, stackOptions{})
	pem := s.publicKeyPEM(t)

	// Two completed runs, and a third rolled back to its held state after
	// it completed.
	first, second := s.completedFiling(t), s.completedFiling(t)
	rolled := s.startHeld(t)
	pk := runPK(fixFirm, rolled.runID)
	heldItems := map[string]bool{}
	var heldRun map[string]types.AttributeValue
	for _, it := range s.items(pk) {
		heldItems[skOf(it)] = true
		if skOf(it) == "RUN" {
			heldRun = it
		}
	}
	s.call(approveReq(t, rolled, "approve", rolled.hash))
	s.call(resumeReq(t, rolled))
	for _, r := range []string{first.runID, second.runID, rolled.runID} {
		s.settle(r)
	}
	good := s.bundle(first.runID, nil)
	firmLog := s.firmLog()
	bundles := map[string][]byte{"runs/" + first.runID + ".json": jsonOf(t, good),
		"runs/" + second.runID + ".json": jsonOf(t, s.bundle(second.runID, nil)),
		"runs/" + rolled.runID + ".json": jsonOf(t, s.bundle(rolled.runID, nil))}
	for _, it := range s.items(pk) {
		if !heldItems[skOf(it)] {
			s.deleteItem(pk, skOf(it))
		}
	}
	s.putItem(heldRun)
	rolledBack := s.bundle(rolled.runID, nil)

	out, ok := runRecipe(t, checkRun, map[string][]byte{"bundle.json": jsonOf(t, good), "key.pem": pem}, "bundle.json", "key.pem")
	if !ok || !strings.Contains(out, "verified: run "+first.runID+", 4 receipts, checkpoint") {
		t.Fatalf("the untampered bundle: %v\n%s", ok, out)
	}
	cli := buildCLI(t)
	if out, ok := runCLI(t, cli, map[string][]byte{"bundle.json": jsonOf(t, good), "key.pem": pem}, "--public-key", "key.pem", "bundle.json"); !ok ||
		!strings.Contains(out, `"verified": true`) || !strings.Contains(out, `"complete": true`) {
		t.Fatalf("warrant evidence verify, the untampered bundle: %v\n%s", ok, out)
	}
	// A verifier holding the bundle's checkpoint pins it; any other is refused.
	ckpt := jsonOf(t, good.Checkpoint)
	if out, ok := runCLI(t, cli, map[string][]byte{"bundle.json": jsonOf(t, good), "key.pem": pem, "held.json": ckpt},
		"--public-key", "key.pem", "--checkpoint", "held.json", "bundle.json"); !ok {
		t.Fatalf("warrant evidence verify --checkpoint (the bundle's own): %s", out)
	}
	var older evidence.Bundle
	_ = json.Unmarshal(jsonOf(t, good), &older)
	firstCkpt := s.bundle(first.runID, map[string]string{"checkpoint": "1"})
	if out, ok := runCLI(t, cli, map[string][]byte{"bundle.json": jsonOf(t, good), "key.pem": pem, "held.json": jsonOf(t, firstCkpt.Checkpoint)},
		"--public-key", "key.pem", "--checkpoint", "held.json", "bundle.json"); ok || !strings.Contains(out, "not a checkpoint you hold") {
		t.Fatalf("warrant evidence verify --checkpoint (another): ok=%v %s", ok, out)
	}
	logFiles := map[string][]byte{"log.json": jsonOf(t, firmLog), "key.pem": pem}
	for k, v := range bundles {
		logFiles[k] = v
	}
	if out, ok := runRecipe(t, checkLog, logFiles, "log.json", "key.pem", "runs"); !ok || !strings.Contains(out, "verified: firm log entries 1 to 12") {
		t.Fatalf("the untampered firm log: %v\n%s", ok, out)
	}

	other, err := evidence.ParseP256(otherReceiptKey)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(fn func(b *evidence.Bundle)) []byte {
		var b evidence.Bundle
		_ = json.Unmarshal(jsonOf(t, good), &b)
		fn(&b)
		return jsonOf(t, b)
	}
	for _, tc := range []struct {
		name   string
		bundle []byte
		want   string
	}{
		{"a run rolled back to an older signed head", jsonOf(t, rolledBack), "FAILED: the firm log and the bundle's receipts differ"},
		{"an altered receipt", edit(func(b *evidence.Bundle) {
			b.Receipts[1].Body = strings.Replace(b.Receipts[1].Body, `"outcome":"success"`, `"outcome":"error"`, 1)
		}), "FAILED: receipt 1's signature"},
		{"a receipt signed by another key", edit(func(b *evidence.Bundle) {
			var r evidence.Receipt
			_ = json.Unmarshal([]byte(b.Receipts[1].Body), &r)
			r.KeyID, r.IssuedAt = "", ""
			b.Receipts[1], _ = evidence.Issue(context.Background(), other, r, contracts.FormatTime(s.clock.Now()))
		}), "FAILED: receipt 1 is signed by another key"},
		{"a ledger that runs past its receipt", edit(func(b *evidence.Bundle) {
			last, _ := contracts.ParseEventLine([]byte(b.Ledger[len(b.Ledger)-1]))
			forged, _ := contracts.ChainAfter(last).Next(&contracts.RunCompleted{StopReason: "end_turn", FinalText: "forged"})
			b.Ledger = append(b.Ledger, string(forged.Raw))
		}), "FAILED: the ledger runs past its last receipt"},
		// Issue 25 B: the run's start moved an hour later, a forged end
		// ("nothing was sent"), and a log segment after its real receipts.
		{"a run moved later, its receipts before the segment", edit(func(b *evidence.Bundle) {
			start, _ := time.Parse(contracts.TimeLayout, mustLine(t, b.Ledger[0]).CreatedAt)
			b.Ledger = forgeRun(t, good, start.Add(time.Hour), &contracts.RunFailed{ErrorClass: "tool", ErrorMessage: "nothing was sent",
				FailureStage: "tool_execute", FailureKind: "tool_error", Failure: json.RawMessage(`{}`)})
			b.Head, b.Receipts, b.Checkpoint = nil, []evidence.Signed{}, firmLog.Checkpoint
			b.Log = segmentFrom(firmLog, int64(len(good.Receipts))+1) // the first run's entries come first
		}), "FAILED: the run's start is not in the log segment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := runRecipe(t, checkRun, map[string][]byte{"bundle.json": tc.bundle, "key.pem": pem}, "bundle.json", "key.pem")
			if ok || !strings.Contains(out, tc.want) {
				t.Fatalf("the recipe: ok=%v, want %q:\n%s", ok, tc.want, out)
			}
			// warrant evidence verify refuses it too, naming the check.
			out, ok = runCLI(t, cli, map[string][]byte{"bundle.json": tc.bundle, "key.pem": pem}, "--public-key", "key.pem", "bundle.json")
			if ok || !strings.Contains(out, "warrant: bundle.json: run ") {
				t.Fatalf("warrant evidence verify: ok=%v\n%s", ok, out)
			}
			t.Logf("warrant evidence verify: %s", strings.TrimSpace(out))
		})
	}
	// Issue 25, item 7: a run that has not ended verifies (the recipe once
	// died silently on it), as warrant evidence verify says.
	t.Run("a run that has not ended", func(t *testing.T) {
		h := s.startHeld(t)
		s.settle(h.runID)
		b := jsonOf(t, s.bundle(h.runID, nil))
		out, ok := runRecipe(t, checkRun, map[string][]byte{"bundle.json": b, "key.pem": pem}, "bundle.json", "key.pem")
		if !ok || !strings.Contains(out, "verified: run "+h.runID+", 2 receipts") {
			t.Fatalf("the recipe: ok=%v\n%s", ok, out)
		}
		if out, ok := runCLI(t, cli, map[string][]byte{"bundle.json": b, "key.pem": pem}, "--public-key", "key.pem", "bundle.json"); !ok ||
			!strings.Contains(out, `"verified": true`) || !strings.Contains(out, `"status": "held"`) {
			t.Fatalf("warrant evidence verify: ok=%v\n%s", ok, out)
		}
	})
	t.Run("a deleted run", func(t *testing.T) {
		files := map[string][]byte{}
		for k, v := range logFiles {
			if k != "runs/"+second.runID+".json" {
				files[k] = v
			}
		}
		out, ok := runRecipe(t, checkLog, files, "log.json", "key.pem", "runs")
		if ok || !strings.Contains(out, "FAILED: run "+second.runID+" has receipts in the firm log") {
			t.Fatalf("the recipe: ok=%v:\n%s", ok, out)
		}
		args := []string{"--public-key", "key.pem", "log.json", "runs/" + first.runID + ".json", "runs/" + rolled.runID + ".json"}
		out, ok = runCLI(t, cli, files, args...)
		if ok || !strings.Contains(out, "run "+second.runID+" has 4 receipts in the firm log") || !strings.Contains(out, "deleted or withheld") {
			t.Fatalf("warrant evidence verify: ok=%v\n%s", ok, out)
		}
		// With every run's bundle, the firm log verifies.
		out, ok = runCLI(t, cli, logFiles, append(args, "runs/"+second.runID+".json")...)
		if !ok || !strings.Contains(out, `"runs": 3`) {
			t.Fatalf("warrant evidence verify, the whole firm log: ok=%v\n%s", ok, out)
		}
	})
	// Issue 25 E (last: it rewinds the firm log): a completed run whose
	// receipts were removed before the next checkpoint, which was signed
	// more than five minutes after it ended.
	t.Run("receipts removed before a checkpoint", func(t *testing.T) {
		b := jsonOf(t, s.bundle(s.receiptsRemovedRun(t), nil))
		out, ok := runRecipe(t, checkRun, map[string][]byte{"bundle.json": b, "key.pem": pem}, "bundle.json", "key.pem")
		if ok || !strings.Contains(out, "its receipt was removed") {
			t.Fatalf("the recipe: ok=%v\n%s", ok, out)
		}
		if out, ok := runCLI(t, cli, map[string][]byte{"bundle.json": b, "key.pem": pem}, "--public-key", "key.pem", "bundle.json"); ok ||
			!strings.Contains(out, "receipt was removed") {
			t.Fatalf("warrant evidence verify: ok=%v\n%s", ok, out)
		}
	})
}
