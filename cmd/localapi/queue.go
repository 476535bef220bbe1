package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/internal/rie"
	"github.com/seed-f6d3920e/warrant/pkg/sqs/sqstest"
)

// QueueFeed is the SQS event source mapping of one function's SQS event on
// the local stack: it long-polls the local queue, invokes the function with
// one batch at a time as an SQSEvent, deletes the messages that succeeded,
// and leaves the others in the queue, where they come back after the
// visibility timeout and, after the redrive policy's maxReceiveCount
// receives, move to the dead-letter queue. One invocation at a time: the
// emulator runs one call at once.
type QueueFeed struct {
	Queue  *sqstest.Queue
	Event  QueueEvent
	Fn     Invoker
	Region string
	Log    io.Writer // one line per delivery
	ErrLog io.Writer // failures again (stderr)
	// Delivered is called after each invocation with the batch's bodies
	// (the stream feed tracks the runs they name; the pids file is
	// refreshed).
	Delivered func(bodies []string)
}

// Invoker calls one function: an emulator (*rie.Emulator), or a test's
// stand-in.
type Invoker interface {
	Name() string
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

var _ Invoker = (*rie.Emulator)(nil)

// longPoll is how long one receive waits for a message, as the event
// source mapping's (20 s, the SQS maximum). A message sent meanwhile ends
// the wait at once.
const longPoll = 20 * time.Second

// Run delivers until ctx ends.
func (f *QueueFeed) Run(ctx context.Context) {
	for ctx.Err() == nil {
		msgs, err := f.Queue.Receive(ctx, sqstest.ReceiveInput{Max: min(max(f.Event.BatchSize, 1), 10), Wait: longPoll})
		if err != nil || len(msgs) == 0 {
			continue
		}
		f.Deliver(ctx, msgs)
	}
}

// SQSRecord is one record of an SQS event as Lambda's event source mapping
// sends it: events.SQSMessage's members, with md5OfMessageAttributes only
// when the message has attributes (events.SQSMessage always writes it).
type SQSRecord struct {
	MessageID              string                                `json:"messageId"`
	ReceiptHandle          string                                `json:"receiptHandle"`
	Body                   string                                `json:"body"`
	Attributes             map[string]string                     `json:"attributes"`
	MessageAttributes      map[string]events.SQSMessageAttribute `json:"messageAttributes"`
	MD5OfMessageAttributes string                                `json:"md5OfMessageAttributes,omitempty"`
	MD5OfBody              string                                `json:"md5OfBody"`
	EventSource            string                                `json:"eventSource"`
	EventSourceARN         string                                `json:"eventSourceARN"`
	AWSRegion              string                                `json:"awsRegion"`
}

// sqsRecord builds the record of a received message.
func sqsRecord(q *sqstest.Queue, region string, m sqstest.Message) SQSRecord {
	attrs := map[string]events.SQSMessageAttribute{}
	for k, a := range m.Attributes {
		attrs[k] = events.SQSMessageAttribute{DataType: a.DataType, StringValue: a.StringValue, BinaryValue: a.BinaryValue,
			StringListValues: []string{}, BinaryListValues: [][]byte{}}
	}
	return SQSRecord{
		MessageID:              m.ID,
		ReceiptHandle:          m.ReceiptHandle,
		Body:                   m.Body,
		Attributes:             sqstest.SystemAttributes(m),
		MessageAttributes:      attrs,
		MD5OfMessageAttributes: m.MD5OfMessageAttributes,
		MD5OfBody:              m.MD5OfBody,
		EventSource:            "aws:sqs",
		EventSourceARN:         q.ARN(),
		AWSRegion:              region,
	}
}

// Deliver invokes the function with msgs (one batch) and settles each
// message: deleted, or left for redelivery.
func (f *QueueFeed) Deliver(ctx context.Context, msgs []sqstest.Message) {
	records := make([]SQSRecord, len(msgs))
	bodies := make([]string, len(msgs))
	for i, m := range msgs {
		records[i] = sqsRecord(f.Queue, f.Region, m)
		bodies[i] = m.Body
	}
	inv, err := invokeBatch(ctx, f.Fn, records, bodies, f.Delivered)
	if err != nil {
		f.problem(fmt.Sprintf("queue %s: %v", f.Queue.Name(), err))
		return
	}
	out, took := inv.out, inv.took
	if ctx.Err() != nil {
		return // stopping: the messages stay where they are
	}
	failed, why := f.failures(out, inv.err, msgs)
	for _, m := range msgs {
		what := fmt.Sprintf("queue %s: message %s%s (receive %d) -> %s", f.Queue.Name(), m.ID, describeBody(m.Body), m.ReceiveCount, f.Fn.Name())
		if !failed[m.ID] {
			deleted, derr := f.Queue.Delete(m.ReceiptHandle)
			switch {
			case derr != nil:
				f.problem(fmt.Sprintf("%s ok in %s, but the delete failed: %v", what, took, derr))
			case !deleted:
				f.problem(fmt.Sprintf("%s ok in %s, but the message was received again or moved meanwhile (the invocation outlasted the %s visibility timeout); not deleted", what, took, f.Queue.VisibilityTimeout()))
			default:
				fmt.Fprintf(f.Log, "%s %s ok in %s; deleted\n", time.Now().Format(time.RFC3339Nano), what, took)
			}
			continue
		}
		next := fmt.Sprintf("it comes back after the visibility timeout (%s)", f.Queue.VisibilityTimeout())
		if dlq := f.Queue.DeadLetter(); dlq != nil && m.ReceiveCount >= f.Queue.MaxReceiveCount() {
			next = fmt.Sprintf("that was its last receive (maxReceiveCount %d): after the visibility timeout (%s) it moves to %s", f.Queue.MaxReceiveCount(), f.Queue.VisibilityTimeout(), dlq.Name())
		}
		f.problem(fmt.Sprintf("%s failed in %s: %s; %s", what, took, why, next))
	}
}

// invocation is what one batch's invocation answered, and how long it took.
type invocation struct {
	out  []byte
	err  error
	took time.Duration
}

// invokeBatch invokes fn with records as one SQS event, as the event source
// mapping does, and then tells delivered (if set) the batch's bodies. Its
// error is the event's that could not be built; the invocation's own is in
// the answer.
func invokeBatch(ctx context.Context, fn Invoker, records []SQSRecord, bodies []string, delivered func([]string)) (invocation, error) {
	payload, err := json.Marshal(struct {
		Records []SQSRecord `json:"Records"`
	}{records})
	if err != nil {
		return invocation{}, err
	}
	t0 := time.Now()
	out, err := fn.Invoke(ctx, payload)
	inv := invocation{out: out, err: err, took: time.Since(t0).Round(time.Millisecond)}
	if delivered != nil {
		delivered(bodies)
	}
	return inv, nil
}

// problem logs line in the queue log (timestamped) and on ErrLog.
func (f *QueueFeed) problem(line string) {
	fmt.Fprintf(f.Log, "%s %s\n", time.Now().Format(time.RFC3339Nano), line)
	fmt.Fprintln(f.ErrLog, line)
}

// failures reads the invocation's outcome as the event source mapping
// does. An error fails the whole batch. With ReportBatchItemFailures the
// answer names the failed messages: an empty or null list, {} or null is a
// full success; an answer that is not that JSON, or an itemIdentifier that
// is empty or not a message of the batch, fails the whole batch. Without
// it any answer is a success.
func (f *QueueFeed) failures(out []byte, err error, msgs []sqstest.Message) (map[string]bool, string) {
	all := func() map[string]bool {
		m := map[string]bool{}
		for _, msg := range msgs {
			m[msg.ID] = true
		}
		return m
	}
	if err != nil {
		return all(), firstLine(err)
	}
	if !f.Event.ReportBatchItemFailures {
		return nil, ""
	}
	trimmed := strings.TrimSpace(string(out))
	if trimmed == "" || trimmed == "null" {
		return nil, ""
	}
	var resp struct {
		BatchItemFailures []map[string]*string `json:"batchItemFailures"`
	}
	if json.Unmarshal(out, &resp) != nil {
		return all(), fmt.Sprintf("the answer is not an SQSEventResponse (%.200s), so the whole batch failed", trimmed)
	}
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	failed := map[string]bool{}
	for _, item := range resp.BatchItemFailures {
		id := item["itemIdentifier"]
		if id == nil || *id == "" || !slices.Contains(ids, *id) {
			return all(), fmt.Sprintf("batchItemFailures names %.200s, not a message of the batch, so the whole batch failed", trimmed)
		}
		failed[*id] = true
	}
	if len(failed) == 0 {
		return nil, ""
	}
	return failed, "reported in batchItemFailures"
}

// describeBody names the run a worker message is about: " (run 5b0c6a2e…,
// started)", or "" for another body.
func describeBody(body string) string {
	var m struct {
		RunID  string `json:"run_id"`
		Reason string `json:"reason"`
	}
	if json.Unmarshal([]byte(body), &m) != nil || m.RunID == "" {
		return ""
	}
	run := m.RunID
	if len(run) > 8 {
		run = run[:8] + "…"
	}
	if m.Reason == "" {
		return " (run " + run + ")"
	}
	return " (run " + run + ", " + m.Reason + ")"
}

// runOf is the firm and run a worker message names.
func runOf(body string) (firm, run string) {
	var m struct {
		FirmID string `json:"firm_id"`
		RunID  string `json:"run_id"`
	}
	_ = json.Unmarshal([]byte(body), &m)
	return m.FirmID, m.RunID
}

// Timer is one schedule of a function on the local stack: it invokes the
// function every Every with what EventBridge Scheduler sends (the
// event's Input, or the default "Scheduled Event" notification), one call
// at a time. A call that fails is logged, not retried: the next tick is the
// retry.
type Timer struct {
	Fn        *Function
	Schedule  Schedule
	Emulator  Invoker
	Every     time.Duration
	Region    string
	Log       io.Writer // one line per call
	ErrLog    io.Writer // failures again (stderr)
	Delivered func()
}

// localEvery is a schedule's local period: a rate(1 minute) schedule fires
// every sweepEvery, longer rates in proportion. Zero (not scheduled
// locally) for cron and at expressions, disabled schedules, or sweepEvery 0.
func localEvery(s Schedule, sweepEvery time.Duration) time.Duration {
	if s.Disabled || s.Rate <= 0 || sweepEvery <= 0 {
		return 0
	}
	return time.Duration(float64(sweepEvery) * (float64(s.Rate) / float64(time.Minute)))
}

// Run fires until ctx ends; the first call is one period after the start.
func (t *Timer) Run(ctx context.Context) {
	tick := time.NewTicker(t.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			t.Fire(ctx, now)
		}
	}
}

