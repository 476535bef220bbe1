package lambdatarget_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/internal/lambdalocal"
	"github.com/seed-f6d3920e/warrant/pkg/lambdatarget"
)

// The function receives exactly {"effect_ref","firm_id","run_id",
// "matter_id","tool","input"}, the input byte for byte as the call holds it
// (spacing, key order, escapes and numbers beyond a double's precision
// kept), whether it is named by ARN, qualified ARN or (on loopback) name.
func TestPayloadArrivesExactly(t *testing.T) {
	input := `{ "zeta": 1, "alpha" : "<&> \u00e9 é \ud83d\ude00", "n": 12345678901234567890123, "f": 1.50, "do": "echo", "say": "` + canary + `" }`
	l := startLocal(t, lambdalocal.Options{})
	for i, fn := range []string{arn(fnTool), arn(fnTool) + ":7", arn(fnTool) + ":live", arn(fnTool) + ":$LATEST", fnTool} {
		c := callFor(fmt.Sprintf("payload-%d", i), input)
		res, err := newTarget(t, l.URL(), fn).Call(context.Background(), c)
		if err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
		want := fmt.Sprintf(`{"effect_ref":%q,"firm_id":%q,"run_id":%q,"matter_id":%q,"tool":"file_motion","input":%s}`,
			c.EffectRef, c.FirmID, c.RunID, c.MatterID, input)
		if res.IsError || string(res.Content) != want {
			t.Fatalf("%s: the function received\n%s\nwant\n%s", fn, res.Content, want)
		}
		if n := l.runs(t, c.EffectRef); n != 1 {
			t.Fatalf("%s: ran %d times", fn, n)
		}
	}
}

// An answer that is not JSON comes back as a JSON string.
func TestAnswerNotJSONIsAString(t *testing.T) {
	l := startLocal(t, lambdalocal.Options{})
	res, err := newTarget(t, l.URL(), arn(fnTool)).Call(context.Background(), callFor("text", `{"do":"text"}`))
	if err != nil || res.IsError || string(res.Content) != `"plain text, not JSON"` {
		t.Fatalf("%s %v %v", res.Content, res.IsError, err)
	}
}

// The handler's own error is a tool error: a result with IsError, its type
// and message as content, no error from Call.
func TestFunctionErrorIsAToolError(t *testing.T) {
	l := startLocal(t, lambdalocal.Options{})
	res, err := newTarget(t, l.URL(), arn(fnTool)).Call(context.Background(),
		callFor("fail", `{"do":"fail","say":"no filing today `+canary+`"}`))
	if err != nil || !res.IsError {
		t.Fatalf("%s %v %v", res.Content, res.IsError, err)
	}
	if want := `{"errorType":"errorString","errorMessage":"no filing today ` + canary + `"}`; string(res.Content) != want {
		t.Fatalf("content %s, want %s", res.Content, want)
	}
}

// A function that outlives its timeout may have acted: outcome unknown.
func TestTimeoutIsOutcomeUnknown(t *testing.T) {
	l := startLocal(t, lambdalocal.Options{Timeout: time.Second})
	_, err := newTarget(t, l.URL(), arn(fnTool)).Call(context.Background(),
		callFor("slow", `{"do":"sleep","sleep_ms":3000,"say":"`+canary+`"}`))
	if !errors.Is(err, warrant.ErrTargetOutcomeUnknown) {
		t.Fatalf("%v, want outcome unknown", err)
	}
	noContent(t, err)
	if n := l.runs(t, "slow"); n != 1 {
		t.Fatalf("ran %d times, want once", n)
	}
}

// A process that dies mid-call (Runtime.ExitError) may have acted: outcome
// unknown, and the call is not made again.
func TestCrashIsOutcomeUnknown(t *testing.T) {
	l := startLocal(t, lambdalocal.Options{})
	_, err := newTarget(t, l.URL(), arn(fnTool)).Call(context.Background(), callFor("crash", `{"do":"exit","say":"`+canary+`"}`))
	if !errors.Is(err, warrant.ErrTargetOutcomeUnknown) {
		t.Fatalf("%v, want outcome unknown", err)
	}
	noContent(t, err)
	if n := l.runs(t, "crash"); n != 1 {
		t.Fatalf("ran %d times, want once", n)
	}
}

