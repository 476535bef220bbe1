package handlers

import (
	"encoding/json"
	"slices"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"

	"github.com/seed-f6d3920e/warrant"
)

// RunView is the one JSON shape of a run, wherever a run is returned.
type RunView struct {
	RunID           string       `json:"run_id"`
	Status          string       `json:"status"`
	AgentKey        string       `json:"agent_key"`
	MatterID        string       `json:"matter_id"`
	ModelID         string       `json:"model_id"`
	InputTokens     int64        `json:"input_tokens"`
	OutputTokens    int64        `json:"output_tokens"`
	CostUSD         string       `json:"cost_usd"`
	CostCapUSD      string       `json:"cost_cap_usd"`
	FinalText       string       `json:"final_text,omitempty"`
	StopReason      string       `json:"stop_reason,omitempty"`
	Failure         *FailureView `json:"failure,omitempty"`
	PendingApproval *WarrantView `json:"pending_approval,omitempty"`
	// UnreconciledEffects are the effect_refs of effects whose outcome was
	// lost with their worker and that counsel has not reconciled yet.
	UnreconciledEffects []string `json:"unreconciled_effects,omitempty"`
	ProjectedThroughSeq int64    `json:"projected_through_seq"`
	// Ledger is the server's check of the ledger against its signed head,
	// on a consistent read (?consistent=true) only.
	Ledger *LedgerView `json:"ledger,omitempty"`
	// ContentDestroyed says when and why the run's content was destroyed
	// with its data key (issue 26): the view has no final text or warrant
	// content then; its state, cost, hashes and decisions are as before.
	ContentDestroyed *DestroyedView `json:"content_destroyed,omitempty"`
	// Actions are what became of the run's actions, read from the ledger,
	// never from the model's words (issue 27): each call held for counsel,
	// claimed as an effect, refused by the policy, declined, or not run
	// because the run ended on it. ActionsNotDone counts those that did not
	// succeed: a run whose status is completed may still have failed to do
	// what it was asked, and says so here.
	Actions        []ActionView `json:"actions,omitempty"`
	ActionsNotDone int          `json:"actions_not_done"`
	// ActionsSummary says it in words ("1 action not done:
	// file_court_document failed (its system could not be reached; nothing
	// was sent; its warrant was used)"), as the run's notification does.
	ActionsSummary string `json:"actions_summary,omitempty"`
}

// ActionView is one action of a run and what became of it: outcome done,
// failed, declined, denied, unknown, not_run or pending, and why (a
// failure's error_kind: unreachable, tool_failed, invalid_input; the run's
// failure kind for one not run), with Words saying so for one not done.
type ActionView struct {
	reducer.Action
	Words string `json:"words,omitempty"`
}

// DestroyedView is when (the content.destroyed line's time) and why a run's
// content was destroyed ("retention" or "instruction"), and until when the
// table's backups still hold its key.
type DestroyedView struct {
	At           string `json:"at"`
	Reason       string `json:"reason"`
	BackupsUntil string `json:"backups_until"`
}

// LedgerView says a ledger was folded line by line and matched its signed
// head. Verified is true when the head's MAC was checked with the ledger
// key; a ledger that does not match its head is an error, never a view.
type LedgerView struct {
	HeadSeq  int64  `json:"head_seq"`
	HeadHash string `json:"head_hash"`
	KeyID    string `json:"key_id,omitempty"`
	Verified bool   `json:"verified"`
}

// FailureView is what a client may see of a failed run.
type FailureView struct {
	Kind               string `json:"kind"`
	Stage              string `json:"stage"`
	UserVisibleMessage string `json:"user_visible_message"`
	// ToolChange is the tool a run that failed tool_changed stopped at: its
	// catalog name and server, the catalog's pin of its input schema and
	// the schema's hash as the server lists it now (absent: no longer
	// listed), and the warrant whose signed call was refused, if any.
	ToolChange *ToolChangeView `json:"tool_change,omitempty"`
}

// ToolChangeView is a tool_changed failure's record of the tool, as
// run.failed and the failure envelope carry it.
type ToolChangeView = failure.ToolChange

