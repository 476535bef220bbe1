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

	"github.com/seed-f6d3920e/warrant/internal/proc"
	"github.com/seed-f6d3920e/warrant/internal/rie"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
)

// TestConfigFailure starts invoke and the worker without TABLE_NAME: each
// logs one failure envelope with failure_kind config_invalid at start;
// invoke, which API Gateway calls, answers the invocation with that problem
// (500, problem+json naming TABLE_NAME: not API Gateway's bare 500), and
// the worker's invocation fails (it exits; Lambda starts it again on its
// next message).
func TestConfigFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a bootstrap; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bins, err := rie.BuildAllShared(ctx, map[string]string{"invoke": module + "/functions/invoke", "worker": module + "/functions/worker"},
		filepath.Join(dir, "build"), filepath.Join(dir, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	for fn, event := range map[string]string{"invoke": "invoke", "worker": "worker-sqs"} {
		logPath := filepath.Join(dir, fn+".log")
		e, err := rie.Start(ctx, rie.Options{Name: fn, Bootstrap: bins[fn], LogPath: logPath,
			Env: []string{"LOG_LEVEL=INFO", "MODEL_ID=" + modelID, "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9"}})
		if err != nil {
			t.Fatal(err)
		}
		func() {
			defer func() {
				pids := e.PIDs()
				if err := e.Stop(); err != nil {
					t.Error(err)
				}
				for _, pid := range pids {
					if proc.Alive(pid) {
						t.Errorf("process %d is still running after Stop", pid)
					}
				}
			}()
			out, err := e.Invoke(ctx, mustJSON(t, fixture(t, event)))
			if fn == "invoke" {
				var resp struct {
					StatusCode int               `json:"statusCode"`
					Headers    map[string]string `json:"headers"`
					Body       string            `json:"body"`
				}
				var problem struct{ Kind, Detail string }
				if err != nil || json.Unmarshal(out, &resp) != nil || json.Unmarshal([]byte(resp.Body), &problem) != nil {
					t.Fatalf("invoke without TABLE_NAME: %v %s, want a problem", err, out)
				}
				if resp.StatusCode != 500 || resp.Headers["Content-Type"] != "application/problem+json" ||
					problem.Kind != "config_invalid" || !strings.Contains(problem.Detail, "TABLE_NAME") {
					t.Fatalf("invoke without TABLE_NAME answered %s", out)
				}
			} else {
				var fe *rie.FunctionError
				if !errors.As(err, &fe) || fe.Type != "Runtime.ExitError" {
					t.Fatalf("the worker without TABLE_NAME: %v %s, want a Runtime.ExitError function error", err, out)
				}
			}
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
				t.Logf("%s's emulator log:\n%s", fn, b)
			}
		}()
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
		Env: []string{"TABLE_NAME=" + table, "AWS_ENDPOINT_URL_DYNAMODB=" + ddb.URL, "LOG_LEVEL=INFO", "LEDGER_KEY=" + testLedgerKey, "RECEIPT_KEY=" + testReceiptKey}})
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