// always faults every request so.
func always(f lambdalocal.Fault) func(string, int) lambdalocal.Fault {
	return func(string, int) lambdalocal.Fault { return f }
}

// The function ran and its answer was lost: outcome unknown, and it ran
// exactly once, though the client was configured to retry five times (no
// SDK retry of an Invoke).
func TestAnswerDroppedAfterRun(t *testing.T) {
	l := startLocal(t, lambdalocal.Options{Fault: always(lambdalocal.DropAnswer)})
	_, err := newTarget(t, l.URL(), arn(fnTool)).Call(context.Background(), callFor("dropped", `{"say":"`+canary+`"}`))
	if !errors.Is(err, warrant.ErrTargetOutcomeUnknown) {
		t.Fatalf("%v, want outcome unknown", err)
	}
	noContent(t, err)
	if n := l.runs(t, "dropped"); n != 1 {
		t.Fatalf("ran %d times, want once", n)
	}
	if n := l.Requests(fnTool); n != 1 {
		t.Fatalf("%d requests, want one", n)
	}
}

// A throttled call did not run: the target tries it again and it runs once.
func TestThrottledThenRuns(t *testing.T) {
	l := startLocal(t, lambdalocal.Options{Fault: func(_ string, n int) lambdalocal.Fault {
		if n <= 2 {
			return lambdalocal.Throttle
		}
		return lambdalocal.NoFault
	}})
	res, err := newTarget(t, l.URL(), arn(fnTool)).Call(context.Background(), callFor("flaky", `{"do":"echo"}`))
	if err != nil || res.IsError {
		t.Fatalf("%s %v", res.Content, err)
	}
	if n := l.runs(t, "flaky"); n != 1 {
		t.Fatalf("ran %d times, want once", n)
	}
	if n := l.Requests(fnTool); n != 3 {
		t.Fatalf("%d requests, want two throttled and one run", n)
	}
}

// Throttled every time: unreachable after MaxAttempts, the function never
// run.
func TestThrottledAlwaysIsUnreachable(t *testing.T) {
	l := startLocal(t, lambdalocal.Options{Fault: always(lambdalocal.Throttle)})
	_, err := newTarget(t, l.URL(), arn(fnTool)).Call(context.Background(), callFor("throttled", `{"say":"`+canary+`"}`))
	if !errors.Is(err, warrant.ErrTargetUnreachable) || errors.Is(err, warrant.ErrTargetOutcomeUnknown) {
		t.Fatalf("%v, want unreachable", err)
	}
	noContent(t, err)
	if n := l.runs(t, "throttled"); n != 0 {
		t.Fatalf("ran %d times", n)
	}
	if n := l.Requests(fnTool); n != 3 {
		t.Fatalf("%d requests, want MaxAttempts (3)", n)
	}
}

// A 500 ServiceException is read the safe way, outcome unknown, and never
// tried again (here the function did not run; a caller of Lambda cannot
// know that).
func TestServiceErrorIsOutcomeUnknown(t *testing.T) {
	l := startLocal(t, lambdalocal.Options{Fault: always(lambdalocal.ServiceError)})
	_, err := newTarget(t, l.URL(), arn(fnTool)).Call(context.Background(), callFor("broken", `{}`))
	if !errors.Is(err, warrant.ErrTargetOutcomeUnknown) {
		t.Fatalf("%v, want outcome unknown", err)
	}
	if n := l.Requests(fnTool); n != 1 {
		t.Fatalf("%d requests, want one", n)
	}
}

