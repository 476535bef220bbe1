package handlers

import (
	"context"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"

	"github.com/seed-f6d3920e/warrant"
)

// Enqueuer hands a recorded run to the worker (pkg/sqs's Queue).
type Enqueuer interface {
	Enqueue(ctx context.Context, m contracts.WorkerMessage) error
}

// handOver sends the worker message for the run id names. The run is
// already recorded, waiting for a worker until its pickup deadline, so a
// queue that refuses the message does not lose the run: the sweeper hands
// it over once that deadline passed. The failure is logged (an operator
// sees the queue is down) and the request is still accepted.
func handOver(ctx context.Context, q Enqueuer, resp httpapi.Responder, m contracts.WorkerMessage, id failure.Identity) {
	m.SchemaVersion, m.FirmID, m.RunID, m.CorrelationID = contracts.SchemaVersion, id.FirmID, id.RunID, id.CorrelationID
	var err error = failure.New(failure.KindInternal, "no worker queue is configured")
	if q != nil {
		err = q.Enqueue(ctx, m)
	}
	if err != nil && resp.Logger != nil {
		resp.Logger.Log(ctx, failure.Build(err, failure.StageHandOver, resp.Component, id))
	}
}

// accepted is the answer of a request that recorded a run's next step for
// the worker: 202 with the run view and the Location of the run.
func accepted(st reducer.RunState, run warrant.Run, location, correlationID string) events.APIGatewayV2HTTPResponse {
	resp := httpapi.JSON(202, runView(st, run), correlationID)
	if resp.StatusCode == 202 {
		resp.Headers["Location"] = location
	}
	return resp
}

// runLocation is the path of GET /v1/runs/{run_id} as the client reached
// this API: the request's own path (which carries any stage prefix) with
// suffix cut off, or, for POST /v1/runs, with the run id appended.
func runLocation(rawPath, suffix, runID string) string {
	switch {
	case suffix != "" && strings.HasSuffix(rawPath, suffix):
		return strings.TrimSuffix(rawPath, suffix)
	case suffix == "" && strings.HasSuffix(rawPath, "/v1/runs"):
		return rawPath + "/" + runID
	}
	return "/v1/runs/" + runID
}
