package handlers

import (
	"context"
	"errors"
	"slices"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/config"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/seal"

	"github.com/seed-f6d3920e/warrant"
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

// Invoke handles POST /v1/runs: it validates the request, records the run
// (the run item and run.started, in one transaction) and hands it to the
// worker queue. It never calls the model: a run outlives the API's 30 s.
//
// Answers: 202 Accepted with the run view (running) and a Location header
// naming GET /v1/runs/{run_id}, which the client follows (?wait=N long-polls).
// With an Idempotency-Key header (a UUID) the run id is derived from firm, user
// and key, so a retried request answers with the same run instead of starting a
// second one (200 when that run has ended, 202 while it goes on); the same key
// with a different request is 409.
// Errors (problem+json): 400 invalid body, 401 missing or invalid claims,
// 413 body over 256 KiB, 422 unknown agent or model, 503 dependency throttled.
type Invoke struct {
	Brain Runner
	Queue Enqueuer
	Keys  reducer.HeadVerifier // checks a replayed run's signed ledger head
	Store RunsStore            // reads a retried request's run
	// DataKeys opens a retried request's run (DATA_KEY): its run.started
	// is compared with the request, and its view shows its content.
	DataKeys seal.Keyring
	Config   config.Config
	HTTP     httpapi.Config
	Resp     httpapi.Responder
	NewID    func() string
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
	requested := body.CostCapUSD
	if requested == "" && h.Brain != nil {
		// The agent's own default (AGENTS), held to the deployment's
		// maximum as a requested cap is.
		requested = h.Brain.DefaultCostCap(body.AgentKey)
	}
	capUSD, err := h.Config.CostCap(requested)
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageRequest, id), nil
	}
	runID, key, err := h.runID(req, p)
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageRequest, id), nil
	}
	inv := contracts.AgentInvoke{AgentKey: body.AgentKey, Mode: contracts.ModeInvoke,
		Meta: contracts.InvokeMeta{RunID: runID, FirmID: p.FirmID, UserID: p.UserID, CorrelationID: id.CorrelationID,
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
	res, err := h.Brain.Start(ctx, inv, agent.StartOptions{CostCapUSD: capUSD, UserRoles: p.Roles, UserName: p.Name})
	if key != "" && errors.Is(err, warrant.ErrRunExists) {
		return h.replay(ctx, req, inv, agent.StartOptions{CostCapUSD: capUSD, UserRoles: p.Roles, UserName: p.Name}, id)
	}
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageInvoke, id), nil
	}
	handOver(ctx, h.Queue, h.Resp, contracts.WorkerMessage{Reason: contracts.ReasonStarted}, id)
	return accepted(res.State, res.Run, runLocation(req.RawPath, "", runID), id.CorrelationID), nil
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

// IdempotencyHeader names the optional header that makes POST /v1/runs safe to retry.
const IdempotencyHeader = "Idempotency-Key"

// idempotencyNamespace scopes derived run ids (UUIDv5) to Warrant.
var idempotencyNamespace = uuid.MustParse("6f1c8a52-3b7e-4c2d-9a61-5e0b7d4f8c13")

// runID mints the run id: random, or derived from the caller and the key.
func (h *Invoke) runID(req events.APIGatewayV2HTTPRequest, p httpapi.Principal) (runID, key string, err error) {
	key, _ = httpapi.Header(req.Headers, IdempotencyHeader)
	if key == "" {
		if h.NewID != nil {
			return h.NewID(), "", nil
		}
		return uuid.NewString(), "", nil
	}
	if contracts.CheckUUID("", key) != nil {
		return "", "", failure.New(failure.KindInvalidRequest, "header Idempotency-Key: must be a canonical lowercase UUID")
	}
	return uuid.NewSHA1(idempotencyNamespace, []byte(p.FirmID+"/"+p.UserID+"/"+key)).String(), key, nil
}

