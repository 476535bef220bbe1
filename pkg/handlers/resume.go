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
// (*agent.Brain).
type Runner interface {
	Run(ctx context.Context, inv contracts.AgentInvoke, opts agent.StartOptions) (agent.Result, error)
	Resume(ctx context.Context, r agent.ResumeRequest) (agent.Result, error)
}

// ResumeBody names the warrant; nothing else is accepted.
type ResumeBody struct {
	ApprovalRequestID string `json:"approval_request_id"`
}

// Resume handles POST /v1/runs/{run_id}/resume: it continues a held run under
// its decided warrant. Exactly one of any number of concurrent or replayed
// resumes executes the warranted effect.
//
// Answers: 200 with the run view (completed or failed), 202 when the run is held
// again on a new warrant. Errors (problem+json): 400 invalid body or path, 401
// missing claims, 404 no such run or warrant in this firm (another firm's ids
// included), 409 warrant pending or already consumed, run not held on it,
// 410 warrant expired.
type Resume struct {
	Brain Runner
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
	res, err := h.Brain.Resume(ctx, agent.ResumeRequest{FirmID: p.FirmID, RunID: runID, ApprovalID: body.ApprovalRequestID,
		UserID: p.UserID, CorrelationID: id.CorrelationID})
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageResume, id), nil
	}
	return httpapi.JSON(statusFor(res.State), runView(res.State, res.Run), id.CorrelationID), nil
}
