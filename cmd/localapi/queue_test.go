package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/sqs/sqstest"
)

// fakeFn stands in for an emulator: it records each payload and answers
// with answer(event).
type fakeFn struct {
	mu     sync.Mutex
	calls  [][]byte
	active int
	maxAct int
	answer func(ev events.SQSEvent) ([]byte, error)
}

func (f *fakeFn) Name() string { return "worker" }

func (f *fakeFn) Invoke(_ context.Context, payload []byte) ([]byte, error) {
	f.mu.Lock()
	f.calls = append(f.calls, payload)
	f.active++
	f.maxAct = max(f.maxAct, f.active)
	f.mu.Unlock()
	defer func() { f.mu.Lock(); f.active--; f.mu.Unlock() }()
	var ev events.SQSEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	if f.answer == nil {
		return []byte(`{"batchItemFailures":[]}`), nil
	}
	return f.answer(ev)
}

func (f *fakeFn) events(t *testing.T) []events.SQSEvent {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []events.SQSEvent
	for _, p := range f.calls {
		var ev events.SQSEvent
		if err := json.Unmarshal(p, &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// TestSQSRecordShape: a record the feed builds has exactly the members of
// the event source mapping's (events/worker-sqs.json) and decodes as an
// events.SQSEvent; the fixture itself is a valid worker message.
func TestSQSRecordShape(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repo, "events", "worker-sqs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx struct{ Records []map[string]any }
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	if len(fx.Records) != 1 {
		t.Fatalf("fixture has %d records, want 1", len(fx.Records))
	}
	want := map[string]bool{}
	keysOf("", fx.Records[0], want)
	var typed events.SQSEvent
	if err := json.Unmarshal(b, &typed); err != nil {
		t.Fatal(err)
	}
	r := typed.Records[0]
	sum := md5.Sum([]byte(r.Body))
	if r.Md5OfBody != hex.EncodeToString(sum[:]) || r.EventSource != "aws:sqs" || r.Attributes["ApproximateReceiveCount"] != "1" {
		t.Errorf("fixture record %+v", r)
	}
	m, err := contracts.DecodeWorkerMessage([]byte(r.Body))
	if err != nil || m.Reason != contracts.ReasonStarted || m.FirmID != DevFirm || m.RunID != "5b0c6a2e-7d4f-4c8e-9a51-0b8f2f3c1d01" {
		t.Errorf("fixture body %s: %+v %v", r.Body, m, err)
	}

	q := sqstest.NewQueue(sqstest.Options{Name: "WorkerQueue"})
	if _, err := q.Send(sqstest.SendInput{Body: r.Body, SenderID: "test"}); err != nil {
		t.Fatal(err)
	}
	got, _ := q.Receive(context.Background(), sqstest.ReceiveInput{})
	rb, err := json.Marshal(struct {
		Records []SQSRecord `json:"Records"`
	}{[]SQSRecord{sqsRecord(q, "us-east-1", got[0])}})
	if err != nil {
		t.Fatal(err)
	}
	var mine struct{ Records []map[string]any }
	if err := json.Unmarshal(rb, &mine); err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	keysOf("", mine.Records[0], have)
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
	var ev events.SQSEvent
	if err := json.Unmarshal(rb, &ev); err != nil {
		t.Fatal(err)
	}
	e := ev.Records[0]
	if e.MessageId != got[0].ID || e.ReceiptHandle != got[0].ReceiptHandle || e.Body != r.Body || e.Md5OfBody != r.Md5OfBody ||
		e.EventSourceARN != "arn:aws:sqs:us-east-1:000000000000:WorkerQueue" || e.AWSRegion != "us-east-1" ||
		e.Attributes["ApproximateReceiveCount"] != "1" || e.Attributes["SenderId"] != "test" || e.Attributes["ApproximateFirstReceiveTimestamp"] == "" {
		t.Errorf("record %s", rb)
	}

	// With message attributes, they and their digest are in the record.
	s := "v"
	if _, err := q.Send(sqstest.SendInput{Body: "x", Attributes: map[string]sqstest.MessageAttribute{"k": {DataType: "String", StringValue: &s}}}); err != nil {
		t.Fatal(err)
	}
	got, _ = q.Receive(context.Background(), sqstest.ReceiveInput{})
	rec := sqsRecord(q, "us-east-1", got[0])
	if rec.MD5OfMessageAttributes == "" || *rec.MessageAttributes["k"].StringValue != "v" || rec.MessageAttributes["k"].DataType != "String" {
		t.Errorf("record with attributes %+v", rec)
	}
}

// feedFor is a feed over a queue (visibility vis, to a dead-letter queue
// after maxReceive receives) into fn, logging to the buffers.
func feedFor(vis time.Duration, maxReceive int, fn *fakeFn, report bool) (*QueueFeed, *bytes.Buffer, *bytes.Buffer) {
	dlq := sqstest.NewQueue(sqstest.Options{Name: "WorkerDeadLetterQueue"})
	q := sqstest.NewQueue(sqstest.Options{Name: "WorkerQueue", VisibilityTimeout: vis, DeadLetter: dlq, MaxReceiveCount: maxReceive})
	var log, errLog bytes.Buffer
	lw, ew := &syncWriter{w: &log}, &syncWriter{w: &errLog}
	return &QueueFeed{Queue: q, Event: QueueEvent{Name: "WorkerMessages", Queue: "WorkerQueue", BatchSize: 1, ReportBatchItemFailures: report},
		Fn: fn, Region: "us-east-1", Log: lw, ErrLog: ew}, &log, &errLog
}

// TestQueueFeed: each outcome the event source mapping distinguishes, one
// message each, through Run: deleted, or back after the visibility timeout
// and in the dead-letter queue after maxReceiveCount receives.
func TestQueueFeed(t *testing.T) {
	const vis = 150 * time.Millisecond
	fn := &fakeFn{answer: func(ev events.SQSEvent) ([]byte, error) {
		r := ev.Records[0]
		switch r.Body {
		case "ok":
			return []byte(`{"batchItemFailures":[]}`), nil
		case "null":
			return []byte(`null`), nil
		case "empty":
			return []byte(`{}`), nil
		case "fail":
			return fmt.Appendf(nil, `{"batchItemFailures":[{"itemIdentifier":%q}]}`, r.MessageId), nil
		case "bad-id":
			return []byte(`{"batchItemFailures":[{"itemIdentifier":"no-such-message"}]}`), nil
		case "not-json":
			return []byte(`"done"`), nil
		case "flaky":
			if r.Attributes["ApproximateReceiveCount"] == "1" {
				return nil, errors.New("function error Runtime.ExitError: exit status 2")
			}
			return []byte(`{"batchItemFailures":[]}`), nil
		}
		return nil, errors.New("function error handler: boom")
	}}
	f, log, errLog := feedFor(vis, 2, fn, true)
	bodies := []string{"ok", "null", "empty", "fail", "bad-id", "not-json", "flaky", "error"}
	for _, b := range bodies {
		if _, err := f.Queue.Send(sqstest.SendInput{Body: b}); err != nil {
			t.Fatal(err)
		}
	}
	var delivered sync.Map
	f.Delivered = func(bs []string) {
		for _, b := range bs {
			delivered.Store(b, true)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Run(ctx); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(f.Queue.DeadLetters()) < 4 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done

	got := map[string]int{}
	for _, ev := range fn.events(t) {
		if len(ev.Records) != 1 {
			t.Fatalf("batch of %d, want BatchSize 1", len(ev.Records))
		}
		got[ev.Records[0].Body]++
	}
	want := map[string]int{"ok": 1, "null": 1, "empty": 1, "fail": 2, "bad-id": 2, "not-json": 2, "flaky": 2, "error": 2}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("deliveries %v, want %v", got, want)
	}
	var dead []string
	for _, m := range f.Queue.DeadLetters() {
		dead = append(dead, m.Body)
	}
	if fmt.Sprint(dead) != "[fail bad-id not-json error]" {
		t.Errorf("dead letters %v", dead)
	}
	if c := f.Queue.Counts(); c.Visible+c.InFlight+c.Delayed != 0 || c.Deleted != 4 || c.DeadLettered != 4 {
		t.Errorf("counts %+v", c)
	}
	if fn.maxAct != 1 {
		t.Errorf("%d invocations at once, want 1", fn.maxAct)
	}
	for _, b := range bodies {
		if _, ok := delivered.Load(b); !ok {
			t.Errorf("Delivered never saw %s", b)
		}
	}
	logs := log.String()
	for _, want := range []string{"-> worker ok in", "; deleted", "reported in batchItemFailures", "not a message of the batch",
		"not an SQSEventResponse", "Runtime.ExitError", "it comes back after the visibility timeout (150ms)",
		"that was its last receive (maxReceiveCount 2): after the visibility timeout (150ms) it moves to WorkerDeadLetterQueue"} {
		if !strings.Contains(logs, want) {
			t.Errorf("queue.log lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(errLog.String(), "; deleted") || !strings.Contains(errLog.String(), "failed in") {
		t.Errorf("error log:\n%s", errLog.String())
	}
}

// TestQueueFeedWithoutReportBatchItemFailures: without the response type
// any answer that is not an error deletes the batch.
func TestQueueFeedWithoutReportBatchItemFailures(t *testing.T) {
	fn := &fakeFn{answer: func(ev events.SQSEvent) ([]byte, error) {
		return fmt.Appendf(nil, `{"batchItemFailures":[{"itemIdentifier":%q}]}`, ev.Records[0].MessageId), nil
	}}
	f, log, _ := feedFor(time.Minute, 3, fn, false)
	if _, err := f.Queue.Send(sqstest.SendInput{Body: `{"firm_id":"f","run_id":"5b0c6a2e-7d4f-4c8e-9a51-0b8f2f3c1d01","reason":"resumed"}`}); err != nil {
		t.Fatal(err)
	}
	msgs, _ := f.Queue.Receive(context.Background(), sqstest.ReceiveInput{})
	f.Deliver(context.Background(), msgs)
	if c := f.Queue.Counts(); c.Deleted != 1 {
		t.Fatalf("counts %+v", c)
	}
	if !strings.Contains(log.String(), "message "+msgs[0].ID+" (run 5b0c6a2e…, resumed) (receive 1) -> worker ok in") {
		t.Errorf("log %s", log.String())
	}
}

// TestQueueFeedSlowInvocation: an invocation that outlasts the visibility
// timeout still deletes its message (no one received it again: the feed
// makes one call at a time), as SQS allows with the latest receipt handle.
func TestQueueFeedSlowInvocation(t *testing.T) {
	fn := &fakeFn{answer: func(events.SQSEvent) ([]byte, error) {
		time.Sleep(120 * time.Millisecond)
		return []byte(`{"batchItemFailures":[]}`), nil
	}}
	f, log, _ := feedFor(50*time.Millisecond, 3, fn, true)
	if _, err := f.Queue.Send(sqstest.SendInput{Body: "slow"}); err != nil {
		t.Fatal(err)
	}
	msgs, _ := f.Queue.Receive(context.Background(), sqstest.ReceiveInput{})
	f.Deliver(context.Background(), msgs)
	if c := f.Queue.Counts(); c.Deleted != 1 || c.Visible != 0 {
		t.Fatalf("counts %+v\n%s", c, log.String())
	}
}

func TestLocalEvery(t *testing.T) {
	for _, tc := range []struct {
		s     Schedule
		every time.Duration
		want  time.Duration
	}{
		{Schedule{Rate: time.Minute}, 5 * time.Second, 5 * time.Second},
		{Schedule{Rate: 10 * time.Minute}, 5 * time.Second, 50 * time.Second},
		{Schedule{Rate: time.Hour}, time.Second, time.Minute},
		{Schedule{Rate: time.Minute}, 0, 0},
		{Schedule{Rate: time.Minute, Disabled: true}, time.Second, 0},
		{Schedule{Expression: "cron(0 3 * * ? *)"}, time.Second, 0},
	} {
		if got := localEvery(tc.s, tc.every); got != tc.want {
			t.Errorf("localEvery(%+v, %s) = %s, want %s", tc.s, tc.every, got, tc.want)
		}
	}
}

// TestTimerEvent: the timer sends what EventBridge Scheduler sends by
// default (events/sweeper-schedule.json's members), or the event's Input.
func TestTimerEvent(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repo, "events", "sweeper-schedule.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx map[string]any
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	fn := &Function{LogicalID: "SweeperFunction", Name: "sweeper"}
	tm := &Timer{Fn: fn, Schedule: Schedule{Name: "Sweep", Type: "ScheduleV2", Expression: "rate(1 minute)", Rate: time.Minute}, Region: "us-east-1"}
	now := time.Date(2026, 12, 2, 17, 32, 0, 400e6, time.UTC)
	var got map[string]any
	if err := json.Unmarshal(tm.Event(now), &got); err != nil {
		t.Fatal(err)
	}
	for k := range fx {
		if _, ok := got[k]; !ok {
			t.Errorf("event lacks %s", k)
		}
	}
	for k := range got {
		if _, ok := fx[k]; !ok {
			t.Errorf("event has %s, which the fixture does not", k)
		}
	}
	for _, k := range []string{"version", "detail-type", "source", "region", "detail"} {
		if got[k] != fx[k] {
			t.Errorf("%s = %v, fixture %v", k, got[k], fx[k])
		}
	}
	if got["time"] != "2026-12-02T17:32:00Z" || fmt.Sprint(got["resources"]) != "[arn:aws:scheduler:us-east-1:000000000000:schedule/default/SweeperFunctionSweep]" {
		t.Errorf("event %v", got)
	}
	var eb events.EventBridgeEvent
	if err := json.Unmarshal(tm.Event(now), &eb); err != nil || eb.DetailType != "Scheduled Event" || eb.Source != "aws.scheduler" {
		t.Errorf("as events.EventBridgeEvent: %+v %v", eb, err)
	}
	tm.Schedule.Input = `{"sweep":"all"}`
	if string(tm.Event(now)) != `{"sweep":"all"}` {
		t.Errorf("with Input: %s", tm.Event(now))
	}
	tm.Schedule.Input, tm.Schedule.Type = "", "Schedule"
	if err := json.Unmarshal(tm.Event(now), &got); err != nil || got["source"] != "aws.events" || fmt.Sprint(got["detail"]) != "map[]" {
		t.Errorf("Schedule event: %v %v", got, err)
	}
}

// TestTimerRun: the timer calls once per period, one call at a time, and
// logs failures.
func TestTimerRun(t *testing.T) {
	calls := 0
	var mu sync.Mutex
	fn := &fakeFn{answer: func(events.SQSEvent) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		time.Sleep(30 * time.Millisecond) // longer than the period: ticks are dropped, never overlapped
		if calls == 2 {
			return nil, errors.New("function error Runtime.ExitError: init failed")
		}
		return []byte(`null`), nil
	}}
	var log, errLog bytes.Buffer
	tm := &Timer{Fn: &Function{LogicalID: "SweeperFunction"}, Schedule: Schedule{Name: "Sweep", Type: "ScheduleV2", Expression: "rate(1 minute)", Rate: time.Minute},
		Emulator: fn, Every: 10 * time.Millisecond, Region: "us-east-1", Log: &syncWriter{w: &log}, ErrLog: &syncWriter{w: &errLog}}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	tm.Run(ctx)
	mu.Lock()
	n := calls
	mu.Unlock()
	if n < 3 || fn.maxAct != 1 {
		t.Fatalf("%d calls, %d at once", n, fn.maxAct)
	}
	if !strings.Contains(log.String(), "schedule SweeperFunctionSweep (rate(1 minute), every 10ms locally) -> worker ok in") ||
		!strings.Contains(errLog.String(), "failed in") || !strings.Contains(errLog.String(), "init failed") {
		t.Fatalf("log:\n%s\nerrors:\n%s", log.String(), errLog.String())
	}
}

// lockedBuffer is a bytes.Buffer safe to write from a process's output
// copier while the test reads it.
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

// waitFor polls cond every 50 ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestQueueAndSchedule runs localapi on testdata/queue: a function sends to
// the queue through the SDK (AWS_ENDPOINT_URL_SQS, QUEUE_URL), the
// consumer gets each message as an SQS event, failures come back after the
// visibility timeout and land in the dead-letter queue after
// maxReceiveCount receives, and the scheduled function is called on its
// local period, and a function that outlives its timeout answers as API
// Gateway does. Then SIGTERM stops everything.
func TestQueueAndSchedule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a stack; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	logDir := t.TempDir()
	addr := freeAddr(t)
	var stdout, stderr lockedBuffer
	cmd := localapi(ctx, "-template", "cmd/localapi/testdata/queue/template.yaml", "-addr", addr, "-log-dir", logDir,
		"-visibility-timeout", "400ms", "-sweep-every", "250ms")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second // a child left holding the output pipes must not hang the test
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	defer func() {
		select {
		case <-exited:
		default:
			_ = cmd.Cancel()
			<-exited
		}
	}()
	if !waitFor(2*time.Minute, func() bool { return strings.Contains(stderr.String(), "api: http://") }) {
		t.Fatalf("the stack did not come up:\n%s", stderr.String())
	}
	for _, want := range []string{"sqs: fake on 127.0.0.1:", "DeadJobs (visibility 400ms)", "Jobs (visibility 400ms, to DeadJobs after 2 receives)",
		"queue: Jobs -> lambda work (batch 1", "schedule: TickFunctionTick (rate(1 minute)) -> lambda tick every 250ms locally"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("start-up lines lack %q:\n%s", want, stderr.String())
		}
	}
	// A function that outlives its Timeout: Lambda answers the invoke with
	// an error (Sandbox.Timedout), which API Gateway's HTTP API turns into
	// its bare 500, never the emulator's 200 "Task timed out" text.
	slow, err := http.Get("http://" + addr + "/slow")
	if err != nil {
		t.Fatal(err)
	}
	slowBody, _ := io.ReadAll(slow.Body)
	slow.Body.Close()
	if slow.StatusCode != http.StatusInternalServerError || strings.TrimSpace(string(slowBody)) != `{"message":"Internal Server Error"}` {
		t.Errorf("a function that timed out: %d %s, want API Gateway's 500 {\"message\":\"Internal Server Error\"}", slow.StatusCode, slowBody)
	}
	if !waitFor(5*time.Second, func() bool { return strings.Contains(stderr.String(), "Sandbox.Timedout") }) {
		t.Errorf("the timeout is not reported on stderr:\n%s", stderr.String())
	}
	ids := map[string]string{}
	for _, body := range []string{"ok", "flaky", "fail", "error"} {
		resp, err := httpPost("http://"+addr+"/enqueue", body)
		if err != nil || resp.status != 200 || resp.body == "" {
			t.Fatalf("enqueue %s: %+v %v\n%s", body, resp, err, stderr.String())
		}
		ids[body] = resp.body
	}
	queueLog := func() string { b, _ := os.ReadFile(filepath.Join(logDir, "queue.log")); return string(b) }
	settled := func() bool {
		l := queueLog()
		return strings.Count(l, "; deleted") == 2 && strings.Count(l, "moved to DeadJobs") == 2
	}
	if !waitFor(30*time.Second, settled) {
		t.Fatalf("queue.log:\n%s\nstderr:\n%s", queueLog(), stderr.String())
	}
	l := queueLog()
	for _, want := range []string{
		"queue Jobs: message " + ids["ok"] + " sent",
		"queue Jobs: message " + ids["ok"] + " (receive 1) -> work ok in",
		"queue Jobs: message " + ids["flaky"] + " (receive 1) -> work failed in",
		"queue Jobs: message " + ids["flaky"] + " (receive 2) -> work ok in",
		"queue Jobs: message " + ids["fail"] + " (receive 2) -> work failed in",
		"reported in batchItemFailures; that was its last receive (maxReceiveCount 2)",
		"queue Jobs: message " + ids["fail"] + " was received 2 times without success: moved to DeadJobs",
		"queue Jobs: message " + ids["error"] + " was received 2 times without success: moved to DeadJobs",
		"boom",
		"schedule TickFunctionTick (rate(1 minute), every 250ms locally) -> tick ok in",
	} {
		if !strings.Contains(l, want) {
			t.Errorf("queue.log lacks %q:\n%s", want, l)
		}
	}
	if !strings.Contains(stderr.String(), "moved to DeadJobs") {
		t.Errorf("a dead letter is not reported on stderr:\n%s", stderr.String())
	}
	work, _ := os.ReadFile(filepath.Join(logDir, "work.log"))
	if !strings.Contains(string(work), "work: ok receive 1 from arn:aws:sqs:us-east-1:000000000000:Jobs (aws:sqs)") {
		t.Errorf("work.log:\n%s", work)
	}
	tick, _ := os.ReadFile(filepath.Join(logDir, "tick.log"))
	if !strings.Contains(string(tick), `"source":"aws.scheduler"`) || !strings.Contains(string(tick), `"detail-type":"Scheduled Event"`) {
		t.Errorf("tick.log:\n%s", tick)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("localapi after SIGTERM: %v\n%s", waitErr, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("localapi did not stop")
	}
	if left := stillRunning(logDir); len(left) > 0 {
		t.Fatalf("still running: %v", left)
	}
}

type httpAnswer struct {
	status int
	body   string
}

func httpPost(url, body string) (httpAnswer, error) {
	resp, err := http.Post(url, "text/plain", strings.NewReader(body))
	if err != nil {
		return httpAnswer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return httpAnswer{resp.StatusCode, string(b)}, err
}
