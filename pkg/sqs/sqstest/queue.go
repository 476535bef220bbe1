// Package sqstest is a fake Amazon SQS for tests and the local stack: an
// in-memory standard queue with SQS's delivery semantics (Queue) behind an
// HTTP endpoint speaking the AWS JSON 1.0 protocol the AWS SDK for Go v2
// uses (Server), so a real sqs.Client pointed at Server.URL (BaseEndpoint,
// or AWS_ENDPOINT_URL_SQS) sends to it.
//
// The semantics are those a consumer can observe on a standard queue:
//
//   - Receive makes a message invisible for the visibility timeout, counts
//     the receive (ApproximateReceiveCount) and hands out a new receipt
//     handle;
//   - Delete takes the latest receipt handle of a message; an older one
//     succeeds and deletes nothing, as on SQS;
//   - a message not deleted becomes visible again when its visibility
//     timeout runs out, unless it has been received MaxReceiveCount times:
//     then it moves to the dead-letter queue (the redrive policy). SQS moves
//     it on the next receive attempt; the fake moves it as soon as it would
//     become visible, which a consumer cannot tell apart;
//   - DelaySeconds delays a message's first delivery.
//
// Unlike SQS it delivers each message at most once at a time, in send order
// (SQS standard queues may deliver twice and reorder), keeps messages until
// they are deleted (no retention period) and never throttles unless told to
// (Server.FailNext). Timeouts are time.Durations, so tests and the local
// stack can use short ones.
package sqstest

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Defaults of Options.
const (
	DefaultRegion             = "us-east-1"
	DefaultAccountID          = "000000000000"
	DefaultVisibilityTimeout  = 30 * time.Second
	DefaultMaximumMessageSize = 1 << 20 // 1 MiB, SQS's largest message since 2025
)

// Options configure a Queue.
type Options struct {
	// Name is the queue's name (the last segment of its URL and ARN); required.
	Name string
	// Region and AccountID go into the queue's ARN and URL (default
	// DefaultRegion, DefaultAccountID).
	Region, AccountID string
	// VisibilityTimeout is how long a received message stays invisible
	// unless the receive names its own (default DefaultVisibilityTimeout).
	VisibilityTimeout time.Duration
	// DeadLetter and MaxReceiveCount are the redrive policy: a message
	// received MaxReceiveCount times whose visibility timeout then runs out
	// moves to DeadLetter. Without DeadLetter (or with MaxReceiveCount 0) a
	// message comes back forever.
	DeadLetter      *Queue
	MaxReceiveCount int
	// MaximumMessageSize bounds a message's body plus its attributes, in
	// bytes (default DefaultMaximumMessageSize).
	MaximumMessageSize int
	// OnDeadLetter, when set, is called with each message moved to the
	// dead-letter queue, after the move (never under the queue's lock).
	OnDeadLetter func(Message)
	// OnSend, when set, is called with each message accepted (never under the
	// queue's lock).
	OnSend func(Message)
}

// MessageAttribute is a message attribute: DataType String, Number or
// Binary (optionally with a ".label" suffix) and the value that goes with it.
type MessageAttribute struct {
	DataType    string
	StringValue *string
	BinaryValue []byte
}

// Message is a snapshot of one message.
type Message struct {
	ID        string
	Body      string
	MD5OfBody string
	// Attributes are the message attributes the sender set;
	// MD5OfMessageAttributes is their digest as SQS computes it ("" when
	// there are none).
	Attributes             map[string]MessageAttribute
	MD5OfMessageAttributes string
	// SystemAttributes are the sender's message system attributes
	// (AWSTraceHeader).
	SystemAttributes map[string]MessageAttribute
	SenderID         string
	SentAt           time.Time
	// FirstReceivedAt is zero until the first receive.
	FirstReceivedAt time.Time
	ReceiveCount    int
	// ReceiptHandle is the handle of the latest receive ("" before one). A
	// message Receive returns carries the handle of that receive.
	ReceiptHandle string
	// Visible says whether a Receive could return the message now;
	// VisibleAt is when an invisible one (in flight or delayed) becomes
	// visible.
	Visible   bool
	VisibleAt time.Time
	// DeadLetterSource is the queue a dead letter was moved from.
	DeadLetterSource string
}

// InFlight reports whether the message has been received and its visibility
// timeout has not run out.
func (m Message) InFlight() bool { return !m.Visible && m.ReceiveCount > 0 }

