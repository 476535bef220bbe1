package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"

	"github.com/seed-f6d3920e/warrant"
)

// apiDecisions maps the API's words to the domain's decisions; nothing past
// this edge sees "approve" or "deny".
var apiDecisions = map[string]warrant.Decision{"approve": warrant.DecisionApproved, "deny": warrant.DecisionDenied}

// ApproveBody is counsel's decision, with the tool_input_hash counsel was shown.
type ApproveBody struct {
	Decision      string `json:"decision"` // "approve" or "deny"
	ToolInputHash string `json:"tool_input_hash"`
	Note          string `json:"note,omitempty"`
	// EditedInput is counsel's edit of the call (approve only): the warrant
	// then covers this call instead of the requested one.
	EditedInput json.RawMessage `json:"edited_input,omitempty"`
}

// Approve handles POST /v1/runs/{run_id}/approvals/{approval_id}: a user with
// role counsel in the run's firm signs (approve) or declines (deny) a pending
// warrant. The warrant is looked up by the caller's firm, so another firm's
// warrant is simply not found.
//
// Answers: 200 with the warrant view. Errors (problem+json): 400 invalid body or
// path (an edited_input that is not canonical JSON, equals the request, fails
// the tool's schema or comes with a denial), 401 missing claims, 403 not
// counsel (forbidden) or the counsel who started the run under the firm's
// separation of duties (self_approval), 404 no such run or warrant in this
// firm, 409 not pending or hash mismatch, 410 expired, 413 the body over
// 256 KiB or a note too long to record beside a big input (payload_too_large,
// naming the field), 422 the risk policy denies the edited call
// (policy_denied).
//
// The same function serves counsel's other record, the reconciliation of an
// effect whose outcome was lost with its worker (see reconcile).
type Approve struct {
	Decider    agent.Decider
	Reconciler agent.Reconciler
	// Matters is the firm's matter registry (PUT /v1/matters/{matter_id}).
	Matters MattersStore
	// Holds places and lifts matters' legal holds and records destruction
	// orders; Shred carries a confirmed order out (nil: those routes are
	// not served here).
	Holds HoldStore
	Shred OrderCarrier
	// Settings keeps the firms' settings (PUT /v1/settings; nil: not
	// served here).
	Settings SettingsStore
	// Tools lists the tools' input schemas (GET /v1/tools), which counsel's
	// editor is built from: the brain that checks counsel's edits.
	Tools ToolLister
	HTTP  httpapi.Config
	Resp  httpapi.Responder
}

// ToolLister lists the tools' schemas (*agent.Brain).
type ToolLister interface {
	ToolSchemas() []agent.ToolSchema
}

// ListToolsRoute lists the tools and their input schemas, for the desk's
// editor; any user of the firm may read it (the catalog holds no firm data).
const ListToolsRoute = "GET /v1/tools"

// ReconcileRoute is the route of counsel's reconciliation.
const ReconcileRoute = "POST /v1/runs/{run_id}/effects/{effect_ref}/reconcile"

// Handle is the Lambda handler.
func (h *Approve) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	id := failure.Identity{CorrelationID: httpapi.CorrelationID(req)}
	p, err := h.HTTP.Principal(req)
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageAuthorize, id), nil
	}
	id.FirmID = p.FirmID
	if req.RouteKey == ListToolsRoute {
		if err := httpapi.RejectUnknownQuery(req); err != nil {
			return h.Resp.Error(ctx, err, failure.StageRequest, id), nil
		}
		out := struct {
			Tools []agent.ToolSchema `json:"tools"`
		}{Tools: []agent.ToolSchema{}}
		if h.Tools != nil {
			out.Tools = append(out.Tools, h.Tools.ToolSchemas()...)
		}
		return httpapi.JSON(200, out, id.CorrelationID), nil
	}
	var matterRoute func() (events.APIGatewayV2HTTPResponse, error)
	switch req.RouteKey {
	case PutMatterRoute:
		matterRoute = func() (events.APIGatewayV2HTTPResponse, error) { return putMatter(ctx, h.Matters, h.HTTP, req, p, &id) }
	case PutSettingsRoute:
		if h.Settings == nil {
			return h.Resp.Error(ctx, failure.New(failure.KindNotFound, "no such route"), failure.StageRequest, id), nil
		}
		matterRoute = func() (events.APIGatewayV2HTTPResponse, error) {
			return putSettings(ctx, h.Settings, h.HTTP, req, p, &id)
		}
	case PutHoldRoute, DeleteHoldRoute, DestroyRoute:
		if h.Holds == nil || h.Shred == nil {
			return h.Resp.Error(ctx, failure.New(failure.KindNotFound, "no such route"), failure.StageRequest, id), nil
		}
		matterRoute = func() (events.APIGatewayV2HTTPResponse, error) {
			switch req.RouteKey {
			case PutHoldRoute:
				return putHold(ctx, h.Holds, h.HTTP, req, p, &id)
			case DeleteHoldRoute:
				return deleteHold(ctx, h.Holds, h.HTTP, req, p, &id)
			}
			return destroy(ctx, h.Holds, h.Shred, h.HTTP, req, p, &id)
		}
	}
	if matterRoute != nil {
		resp, err := matterRoute()
		if err != nil {
			stage := failure.StageLedgerWrite
			switch {
			case errors.Is(err, errNotMatterKeeper), errors.Is(err, errNotFirmAdmin):
				stage = failure.StageAuthorize
			case errors.As(err, new(*requestError)):
				stage = failure.StageRequest
			}
			return h.Resp.Error(ctx, err, stage, id), nil
		}
		return resp, nil
	}
	if !p.IsCounsel() {
		return h.Resp.Error(ctx, failure.New(failure.KindForbidden, "only counsel may decide a warrant or reconcile an effect"), failure.StageAuthorize, id), nil
	}
	if req.RouteKey == ReconcileRoute {
		return h.reconcile(ctx, req, p, id), nil
	}
	runID, err := httpapi.PathUUID(req, "run_id")
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageRequest, id), nil
	}
	id.RunID = runID
	approvalID, err := httpapi.PathUUID(req, "approval_id")
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageRequest, id), nil
	}
	var body ApproveBody
	if err := h.HTTP.DecodeBody(req, &body); err != nil {
		return h.Resp.Error(ctx, err, failure.StageRequest, id), nil
	}
	decision, ok := apiDecisions[body.Decision]
	if !ok {
		return h.Resp.Error(ctx, failure.New(failure.KindInvalidRequest, "field decision: must be one of [approve deny]"), failure.StageRequest, id), nil
	}
	if utf8.RuneCountInString(body.Note) > 2000 { // the limit is characters, not bytes
		return h.Resp.Error(ctx, failure.New(failure.KindInvalidRequest, "field note: at most 2000 characters"), failure.StageRequest, id), nil
	}
	w, err := h.Decider.Decide(ctx, p.FirmID, runID, approvalID,
		warrant.CounselDecision{Decision: decision, PresentedHash: body.ToolInputHash, DecidedBy: p.UserID, Note: body.Note,
			DecidedAs: contracts.RoleCounsel, DecidedByName: p.Name, EditedInput: body.EditedInput})
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageApproval, id), nil
	}
	return httpapi.JSON(200, warrantView(w), id.CorrelationID), nil
}
