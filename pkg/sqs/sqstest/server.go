package sqstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server serves queues over the SQS AWS JSON 1.0 protocol: POST / with
// X-Amz-Target AmazonSQS.<Operation>, a JSON body and a JSON answer, errors
// as {"__type", "message"} with the x-amzn-query-error header SQS sends for
// query-compatible clients. It implements SendMessage, SendMessageBatch,
// ReceiveMessage (long polling included), DeleteMessage, DeleteMessageBatch,
// ChangeMessageVisibility, GetQueueAttributes, GetQueueUrl and PurgeQueue;
// any other target is an UnsupportedOperation error. Requests are not
// authenticated: the SigV4 signature is not checked, the access key only
// names the sender.
type Server struct {
	// URL is the endpoint, http://127.0.0.1:PORT: the client's BaseEndpoint
	// or AWS_ENDPOINT_URL_SQS.
	URL string

	ln  net.Listener
	srv *http.Server

	mu     sync.Mutex
	queues map[string]*Queue // by name
	faults map[string][]Error
}

// Start serves queues on addr ("127.0.0.1:0" picks a free port).
func Start(addr string, queues ...*Queue) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sqstest: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), ln: ln, queues: map[string]*Queue{}, faults: map[string][]Error{}}
	for _, q := range queues {
		s.Add(q)
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// NewServer serves queues on a free loopback port; it panics if it cannot
// listen (like httptest.NewServer). Close it when done.
func NewServer(queues ...*Queue) *Server {
	s, err := Start("127.0.0.1:0", queues...)
	if err != nil {
		panic(err)
	}
	return s
}

// Close stops serving; long polls under way end at once.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if s.srv.Shutdown(ctx) != nil {
		_ = s.srv.Close()
	}
}

// Add serves q too (and its dead-letter queue, if it has one).
func (s *Server) Add(q *Queue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ; q != nil; q = q.opts.DeadLetter {
		s.queues[q.Name()] = q
	}
}

// Queue returns the queue named name, or nil.
func (s *Server) Queue(name string) *Queue {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queues[name]
}

// QueueURL is q's URL on this server, <URL>/<account>/<name>.
func (s *Server) QueueURL(q *Queue) string {
	return s.URL + "/" + q.AccountID() + "/" + q.Name()
}

// Error is an SQS error answer.
type Error struct {
	Status int
	// Type is the body's __type, such as com.amazonaws.sqs#QueueDoesNotExist.
	Type string
	// QueryCode is the x-amzn-query-error header's code and fault, such as
	// AWS.SimpleQueueService.NonExistentQueue;Sender ("" for none).
	QueryCode string
	Message   string
}

func (e Error) Error() string { return e.Type + ": " + e.Message }

// Errors SQS answers with, for FailNext.
var (
	ErrThrottled = Error{Status: 400, Type: "com.amazonaws.sqs#RequestThrottled", QueryCode: "RequestThrottled;Sender",
		Message: "Request is throttled."}
	ErrInternal = Error{Status: 500, Type: "com.amazonaws.sqs#InternalError", QueryCode: "InternalError;Receiver",
		Message: "We encountered an internal error. Please try again."}
	ErrServiceUnavailable = Error{Status: 503, Type: "com.amazonaws.sqs#ServiceUnavailable", QueryCode: "ServiceUnavailable;Receiver",
		Message: "The request has failed due to a temporary failure of the server."}
)

// FailNext makes the next call of operation (such as "SendMessage") answer
// e instead; each call to FailNext fails one more call. The SDK retries
// throttling and 5xx answers itself (3 attempts by default), so failing a
// send from a client's point of view takes as many.
func (s *Server) FailNext(operation string, e Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[operation] = append(s.faults[operation], e)
}

func errQueueDoesNotExist(u string) Error {
	return Error{400, "com.amazonaws.sqs#QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue;Sender",
		fmt.Sprintf("The specified queue does not exist (%s).", u)}
}

func errInvalidParameter(msg string) Error {
	return Error{400, "com.amazonaws.sqs#InvalidParameterValue", "InvalidParameterValue;Sender", msg}
}

func errMissingParameter(name string) Error {
	return Error{400, "com.amazonaws.sqs#MissingParameter", "MissingParameter;Sender",
		fmt.Sprintf("The request must contain the parameter %s.", name)}
}

