package handlers

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"

	"github.com/seed-f6d3920e/warrant"
)

// ReconcileBody is counsel's finding about an effect of unknown outcome.
type ReconcileBody struct {
	Outcome     string `json:"outcome"`                // executed | not_executed
	ExternalRef string `json:"external_ref,omitempty"` // required when executed
	Note        string `json:"note,omitempty"`
}

// ReconciliationView is the recorded reconciliation.
type ReconciliationView struct {
	RunID        string `json:"run_id"`
	EffectRef    string `json:"effect_ref"`
	ToolName     string `json:"tool_name"`
	InputSHA256  string `json:"input_sha256"`
	Outcome      string `json:"outcome"`
	ExternalRef  string `json:"external_ref,omitempty"`
	ReconciledBy string `json:"reconciled_by"`
}

// reconcile handles POST /v1/runs/{run_id}/effects/{effect_ref}/reconcile:
// counsel of the run's firm records what really happened to an effect the
// ledger answered "unknown" (its worker was lost after taking it): executed,
// with the downstream system's reference, or not_executed. It is a ledger
// line (effect.reconciled) and the claim's new state, in one transaction;
// nothing is executed, whatever the outcome.
//
// Answers: 200 with the reconciliation. Errors (problem+json): 400 invalid
// body or path, 401 missing claims, 403 not counsel, 404 no such run in this
// firm or no effect of unknown outcome with that effect_ref, 409 already
// reconciled.
func (h *Approve) reconcile(ctx context.Context, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id failure.Identity) events.APIGatewayV2HTTPResponse {
	runID, err := httpapi.PathUUID(req, "run_id")
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageRequest, id)
	}
	id.RunID = runID
	effectRef, err := httpapi.PathUUID(req, "effect_ref")
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageRequest, id)
	}
	var body ReconcileBody
	if err := h.HTTP.DecodeBody(req, &body); err != nil {
		return h.Resp.Error(ctx, err, failure.StageRequest, id)
	}
	rec, err := h.Reconciler.Reconcile(ctx, p.FirmID, runID, effectRef,
		warrant.Reconciliation{Outcome: body.Outcome, ExternalRef: body.ExternalRef, Note: body.Note, By: p.UserID})
	if err != nil {
		return h.Resp.Error(ctx, err, failure.StageApproval, id)
	}
	return httpapi.JSON(200, reconciliationView(runID, rec), id.CorrelationID)
}

func reconciliationView(runID string, r contracts.EffectReconciled) ReconciliationView {
	return ReconciliationView{RunID: runID, EffectRef: r.EffectRef, ToolName: r.ToolName, InputSHA256: r.InputSHA256,
		Outcome: r.Outcome, ExternalRef: r.ExternalRef, ReconciledBy: r.ReconciledBy}
}
