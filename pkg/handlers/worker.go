package handlers

import (
	"context"
	"errors"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"

	"github.com/seed-f6d3920e/warrant"
)

// Continuer is the brain as the worker uses it (*agent.Brain).
type Continuer interface {
	Continue(ctx context.Context, firm, run, correlationID string) (agent.Result, error)
}

// Worker handles the worker queue (SQS, batch size 1,
// ReportBatchItemFailures): each message says "continue this run", and the
// brain carries the run on from exactly where its ledger stands until it
// completes, fails or holds on a warrant.
//
// Every message may arrive more than once. A second delivery of a step that
// was done finds the run held or finished and does nothing; one that arrives
// while another worker holds the run's lease does nothing either (that
// worker's lease, or the sweeper after it passed, settles the run). An
// executed effect is never executed again: the brain answers it from its
// claim, or fails the run with effect_outcome_unknown.
//
// A message is reported failed (SQS redelivers it after the queue's
// visibility timeout, then moves it to the dead-letter queue) when it does
// not decode, and when the brain could not reach its dependencies; every
// other outcome is recorded in the run's ledger, and the message is done.
// A run whose step met a store or model fault that outlasted the clients'
// retries is not failed: the brain gives it back, still running, with a
// backoff, and the sweeper hands it to a new worker (a restart) once that
// passed; SQS redelivers nothing.
type Worker struct {
	Brain  Continuer
	Logger *failure.Logger
	// Queue takes the message of a run this invocation handed over (too
	// close to its deadline for the run's next effect).
	Queue Enqueuer
}

// Handle is the Lambda handler.
func (h *Worker) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var out events.SQSEventResponse
	for _, rec := range ev.Records {
		if !h.one(ctx, rec) {
			out.BatchItemFailures = append(out.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
		}
	}
	return out, nil
}

// one handles a message; false asks SQS to deliver it again.
func (h *Worker) one(ctx context.Context, rec events.SQSMessage) bool {
	m, err := contracts.DecodeWorkerMessage([]byte(rec.Body))
	if err != nil {
		// Not a message this service sent: kept for an operator (the DLQ).
		h.log(ctx, failure.Wrap(failure.KindInvalidRequest, "the worker message does not decode", err), failure.Identity{})
		return false
	}
	id := failure.Identity{FirmID: m.FirmID, RunID: m.RunID, CorrelationID: m.CorrelationID}
	res, err := h.Brain.Continue(ctx, m.FirmID, m.RunID, m.CorrelationID)
	if err == nil && res.HandedOver {
		// Recorded (the run waits for a worker with a pickup lease), then
		// handed over; if the send fails, the sweeper restarts the run
		// once the pickup lease passed.
		handOver(ctx, h.Queue, httpapi.Responder{Logger: h.Logger, Component: "worker"}, contracts.WorkerMessage{Reason: contracts.ReasonContinued}, id)
	}
	switch {
	case err == nil, errors.Is(err, warrant.ErrLeaseHeld):
		return true
	case errors.Is(err, warrant.ErrNotFound):
		h.log(ctx, err, id)
		return true
	}
	h.log(ctx, err, id)
	_, retryable, _ := failure.Classify(err)
	return !retryable
}

func (h *Worker) log(ctx context.Context, err error, id failure.Identity) {
	if h.Logger != nil {
		h.Logger.Log(ctx, failure.Build(err, failure.StageHandOver, "worker", id))
	}
}
