package dynamotest

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// FaultMode is how an armed write fails.
type FaultMode string

const (
	// FaultFail: the write never reaches the table; the caller gets a
	// connection error.
	FaultFail FaultMode = "fail"
	// FaultLose: the write is applied and its answer is lost; the caller
	// gets a connection error.
	FaultLose FaultMode = "lose"
	// FaultTransient: the write is throttled (ProvisionedThroughputExceeded)
	// through every retry the SDK makes of that one call, and never
	// applied; the process lives on and every later request goes through.
	// It is a throttle or outage that outlasted the SDK's retries once.
	FaultTransient FaultMode = "transient"
)

// ErrCrashed is what every request gets once a fault fired: the process
// that sent the write is taken to be dead until Revive.
var ErrCrashed = errors.New("dynamotest: injected crash: the connection was lost")

// writeOps are the DynamoDB operations that change a table.
var writeOps = map[string]bool{"PutItem": true, "UpdateItem": true, "DeleteItem": true,
	"TransactWriteItems": true, "BatchWriteItem": true}

// Faults injects a crash at the k-th write through an endpoint's client:
// that write fails or loses its answer, and every request after it fails
// too (the process died) until Revive. Unarmed, it only counts writes.
type Faults struct {
	mu     sync.Mutex
	writes int
	at     int // 0: unarmed
	mode   FaultMode
	dead   bool
	fired  bool
	ops    []string
	// refused is the SDK invocation id of the call a transient fault
	// refuses, every attempt of it.
	refused string
	// retryReads: every read's first answer is cut (RetryReads); cut holds
	// the invocation ids whose answer was.
	retryReads bool
	cut        map[string]bool
}

// Arm makes the k-th write from now (k >= 1) fail as mode says.
func (f *Faults) Arm(k int, mode FaultMode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes, f.at, f.mode, f.dead, f.fired, f.ops, f.refused = 0, k, mode, false, false, nil, ""
}

// Revive ends the crash (a new process, the same table) and disarms.
func (f *Faults) Revive() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at, f.dead = 0, false
}

// Fired reports whether the armed fault fired.
func (f *Faults) Fired() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired
}

// Writes is the number of writes since Arm (or since the endpoint was
// made), the fault's own included.
func (f *Faults) Writes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// Ops are the operations of the writes since Arm, in order.
func (f *Faults) Ops() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ops...)
}

// RetryReads, on, makes the SDK send every read (GetItem, Query, ...) twice:
// the endpoint answers the first attempt, and the answer's body breaks as
// it is read with net.ErrClosed, which the SDK retries. That is what a busy
// machine does now and then: net/http's client closes a connection while
// its answer is being read (aws/aws-sdk-go-v2#2737), and the endpoint
// answers the retry too. Writes are left alone: a write the endpoint
// applied and is sent again is FaultLose's case.
func (f *Faults) RetryReads(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.retryReads = on
}

// CutAnswers is the number of reads whose answer RetryReads cut.
func (f *Faults) CutAnswers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.cut)
}

// do sends req through send unless a fault says otherwise.
func (f *Faults) do(op string, req *http.Request, send func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	f.mu.Lock()
	if f.dead {
		f.mu.Unlock()
		return nil, ErrCrashed
	}
	invocation := req.Header.Get("Amz-Sdk-Invocation-Id")
	if !writeOps[op] {
		cut := f.retryReads && invocation != "" && !f.cut[invocation]
		if cut {
			if f.cut == nil {
				f.cut = map[string]bool{}
			}
			f.cut[invocation] = true
		}
		f.mu.Unlock()
		resp, err := send(req)
		if cut && err == nil {
			resp.Body = &closedBody{ReadCloser: resp.Body}
		}
		return resp, err
	}
	if f.refused != "" && invocation == f.refused {
		f.mu.Unlock()
		return throttled(req), nil // the SDK's retry of the refused call
	}
	f.writes++
	f.ops = append(f.ops, op)
	fire := f.at > 0 && f.writes == f.at
	mode := f.mode
	if fire {
		f.fired = true
		if mode == FaultTransient {
			f.refused = invocation
		} else {
			f.dead = true
		}
	}
	f.mu.Unlock()
	if !fire {
		return send(req)
	}
	if mode == FaultTransient {
		return throttled(req), nil
	}
	if mode == FaultLose {
		resp, err := send(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	return nil, ErrCrashed
}

// closedBody is an answer whose connection was closed under it, as the
// transport reports it.
type closedBody struct{ io.ReadCloser }

func (closedBody) Read([]byte) (int, error) {
	return 0, &net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}
}

// throttled is DynamoDB's answer to a write over the table's throughput.
func throttled(req *http.Request) *http.Response {
	const body = `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",` +
		`"message":"dynamotest: injected throttle"}`
	return &http.Response{StatusCode: http.StatusBadRequest, Status: "400 Bad Request", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amzn-Requestid": {"dynamotest-throttle"}},
		Body:   io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}
}
