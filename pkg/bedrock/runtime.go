package bedrock

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
)

// DefaultMaxAttempts is how many times NewRuntime's client tries a call.
const DefaultMaxAttempts = 3

// RuntimeOption tunes NewRuntime.
type RuntimeOption func(*runtimeOptions)

type runtimeOptions struct {
	maxAttempts int
	backoff     retry.BackoffDelayer
}

// WithMaxAttempts sets the total attempts per call (first try included);
// n <= 0 keeps DefaultMaxAttempts.
func WithMaxAttempts(n int) RuntimeOption {
	return func(o *runtimeOptions) {
		if n > 0 {
			o.maxAttempts = n
		}
	}
}

// WithBackoff replaces the retryer's exponential jitter backoff. Tests pass
// a zero delay: the SDK waits about a second before retrying a throttle.
func WithBackoff(b retry.BackoffDelayer) RuntimeOption {
	return func(o *runtimeOptions) { o.backoff = b }
}

// NoBackoff is a BackoffDelayer that retries immediately, for tests.
func NoBackoff() retry.BackoffDelayer {
	return retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
}

// NewRuntime builds the Bedrock Runtime client from cfg. A non-empty endpoint
// overrides the service endpoint (the local stack's fake). ctx is accepted so
// that call sites read like the rest of the SDK setup; building the client
// does no I/O.
//
// Retries use the SDK standard retryer (throttling, 5xx, connection errors)
// plus ModelTimeoutException, which Bedrock returns as a 408 the standard
// retryer does not consider transient, though a retry usually succeeds.
func NewRuntime(ctx context.Context, cfg aws.Config, endpoint string, opts ...RuntimeOption) *bedrockruntime.Client {
	ro := runtimeOptions{maxAttempts: DefaultMaxAttempts}
	for _, o := range opts {
		o(&ro)
	}
	retryer := retry.AddWithErrorCodes(retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = ro.maxAttempts
		if ro.backoff != nil {
			so.Backoff = ro.backoff
		}
	}), "ModelTimeoutException")
	return bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) {
		o.Retryer = retryer
		// A non-zero RetryMaxAttempts (e.g. from AWS_MAX_ATTEMPTS) would wrap
		// the retryer and override maxAttempts; ours is authoritative.
		o.RetryMaxAttempts = 0
		o.HTTPClient = readOnlyBodies{o.HTTPClient}
		// Bodies and event-stream messages carry prompts, tool inputs and
		// model output, which may be privileged: never let the SDK log them,
		// whatever the shared aws.Config asks for.
		o.ClientLogMode &^= aws.LogRequestWithBody | aws.LogResponseWithBody |
			aws.LogRequestEventMessage | aws.LogResponseEventMessage
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
}

// readOnlyBodies works around a race between smithy-go and net/http that
// kills a ConverseStream response mid-stream ("use of closed network
// connection"; about 1% of calls against the loopback fake). smithy-go
// closes the request body as soon as response headers arrive, and its body
// wrapper's WriteTo returns io.EOF once closed. net/http writes the body
// straight to the socket and then drains the body through WriteTo to check
// for excess bytes; if the server answered before that drain, the EOF is
// taken as a failed request write and the connection, now carrying the
// event stream, is closed. Hiding WriteTo makes the drain use Read, which
// reports a closed body as a clean EOF.
type readOnlyBodies struct{ bedrockruntime.HTTPClient }

func (c readOnlyBodies) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = readOnlyBody{r.Body}
	}
	return c.HTTPClient.Do(r)
}

// readOnlyBody exposes only Read and Close of the wrapped body.
type readOnlyBody struct{ io.ReadCloser }
