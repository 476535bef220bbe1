package sqstest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/sqs"
	"github.com/seed-f6d3920e/warrant/pkg/sqs/sqstest"
)

// client is the real SDK client, as a function builds it, on the fake.
func client(s *sqstest.Server) *awssqs.Client {
	return awssqs.NewFromConfig(aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDLOCAL", "secret", ""),
	}, func(o *awssqs.Options) { o.BaseEndpoint = aws.String(s.URL) })
}

// stack is a queue with a dead-letter queue behind a server.
func stack(t *testing.T, vis time.Duration, maxReceive int) (*sqstest.Server, *sqstest.Queue, *sqstest.Queue) {
	t.Helper()
	dlq := sqstest.NewQueue(sqstest.Options{Name: "WorkerDeadLetterQueue"})
	q := sqstest.NewQueue(sqstest.Options{Name: "WorkerQueue", VisibilityTimeout: vis, DeadLetter: dlq, MaxReceiveCount: maxReceive})
	s := sqstest.NewServer(q)
	t.Cleanup(s.Close)
	return s, q, dlq
}

func TestSDKSendMessage(t *testing.T) {
	s, q, _ := stack(t, time.Minute, 3)
	ctx := context.Background()
	c := client(s)
	url := s.QueueURL(q)
	if want := s.URL + "/000000000000/WorkerQueue"; url != want {
		t.Fatalf("queue URL %s, want %s", url, want)
	}
	body := `{"schema_version":"1","firm_id":"x"}` + " ünïcode ✓"
	out, err := c.SendMessage(ctx, &awssqs.SendMessageInput{
		QueueUrl:    aws.String(url),
		MessageBody: aws.String(body),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"reason": {DataType: aws.String("String"), StringValue: aws.String("started")},
			"blob":   {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2}},
		},
	})
	if err != nil {
		t.Fatal(err) // the SDK checks MD5OfMessageBody itself
	}
	if aws.ToString(out.MessageId) == "" || aws.ToString(out.MD5OfMessageAttributes) == "" {
		t.Fatalf("output %+v", out)
	}
	msgs := q.Messages()
	if len(msgs) != 1 || msgs[0].ID != aws.ToString(out.MessageId) || msgs[0].Body != body || msgs[0].SenderID != "AKIDLOCAL" {
		t.Fatalf("queue holds %+v", msgs)
	}
	if a := msgs[0].Attributes["reason"]; a.DataType != "String" || aws.ToString(a.StringValue) != "started" {
		t.Fatalf("attribute %+v", a)
	}
	if c := q.Counts(); c.Visible != 1 || c.Sent != 1 {
		t.Fatalf("counts %+v", c)
	}

	// Received through the SDK: the SDK checks MD5OfBody too.
	rec, err := c.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"reason"},
		VisibilityTimeout:           30,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Messages) != 1 {
		t.Fatalf("received %d messages", len(rec.Messages))
	}
	m := rec.Messages[0]
	if aws.ToString(m.Body) != body || m.Attributes["ApproximateReceiveCount"] != "1" || m.Attributes["SenderId"] != "AKIDLOCAL" ||
		m.Attributes["SentTimestamp"] == "" || m.Attributes["ApproximateFirstReceiveTimestamp"] == "" {
		t.Fatalf("message %+v", m)
	}
	if len(m.MessageAttributes) != 1 || aws.ToString(m.MessageAttributes["reason"].StringValue) != "started" ||
		aws.ToString(m.MD5OfMessageAttributes) != sqstest.MD5OfAttributes(map[string]sqstest.MessageAttribute{"reason": {DataType: "String", StringValue: aws.String("started")}}) {
		t.Fatalf("message attributes %+v md5 %s", m.MessageAttributes, aws.ToString(m.MD5OfMessageAttributes))
	}
	if c := q.Counts(); c.Visible != 0 || c.InFlight != 1 {
		t.Fatalf("after receive: counts %+v", c)
	}
	if _, err := c.ChangeMessageVisibility(ctx, &awssqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 60}); err != nil {
		t.Fatal(err)
	}
	attrs, err := c.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	if attrs.Attributes["ApproximateNumberOfMessagesNotVisible"] != "1" || attrs.Attributes["VisibilityTimeout"] != "60" ||
		!strings.Contains(attrs.Attributes["RedrivePolicy"], `"maxReceiveCount":3`) || attrs.Attributes["QueueArn"] != "arn:aws:sqs:us-east-1:000000000000:WorkerQueue" {
		t.Fatalf("attributes %v", attrs.Attributes)
	}
	if _, err := c.DeleteMessage(ctx, &awssqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if c := q.Counts(); c.Visible+c.InFlight+c.Delayed != 0 || c.Deleted != 1 {
		t.Fatalf("after delete: counts %+v", c)
	}
	gu, err := c.GetQueueUrl(ctx, &awssqs.GetQueueUrlInput{QueueName: aws.String("WorkerDeadLetterQueue")})
	if err != nil || aws.ToString(gu.QueueUrl) != s.URL+"/000000000000/WorkerDeadLetterQueue" {
		t.Fatalf("GetQueueUrl: %v %v", gu, err)
	}
}

