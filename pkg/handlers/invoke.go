package handlers

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/config"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"
)

// InvokeBody is the body of POST /v1/runs. There is no firm, user or approval
// field: firm and user come from the JWT, and a new run carries no warrant
// (an approval_request_id or approval member is an unknown field: 400).
type InvokeBody struct {
	AgentKey       string                     `json:"agent_key"`
	MatterID       string                     `json:"matter_id"`
	History        []contracts.HistoryMessage `json:"history,omitempty"`
	CounselMessage string                     `json:"counsel_message,omitempty"`
	CorrelationID  string                     `json:"correlation_id,omitempty"`
	ChatSessionID  string                     `json:"chat_session_id,omitempty"`
	FormID         string                     `json:"form_id,omitempty"`
	CostCapUSD     string                     `json:"cost_cap_usd,omitempty"`
}

// Invoke handles POST /v1/runs: it mints the run, writes run.started and runs
// the brain in-process.
//
// Answers: 200 with the run view when the run completed or failed; 202 with the
// run view and its pending_approval (the warrant to sign) when it is held.
// Errors (problem+json): 400 invalid body, 401 missing or invalid claims,
// 413 body over 256 KiB, 422 unknown agent or model, 503 dependency throttled.
type Invoke struct {
	Brain  *agent.Brain
	Config config.Config
	HTTP   httpapi.Config
	Resp   httpapi.Responder
	NewID  func() string
}

// Handle is the Lambda handler.
func (h *Invoke) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	id := failure.Identity{CorrelationID: httpapi.CorrelationID(req)}
	p, err := h.HTTP.Principal(req)
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageAuthorize, id), nil
	}
	id.FirmID = p.FirmID
	var body InvokeBody
	if err := h.HTTP.DecodeBody(req, &body); err != nil {
		return h.Resp.Error(ctx, err, failure.StageRequest, id), nil
	}
	if body.CorrelationID != "" {
		if err := contracts.CheckUUID("correlation_id", body.CorrelationID); err != nil {
			return h.Resp.Error(ctx, failure.Wrap(failure.KindInvalidRequest, err.Error(), err), failure.StageRequest, id), nil
		}
		id.CorrelationID = body.CorrelationID
	}
	capUSD, err := h.Config.CostCap(body.CostCapUSD)
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageRequest, id), nil
	}
	newID := h.NewID
	if newID == nil {
		newID = uuid.NewString
	}
	inv := contracts.AgentInvoke{AgentKey: body.AgentKey, Mode: contracts.ModeInvoke,
		Meta: contracts.InvokeMeta{RunID: newID(), FirmID: p.FirmID, UserID: p.UserID, CorrelationID: id.CorrelationID,
			FormID: body.FormID, MatterID: body.MatterID, ChatSessionID: body.ChatSessionID},
		History: body.History, CounselMessage: body.CounselMessage}
	if inv.History == nil {
		inv.History = []contracts.HistoryMessage{}
	}
	id.RunID = inv.Meta.RunID
	if body.MatterID == "" {
		return h.Resp.Error(ctx, failure.New(failure.KindInvalidRequest, "field matter_id: required"), failure.StageRequest, id), nil
	}
	if err := inv.Validate(); err != nil {
		return h.Resp.Error(ctx, failure.Wrap(failure.KindInvalidRequest, bodyPath(err), err), failure.StageRequest, id), nil
	}
	// Only a validated matter id goes into the identity: envelopes log it
	// as-is, and an unchecked one is arbitrary client text.
	id.MatterID = inv.Meta.MatterID
	res, err := h.Brain.Run(ctx, inv, agent.StartOptions{CostCapUSD: capUSD})
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageInvoke, id), nil
	}
	return httpapi.JSON(statusFor(res.State), runView(res.State, res.Run), id.CorrelationID), nil
}

// bodyPath reports a validation error against the request body's own field
// names (the command nests ids under meta; the body does not).
func bodyPath(err error) string {
	fe, ok := err.(*contracts.FieldError)
	if !ok {
		return err.Error()
	}
	path := fe.Path
	if len(path) > 5 && path[:5] == "meta." {
		path = path[5:]
	}
	return (&contracts.FieldError{Path: path, Reason: fe.Reason}).Error()
}
