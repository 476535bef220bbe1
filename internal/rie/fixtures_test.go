package rie_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/internal/rie"
)

const (
	module  = "github.com/seed-f6d3920e/warrant"
	modelID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
)

var functions = []string{"invoke", "approve", "resume", "runs", "worker", "sweeper", "stream-reduce"}

// testLedgerKey is the functions' LEDGER_KEY in these tests (a local HMAC key).
const testLedgerKey = "hmac:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

// testReceiptKey is the functions' RECEIPT_KEY in these tests (a local P-256
// key; runs, stream-reduce and the sweeper read it).
const testReceiptKey = "p256:308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b02010104200d0e4dfd2fd29a903e04ad4aaf4b09cf4f341a495760f785a1a36b331f79e6c1a144034200040a0d7f5199191b9c03f5e99dcb8423f3444b077206c81f6e878be8c25c504ac079170d8f3522366b88b2d789cce66044570f7a8f1cef463b2ac7731b56135950"

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

// buildAll builds the seven bootstraps for the host with one go build.
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
