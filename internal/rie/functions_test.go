package rie_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/internal/proc"
	"github.com/seed-f6d3920e/warrant/internal/rie"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/eventbus/eventbustest"
	"github.com/seed-f6d3920e/warrant/pkg/sqs/sqstest"
)

// TestFunctionsUnderEmulator runs each of the seven functions' bootstraps
// under its own emulator against minidyn, the fake Bedrock and a fake SQS
// queue, and walks the events/ fixtures through a run that invoke hands to
// the worker, which holds it; approved, resumed and handed over again, the
// worker completes it.
func TestFunctionsUnderEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds seven bootstraps; skipped with -short")
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

	queue := sqstest.NewQueue(sqstest.Options{Name: "WorkerQueue", VisibilityTimeout: time.Minute})
	sqs := sqstest.NewServer(queue)
	t.Cleanup(sqs.Close)
	bus := eventbustest.New() // the notifications stream-reduce and the sweeper send
	t.Cleanup(bus.Close)

	common := []string{
		"AWS_ENDPOINT_URL_SQS=" + sqs.URL,
		"AWS_ENDPOINT_URL_EVENTBRIDGE=" + bus.URL(),
		"QUEUE_URL=" + sqs.QueueURL(queue),
		"AWS_ENDPOINT_URL_DYNAMODB=" + ddb.URL,
		"AWS_ENDPOINT_URL_BEDROCK_RUNTIME=" + model.URL(),
		"AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"LOG_LEVEL=INFO",
		"MODEL_ID=" + modelID,
		"LEDGER_KEY=" + testLedgerKey,
		"RECEIPT_KEY=" + testReceiptKey,
		// The sweeper keeps checkpoints outside the table; a directory
		// stands in for the bucket here (the others do not read it).
		"CHECKPOINT_DIR=" + t.TempDir(),
		"EVENT_BUS_NAME=warrant-test-notifications", "DESK_URL=https://desk.warrant.example/desk",
		// The worker's and runs' (the template's default); the other
		// functions do not read it.
		"FIRM_MONTHLY_BUDGET_USD=100.00",
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

	// worker: one message is what Lambda's SQS event source sends it.
	work := func(what, reason string) {
		t.Helper()
		msgs, err := queue.Receive(ctx, sqstest.ReceiveInput{Wait: 5 * time.Second})
		if err != nil || len(msgs) != 1 {
			t.Fatalf("%s: the worker queue holds %v (%v), want one message", what, msgs, err)
		}
		m := msgs[0]
		if !strings.Contains(m.Body, `"reason":"`+reason+`"`) {
			t.Fatalf("%s: message %s, want reason %s", what, m.Body, reason)
		}
		ev := fixture(t, "worker-sqs")
		rec := ev["Records"].([]any)[0].(map[string]any)
		rec["messageId"], rec["receiptHandle"], rec["body"], rec["md5OfBody"] = m.ID, m.ReceiptHandle, m.Body, m.MD5OfBody
		rec["eventSourceARN"] = queue.ARN()
		out, err := emus["worker"].Invoke(ctx, mustJSON(t, ev))
		if err != nil {
			t.Fatalf("%s: worker: %v\nlog tail:\n%s", what, err, emus["worker"].LogTail(4096))
		}
		var br events.SQSEventResponse
		if err := json.Unmarshal(out, &br); err != nil || len(br.BatchItemFailures) != 0 {
			t.Fatalf("%s: worker answered %s (%v)", what, out, err)
		}
		if ok, err := queue.Delete(m.ReceiptHandle); !ok || err != nil {
			t.Fatalf("%s: delete: %v %v", what, ok, err)
		}
	}
	// The run as the server folds it from the ledger (no projection yet).
	readRun := func(what, runID string) (events.APIGatewayV2HTTPResponse, map[string]any) {
		t.Helper()
		ev := fixture(t, "get-run")
		ev["rawQueryString"] = "consistent=true"
		ev["queryStringParameters"] = map[string]any{"consistent": "true"}
		retarget(t, ev, obj(ev, "pathParameters")["run_id"].(string), runID, "", "")
		resp, run := invokeAPI(t, ctx, emus["runs"], ev)
		wantStatus(t, what, resp, 200)
		return resp, run
	}

	// invoke: the run is recorded and handed to the worker (202, running).
	resp, run := invokeAPI(t, ctx, emus["invoke"], fixture(t, "invoke"))
	wantStatus(t, "invoke", resp, 202)
	if run["status"] != "running" {
		t.Fatalf("invoke: status %v, want running: %s", run["status"], resp.Body)
	}
	runID := run["run_id"].(string)
	// worker: the demo model files a motion, which the policy holds.
	work("started", "started")
	resp, run = readRun("held run", runID)
	if run["status"] != "held" {
		t.Fatalf("after the worker: status %v, want held: %s", run["status"], resp.Body)
	}
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

	// resume: the warrant is burned and the run handed over again; the
	// worker files the motion and the run completes.
	ev = fixture(t, "resume")
	retarget(t, ev, obj(ev, "pathParameters")["run_id"].(string), runID, "", "")
	ev["body"] = string(mustJSON(t, map[string]string{"approval_request_id": approvalID}))
	resp, _ = invokeAPI(t, ctx, emus["resume"], ev)
	wantStatus(t, "resume", resp, 202)
	work("resumed", "resumed")
	resp, run = readRun("completed run", runID)
	if run["status"] != "completed" || run["final_text"] != bedrocktest.DemoFiledText {
		t.Fatalf("after the worker: %s", resp.Body)
	}
	// A replay is a precise 409, never a second filing.
	resp, _ = invokeAPI(t, ctx, emus["resume"], ev)
	wantStatus(t, "resume replay", resp, 409)

	// A replay hands nothing over.
	if c := queue.Counts(); c.Sent != 2 || c.Visible+c.InFlight != 0 {
		t.Fatalf("worker queue after the replay: %+v", c)
	}

	// sweeper: the schedule's default event; nothing is stuck.
	out, err := emus["sweeper"].Invoke(ctx, mustJSON(t, fixture(t, "sweeper-schedule")))
	if err != nil {
		t.Fatalf("sweeper: %v\nlog tail:\n%s", err, emus["sweeper"].LogTail(4096))
	}
	if !json.Valid(out) {
		t.Fatalf("sweeper answered %s", out)
	}
	// worker: the fixture as it is names a run this table does not hold.
	if _, err := emus["worker"].Invoke(ctx, mustJSON(t, fixture(t, "worker-sqs"))); err != nil {
		t.Fatalf("worker (unknown run): %v", err)
	}

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
	out, err = emus["stream-reduce"].Invoke(ctx, mustJSON(t, sr))
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
	// The bootstrap published the run's notifications through the SDK
	// (EVENT_BUS_NAME, AWS_ENDPOINT_URL_EVENTBRIDGE): its hold, the
	// decision and its end.
	var types []string
	for _, e := range bus.Entries() {
		types = append(types, e.DetailType)
	}
	if !slices.Equal(types, []string{"warrant.pending", "warrant.decided", "run.completed"}) {
		t.Fatalf("stream-reduce published %v", types)
	}
}
