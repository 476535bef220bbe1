package handlers_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// continuerFunc is the worker's brain made of a function.
type continuerFunc func(ctx context.Context, firm, run, correlationID string) (agent.Result, error)

func (f continuerFunc) Continue(ctx context.Context, firm, run, correlationID string) (agent.Result, error) {
	return f(ctx, firm, run, correlationID)
}

// A worker whose invocation had too little time left for the run's next
// effect (the brain handed the run over) sends the run back to the queue,
// reason continued, and acknowledges its own message.
func TestWorkerHandsOverThroughTheQueue(t *testing.T) {
	q := &memQueue{}
	w := &handlers.Worker{Queue: q, Logger: failure.NewLogger(nil),
		Brain: continuerFunc(func(context.Context, string, string, string) (agent.Result, error) {
			return agent.Result{HandedOver: true}, nil
		})}
	body := `{"schema_version":"1","firm_id":"` + fixFirm + `","run_id":"` + fixRun + `","reason":"started","correlation_id":"` + fixRun + `"}`
	out, err := w.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-1", Body: body}}})
	if err != nil || len(out.BatchItemFailures) != 0 {
		t.Fatalf("handle: %+v %v", out, err)
	}
	msgs := q.take()
	if len(msgs) != 1 || msgs[0].Reason != contracts.ReasonContinued || msgs[0].RunID != fixRun || msgs[0].FirmID != fixFirm || msgs[0].Validate() != nil {
		t.Fatalf("queued %+v", msgs)
	}
}