// WarrantView is a warrant as counsel sees it before and after signing.
type WarrantView struct {
	ApprovalRequestID string `json:"approval_request_id"`
	RunID             string `json:"run_id,omitempty"`
	ToolName          string `json:"tool_name"`
	// ToolInput is the exact canonical input the warrant covers, in full;
	// ToolInputCanonical is the same bytes as a string, for a client that
	// must show exactly what it signs (a JSON parser may not keep them).
	// GET /v1/approvals carries each input once, as ToolInputCanonical.
	ToolInput          json.RawMessage `json:"tool_input,omitempty"`
	ToolInputCanonical string          `json:"tool_input_canonical"`
	HumanSummary       string          `json:"human_summary"`
	Reason             string          `json:"reason"`
	RiskTier           string          `json:"risk_tier"`
	ToolInputHash      string          `json:"tool_input_hash"`
	ExpiresAt          string          `json:"expires_at"`
	Status             string          `json:"status,omitempty"`
	DecidedBy          string          `json:"decided_by,omitempty"`
	DecidedAt          string          `json:"decided_at,omitempty"`
	// RequestedBy is the user who started the run, RequestedAt when the
	// warrant was asked for; MatterID the run's matter.
	RequestedBy string `json:"requested_by,omitempty"`
	RequestedAt string `json:"requested_at,omitempty"`
	// RequestedByName and DecidedByName are display names from the
	// requester's and the decider's tokens (name or email claim), when
	// they had one: shown, never used to authorize.
	RequestedByName string `json:"requested_by_name,omitempty"`
	DecidedByName   string `json:"decided_by_name,omitempty"`
	MatterID        string `json:"matter_id,omitempty"`
	// PolicyVersion and FiredRules are the risk policy's decision that asked
	// for the warrant.
	PolicyVersion string          `json:"policy_version,omitempty"`
	FiredRules    []FiredRuleView `json:"fired_rules,omitempty"`
	// EditedInput is counsel's edit (canonical), which the warrant covers
	// instead of tool_input; EditedInputHash its SHA-256.
	EditedInput     json.RawMessage `json:"edited_input,omitempty"`
	EditedInputHash string          `json:"edited_input_hash,omitempty"`
	// ToolServer names the firm's system that serves the tool and
	// ToolSchemaSHA256 the catalog's pin of its input schema (absent for
	// Warrant's builtin tools).
	ToolServer       string `json:"tool_server,omitempty"`
	ToolSchemaSHA256 string `json:"tool_schema_sha256,omitempty"`
}

// FiredRuleView is one risk-policy rule that fired on a call.
type FiredRuleView = warrant.FiredRule

// runView renders a folded state; the run item fills what the fold has not
// reached yet (a projection that lags the ledger).
func runView(st reducer.RunState, run warrant.Run) RunView {
	v := RunView{RunID: run.RunID, Status: string(st.Status), AgentKey: st.AgentKey, MatterID: st.MatterID, ModelID: st.ModelID,
		InputTokens: st.InputTokens, OutputTokens: st.OutputTokens, CostUSD: pricing.FormatUSD(st.Cost),
		CostCapUSD: pricing.FormatUSD(st.CostCap), FinalText: st.FinalText, StopReason: st.StopReason, ProjectedThroughSeq: st.LastSeq}
	if st.LastSeq == 0 {
		v.Status, v.AgentKey, v.MatterID, v.ModelID, v.CostCapUSD = string(run.Status), run.AgentKey, run.MatterID, run.ModelID, run.CostCapUSD
	}
	v.UnreconciledEffects = st.Unreconciled
	for _, a := range st.Actions {
		v.Actions = append(v.Actions, ActionView{Action: a, Words: reducer.ActionWords(a)})
	}
	if len(st.Actions) > 0 {
		v.ActionsNotDone, v.ActionsSummary = st.NotDone(), reducer.OutcomeWords(st.Actions)
	}
	if d := st.ContentDestroyed; d != nil {
		v.ContentDestroyed = &DestroyedView{At: d.At, Reason: d.Reason, BackupsUntil: d.BackupsUntil}
	}
	if st.FailureKind != "" {
		v.Failure = &FailureView{Kind: st.FailureKind, Stage: st.FailureStage, UserVisibleMessage: failure.UserMessage(failure.Kind(st.FailureKind)),
			ToolChange: st.ToolChange}
	}
	if p := st.PendingApproval; p != nil {
		v.PendingApproval = &WarrantView{ApprovalRequestID: p.ApprovalRequestID, ToolName: p.ToolName, ToolInput: p.ToolInput,
			ToolInputCanonical: string(p.ToolInput), MatterID: v.MatterID, RequestedBy: st.UserID, RequestedByName: st.UserName,
			HumanSummary: contracts.Printable(p.HumanSummary),
			Reason:       p.Reason, RiskTier: p.RiskTier, ToolInputHash: p.ToolInputHash, ExpiresAt: p.ExpiresAt, Status: "pending",
			PolicyVersion: p.PolicyVersion, ToolServer: p.ToolServer, ToolSchemaSHA256: p.ToolSchemaSHA256}
		v.PendingApproval.FiredRules = slices.Clone(p.FiredRules)
	}
	return v
}