// scheduleName is the name SAM gives a ScheduleV2 event's schedule (and a
// Schedule event's rule): the function's logical id and the event's name.
func (t *Timer) scheduleName() string { return t.Fn.LogicalID + t.Schedule.Name }

// Event is the payload of one call: the schedule's Input as written, or
// what EventBridge Scheduler (ScheduleV2) or an EventBridge rule (Schedule)
// sends by default.
func (t *Timer) Event(now time.Time) []byte {
	if t.Schedule.Input != "" {
		return []byte(t.Schedule.Input)
	}
	ev := map[string]any{
		"version":     "0",
		"id":          uuid.NewString(),
		"detail-type": "Scheduled Event",
		"account":     "000000000000",
		"time":        now.UTC().Truncate(time.Second).Format(time.RFC3339),
		"region":      t.Region,
	}
	if t.Schedule.Type == "Schedule" {
		ev["source"] = "aws.events"
		ev["resources"] = []string{fmt.Sprintf("arn:aws:events:%s:000000000000:rule/%s", t.Region, t.scheduleName())}
		ev["detail"] = map[string]any{}
	} else {
		// EventBridge Scheduler's default notification: detail is the
		// string "{}", not an object.
		ev["source"] = "aws.scheduler"
		ev["resources"] = []string{fmt.Sprintf("arn:aws:scheduler:%s:000000000000:schedule/default/%s", t.Region, t.scheduleName())}
		ev["detail"] = "{}"
	}
	b, _ := json.Marshal(ev)
	return b
}

// Fire makes one call.
func (t *Timer) Fire(ctx context.Context, now time.Time) {
	t0 := time.Now()
	_, err := t.Emulator.Invoke(ctx, t.Event(now))
	took := time.Since(t0).Round(time.Millisecond)
	if t.Delivered != nil {
		t.Delivered()
	}
	if ctx.Err() != nil {
		return
	}
	what := fmt.Sprintf("schedule %s (%s, every %s locally) -> %s", t.scheduleName(), t.Schedule.Expression, t.Every, t.Emulator.Name())
	if err != nil {
		line := fmt.Sprintf("%s failed in %s: %s\n", what, took, firstLine(err))
		fmt.Fprintf(t.Log, "%s %s", time.Now().Format(time.RFC3339Nano), line)
		fmt.Fprint(t.ErrLog, line)
		return
	}
	fmt.Fprintf(t.Log, "%s %s ok in %s\n", time.Now().Format(time.RFC3339Nano), what, took)
}