// SendInput is one message to send.
type SendInput struct {
	Body             string
	Attributes       map[string]MessageAttribute
	SystemAttributes map[string]MessageAttribute
	// Delay postpones the first delivery (SQS: DelaySeconds, at most 15 min).
	Delay time.Duration
	// SenderID is the sender's identity (default the queue's account id).
	SenderID string
}

// ReceiveInput says how to receive.
type ReceiveInput struct {
	// Max is the most messages to return, 1 to 10 (0 means 1).
	Max int
	// Visibility is the visibility timeout of this receive (0: the queue's).
	Visibility time.Duration
	// Wait is the long-poll time: with no message visible, Receive waits up
	// to Wait for one (SQS: WaitTimeSeconds, at most 20 s).
	Wait time.Duration
}

// Counts describe a queue: the current numbers (SQS's
// ApproximateNumberOfMessages, ...NotVisible, ...Delayed) and totals since
// the queue was made.
type Counts struct {
	Visible, InFlight, Delayed int
	Sent, Received, Deleted    int
	// DeadLettered counts the messages this queue moved to its dead-letter
	// queue.
	DeadLettered int
}

// Errors of the Go API; Server answers each with SQS's error.
var (
	// ErrInvalidReceipt is a receipt handle that no receive of this queue
	// handed out (ReceiptHandleIsInvalid).
	ErrInvalidReceipt = errors.New("sqstest: the receipt handle is not valid for this queue")
	// ErrNotInFlight is a visibility change for a message that is not in
	// flight under that handle (MessageNotInflight).
	ErrNotInFlight = errors.New("sqstest: the message is not in flight under this receipt handle")
	// ErrInvalidMessage is a body or attribute SQS refuses
	// (InvalidMessageContents, InvalidParameterValue).
	ErrInvalidMessage = errors.New("sqstest: invalid message")
)

// Queue is an in-memory standard queue. It is safe for concurrent use.
type Queue struct {
	opts Options
	arn  string

	mu      sync.Mutex
	msgs    []*message // send order
	counts  Counts
	changed chan struct{} // closed and replaced on every change
}

type message struct {
	Message
	handle string // the latest receipt handle
}

// NewQueue returns an empty queue. It panics if opts has no Name or the
// dead-letter queue is the queue itself.
func NewQueue(opts Options) *Queue {
	if opts.Name == "" {
		panic("sqstest: Options.Name is required")
	}
	if opts.Region == "" {
		opts.Region = DefaultRegion
	}
	if opts.AccountID == "" {
		opts.AccountID = DefaultAccountID
	}
	if opts.VisibilityTimeout <= 0 {
		opts.VisibilityTimeout = DefaultVisibilityTimeout
	}
	if opts.MaximumMessageSize <= 0 {
		opts.MaximumMessageSize = DefaultMaximumMessageSize
	}
	q := &Queue{opts: opts, changed: make(chan struct{})}
	q.arn = fmt.Sprintf("arn:aws:sqs:%s:%s:%s", opts.Region, opts.AccountID, opts.Name)
	for d := opts.DeadLetter; d != nil; d = d.opts.DeadLetter {
		if d == q {
			panic("sqstest: a queue cannot be its own dead-letter queue")
		}
	}
	return q
}

// Name is the queue's name.
func (q *Queue) Name() string { return q.opts.Name }

// ARN is the queue's ARN, arn:aws:sqs:<region>:<account>:<name>.
func (q *Queue) ARN() string { return q.arn }

// AccountID is the account in the queue's ARN and URL.
func (q *Queue) AccountID() string { return q.opts.AccountID }

// Region is the Region in the queue's ARN.
func (q *Queue) Region() string { return q.opts.Region }

// VisibilityTimeout is the queue's default visibility timeout.
func (q *Queue) VisibilityTimeout() time.Duration { return q.opts.VisibilityTimeout }

// DeadLetter is the redrive policy's queue (nil without one) and
// MaxReceiveCount its count.
func (q *Queue) DeadLetter() *Queue { return q.opts.DeadLetter }

// MaxReceiveCount is the redrive policy's maxReceiveCount (0 without one).
func (q *Queue) MaxReceiveCount() int { return q.opts.MaxReceiveCount }