// TestSDKEnqueue: the project's own sender (pkg/sqs) through the SDK.
func TestSDKEnqueue(t *testing.T) {
	s, q, _ := stack(t, time.Minute, 3)
	m := contracts.WorkerMessage{SchemaVersion: contracts.SchemaVersion, FirmID: "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b",
		RunID: "5b0c6a2e-7d4f-4c8e-9a51-0b8f2f3c1d01", Reason: contracts.ReasonStarted}
	if err := sqs.New(client(s), s.QueueURL(q)).Enqueue(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	msgs := q.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	got, err := contracts.DecodeWorkerMessage([]byte(msgs[0].Body))
	if err != nil || got != m {
		t.Fatalf("body %s: %+v %v", msgs[0].Body, got, err)
	}
}

func TestSDKSendMessageBatch(t *testing.T) {
	s, q, _ := stack(t, time.Minute, 3)
	c := client(s)
	out, err := c.SendMessageBatch(context.Background(), &awssqs.SendMessageBatchInput{
		QueueUrl: aws.String(s.QueueURL(q)),
		Entries: []types.SendMessageBatchRequestEntry{
			{Id: aws.String("a"), MessageBody: aws.String("one")},
			{Id: aws.String("b"), MessageBody: aws.String("two")},
			{Id: aws.String("c"), MessageBody: aws.String("bad \x01 char")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Successful) != 2 || len(out.Failed) != 1 || aws.ToString(out.Failed[0].Id) != "c" ||
		aws.ToString(out.Failed[0].Code) != "InvalidMessageContents" || !out.Failed[0].SenderFault {
		t.Fatalf("batch %+v", out)
	}
	if n := len(q.Messages()); n != 2 {
		t.Fatalf("%d messages, want 2", n)
	}
	_, err = c.SendMessageBatch(context.Background(), &awssqs.SendMessageBatchInput{
		QueueUrl: aws.String(s.QueueURL(q)),
		Entries:  []types.SendMessageBatchRequestEntry{{Id: aws.String("a"), MessageBody: aws.String("x")}, {Id: aws.String("a"), MessageBody: aws.String("y")}},
	})
	var dup *types.BatchEntryIdsNotDistinct
	if !errors.As(err, &dup) {
		t.Fatalf("duplicate ids: %v", err)
	}
}

// TestSDKErrors: SQS's errors, as the SDK reads them (code from the
// x-amzn-query-error header, as for real SQS).
func TestSDKErrors(t *testing.T) {
	s, q, _ := stack(t, time.Minute, 3)
	c := client(s)
	ctx := context.Background()

	_, err := c.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(s.URL + "/000000000000/Nope"), MessageBody: aws.String("x")})
	var dne *types.QueueDoesNotExist
	var api smithy.APIError
	if !errors.As(err, &dne) || !errors.As(err, &api) || api.ErrorCode() != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Fatalf("unknown queue: %v", err)
	}

	_, err = c.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(s.QueueURL(q)), MessageBody: aws.String(strings.Repeat("x", sqstest.DefaultMaximumMessageSize+1))})
	if !errors.As(err, &api) || api.ErrorCode() != "InvalidParameterValue" || api.ErrorFault() != smithy.FaultClient {
		t.Fatalf("too large: %v", err)
	}

	_, err = c.DeleteMessage(ctx, &awssqs.DeleteMessageInput{QueueUrl: aws.String(s.QueueURL(q)), ReceiptHandle: aws.String("not-a-handle")})
	var bad *types.ReceiptHandleIsInvalid
	if !errors.As(err, &bad) {
		t.Fatalf("bad handle: %v", err)
	}

	// Unknown operations: an SQS error, not a hang or a 404 page.
	_, err = c.ListQueues(ctx, &awssqs.ListQueuesInput{})
	var unsupported *types.UnsupportedOperation
	if !errors.As(err, &unsupported) {
		t.Fatalf("ListQueues: %v", err)
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/", strings.NewReader("{}"))
	req.Header.Set("X-Amz-Target", "AmazonSQS.CreateQueue")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]string
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != 400 || body["__type"] != "com.amazonaws.sqs#UnsupportedOperation" || resp.Header.Get("X-Amzn-Query-Error") == "" {
		t.Fatalf("CreateQueue: %d %v %v", resp.StatusCode, resp.Header, body)
	}

	// Injected faults: the SDK retries throttling, so three fail one call.
	for range 3 {
		s.FailNext("SendMessage", sqstest.ErrThrottled)
	}
	_, err = c.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(s.QueueURL(q)), MessageBody: aws.String("x")})
	if !errors.As(err, &api) || api.ErrorCode() != "RequestThrottled" {
		t.Fatalf("throttled: %v", err)
	}
	if _, err := c.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(s.QueueURL(q)), MessageBody: aws.String("x")}); err != nil {
		t.Fatalf("after the faults: %v", err)
	}
}

