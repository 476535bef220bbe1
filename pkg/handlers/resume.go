package handlers

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"
)

// Runner is the brain as the invoke and resume handlers use it
// (*agent.Brain): it records; the worker runs.
type Runner interface {
	Start(ctx context.Context, inv contracts.AgentInvoke, opts agent.StartOptions) (agent.Result, error)
	PrepareResume(ctx context.Context, r agent.ResumeRequest) (agent.Result, error)
	// DefaultCostCap is an agent's own default cost cap ("": none).
	DefaultCostCap(agentKey string) string
}

// ResumeBody names the warrant; nothing else is accepted.
type ResumeBody struct {
	ApprovalRequestID string `json:"approval_request_id"`
}

// Resume handles POST /v1/runs/{run_id}/resume: it releases a held run under
// its decided warrant and hands it to the worker, which executes exactly the
// warranted call. The release is one transaction (the effect reserved or,
// declined, claimed declined; the warrant burned; the run running again), so
// of any number of concurrent or replayed resumes exactly one is accepted.
//
// Answers: 202 Accepted with the run view (running) and a Location header
// naming GET /v1/runs/{run_id}. Errors (problem+json): 400 invalid body or
// path, 401 missing claims, 404 no such run or warrant in this firm (another
// firm's ids included), 409 warrant pending or already consumed, run not held
// on it, 410 warrant expired.
type Resume struct {
	Brain Runner
	Queue Enqueuer
	HTTP  httpapi.Config
	Resp  httpapi.Responder
}

// Handle is the Lambda handler.
func (h *Resume) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	id := failure.Identity{CorrelationID: httpapi.CorrelationID(req)}
	p, err := h.HTTP.Principal(req)
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageAuthorize, id), nil
	}
	id.FirmID = p.FirmID
	runID, err := httpapi.PathUUID(req, "run_id")
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageRequest, id), nil
	}
	id.RunID = runID
	var body ResumeBody
	if err := h.HTTP.DecodeBody(req, &body); err != nil {
		return h.Resp.Error(ctx, err, failure.StageRequest, id), nil
	}
	if err := contracts.CheckUUID("approval_request_id", body.ApprovalRequestID); err != nil {
		return h.Resp.Error(ctx, failure.Wrap(failure.KindInvalidRequest, err.Error(), err), failure.StageRequest, id), nil
	}
	res, err := h.Brain.PrepareResume(ctx, agent.ResumeRequest{FirmID: p.FirmID, RunID: runID, ApprovalID: body.ApprovalRequestID,
		UserID: p.UserID, CorrelationID: id.CorrelationID})
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageResume, id), nil
	}
	handOver(ctx, h.Queue, h.Resp, contracts.WorkerMessage{Reason: contracts.ReasonResumed, ApprovalRequestID: body.ApprovalRequestID}, id)
	return accepted(res.State, res.Run, runLocation(req.RawPath, "/resume", runID), id.CorrelationID), nil
}
