package handlers_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// TestWaitEndsBeforeTheInvocationsDeadline: a long poll of a run that keeps
// running, in an invocation with less time left than ?wait asks for (the
// runs function's timeout is shorter than 20 s plus the read after it, or
// the invocation started late), stops waiting early enough to read the
// ledger and answer: 200 with the consistent view of the running run, read
// before the deadline. Before, it waited until the context was cancelled,
// and the read after it failed (on AWS: "Task timed out").
func TestWaitEndsBeforeTheInvocationsDeadline(t *testing.T) {
	s := newStack(t, stackOptions{})
	resp := s.post(fixture(t, "invoke.json"))
	runID := decode[handlers.RunView](t, resp).RunID // nobody drains the queue: it keeps running
	// With more time left than WaitMargin it waits what it can; with less,
	// it does not wait at all.
	for _, left := range []time.Duration{handlers.WaitMargin + time.Second, handlers.WaitMargin / 2} {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(left))
		payload := fixture(t, "get-run.json").runPath(runID, "").query(map[string]string{"wait": "20"}).bytes(t)
		out, err := lambda.NewHandler(s.runs.Handle).Invoke(ctx, payload)
		if err != nil {
			t.Fatalf("runs: %v", err)
		}
		if ctx.Err() != nil {
			t.Fatalf("%s left: the handler answered after its invocation's deadline", left)
		}
		cancel()
		var got events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		v := decode[handlers.RunView](t, got)
		if got.StatusCode != 200 || v.Status != "running" || v.Ledger == nil || !v.Ledger.Verified {
			t.Fatalf("wait=20 with %s left: %d %s", left, got.StatusCode, got.Body)
		}
	}
}