// notifyLocked wakes every waiting Receive.
func (q *Queue) notifyLocked() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// Send enqueues a message and returns it as stored.
func (q *Queue) Send(in SendInput) (Message, error) {
	if err := q.validate(in); err != nil {
		return Message{}, err
	}
	now := time.Now()
	sender := in.SenderID
	if sender == "" {
		sender = q.opts.AccountID
	}
	m := &message{Message: Message{
		ID:                     uuid.NewString(),
		Body:                   in.Body,
		MD5OfBody:              md5Hex([]byte(in.Body)),
		Attributes:             cloneAttrs(in.Attributes),
		MD5OfMessageAttributes: MD5OfAttributes(in.Attributes),
		SystemAttributes:       cloneAttrs(in.SystemAttributes),
		SenderID:               sender,
		SentAt:                 now,
		VisibleAt:              now.Add(max(in.Delay, 0)),
	}}
	q.mu.Lock()
	q.msgs = append(q.msgs, m)
	q.counts.Sent++
	snap := q.snapshotLocked(m, now)
	q.notifyLocked()
	q.mu.Unlock()
	if q.opts.OnSend != nil {
		q.opts.OnSend(snap)
	}
	return snap, nil
}

// validate applies SQS's rules: a non-empty body of XML-safe characters,
// body and attributes within MaximumMessageSize, at most 10 attributes with
// a known data type and a value of that type.
func (q *Queue) validate(in SendInput) error {
	if in.Body == "" {
		return fmt.Errorf("%w: the message body must not be empty", ErrInvalidMessage)
	}
	if !validChars(in.Body) {
		return fmt.Errorf("%w: the message body contains characters outside the allowed set (#x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF)", ErrInvalidMessage)
	}
	if in.Delay < 0 || in.Delay > 15*time.Minute {
		return fmt.Errorf("%w: DelaySeconds must be between 0 and 900", ErrInvalidMessage)
	}
	if len(in.Attributes) > 10 {
		return fmt.Errorf("%w: at most 10 message attributes, got %d", ErrInvalidMessage, len(in.Attributes))
	}
	size := len(in.Body)
	for name, a := range in.Attributes {
		if name == "" || len(name) > 256 || strings.HasPrefix(strings.ToLower(name), "aws.") || strings.HasPrefix(strings.ToLower(name), "amazon.") {
			return fmt.Errorf("%w: message attribute name %q is not allowed", ErrInvalidMessage, name)
		}
		base, _, _ := strings.Cut(a.DataType, ".")
		switch base {
		case "String", "Number":
			if a.StringValue == nil || *a.StringValue == "" {
				return fmt.Errorf("%w: message attribute %s (%s) needs a StringValue", ErrInvalidMessage, name, a.DataType)
			}
			if !validChars(*a.StringValue) {
				return fmt.Errorf("%w: message attribute %s has characters outside the allowed set", ErrInvalidMessage, name)
			}
			size += len(*a.StringValue)
		case "Binary":
			if len(a.BinaryValue) == 0 {
				return fmt.Errorf("%w: message attribute %s (Binary) needs a BinaryValue", ErrInvalidMessage, name)
			}
			size += len(a.BinaryValue)
		default:
			return fmt.Errorf("%w: message attribute %s has data type %q (String, Number or Binary)", ErrInvalidMessage, name, a.DataType)
		}
		size += len(name) + len(a.DataType)
	}
	if size > q.opts.MaximumMessageSize {
		return fmt.Errorf("%w: message must be shorter than %d bytes (got %d)", ErrInvalidMessage, q.opts.MaximumMessageSize, size)
	}
	return nil
}

func validChars(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		switch {
		case r == 0x9, r == 0xA, r == 0xD,
			r >= 0x20 && r <= 0xD7FF,
			r >= 0xE000 && r <= 0xFFFD,
			r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
	}
	return true
}