var (
	errReceiptHandleIsInvalid = Error{400, "com.amazonaws.sqs#ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid;Sender",
		"The input receipt handle is invalid."}
	errMessageNotInflight = Error{400, "com.amazonaws.sqs#MessageNotInflight", "AWS.SimpleQueueService.MessageNotInflight;Sender",
		"The message referred to isn't in flight."}
	errEmptyBatch = Error{400, "com.amazonaws.sqs#EmptyBatchRequest", "AWS.SimpleQueueService.EmptyBatchRequest;Sender",
		"There should be at least one SendMessageBatchRequestEntry in the request."}
	errTooManyEntries = Error{400, "com.amazonaws.sqs#TooManyEntriesInBatchRequest", "AWS.SimpleQueueService.TooManyEntriesInBatchRequest;Sender",
		"Maximum number of entries per request are 10."}
	errIDsNotDistinct = Error{400, "com.amazonaws.sqs#BatchEntryIdsNotDistinct", "AWS.SimpleQueueService.BatchEntryIdsNotDistinct;Sender",
		"Two or more batch entries in the request have the same Id."}
	errInvalidBatchEntryID = Error{400, "com.amazonaws.sqs#InvalidBatchEntryId", "AWS.SimpleQueueService.InvalidBatchEntryId;Sender",
		"A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long."}
)

func errInvalidMessage(err error) Error {
	msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), ErrInvalidMessage.Error()), ": ")
	if strings.Contains(msg, "characters outside") {
		return Error{400, "com.amazonaws.sqs#InvalidMessageContents", "InvalidMessageContents;Sender", "Invalid characters found. " + msg}
	}
	return errInvalidParameter("One or more parameters are invalid. Reason: " + msg)
}

// ServeHTTP answers one SQS call.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, Error{405, "com.amazon.coral.service#UnknownOperationException", "", "SQS answers POST only."})
		return
	}
	op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
	if !ok || op == "" {
		writeError(w, Error{400, "com.amazonaws.sqs#UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation;Sender",
			fmt.Sprintf("X-Amz-Target %q is not an AmazonSQS operation.", r.Header.Get("X-Amz-Target"))})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		writeError(w, Error{400, "com.amazon.coral.service#SerializationException", "", err.Error()})
		return
	}
	s.mu.Lock()
	if f := s.faults[op]; len(f) > 0 {
		s.faults[op] = f[1:]
		s.mu.Unlock()
		writeError(w, f[0])
		return
	}
	s.mu.Unlock()

	var out any
	var e *Error
	switch op {
	case "SendMessage":
		out, e = s.sendMessage(r, body)
	case "SendMessageBatch":
		out, e = s.sendMessageBatch(r, body)
	case "ReceiveMessage":
		out, e = s.receiveMessage(r, body)
	case "DeleteMessage":
		out, e = s.deleteMessage(body)
	case "DeleteMessageBatch":
		out, e = s.deleteMessageBatch(body)
	case "ChangeMessageVisibility":
		out, e = s.changeMessageVisibility(body)
	case "GetQueueAttributes":
		out, e = s.getQueueAttributes(body)
	case "GetQueueUrl":
		out, e = s.getQueueURL(body)
	case "PurgeQueue":
		out, e = s.purgeQueue(body)
	default:
		e = &Error{400, "com.amazonaws.sqs#UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation;Sender",
			fmt.Sprintf("%s is not supported by this fake SQS.", op)}
	}
	if e != nil {
		writeError(w, *e)
		return
	}
	b, err := json.Marshal(out)
	if err != nil {
		writeError(w, ErrInternal)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, e Error) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	if e.QueryCode != "" {
		w.Header().Set("X-Amzn-Query-Error", e.QueryCode)
	}
	w.WriteHeader(e.Status)
	b, _ := json.Marshal(struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}{e.Type, e.Message})
	_, _ = w.Write(b)
}

// decode reads a request body; the JSON protocol ignores unknown members.
func decode(body []byte, v any) *Error {
	if len(body) == 0 {
		body = []byte("{}")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return &Error{400, "com.amazon.coral.service#SerializationException", "", "Cannot read the request body: " + err.Error()}
	}
	return nil
}