// replay answers a retried request with its run, after checking the run was
// started by the same request (its run.started line says what was asked).
func (h *Invoke) replay(ctx context.Context, req events.APIGatewayV2HTTPRequest, inv contracts.AgentInvoke, opts agent.StartOptions, id failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	reused := failure.New(failure.KindConflict, "header Idempotency-Key: already used for a different request")
	if h.Store == nil {
		return h.Resp.Error(ctx, failure.New(failure.KindInternal, ""), failure.StageInvoke, id), nil
	}
	firm, runID := inv.Meta.FirmID, inv.Meta.RunID
	// The store's own failures are its own (503, ...), and a first line
	// that is missing or does not parse is the ledger's (500
	// ledger_corrupt): only a run.started that asked for something else
	// means the key was reused.
	first, _, err := h.Store.ReadLedger(ctx, firm, runID, 0, 1)
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageLedgerRead, id), nil
	}
	c := newContent(h.DataKeys)
	defer c.close()
	var started *contracts.RunStarted
	if len(first) > 0 {
		l, err := contracts.ParseEventLine(first[0].Raw)
		if err == nil && l.Sealed {
			// The request is compared with what was recorded: opened.
			var run warrant.Run
			if run, err = h.Store.GetRun(ctx, firm, runID); err != nil {
				return h.Resp.Error(ctx, err, failure.StageLedgerRead, id), nil
			}
			o, err := c.opener(ctx, run)
			if err != nil {
				return h.Resp.Error(ctx, err, failure.StageLedgerRead, id), nil
			}
			if o == nil {
				// Destroyed: what was asked can no longer be compared.
				return h.Resp.Error(ctx, warrant.ErrContentDestroyed, failure.StageInvoke, id), nil
			}
			l, err = contracts.OpenLine(l, o)
		}
		if err == nil {
			started, _ = l.Event.(*contracts.RunStarted)
		}
	}
	if started == nil {
		return h.Resp.Error(ctx, failure.New(failure.KindLedgerCorrupt, "the run's first line is not a run.started that parses"),
			failure.StageLedgerRead, id), nil
	}
	if !sameRequest(started, inv, opts) {
		return h.Resp.Error(ctx, reused, failure.StageInvoke, id), nil
	}
	folded, err := reducer.Fold(ctx, h.Store, firm, runID, reducer.FoldOptions{Keys: h.Keys, Open: c.opener})
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageLedgerRead, id), nil
	}
	run := folded.Run
	if folded.State.Status.Terminal() {
		return httpapi.JSON(200, runView(folded.State, run), id.CorrelationID), nil
	}
	if folded.State.Status == warrant.RunRunning && run.Lease.Owner == "" {
		// Recorded, not picked up yet (the first hand-over may be what
		// failed): hand it over again; a duplicate is a no-op for the worker.
		handOver(ctx, h.Queue, h.Resp, contracts.WorkerMessage{Reason: contracts.ReasonStarted}, id)
	}
	return accepted(folded.State, run, runLocation(req.RawPath, "", runID), id.CorrelationID), nil
}

// sameRequest reports whether a retry asks for what run.started records: every
// field the client chose, in the body or through its token. Not compared: the
// correlation id (the attempt's tracing id, minted afresh for an attempt that
// sends none) and what the server chose (model, prompt and schema versions,
// max_tokens), which a deployment between two attempts may change. Roles are
// a set, as the policy reads them.
func sameRequest(s *contracts.RunStarted, inv contracts.AgentInvoke, opts agent.StartOptions) bool {
	return s.AgentKey == inv.AgentKey && s.MatterID == inv.Meta.MatterID && s.UserID == inv.Meta.UserID &&
		s.ChatSessionID == inv.Meta.ChatSessionID && s.FormID == inv.Meta.FormID &&
		s.CounselMessage == inv.CounselMessage && s.CostCapUSD == opts.CostCapUSD && slices.Equal(s.History, inv.History) &&
		slices.Equal(roleSet(s.UserRoles), roleSet(opts.UserRoles))
}

func roleSet(roles []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(roles)))
}
