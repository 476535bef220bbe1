package lambdalocal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/seed-f6d3920e/warrant/internal/lambdalocal"
)

// toolfn is the test function (testdata/toolfn).
const toolfn = "github.com/seed-f6d3920e/warrant/internal/lambdalocal/testdata/toolfn"

// start serves toolfn as "tool" (its effects counted in a file of its own)
// and stops it when the test ends.
func start(t *testing.T, opts lambdalocal.Options) (*lambdalocal.Endpoint, *effects) {
	t.Helper()
	fx := &effects{path: filepath.Join(t.TempDir(), "effects")}
	if opts.Functions == nil {
		opts.Functions = map[string]string{"tool": toolfn}
	}
	opts.Env = append(opts.Env, "TOOLFN_EFFECTS="+fx.path)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ep, err := lambdalocal.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ep.Stop(); err != nil {
			t.Error(err)
		}
	})
	return ep, fx
}

// effects reads the effect_refs the function recorded, one a line.
type effects struct{ path string }

func (f *effects) list(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// client is an SDK client for ep that never retries, so each Invoke is one
// request.
func client(ep *lambdalocal.Endpoint) *lambda.Client {
	return lambda.New(lambda.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(ep.URL()),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		Retryer:      aws.NopRetryer{},
	})
}

func invoke(t *testing.T, c *lambda.Client, function, payload string) (*lambda.InvokeOutput, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return c.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(function), Payload: []byte(payload)})
}

func call(ref, input string) string {
	return fmt.Sprintf(`{"effect_ref":%q,"tool":"t","input":%s}`, ref, input)
}

// errorDoc decodes a function error's payload.
func errorDoc(t *testing.T, out *lambda.InvokeOutput) (typ, msg string) {
	t.Helper()
	var d struct{ ErrorType, ErrorMessage string }
	if err := json.Unmarshal(out.Payload, &d); err != nil {
		t.Fatalf("function error payload %q: %v", out.Payload, err)
	}
	return d.ErrorType, d.ErrorMessage
}