// TestVisibilityRedeliveryDeadLetter: a message not deleted comes back after
// the visibility timeout with a higher receive count and a new handle; after
// maxReceiveCount receives it moves to the dead-letter queue.
func TestVisibilityRedeliveryDeadLetter(t *testing.T) {
	const vis = 150 * time.Millisecond
	var movedMu sync.Mutex
	var moved []sqstest.Message
	dlq := sqstest.NewQueue(sqstest.Options{Name: "dlq"})
	q := sqstest.NewQueue(sqstest.Options{Name: "q", VisibilityTimeout: vis, DeadLetter: dlq, MaxReceiveCount: 3,
		OnDeadLetter: func(m sqstest.Message) { movedMu.Lock(); moved = append(moved, m); movedMu.Unlock() }})
	ctx := context.Background()
	sent, err := q.Send(sqstest.SendInput{Body: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	var handles []string
	for i := 1; i <= 3; i++ {
		t0 := time.Now()
		got, err := q.Receive(ctx, sqstest.ReceiveInput{Wait: 2 * time.Second})
		if err != nil || len(got) != 1 {
			t.Fatalf("receive %d: %v %v", i, got, err)
		}
		m := got[0]
		if m.ID != sent.ID || m.ReceiveCount != i || m.ReceiptHandle == "" || m.Visible {
			t.Fatalf("receive %d: %+v", i, m)
		}
		if i > 1 && time.Since(t0) < vis/2 {
			t.Fatalf("receive %d came after %s, before the visibility timeout", i, time.Since(t0))
		}
		for _, h := range handles {
			if h == m.ReceiptHandle {
				t.Fatalf("receive %d reused a receipt handle", i)
			}
		}
		handles = append(handles, m.ReceiptHandle)
		// Invisible: an immediate receive gets nothing.
		if again, _ := q.Receive(ctx, sqstest.ReceiveInput{}); len(again) != 0 {
			t.Fatalf("receive %d: the message was visible while in flight", i)
		}
		if c := q.Counts(); c.InFlight != 1 || c.Visible != 0 {
			t.Fatalf("receive %d: counts %+v", i, c)
		}
	}
	// An old handle deletes nothing (SQS answers success).
	if ok, err := q.Delete(handles[0]); ok || err != nil {
		t.Fatalf("stale handle: deleted %v, err %v", ok, err)
	}
	// After the third receive's timeout the message is a dead letter.
	got, err := q.Receive(ctx, sqstest.ReceiveInput{Wait: 3 * vis})
	if err != nil || len(got) != 0 {
		t.Fatalf("a fourth receive: %v %v", got, err)
	}
	dl := q.DeadLetters()
	if len(dl) != 1 || dl[0].ID != sent.ID || dl[0].Body != "hello" || dl[0].DeadLetterSource != "q" || dl[0].ReceiveCount != 3 {
		t.Fatalf("dead letters %+v", dl)
	}
	movedMu.Lock()
	if len(moved) != 1 || moved[0].ID != sent.ID {
		t.Fatalf("OnDeadLetter got %+v", moved)
	}
	movedMu.Unlock()
	if c := q.Counts(); c.Visible+c.InFlight+c.Delayed != 0 || c.DeadLettered != 1 || c.Received != 3 {
		t.Fatalf("counts %+v", c)
	}
	// The latest handle no longer deletes anything either: it moved.
	if ok, err := q.Delete(handles[2]); ok || err != nil {
		t.Fatalf("handle of a dead letter: %v %v", ok, err)
	}
	// A handle of another queue is invalid.
	dm, _ := dlq.Receive(ctx, sqstest.ReceiveInput{})
	if _, err := q.Delete(dm[0].ReceiptHandle); !errors.Is(err, sqstest.ErrInvalidReceipt) {
		t.Fatalf("another queue's handle: %v", err)
	}
}

// TestDeleteBeforeTimeout: a message deleted with its latest handle never
// comes back, even after its timeout.
func TestDeleteBeforeTimeout(t *testing.T) {
	q := sqstest.NewQueue(sqstest.Options{Name: "q", VisibilityTimeout: 50 * time.Millisecond})
	ctx := context.Background()
	if _, err := q.Send(sqstest.SendInput{Body: "x"}); err != nil {
		t.Fatal(err)
	}
	got, _ := q.Receive(ctx, sqstest.ReceiveInput{})
	if ok, err := q.Delete(got[0].ReceiptHandle); !ok || err != nil {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if again, _ := q.Receive(ctx, sqstest.ReceiveInput{Wait: 150 * time.Millisecond}); len(again) != 0 {
		t.Fatalf("a deleted message came back: %+v", again)
	}
	// Without a redrive policy a message comes back for ever.
	if _, err := q.Send(sqstest.SendInput{Body: "y"}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		got, _ := q.Receive(ctx, sqstest.ReceiveInput{Wait: time.Second})
		if len(got) != 1 || got[0].ReceiveCount != i {
			t.Fatalf("receive %d: %+v", i, got)
		}
	}
}

func TestChangeVisibilityAndDelay(t *testing.T) {
	q := sqstest.NewQueue(sqstest.Options{Name: "q", VisibilityTimeout: time.Hour})
	ctx := context.Background()
	if _, err := q.Send(sqstest.SendInput{Body: "later", Delay: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if c := q.Counts(); c.Delayed != 1 {
		t.Fatalf("counts %+v", c)
	}
	if got, _ := q.Receive(ctx, sqstest.ReceiveInput{}); len(got) != 0 {
		t.Fatal("a delayed message was delivered at once")
	}
	got, _ := q.Receive(ctx, sqstest.ReceiveInput{Wait: time.Second})
	if len(got) != 1 {
		t.Fatal("the delayed message never came")
	}
	h := got[0].ReceiptHandle
	if err := q.ChangeVisibility(h, 0); err != nil {
		t.Fatal(err)
	}
	if err := q.ChangeVisibility(h, time.Minute); !errors.Is(err, sqstest.ErrNotInFlight) {
		t.Fatalf("visible message: %v", err)
	}
	got, _ = q.Receive(ctx, sqstest.ReceiveInput{})
	if len(got) != 1 || got[0].ReceiveCount != 2 {
		t.Fatalf("after visibility 0: %+v", got)
	}
	if err := q.ChangeVisibility(h, time.Minute); !errors.Is(err, sqstest.ErrNotInFlight) {
		t.Fatalf("stale handle: %v", err)
	}
}

// TestLongPollWakesOnSend: a waiting receive returns as soon as a message is
// sent, and ctx ends it.
func TestLongPollWakesOnSend(t *testing.T) {
	q := sqstest.NewQueue(sqstest.Options{Name: "q"})
	done := make(chan []sqstest.Message)
	go func() {
		got, _ := q.Receive(context.Background(), sqstest.ReceiveInput{Wait: 10 * time.Second})
		done <- got
	}()
	time.Sleep(50 * time.Millisecond)
	t0 := time.Now()
	if _, err := q.Send(sqstest.SendInput{Body: "wake"}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		if len(got) != 1 || time.Since(t0) > 2*time.Second {
			t.Fatalf("got %v after %s", got, time.Since(t0))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the long poll did not wake")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := q.Receive(ctx, sqstest.ReceiveInput{Wait: 10 * time.Second}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("canceled long poll: %v", err)
	}
}

func TestSendValidation(t *testing.T) {
	q := sqstest.NewQueue(sqstest.Options{Name: "q", MaximumMessageSize: 16})
	for _, in := range []sqstest.SendInput{
		{Body: ""},
		{Body: "\x00"},
		{Body: strings.Repeat("x", 17)},
		{Body: "x", Attributes: map[string]sqstest.MessageAttribute{"a": {DataType: "Text", StringValue: aws.String("v")}}},
		{Body: "x", Attributes: map[string]sqstest.MessageAttribute{"AWS.x": {DataType: "String", StringValue: aws.String("v")}}},
		{Body: "x", Attributes: map[string]sqstest.MessageAttribute{"a": {DataType: "Binary"}}},
		{Body: "x", Delay: 16 * time.Minute},
	} {
		if _, err := q.Send(in); !errors.Is(err, sqstest.ErrInvalidMessage) {
			t.Errorf("Send(%+v) = %v, want ErrInvalidMessage", in, err)
		}
	}
	if n := len(q.Messages()); n != 0 {
		t.Fatalf("%d messages were stored", n)
	}
}

// TestConcurrent: many senders and receivers through the SDK and the Go
// API at once; every message is delivered and deleted exactly once (the
// visibility timeout is long enough that none comes back). Run with -race.
func TestConcurrent(t *testing.T) {
	s, q, _ := stack(t, time.Minute, 3)
	c := client(s)
	url := s.QueueURL(q)
	const senders, each = 8, 25
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range senders {
		wg.Go(func() {
			for j := range each {
				body := fmt.Sprintf("m-%d-%d", i, j)
				if i%2 == 0 {
					if _, err := c.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
						t.Error(err)
						return
					}
				} else if _, err := q.Send(sqstest.SendInput{Body: body}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var rwg sync.WaitGroup
	for i := range 4 {
		rwg.Go(func() {
			for {
				mu.Lock()
				n := len(seen)
				mu.Unlock()
				if n == senders*each || ctx.Err() != nil {
					return
				}
				var got []struct{ body, handle string }
				if i%2 == 0 {
					out, err := c.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
					if err != nil {
						continue
					}
					for _, m := range out.Messages {
						got = append(got, struct{ body, handle string }{aws.ToString(m.Body), aws.ToString(m.ReceiptHandle)})
					}
				} else {
					ms, _ := q.Receive(ctx, sqstest.ReceiveInput{Max: 3, Wait: 200 * time.Millisecond})
					for _, m := range ms {
						got = append(got, struct{ body, handle string }{m.Body, m.ReceiptHandle})
					}
				}
				for _, m := range got {
					mu.Lock()
					seen[m.body]++
					mu.Unlock()
					if ok, err := q.Delete(m.handle); !ok || err != nil {
						t.Errorf("delete %s: %v %v", m.body, ok, err)
					}
				}
				_ = q.Counts()
			}
		})
	}
	wg.Wait()
	rwg.Wait()
	if len(seen) != senders*each {
		t.Fatalf("received %d distinct messages, want %d", len(seen), senders*each)
	}
	for b, n := range seen {
		if n != 1 {
			t.Errorf("%s delivered %d times", b, n)
		}
	}
	if c := q.Counts(); c.Sent != senders*each || c.Deleted != senders*each || c.Visible+c.InFlight != 0 {
		t.Fatalf("counts %+v", c)
	}
}
