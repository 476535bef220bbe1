package dynamotest

import (
	"maps"
	"net/http"
	"strings"
	"sync"
)

// Counter counts DynamoDB HTTP round trips by operation (the X-Amz-Target
// suffix: PutItem, TransactWriteItems, ...). SDK retries count: each is a
// round trip.
type Counter struct {
	mu   sync.Mutex
	byOp map[string]int
	n    int
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
	c.n, c.byOp = 0, nil
}

// ByOp returns a copy of the counts per operation.
func (c *Counter) ByOp() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.byOp)
}

func (c *Counter) add(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
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
	// A round trip is a request the server answered: one lost in transport
	// or answered with a 5xx is retried by the SDK, and that retry is the
	// round trip the store asked for (moto's development server now and then
	// drops a connection under load).
	if err == nil && resp.StatusCode < 500 {
		c.counter.add(op)
	}
	return resp, err
}
