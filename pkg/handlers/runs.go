package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"

	"github.com/seed-f6d3920e/warrant"
)

// RunsStore is the read-only part of the store the runs routes use.
type RunsStore interface {
	reducer.Source
	GetRun(ctx context.Context, firm, run string) (warrant.Run, error)
	ListPendingWarrants(ctx context.Context, firm string, limit int) ([]warrant.Warrant, error)
}

// Runs handles the read-only routes, all scoped by the caller's firm:
//
//	GET /v1/runs/{run_id}[?consistent=true]     the run view: the stream projection, or a fold of the ledger
//	GET /v1/runs/{run_id}/events[?after_seq=N&limit=M]  ledger lines as NDJSON; X-Next-After-Seq when more remain
//	GET /v1/approvals[?status=pending]          the firm's pending warrants (a listing, never an authorization)
//
// Errors (problem+json): 400 invalid path or query, 401 missing claims, 404 no
// such run in this firm.
type Runs struct {
	Store RunsStore
	HTTP  httpapi.Config
	Resp  httpapi.Responder
}

// Handle is the Lambda handler; it dispatches on the API Gateway route key.
func (h *Runs) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	id := failure.Identity{CorrelationID: httpapi.CorrelationID(req)}
	p, err := h.HTTP.Principal(req)
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageAuthorize, id), nil
	}
	id.FirmID = p.FirmID
	var resp events.APIGatewayV2HTTPResponse
	switch req.RouteKey {
	case "GET /v1/runs/{run_id}":
		resp, err = h.run(ctx, req, p, &id)
	case "GET /v1/runs/{run_id}/events":
		resp, err = h.events(ctx, req, p, &id)
	case "GET /v1/approvals":
		resp, err = h.approvals(ctx, req, p, &id)
	default:
		err = inRequest(failure.New(failure.KindNotFound, "no such route"))
	}
	if err != nil {
		stage := failure.StageLedgerRead
		if errors.As(err, new(*requestError)) {
			stage = failure.StageRequest
		}
		return h.Resp.Error(ctx, err, stage, id), nil
	}
	return resp, nil
}

// requestError marks an error in the request itself (path, query), so it is
// recorded at the request stage rather than as a failed read.
type requestError struct{ err error }

func (e *requestError) Error() string { return e.err.Error() }
func (e *requestError) Unwrap() error { return e.err }

func inRequest(err error) error {
	if err == nil {
		return nil
	}
	return &requestError{err}
}

func (h *Runs) run(ctx context.Context, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	if err := httpapi.RejectUnknownQuery(req, "consistent"); err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	runID, err := httpapi.PathUUID(req, "run_id")
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	id.RunID = runID
	consistent, err := httpapi.QueryEnum(req, "consistent", "false", "true", "false")
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	run, err := h.Store.GetRun(ctx, p.FirmID, runID)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	var st reducer.RunState
	if consistent == "true" {
		folded, err := reducer.Fold(ctx, h.Store, p.FirmID, runID, reducer.FoldOptions{})
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		st = folded.State
	} else if len(run.Projection.State) > 0 {
		if err := json.Unmarshal(run.Projection.State, &st); err != nil {
			return events.APIGatewayV2HTTPResponse{}, failure.Wrap(failure.KindInternal, "", err)
		}
	}
	return httpapi.JSON(200, runView(st, run), id.CorrelationID), nil
}

func (h *Runs) events(ctx context.Context, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	if err := httpapi.RejectUnknownQuery(req, "after_seq", "limit"); err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	runID, err := httpapi.PathUUID(req, "run_id")
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	id.RunID = runID
	after, err := httpapi.QueryInt(req, "after_seq", 0, 0, 1<<40)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	limit, err := httpapi.QueryInt(req, "limit", 500, 1, 1000)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	// The run item, not the ledger, decides existence: an empty page of a real
	// run is 200, another firm's run is 404.
	if _, err := h.Store.GetRun(ctx, p.FirmID, runID); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	items, more, err := h.Store.ReadLedger(ctx, p.FirmID, runID, after, int(limit))
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	lines := make([][]byte, len(items))
	for i, it := range items {
		lines[i] = it.Raw
	}
	extra := map[string]string{}
	if more && len(items) > 0 {
		extra["X-Next-After-Seq"] = strconv.FormatInt(items[len(items)-1].Seq, 10)
	}
	return httpapi.NDJSON(200, lines, id.CorrelationID, extra), nil
}

func (h *Runs) approvals(ctx context.Context, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	if err := httpapi.RejectUnknownQuery(req, "status", "limit"); err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	if _, err := httpapi.QueryEnum(req, "status", "pending", "pending"); err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	limit, err := httpapi.QueryInt(req, "limit", 100, 1, 500)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	ws, err := h.Store.ListPendingWarrants(ctx, p.FirmID, int(limit))
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	views := make([]WarrantView, len(ws))
	for i, w := range ws {
		views[i] = warrantView(w)
	}
	return httpapi.JSON(200, map[string]any{"approvals": views}, id.CorrelationID), nil
}
