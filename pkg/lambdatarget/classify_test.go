package lambdatarget_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant"
)

// fakeLambda answers every Invoke with one status, error code (in
// X-Amzn-ErrorType, as Lambda sends it), function error header and body,
// and counts the requests.
func fakeLambda(t *testing.T, status int, code, functionError, body string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if code != "" {
			w.Header().Set("X-Amzn-ErrorType", code)
		}
		if functionError != "" {
			w.Header().Set("X-Amz-Function-Error", functionError)
		}
		if status >= 300 && status < 400 {
			w.Header().Set("Location", "http://127.0.0.1:1/elsewhere")
		}
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// Each answer Lambda may give is read as classify.go's table says, tried
// again only when it did not run, and no error text holds what Lambda or
// the function said.
func TestClassification(t *testing.T) {
	apiBody := `{"Type":"User","message":"Could not parse payload into json: ` + canary + `"}`
	const (
		ok          = "ok"
		toolError   = "tool error"
		unreachable = "unreachable"
		unknown     = "unknown"
	)
	for _, tc := range []struct {
		name          string
		status        int
		code, fnError string
		body          string
		want          string
		requests      int64
	}{
		{"answer", 200, "", "", `{"filed":true,"note":"` + canary + `"}`, ok, 1},
		{"handler error", 200, "", "Unhandled", `{"errorType":"ValidationError","errorMessage":"` + canary + `"}`, toolError, 1},
		{"handled error", 200, "", "Handled", `{"errorMessage":"` + canary + `"}`, toolError, 1},
		{"timeout", 200, "", "Unhandled", `{"errorType":"Sandbox.Timedout","errorMessage":"RequestId: x Error: Task timed out after 3.00 seconds ` + canary + `"}`, unknown, 1},
		{"timeout without a type", 200, "", "Unhandled", `{"errorMessage":"2026-01-01T00:00:00.000Z x Task timed out after 3.00 seconds"}`, unknown, 1},
		{"process exited", 200, "", "Unhandled", `{"errorType":"Runtime.ExitError","errorMessage":"` + canary + `"}`, unknown, 1},
		{"out of memory", 200, "", "Unhandled", `{"errorType":"Runtime.OutOfMemory","errorMessage":"` + canary + `"}`, unknown, 1},
		{"answer too large", 200, "", "Unhandled", `{"errorType":"Function.ResponseSizeTooLarge","errorMessage":"` + canary + `"}`, unknown, 1},
		{"extension crashed", 200, "", "Unhandled", `{"errorType":"Extension.Crash","errorMessage":"` + canary + `"}`, unknown, 1},
		{"throttled", 429, "TooManyRequestsException", "", apiBody, unreachable, 3},
		{"throttling", 400, "ThrottlingException", "", apiBody, unreachable, 3},
		{"bad payload", 400, "InvalidRequestContentException", "", apiBody, unreachable, 1},
		{"not found", 404, "ResourceNotFoundException", "", apiBody, unreachable, 1},
		{"not authorized", 403, "AccessDeniedException", "", apiBody, unreachable, 1},
		{"too large", 413, "RequestTooLargeException", "", apiBody, unreachable, 1},
		{"kms", 502, "KMSAccessDeniedException", "", apiBody, unreachable, 1},
		{"eni", 502, "ENILimitReachedException", "", apiBody, unreachable, 1},
		{"inactive", 502, "ResourceNotReadyException", "", apiBody, unreachable, 1},
		{"service", 500, "ServiceException", "", apiBody, unknown, 1},
		{"efs io while running", 410, "EFSIOException", "", apiBody, unknown, 1},
		{"aborted", 400, "RequestAbortedException", "", apiBody, unknown, 1},
		{"unlisted code", 400, "SomeNewException", "", apiBody, unknown, 1},
		{"no code", 403, "", "", `<html>` + canary + `</html>`, unknown, 1},
		{"gateway", 503, "", "", canary, unknown, 1},
		{"redirect", 307, "", "", "", unreachable, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, n := fakeLambda(t, tc.status, tc.code, tc.fnError, tc.body)
			res, err := newTarget(t, srv.URL, arn(fnTool)).Call(context.Background(), callFor("ref", `{"say":"`+canary+`"}`))
			got := ok
			switch {
			case errors.Is(err, warrant.ErrTargetUnreachable) && !errors.Is(err, warrant.ErrTargetOutcomeUnknown):
				got = unreachable
			case errors.Is(err, warrant.ErrTargetOutcomeUnknown) && !errors.Is(err, warrant.ErrTargetUnreachable):
				got = unknown
			case err != nil:
				t.Fatalf("an error of no class, or of both: %v", err)
			case res.IsError:
				got = toolError
			}
			if got != tc.want {
				t.Fatalf("read as %s (%v, %s), want %s", got, err, res.Content, tc.want)
			}
			if tc.want == ok && string(res.Content) != tc.body {
				t.Fatalf("content %s", res.Content)
			}
			if r := n.Load(); r != tc.requests {
				t.Fatalf("%d requests, want %d", r, tc.requests)
			}
			noContent(t, err)
		})
	}
}

// A throttle whose Retry-After outlasts the context is not waited for: the
// call ends unreachable at once, after one request.
func TestRetryAfterBeyondTheContext(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("X-Amzn-ErrorType", "TooManyRequestsException")
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"Type":"User","message":"Rate Exceeded."}`))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := newTarget(t, srv.URL, arn(fnTool)).Call(ctx, callFor("ref", `{}`))
	if !errors.Is(err, warrant.ErrTargetUnreachable) || ctx.Err() != nil || n.Load() != 1 {
		t.Fatalf("%v (context: %v, %d requests)", err, ctx.Err(), n.Load())
	}
}

// The handler's error content keeps its type and message and drops its
// stack trace.
func TestToolErrorContent(t *testing.T) {
	srv, _ := fakeLambda(t, 200, "", "Unhandled", `{"errorMessage":"no","errorType":"Refused","stackTrace":["main.go:1"]}`)
	res, err := newTarget(t, srv.URL, arn(fnTool)).Call(context.Background(), callFor("ref", `{}`))
	if err != nil || !res.IsError || string(res.Content) != `{"errorType":"Refused","errorMessage":"no"}` {
		t.Fatalf("%s %v %v", res.Content, res.IsError, err)
	}
}

// A call that could not be what counsel signed is refused before anything
// is sent.
func TestInvalidCall(t *testing.T) {
	srv, n := fakeLambda(t, 200, "", "", `{}`)
	tg := newTarget(t, srv.URL, arn(fnTool))
	for _, c := range []struct{ tool, input string }{{"", `{}`}, {"t", `[1]`}, {"t", `{"a":`}, {"t", ``}} {
		call := callFor("ref", c.input)
		call.Tool = c.tool
		if _, err := tg.Call(context.Background(), call); !errors.Is(err, warrant.ErrTargetUnreachable) {
			t.Fatalf("%+v: %v", c, err)
		}
	}
	if n.Load() != 0 {
		t.Fatal("an invalid call was sent")
	}
}