// queue finds the queue a QueueUrl names: the last two path segments are
// the account and the name (the host is not compared, so localhost and
// 127.0.0.1 both work).
func (s *Server) queue(queueURL string) (*Queue, *Error) {
	if queueURL == "" {
		e := errMissingParameter("QueueUrl")
		return nil, &e
	}
	path := queueURL
	if u, err := url.Parse(queueURL); err == nil && u.Path != "" {
		path = u.Path
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	if len(segs) >= 2 {
		if q := s.Queue(segs[len(segs)-1]); q != nil && q.AccountID() == segs[len(segs)-2] {
			return q, nil
		}
	}
	e := errQueueDoesNotExist(queueURL)
	return nil, &e
}

// attributeValue is MessageAttributeValue on the wire (binary as base64).
type attributeValue struct {
	DataType         string   `json:"DataType"`
	StringValue      *string  `json:"StringValue,omitempty"`
	BinaryValue      []byte   `json:"BinaryValue,omitempty"`
	StringListValues []string `json:"StringListValues,omitempty"`
	BinaryListValues [][]byte `json:"BinaryListValues,omitempty"`
}

func fromWire(in map[string]attributeValue) map[string]MessageAttribute {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]MessageAttribute, len(in))
	for k, v := range in {
		out[k] = MessageAttribute{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	return out
}

func toWire(in map[string]MessageAttribute) map[string]attributeValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]attributeValue, len(in))
	for k, v := range in {
		out[k] = attributeValue{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	return out
}

// senderID is the access key id of the request's SigV4 credential, the
// closest a fake gets to SQS's SenderId; "" when unsigned.
func senderID(r *http.Request) string {
	_, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential=")
	if !ok {
		return ""
	}
	akid, _, _ := strings.Cut(cred, "/")
	return akid
}

type sendEntry struct {
	ID                      string                    `json:"Id"`
	MessageBody             *string                   `json:"MessageBody"`
	DelaySeconds            int                       `json:"DelaySeconds"`
	MessageAttributes       map[string]attributeValue `json:"MessageAttributes"`
	MessageSystemAttributes map[string]attributeValue `json:"MessageSystemAttributes"`
	MessageGroupID          string                    `json:"MessageGroupId"`
	MessageDeduplicationID  string                    `json:"MessageDeduplicationId"`
}

type sendResult struct {
	ID                           string `json:"Id,omitempty"`
	MessageID                    string `json:"MessageId"`
	MD5OfMessageBody             string `json:"MD5OfMessageBody"`
	MD5OfMessageAttributes       string `json:"MD5OfMessageAttributes,omitempty"`
	MD5OfMessageSystemAttributes string `json:"MD5OfMessageSystemAttributes,omitempty"`
}

func (s *Server) send(q *Queue, r *http.Request, e sendEntry) (sendResult, *Error) {
	if e.MessageBody == nil {
		err := errMissingParameter("MessageBody")
		return sendResult{}, &err
	}
	if e.MessageGroupID != "" || e.MessageDeduplicationID != "" {
		err := errInvalidParameter("The request include parameter that is not valid for this queue type (a standard queue takes no MessageGroupId or MessageDeduplicationId).")
		return sendResult{}, &err
	}
	m, err := q.Send(SendInput{
		Body:             *e.MessageBody,
		Attributes:       fromWire(e.MessageAttributes),
		SystemAttributes: fromWire(e.MessageSystemAttributes),
		Delay:            time.Duration(e.DelaySeconds) * time.Second,
		SenderID:         senderID(r),
	})
	if err != nil {
		apiErr := errInvalidMessage(err)
		return sendResult{}, &apiErr
	}
	return sendResult{ID: e.ID, MessageID: m.ID, MD5OfMessageBody: m.MD5OfBody,
		MD5OfMessageAttributes:       m.MD5OfMessageAttributes,
		MD5OfMessageSystemAttributes: MD5OfAttributes(m.SystemAttributes)}, nil
}

func (s *Server) sendMessage(r *http.Request, body []byte) (any, *Error) {
	var in struct {
		QueueURL string `json:"QueueUrl"`
		sendEntry
	}
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	q, e := s.queue(in.QueueURL)
	if e != nil {
		return nil, e
	}
	res, e := s.send(q, r, in.sendEntry)
	if e != nil {
		return nil, e
	}
	res.ID = ""
	return res, nil
}

var batchEntryID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// batchIDs checks a batch's entry ids: 1 to 10, well-formed and distinct.
func batchIDs(ids []string) *Error {
	switch {
	case len(ids) == 0:
		return &errEmptyBatch
	case len(ids) > 10:
		return &errTooManyEntries
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if !batchEntryID.MatchString(id) {
			return &errInvalidBatchEntryID
		}
		if seen[id] {
			return &errIDsNotDistinct
		}
		seen[id] = true
	}
	return nil
}

type batchError struct {
	ID          string `json:"Id"`
	SenderFault bool   `json:"SenderFault"`
	Code        string `json:"Code"`
	Message     string `json:"Message,omitempty"`
}

func (s *Server) sendMessageBatch(r *http.Request, body []byte) (any, *Error) {
	var in struct {
		QueueURL string      `json:"QueueUrl"`
		Entries  []sendEntry `json:"Entries"`
	}
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	q, e := s.queue(in.QueueURL)
	if e != nil {
		return nil, e
	}
	ids := make([]string, len(in.Entries))
	total := 0
	for i, en := range in.Entries {
		ids[i] = en.ID
		if en.MessageBody != nil {
			total += len(*en.MessageBody)
		}
	}
	if e := batchIDs(ids); e != nil {
		return nil, e
	}
	if total > q.opts.MaximumMessageSize {
		return nil, &Error{400, "com.amazonaws.sqs#BatchRequestTooLong", "AWS.SimpleQueueService.BatchRequestTooLong;Sender",
			fmt.Sprintf("Batch requests cannot be longer than %d bytes.", q.opts.MaximumMessageSize)}
	}
	out := struct {
		Successful []sendResult `json:"Successful"`
		Failed     []batchError `json:"Failed"`
	}{Successful: []sendResult{}, Failed: []batchError{}}
	for _, en := range in.Entries {
		res, e := s.send(q, r, en)
		if e != nil {
			code, _, _ := strings.Cut(e.QueryCode, ";")
			out.Failed = append(out.Failed, batchError{ID: en.ID, SenderFault: true, Code: code, Message: e.Message})
			continue
		}
		out.Successful = append(out.Successful, res)
	}
	return out, nil
}

type wireMessage struct {
	MessageID              string                    `json:"MessageId"`
	ReceiptHandle          string                    `json:"ReceiptHandle"`
	MD5OfBody              string                    `json:"MD5OfBody"`
	Body                   string                    `json:"Body"`
	Attributes             map[string]string         `json:"Attributes,omitempty"`
	MD5OfMessageAttributes string                    `json:"MD5OfMessageAttributes,omitempty"`
	MessageAttributes      map[string]attributeValue `json:"MessageAttributes,omitempty"`
}

// SystemAttributes are the message's system attributes as SQS names them
// (ApproximateReceiveCount, SentTimestamp in epoch milliseconds, SenderId,
// ApproximateFirstReceiveTimestamp, AWSTraceHeader when the sender set one):
// what a receive that asks for All gets, and what Lambda's SQS event source
// puts in a record's attributes.
func SystemAttributes(m Message) map[string]string {
	a := map[string]string{
		"ApproximateReceiveCount": strconv.Itoa(m.ReceiveCount),
		"SentTimestamp":           strconv.FormatInt(m.SentAt.UnixMilli(), 10),
		"SenderId":                m.SenderID,
	}
	if !m.FirstReceivedAt.IsZero() {
		a["ApproximateFirstReceiveTimestamp"] = strconv.FormatInt(m.FirstReceivedAt.UnixMilli(), 10)
	}
	if t, ok := m.SystemAttributes["AWSTraceHeader"]; ok && t.StringValue != nil {
		a["AWSTraceHeader"] = *t.StringValue
	}
	return a
}

// wanted reports whether name is asked for by names (All, .*, a prefix.*
// or the name itself).
func wanted(names []string, name string) bool {
	for _, n := range names {
		switch {
		case n == "All", n == ".*", n == name:
			return true
		case strings.HasSuffix(n, ".*") && strings.HasPrefix(name, strings.TrimSuffix(n, "*")):
			return true
		}
	}
	return false
}

func (s *Server) receiveMessage(r *http.Request, body []byte) (any, *Error) {
	var in struct {
		QueueURL                    string   `json:"QueueUrl"`
		AttributeNames              []string `json:"AttributeNames"`
		MessageSystemAttributeNames []string `json:"MessageSystemAttributeNames"`
		MessageAttributeNames       []string `json:"MessageAttributeNames"`
		MaxNumberOfMessages         *int     `json:"MaxNumberOfMessages"`
		VisibilityTimeout           *int     `json:"VisibilityTimeout"`
		WaitTimeSeconds             *int     `json:"WaitTimeSeconds"`
	}
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	q, e := s.queue(in.QueueURL)
	if e != nil {
		return nil, e
	}
	ri := ReceiveInput{Max: 1}
	if in.MaxNumberOfMessages != nil {
		if n := *in.MaxNumberOfMessages; n < 1 || n > 10 {
			e := errInvalidParameter(fmt.Sprintf("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", n))
			return nil, &e
		}
		ri.Max = *in.MaxNumberOfMessages
	}
	if in.VisibilityTimeout != nil {
		if v := *in.VisibilityTimeout; v < 0 || v > 43200 {
			e := errInvalidParameter(fmt.Sprintf("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200, if provided.", v))
			return nil, &e
		}
		// 0 is a real timeout on SQS (visible again at once); the Go API
		// reads 0 as the queue's, so it becomes the shortest there is.
		ri.Visibility = max(time.Duration(*in.VisibilityTimeout)*time.Second, time.Nanosecond)
	}
	if in.WaitTimeSeconds != nil {
		if v := *in.WaitTimeSeconds; v < 0 || v > 20 {
			e := errInvalidParameter(fmt.Sprintf("Value %d for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.", v))
			return nil, &e
		}
		ri.Wait = time.Duration(*in.WaitTimeSeconds) * time.Second
	}
	msgs, err := q.Receive(r.Context(), ri)
	if err != nil {
		return struct{}{}, nil // the client went away
	}
	sysNames := slices.Concat(in.AttributeNames, in.MessageSystemAttributeNames)
	out := struct {
		Messages []wireMessage `json:"Messages,omitempty"`
	}{}
	for _, m := range msgs {
		wm := wireMessage{MessageID: m.ID, ReceiptHandle: m.ReceiptHandle, MD5OfBody: m.MD5OfBody, Body: m.Body}
		for k, v := range SystemAttributes(m) {
			if wanted(sysNames, k) {
				if wm.Attributes == nil {
					wm.Attributes = map[string]string{}
				}
				wm.Attributes[k] = v
			}
		}
		picked := map[string]MessageAttribute{}
		for k, v := range m.Attributes {
			if wanted(in.MessageAttributeNames, k) {
				picked[k] = v
			}
		}
		wm.MessageAttributes = toWire(picked)
		wm.MD5OfMessageAttributes = MD5OfAttributes(picked)
		out.Messages = append(out.Messages, wm)
	}
	return out, nil
}

func (s *Server) deleteMessage(body []byte) (any, *Error) {
	var in struct {
		QueueURL      string `json:"QueueUrl"`
		ReceiptHandle string `json:"ReceiptHandle"`
	}
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	q, e := s.queue(in.QueueURL)
	if e != nil {
		return nil, e
	}
	if _, err := q.Delete(in.ReceiptHandle); err != nil {
		return nil, &errReceiptHandleIsInvalid
	}
	return struct{}{}, nil
}

func (s *Server) deleteMessageBatch(body []byte) (any, *Error) {
	var in struct {
		QueueURL string `json:"QueueUrl"`
		Entries  []struct {
			ID            string `json:"Id"`
			ReceiptHandle string `json:"ReceiptHandle"`
		} `json:"Entries"`
	}
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	q, e := s.queue(in.QueueURL)
	if e != nil {
		return nil, e
	}
	ids := make([]string, len(in.Entries))
	for i, en := range in.Entries {
		ids[i] = en.ID
	}
	if e := batchIDs(ids); e != nil {
		return nil, e
	}
	type ok struct {
		ID string `json:"Id"`
	}
	out := struct {
		Successful []ok         `json:"Successful"`
		Failed     []batchError `json:"Failed"`
	}{Successful: []ok{}, Failed: []batchError{}}
	for _, en := range in.Entries {
		if _, err := q.Delete(en.ReceiptHandle); err != nil {
			out.Failed = append(out.Failed, batchError{ID: en.ID, SenderFault: true, Code: "ReceiptHandleIsInvalid", Message: errReceiptHandleIsInvalid.Message})
			continue
		}
		out.Successful = append(out.Successful, ok{en.ID})
	}
	return out, nil
}

func (s *Server) changeMessageVisibility(body []byte) (any, *Error) {
	var in struct {
		QueueURL          string `json:"QueueUrl"`
		ReceiptHandle     string `json:"ReceiptHandle"`
		VisibilityTimeout *int   `json:"VisibilityTimeout"`
	}
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	q, e := s.queue(in.QueueURL)
	if e != nil {
		return nil, e
	}
	if in.VisibilityTimeout == nil {
		e := errMissingParameter("VisibilityTimeout")
		return nil, &e
	}
	err := q.ChangeVisibility(in.ReceiptHandle, time.Duration(*in.VisibilityTimeout)*time.Second)
	switch {
	case errors.Is(err, ErrInvalidReceipt):
		return nil, &errReceiptHandleIsInvalid
	case errors.Is(err, ErrNotInFlight):
		return nil, &errMessageNotInflight
	case err != nil:
		e := errInvalidParameter(err.Error())
		return nil, &e
	}
	return struct{}{}, nil
}

// Attributes are the queue attributes GetQueueAttributes reports, by SQS
// name.
func (s *Server) Attributes(q *Queue) map[string]string {
	c := q.Counts()
	a := map[string]string{
		"QueueArn":                              q.ARN(),
		"ApproximateNumberOfMessages":           strconv.Itoa(c.Visible),
		"ApproximateNumberOfMessagesNotVisible": strconv.Itoa(c.InFlight),
		"ApproximateNumberOfMessagesDelayed":    strconv.Itoa(c.Delayed),
		"VisibilityTimeout":                     strconv.Itoa(int((q.opts.VisibilityTimeout + time.Second - 1) / time.Second)),
		"MaximumMessageSize":                    strconv.Itoa(q.opts.MaximumMessageSize),
		"DelaySeconds":                          "0",
		"ReceiveMessageWaitTimeSeconds":         "0",
		"SqsManagedSseEnabled":                  "true",
	}
	if q.opts.DeadLetter != nil && q.opts.MaxReceiveCount > 0 {
		rp, _ := json.Marshal(map[string]any{"deadLetterTargetArn": q.opts.DeadLetter.ARN(), "maxReceiveCount": q.opts.MaxReceiveCount})
		a["RedrivePolicy"] = string(rp)
	}
	return a
}

func (s *Server) getQueueAttributes(body []byte) (any, *Error) {
	var in struct {
		QueueURL       string   `json:"QueueUrl"`
		AttributeNames []string `json:"AttributeNames"`
	}
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	q, e := s.queue(in.QueueURL)
	if e != nil {
		return nil, e
	}
	out := struct {
		Attributes map[string]string `json:"Attributes,omitempty"`
	}{}
	for k, v := range s.Attributes(q) {
		if wanted(in.AttributeNames, k) {
			if out.Attributes == nil {
				out.Attributes = map[string]string{}
			}
			out.Attributes[k] = v
		}
	}
	return out, nil
}

func (s *Server) getQueueURL(body []byte) (any, *Error) {
	var in struct {
		QueueName              string `json:"QueueName"`
		QueueOwnerAWSAccountID string `json:"QueueOwnerAWSAccountId"`
	}
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	q := s.Queue(in.QueueName)
	if q == nil || (in.QueueOwnerAWSAccountID != "" && in.QueueOwnerAWSAccountID != q.AccountID()) {
		e := errQueueDoesNotExist(in.QueueName)
		return nil, &e
	}
	return struct {
		QueueURL string `json:"QueueUrl"`
	}{s.QueueURL(q)}, nil
}

func (s *Server) purgeQueue(body []byte) (any, *Error) {
	var in struct {
		QueueURL string `json:"QueueUrl"`
	}
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	q, e := s.queue(in.QueueURL)
	if e != nil {
		return nil, e
	}
	q.Purge()
	return struct{}{}, nil
}