// The endpoint answers as Lambda does: by any form of the function's name,
// a function's own error and a crash as function errors, an unknown
// function and a payload that is not JSON as API errors.
func TestInvokeAnswersAsLambda(t *testing.T) {
	ep, fx := start(t, lambdalocal.Options{})
	c := client(ep)
	for i, name := range []string{
		"tool",
		"tool:live",
		"123456789012:function:tool",
		"arn:aws:lambda:us-east-1:123456789012:function:tool",
		"arn:aws:lambda:us-east-1:123456789012:function:tool:7",
	} {
		p := call(fmt.Sprintf("echo-%d", i), `{"do":"echo","text":"<&>  spaced"}`)
		out, err := invoke(t, c, name, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(out.Payload) != p || out.FunctionError != nil || out.StatusCode != 200 || aws.ToString(out.ExecutedVersion) != "$LATEST" {
			t.Fatalf("%s: payload %q function error %v status %d version %q", name, out.Payload, out.FunctionError, out.StatusCode, aws.ToString(out.ExecutedVersion))
		}
	}

	out, err := invoke(t, c, "tool", call("fail", `{"do":"fail","say":"no such matter"}`))
	if err != nil || aws.ToString(out.FunctionError) != "Unhandled" {
		t.Fatalf("fail: %v, function error %v", err, out.FunctionError)
	}
	if typ, msg := errorDoc(t, out); typ != "errorString" || msg != "no such matter" {
		t.Fatalf("fail: %q %q", typ, msg)
	}

	out, err = invoke(t, c, "tool", call("exit", `{"do":"exit"}`))
	if err != nil || aws.ToString(out.FunctionError) != "Unhandled" {
		t.Fatalf("exit: %v, function error %v", err, out.FunctionError)
	}
	if typ, _ := errorDoc(t, out); typ != "Runtime.ExitError" {
		t.Fatalf("exit: errorType %q", typ)
	}
	if out, err := invoke(t, c, "tool", call("after-exit", `{}`)); err != nil || out.FunctionError != nil {
		t.Fatalf("after a crash the function runs again: %v %v", err, out)
	}

	var nf *types.ResourceNotFoundException
	if _, err := invoke(t, c, "arn:aws:lambda:us-east-1:123456789012:function:nope", call("nope", `{}`)); !errors.As(err, &nf) {
		t.Fatalf("unknown function: %v", err)
	}
	var bad *types.InvalidRequestContentException
	if _, err := invoke(t, c, "tool", `{"effect_ref":`); !errors.As(err, &bad) {
		t.Fatalf("a payload that is not JSON: %v", err)
	}

	want := []string{"echo-0", "echo-1", "echo-2", "echo-3", "echo-4", "fail", "exit", "after-exit"}
	if got := fx.list(t); !slices.Equal(got, want) {
		t.Fatalf("the function ran %v, want %v", got, want)
	}
	if n := ep.Requests("tool"); n != len(want) {
		t.Fatalf("Requests = %d, want %d", n, len(want))
	}
}

// An invocation that outlives the function's timeout is Lambda's
// Sandbox.Timedout function error, not a payload, and the function serves
// the next call.
func TestTimeoutIsAFunctionError(t *testing.T) {
	ep, _ := start(t, lambdalocal.Options{Timeout: time.Second})
	c := client(ep)
	out, err := invoke(t, c, "tool", call("slow", `{"do":"sleep","sleep_ms":3000}`))
	if err != nil || aws.ToString(out.FunctionError) != "Unhandled" {
		t.Fatalf("%v, function error %v, payload %q", err, out.FunctionError, out.Payload)
	}
	if typ, msg := errorDoc(t, out); typ != "Sandbox.Timedout" || !strings.Contains(msg, "Task timed out after") {
		t.Fatalf("%q %q", typ, msg)
	}
	if out, err := invoke(t, c, "tool", call("next", `{}`)); err != nil || out.FunctionError != nil {
		t.Fatalf("after a timeout the function runs again: %v %v", err, out)
	}
}

// Faults: a throttle and a service error answer without calling the
// function; a dropped answer comes after the function ran.
func TestFaults(t *testing.T) {
	faults := []lambdalocal.Fault{lambdalocal.Throttle, lambdalocal.ServiceError, lambdalocal.DropAnswer, lambdalocal.NoFault}
	var mu sync.Mutex
	var asked []string
	ep, fx := start(t, lambdalocal.Options{Fault: func(function string, n int) lambdalocal.Fault {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, fmt.Sprintf("%s#%d", function, n))
		return faults[n-1]
	}})
	c := client(ep)

	var throttled *types.TooManyRequestsException
	if _, err := invoke(t, c, "tool", call("r1", `{}`)); !errors.As(err, &throttled) {
		t.Fatalf("throttle: %v", err)
	}
	var service *types.ServiceException
	if _, err := invoke(t, c, "tool", call("r2", `{}`)); !errors.As(err, &service) {
		t.Fatalf("service error: %v", err)
	}
	if got := fx.list(t); len(got) != 0 {
		t.Fatalf("the function ran on a throttle or a service error: %v", got)
	}
	if out, err := invoke(t, c, "tool", call("r3", `{}`)); err == nil {
		t.Fatalf("a dropped answer answered: %q", out.Payload)
	}
	if got := fx.list(t); !slices.Equal(got, []string{"r3"}) {
		t.Fatalf("the dropped call ran %v, want once", got)
	}
	if _, err := invoke(t, c, "tool", call("r4", `{}`)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(asked, []string{"tool#1", "tool#2", "tool#3", "tool#4"}) {
		t.Fatalf("Fault was asked %v", asked)
	}
}

// Concurrent calls are queued: the emulator, which crashes on two at once,
// sees one at a time, and every caller gets its own answer.
func TestConcurrentCallsAreQueued(t *testing.T) {
	ep, fx := start(t, lambdalocal.Options{})
	c := client(ep)
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			p := call(fmt.Sprintf("q%02d", i), `{}`)
			out, err := invoke(t, c, "tool", p)
			if err == nil && string(out.Payload) != p {
				err = fmt.Errorf("call %d answered %q", i, out.Payload)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := fx.list(t); len(got) != n {
		t.Fatalf("%d runs, want %d", len(got), n)
	}
}