// Receive returns up to in.Max visible messages, each now invisible for the
// visibility timeout with its receive counted and a new receipt handle. With
// none visible it waits up to in.Wait for one; it returns early with ctx's
// error when ctx ends.
func (q *Queue) Receive(ctx context.Context, in ReceiveInput) ([]Message, error) {
	n := in.Max
	if n <= 0 {
		n = 1
	}
	vis := in.Visibility
	if vis <= 0 {
		vis = q.opts.VisibilityTimeout
	}
	deadline := time.Now().Add(max(in.Wait, 0))
	for {
		now := time.Now()
		q.mu.Lock()
		moved := q.settleLocked(now)
		var out []Message
		for _, m := range q.msgs {
			if len(out) == n {
				break
			}
			if m.VisibleAt.After(now) {
				continue
			}
			m.ReceiveCount++
			if m.FirstReceivedAt.IsZero() {
				m.FirstReceivedAt = now
			}
			m.VisibleAt = now.Add(vis)
			m.handle = newHandle(q.opts.Name, m.ID)
			q.counts.Received++
			out = append(out, q.snapshotLocked(m, now))
		}
		next := q.nextVisibleLocked(now)
		changed := q.changed
		q.mu.Unlock()
		q.deadLetter(moved)

		if len(out) > 0 || !now.Before(deadline) {
			return out, nil
		}
		wake := deadline
		if !next.IsZero() && next.Before(wake) {
			wake = next
		}
		t := time.NewTimer(wake.Sub(now))
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		t.Stop()
	}
}

// settleLocked takes out the messages whose visibility timeout ran out after
// their last allowed receive; the caller hands them to deadLetter once the
// lock is released.
func (q *Queue) settleLocked(now time.Time) []*message {
	dlq, maxRC := q.opts.DeadLetter, q.opts.MaxReceiveCount
	if dlq == nil || maxRC <= 0 {
		return nil
	}
	var moved []*message
	q.msgs = slices.DeleteFunc(q.msgs, func(m *message) bool {
		if m.ReceiveCount >= maxRC && !m.VisibleAt.After(now) {
			moved = append(moved, m)
			return true
		}
		return false
	})
	if len(moved) > 0 {
		q.counts.DeadLettered += len(moved)
		q.notifyLocked()
	}
	return moved
}

// deadLetter adds moved messages to the dead-letter queue (not under q's
// lock) and reports them.
func (q *Queue) deadLetter(moved []*message) {
	if len(moved) == 0 {
		return
	}
	d := q.opts.DeadLetter
	now := time.Now()
	var snaps []Message
	d.mu.Lock()
	for _, m := range moved {
		dm := &message{Message: m.Message}
		dm.Visible, dm.VisibleAt, dm.ReceiptHandle = false, now, ""
		dm.DeadLetterSource = q.opts.Name
		d.msgs = append(d.msgs, dm)
		d.counts.Sent++
		snaps = append(snaps, d.snapshotLocked(dm, now))
	}
	d.notifyLocked()
	d.mu.Unlock()
	if q.opts.OnDeadLetter != nil {
		for _, s := range snaps {
			q.opts.OnDeadLetter(s)
		}
	}
}

// nextVisibleLocked is the earliest time an invisible message becomes
// visible (or moves to the dead-letter queue); zero if none will.
func (q *Queue) nextVisibleLocked(now time.Time) time.Time {
	var next time.Time
	for _, m := range q.msgs {
		if m.VisibleAt.After(now) && (next.IsZero() || m.VisibleAt.Before(next)) {
			next = m.VisibleAt
		}
	}
	return next
}