// A function Lambda does not know is refused, not run, not tried again.
func TestUnknownFunctionIsUnreachable(t *testing.T) {
	l := startLocal(t, lambdalocal.Options{})
	_, err := newTarget(t, l.URL(), arn("nope")).Call(context.Background(), callFor("nope", `{}`))
	if !errors.Is(err, warrant.ErrTargetUnreachable) || errors.Is(err, warrant.ErrTargetOutcomeUnknown) {
		t.Fatalf("%v, want unreachable", err)
	}
}

// Nothing listening: the request never left, the call is unreachable.
func TestNothingListeningIsUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	_, err = newTarget(t, url, fnTool).Call(context.Background(), callFor("nobody", `{"say":"`+canary+`"}`))
	if !errors.Is(err, warrant.ErrTargetUnreachable) || errors.Is(err, warrant.ErrTargetOutcomeUnknown) {
		t.Fatalf("%v, want unreachable", err)
	}
	noContent(t, err)
}

// A deadline that passes after the request left leaves the outcome
// unknown, and the error carries the context's.
func TestDeadlineAfterSendIsOutcomeUnknown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	l := startLocal(t, lambdalocal.Options{})
	_, err := newTarget(t, l.URL(), arn(fnTool)).Call(ctx, callFor("late", `{"do":"sleep","sleep_ms":1500}`))
	if !errors.Is(err, warrant.ErrTargetOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v, want outcome unknown and the deadline", err)
	}
}

// 64 concurrent calls through one target: each answered with its own
// payload, each run once (the endpoint queues them for the emulator).
func TestConcurrentCalls(t *testing.T) {
	l := startLocal(t, lambdalocal.Options{})
	tg := newTarget(t, l.URL(), arn(fnTool))
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			c := callFor(fmt.Sprintf("concurrent-%02d", i), fmt.Sprintf(`{"do":"echo","i":%d}`, i))
			res, err := tg.Call(context.Background(), c)
			if err != nil {
				errs <- err
				return
			}
			var got struct {
				EffectRef string          `json:"effect_ref"`
				Input     json.RawMessage `json:"input"`
			}
			if err := json.Unmarshal(res.Content, &got); err != nil || got.EffectRef != c.EffectRef || string(got.Input) != string(c.Input) {
				errs <- fmt.Errorf("call %d answered %s", i, res.Content)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range n {
		if r := l.runs(t, fmt.Sprintf("concurrent-%02d", i)); r != 1 {
			t.Errorf("call %d ran %d times", i, r)
		}
	}
}

// expiring hands out credentials that have already expired, so the SDK's
// credentials cache must fetch new ones for every request; it counts the
// fetches and the keys it gave.
type expiring struct{ fetched atomic.Int64 }

func (e *expiring) Retrieve(context.Context) (aws.Credentials, error) {
	n := e.fetched.Add(1)
	return aws.Credentials{AccessKeyID: fmt.Sprintf("AKID%d", n), SecretAccessKey: "secret", CanExpire: true,
		Expires: time.Now().Add(-time.Minute)}, nil
}

// Issue 19: the function's credentials (the worker's role's, on AWS) are
// refreshed once they expire: each call after an expiry signs with newly
// fetched ones, and the call still runs once.
func TestCredentialsRefreshedOnExpiry(t *testing.T) {
	l := startLocal(t, lambdalocal.Options{})
	creds := &expiring{}
	tg, err := lambdatarget.New(lambdatarget.Config{Name: "firm-fns", Function: arn(fnTool), RetryDelay: time.Millisecond,
		Client: lambda.New(lambda.Options{Region: "us-east-1", BaseEndpoint: aws.String(l.URL()), Credentials: creds})})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		ref := fmt.Sprintf("0b1c2d3e-4f50-4617-8829-3a4b5c6d7e%02d", i)
		res, err := tg.Call(context.Background(), callFor(ref, `{"do":"echo"}`))
		if err != nil || res.IsError || l.runs(t, ref) != 1 {
			t.Fatalf("call %d: %s %v (runs %d)", i, res.Content, err, l.runs(t, ref))
		}
	}
	if got := creds.fetched.Load(); got < 3 {
		t.Fatalf("credentials fetched %d times for 3 calls, each after they expired", got)
	}
}