func warrantView(w warrant.Warrant) WarrantView {
	v := WarrantView{ApprovalRequestID: w.ApprovalID, RunID: w.RunID, ToolName: w.ToolName, ToolInput: w.Input,
		ToolInputCanonical: string(w.Input), RequestedBy: w.RequestedBy, MatterID: w.MatterID,
		RequestedByName: w.RequestedByName, DecidedByName: w.DecidedByName,
		HumanSummary: contracts.Printable(w.HumanSummary),
		Reason:       w.Reason, RiskTier: w.RiskTier, ToolInputHash: w.ToolInputHash, ExpiresAt: contracts.FormatTime(w.ExpiresAt),
		Status: string(w.Status), DecidedBy: w.DecidedBy, PolicyVersion: w.PolicyVersion,
		EditedInput: w.EditedInput, EditedInputHash: w.EditedHash, ToolServer: w.ToolServer, ToolSchemaSHA256: w.ToolSchemaSHA256}
	v.FiredRules = slices.Clone(w.FiredRules)
	if !w.RequestedAt.IsZero() {
		v.RequestedAt = contracts.FormatTime(w.RequestedAt)
	}
	if !w.DecidedAt.IsZero() {
		v.DecidedAt = contracts.FormatTime(w.DecidedAt)
	}
	return v
}

// BudgetView is a firm's model budget for one month (GET /v1/budget).
type BudgetView struct {
	Month       string `json:"month"`
	LimitUSD    string `json:"limit_usd"`
	SpentUSD    string `json:"spent_usd"`
	ReservedUSD string `json:"reserved_usd"`
	HeadroomUSD string `json:"headroom_usd"`
	// OpenReservations are model calls in flight (or whose worker was
	// lost, until the sweeper releases them), in run order.
	OpenReservations []ReservationView `json:"open_reservations"`
	// MoreReservations says there are open reservations beyond the listed.
	MoreReservations bool `json:"more_reservations,omitempty"`
}

// ReservationView is one model call's reservation.
type ReservationView struct {
	RunID     string `json:"run_id"`
	Turn      int64  `json:"turn"`
	AmountUSD string `json:"amount_usd"`
	ExpiresAt string `json:"expires_at"`
}

// budgetView renders b against the limit in force.
func budgetView(b warrant.Budget, limit int64) BudgetView {
	headroom := max(limit-b.SpentNano-b.ReservedNano, 0)
	v := BudgetView{Month: b.Month, LimitUSD: pricing.FormatUSD(pricing.Nano(limit)), SpentUSD: pricing.FormatUSD(pricing.Nano(b.SpentNano)),
		ReservedUSD: pricing.FormatUSD(pricing.Nano(b.ReservedNano)), HeadroomUSD: pricing.FormatUSD(pricing.Nano(headroom)),
		OpenReservations: make([]ReservationView, len(b.Open)), MoreReservations: b.More}
	for i, r := range b.Open {
		v.OpenReservations[i] = ReservationView{RunID: r.RunID, Turn: r.Turn, AmountUSD: pricing.FormatUSD(pricing.Nano(r.AmountNano)),
			ExpiresAt: contracts.FormatTime(r.ExpiresAt)}
	}
	return v
}
