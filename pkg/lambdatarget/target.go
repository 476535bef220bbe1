package lambdatarget

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go/logging"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/remote"
)

// Target calls one Lambda function. It is safe for concurrent use, and holds
// no connection of its own beyond its HTTP transport's idle ones.
type Target struct {
	name     string
	function string
	client   *lambda.Client
	http     *http.Client
	attempts int
	delay    time.Duration
}

// maxDelay bounds one pause between attempts (a Retry-After aside).
const maxDelay = 2 * time.Second

// maxAnswerBytes bounds what is read of an answer before the SDK decodes
// it: Lambda caps a synchronous answer at 6 MB, so nothing longer is
// Lambda's.
const maxAnswerBytes = 8 << 20

// New returns the target for the function cfg names. It checks cfg and
// opens nothing: the first Call does.
func New(cfg Config) (*Target, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	base := remote.TransportOf(cfg.HTTPClient)
	t := &Target{
		name:     cfg.Name,
		function: cfg.Function,
		client:   cfg.Client,
		// No Origin or Auth: the SDK signs; the Transport is there for the
		// Probe, the bound on answers and sending each Invoke once.
		http:     &http.Client{Transport: &remote.Transport{Base: base, MaxResponseBytes: maxAnswerBytes}, CheckRedirect: remote.NoRedirect},
		attempts: cfg.MaxAttempts,
		delay:    cfg.RetryDelay,
	}
	if t.attempts == 0 {
		t.attempts = 3
	}
	if t.delay == 0 {
		t.delay = 100 * time.Millisecond
	}
	return t, nil
}

// Call runs c with a synchronous Invoke of the function (see agent.Target
// for what its errors mean, and the package doc for how they are decided).
// A call that did not run (not sent, throttled) is tried again, up to MaxAttempts within
// ctx; once it ran, or may have, it never is. The function's answer is the
// result's Content (a JSON string when it is not JSON); its own error is a
// result with IsError; a failure of Lambda's own making while it ran (a
// timeout, a crash) is outcome unknown.
func (t *Target) Call(ctx context.Context, c agent.TargetCall) (agent.TargetResult, error) {
	if err := checkCall(c); err != nil {
		return agent.TargetResult{}, t.fail(ctx, warrant.ErrTargetUnreachable, "invalid call: "+err.Error(), nil)
	}
	payload := encodePayload(c)
	for attempt := 1; ; attempt++ {
		res, f, err := t.invoke(ctx, payload)
		if f == nil {
			return res, nil
		}
		if !f.again || attempt == t.attempts {
			if attempt > 1 {
				f.why += fmt.Sprintf(" (%d attempts)", attempt)
			}
			return agent.TargetResult{}, t.fail(ctx, f.class, f.why, err)
		}
		if !t.pause(ctx, attempt, f.retryAfter) {
			return agent.TargetResult{}, t.fail(ctx, f.class, f.why+"; the context ends before another attempt", err)
		}
	}
}

// invoke makes one Invoke; f is nil when it answered. err is the SDK's
// error, kept only to tell whether the context ended.
func (t *Target) invoke(ctx context.Context, payload []byte) (agent.TargetResult, *failure, error) {
	p := &remote.Probe{}
	out, err := t.client.Invoke(remote.WithProbe(ctx, p), &lambda.InvokeInput{
		FunctionName:   aws.String(t.function),
		InvocationType: types.InvocationTypeRequestResponse,
		Payload:        payload,
	}, t.perCall)
	v := p.Seal()
	if err != nil {
		f := classify(err, v)
		return agent.TargetResult{}, &f, err
	}
	if out.FunctionError == nil {
		return agent.TargetResult{Content: asJSON(out.Payload)}, nil, nil
	}
	if what, ok := lambdaError(out.Payload); ok {
		return agent.TargetResult{}, &failure{class: warrant.ErrTargetOutcomeUnknown, why: what + ": it may have run"}, nil
	}
	return agent.TargetResult{Content: errorContent(out.Payload), IsError: true}, nil, nil
}

// perCall sets each Invoke's options: no retry by the SDK (an Invoke
// repeated is an effect repeated; Call decides), nothing logged, and the
// HTTP client whose transport lets the Probe watch the request.
func (t *Target) perCall(o *lambda.Options) {
	o.Retryer = aws.NopRetryer{}
	o.RetryMaxAttempts = 0
	o.Logger = logging.Nop{}
	o.ClientLogMode = 0
	o.HTTPClient = t.http
}

// pause waits before attempt+1: RetryDelay doubled per attempt, at most
// maxDelay, jittered into its upper half; a longer Retry-After instead. It
// reports false, without waiting, when ctx would end first.
func (t *Target) pause(ctx context.Context, attempt int, retryAfter time.Duration) bool {
	d := min(t.delay<<(attempt-1), maxDelay)
	d = d/2 + rand.N(d/2+1)
	d = max(d, retryAfter)
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
		return false
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// encodePayload is the function's event: the call's ids and tool as JSON
// strings, and its input as the very bytes the call holds (what counsel
// signed: never decoded and encoded again).
func encodePayload(c agent.TargetCall) []byte {
	b := make([]byte, 0, len(c.Input)+256)
	b = append(b, `{"effect_ref":`...)
	b = append(b, jsonString(c.EffectRef)...)
	b = append(b, `,"firm_id":`...)
	b = append(b, jsonString(c.FirmID)...)
	b = append(b, `,"run_id":`...)
	b = append(b, jsonString(c.RunID)...)
	b = append(b, `,"matter_id":`...)
	b = append(b, jsonString(c.MatterID)...)
	b = append(b, `,"tool":`...)
	b = append(b, jsonString(c.Tool)...)
	b = append(b, `,"input":`...)
	b = append(b, c.Input...)
	return append(b, '}')
}

// asJSON is a payload as one JSON value: itself when it is JSON, else its
// text as a JSON string (bytes that are not UTF-8 replaced).
func asJSON(payload []byte) json.RawMessage {
	if json.Valid(payload) {
		return bytes.TrimSpace(payload)
	}
	return jsonString(string(payload))
}

// errorContent is a function error as the result's content: its errorType
// and errorMessage (a stack trace is the function's insides, for its logs
// rather than a model), or the payload as it came when it is not Lambda's
// error document.
func errorContent(payload []byte) json.RawMessage {
	var doc struct {
		Type    *string `json:"errorType"`
		Message *string `json:"errorMessage"`
	}
	if json.Unmarshal(payload, &doc) != nil || (doc.Type == nil && doc.Message == nil) {
		return asJSON(payload)
	}
	b, _ := json.Marshal(struct {
		Type    string `json:"errorType"`
		Message string `json:"errorMessage"`
	}{aws.ToString(doc.Type), aws.ToString(doc.Message)})
	return b
}

// jsonString is s as a JSON string, <, > and & as they are.
func jsonString(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// checkCall refuses a call that could not be what counsel signed.
func checkCall(c agent.TargetCall) error {
	switch {
	case c.Tool == "":
		return errors.New("no tool name")
	case !json.Valid(c.Input) || !bytes.HasPrefix(bytes.TrimLeft(c.Input, " \t\r\n"), []byte("{")):
		return errors.New("the input is not a JSON object")
	}
	return nil
}
