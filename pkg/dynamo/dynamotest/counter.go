package dynamotest

import (
	"maps"
	"net/http"
	"strings"
	"sync"
)

// Counter counts DynamoDB round trips by operation (the X-Amz-Target
// suffix: PutItem, TransactWriteItems, ...). A round trip is one call the
// client made that the endpoint answered: the SDK's attempts of one call
// (one Amz-Sdk-Invocation-Id) count once, however many the endpoint
// answered. What the store's code asks for is what a count pins; how often
// the transport had to send it is not (see Faults.RetryReads).
type Counter struct {
	mu   sync.Mutex
	byOp map[string]int
	n    int
	// calls holds the invocation ids counted since Reset.
	calls map[string]bool
}

// Count is the number of round trips since the last Reset.
func (c *Counter) Count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Reset zeroes the counts.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n, c.byOp, c.calls = 0, nil, nil
}

// ByOp returns a copy of the counts per operation.
func (c *Counter) ByOp() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.byOp)
}

// add counts an answered request of op; invocation is the SDK's id of the
// call it is an attempt of ("" counts every request).
func (c *Counter) add(op, invocation string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if invocation != "" {
		if c.calls[invocation] {
			return
		}
		if c.calls == nil {
			c.calls = map[string]bool{}
		}
		c.calls[invocation] = true
	}
	if c.byOp == nil {
		c.byOp = map[string]int{}
	}
	c.byOp[op]++
	c.n++
}

// countingClient is the SDK's HTTPClient: it counts, optionally serializes,
// and sends.
type countingClient struct {
	next    *http.Client
	counter *Counter
	serial  *sync.Mutex // non-nil: one request at a time (see Moto)
	faults  *Faults
}

func (c *countingClient) Do(req *http.Request) (*http.Response, error) {
	op := req.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}
	resp, err := c.faults.do(op, req, func(req *http.Request) (*http.Response, error) {
		if c.serial != nil {
			// The server has applied the request once its response headers
			// arrive, so holding the lock for Do alone serializes the
			// operations.
			c.serial.Lock()
			defer c.serial.Unlock()
		}
		return c.next.Do(req)
	})
	// A round trip is a call the server answered: an attempt lost in
	// transport or answered with a 5xx is retried by the SDK (moto's
	// development server now and then drops a connection under load), and
	// an answered attempt may be retried too, when the transport closed
	// the connection as the answer was read (aws/aws-sdk-go-v2#2737). The
	// SDK's attempts of one call share its invocation id.
	if err == nil && resp.StatusCode < 500 {
		c.counter.add(op, req.Header.Get("Amz-Sdk-Invocation-Id"))
	}
	return resp, err
}