// Delete deletes the message received with handle. It reports whether a
// message was deleted: false, with no error, for a handle of a message since
// deleted or moved, or one received again since (SQS answers those with
// success too). A handle this queue never handed out is ErrInvalidReceipt.
func (q *Queue) Delete(handle string) (bool, error) {
	id, ok := parseHandle(q.opts.Name, handle)
	if !ok {
		return false, ErrInvalidReceipt
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.IndexFunc(q.msgs, func(m *message) bool { return m.ID == id })
	if i < 0 || q.msgs[i].handle != handle {
		return false, nil
	}
	q.msgs = slices.Delete(q.msgs, i, i+1)
	q.counts.Deleted++
	q.notifyLocked()
	return true, nil
}

// ChangeVisibility sets the visibility timeout of the message received with
// handle to d from now (0 makes it visible at once). The message must be in
// flight under that handle: ErrNotInFlight otherwise.
func (q *Queue) ChangeVisibility(handle string, d time.Duration) error {
	id, ok := parseHandle(q.opts.Name, handle)
	if !ok {
		return ErrInvalidReceipt
	}
	if d < 0 || d > 12*time.Hour {
		return fmt.Errorf("%w: VisibilityTimeout must be between 0 and 43200 seconds", ErrInvalidMessage)
	}
	now := time.Now()
	q.mu.Lock()
	i := slices.IndexFunc(q.msgs, func(m *message) bool { return m.ID == id })
	if i < 0 || q.msgs[i].handle != handle || !q.msgs[i].VisibleAt.After(now) {
		q.mu.Unlock()
		return ErrNotInFlight
	}
	q.msgs[i].VisibleAt = now.Add(d)
	q.notifyLocked()
	q.mu.Unlock()
	return nil
}

// Purge deletes every message.
func (q *Queue) Purge() {
	q.mu.Lock()
	q.counts.Deleted += len(q.msgs)
	q.msgs = nil
	q.notifyLocked()
	q.mu.Unlock()
}

// Messages is a snapshot of every message in the queue, in send order.
func (q *Queue) Messages() []Message {
	now := time.Now()
	q.mu.Lock()
	moved := q.settleLocked(now)
	out := make([]Message, 0, len(q.msgs))
	for _, m := range q.msgs {
		out = append(out, q.snapshotLocked(m, now))
	}
	q.mu.Unlock()
	q.deadLetter(moved)
	return out
}

// DeadLetters is a snapshot of the dead-letter queue's messages (nil without
// a redrive policy).
func (q *Queue) DeadLetters() []Message {
	q.Messages() // moves what is due
	if q.opts.DeadLetter == nil {
		return nil
	}
	return q.opts.DeadLetter.Messages()
}

// Counts reports the queue's current and total numbers.
func (q *Queue) Counts() Counts {
	now := time.Now()
	q.mu.Lock()
	moved := q.settleLocked(now)
	c := q.counts
	for _, m := range q.msgs {
		switch {
		case !m.VisibleAt.After(now):
			c.Visible++
		case m.ReceiveCount > 0:
			c.InFlight++
		default:
			c.Delayed++
		}
	}
	q.mu.Unlock()
	q.deadLetter(moved)
	return c
}

func (q *Queue) snapshotLocked(m *message, now time.Time) Message {
	s := m.Message
	s.Attributes = cloneAttrs(m.Attributes)
	s.SystemAttributes = cloneAttrs(m.SystemAttributes)
	s.ReceiptHandle = m.handle
	s.Visible = !m.VisibleAt.After(now)
	return s
}

func cloneAttrs(a map[string]MessageAttribute) map[string]MessageAttribute {
	if len(a) == 0 {
		return nil
	}
	out := make(map[string]MessageAttribute, len(a))
	for k, v := range a {
		if v.StringValue != nil {
			s := *v.StringValue
			v.StringValue = &s
		}
		v.BinaryValue = slices.Clone(v.BinaryValue)
		out[k] = v
	}
	return out
}

// newHandle makes a receipt handle: opaque to the consumer, naming the queue
// and the message, different for every receive.
func newHandle(queue, id string) string {
	var nonce [18]byte
	_, _ = rand.Read(nonce[:])
	return base64.StdEncoding.EncodeToString([]byte(queue + "\x00" + id + "\x00" + hex.EncodeToString(nonce[:])))
}

// parseHandle returns the message id of a handle this queue handed out.
func parseHandle(queue, handle string) (string, bool) {
	b, err := base64.StdEncoding.DecodeString(handle)
	if err != nil {
		return "", false
	}
	parts := strings.Split(string(b), "\x00")
	if len(parts) != 3 || parts[0] != queue || parts[1] == "" {
		return "", false
	}
	return parts[1], true
}

func md5Hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

// MD5OfAttributes is SQS's digest of message attributes
// (MD5OfMessageAttributes): for each attribute in name order, the name, the
// data type, a transport byte (1 string, 2 binary) and the value, each
// length-prefixed (4 bytes, big-endian). "" when there are none.
func MD5OfAttributes(attrs map[string]MessageAttribute) string {
	if len(attrs) == 0 {
		return ""
	}
	var b []byte
	put := func(p []byte) {
		n := len(p)
		b = append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
		b = append(b, p...)
	}
	names := make([]string, 0, len(attrs))
	for k := range attrs {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		a := attrs[k]
		put([]byte(k))
		put([]byte(a.DataType))
		if a.StringValue != nil {
			b = append(b, 1)
			put([]byte(*a.StringValue))
		} else {
			b = append(b, 2)
			put(a.BinaryValue)
		}
	}
	return md5Hex(b)
}
