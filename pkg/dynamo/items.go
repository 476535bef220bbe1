package dynamo

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant"
)

// The stored shapes. Times are fixed-width UTC strings (timeLayout); JSON
// documents are strings so the exact bytes survive and stay readable in the
// stream. Optional attributes are omitted rather than stored empty.

type runItem struct {
	PK            string `dynamodbav:"PK"`
	SK            string `dynamodbav:"SK"`
	FirmID        string `dynamodbav:"firm_id"`
	RunID         string `dynamodbav:"run_id"`
	MatterID      string `dynamodbav:"matter_id,omitempty"`
	UserID        string `dynamodbav:"user_id,omitempty"`
	AgentKey      string `dynamodbav:"agent_key,omitempty"`
	ModelID       string `dynamodbav:"model_id,omitempty"`
	PromptVersion string `dynamodbav:"prompt_version,omitempty"`
	CorrelationID string `dynamodbav:"correlation_id,omitempty"`
	CostCapUSD    string `dynamodbav:"cost_cap_usd,omitempty"`
	Status        string `dynamodbav:"status"`
	HeldOn        string `dynamodbav:"held_on,omitempty"`
	CreatedAt     string `dynamodbav:"created_at"`
	UpdatedAt     string `dynamodbav:"updated_at"`
	// proj_last_seq is the projection's compare-and-set version; proj is
	// the rest, replaced whole on each update (so a field that became empty
	// is cleared without a REMOVE).
	ProjLastSeq *int64    `dynamodbav:"proj_last_seq,omitempty"`
	Proj        *projItem `dynamodbav:"proj,omitempty"`
	// The ledger's signed head, moved in the transaction of every append.
	HeadSeq  int64  `dynamodbav:"head_seq"`
	HeadHash string `dynamodbav:"head_hash"`
	HeadMAC  string `dynamodbav:"head_mac,omitempty"`
	HeadKey  string `dynamodbav:"head_key,omitempty"`
	// The lease (lease.go) and its place in GSI2.
	LeaseOwner string `dynamodbav:"lease_owner,omitempty"`
	LeaseUntil string `dynamodbav:"lease_until,omitempty"`
	GSI2PK     string `dynamodbav:"GSI2PK,omitempty"`
	GSI2SK     string `dynamodbav:"GSI2SK,omitempty"`
	Restarts   int    `dynamodbav:"restarts,omitempty"`
	LeaseEpoch int64  `dynamodbav:"lease_epoch,omitempty"`
	// The run's data key, wrapped (warrant.Run.DataKey), until its
	// content is destroyed (content_destroyed_at, DestroyContent).
	DataKey            []byte `dynamodbav:"data_key,omitempty"`
	ContentDestroyedAt string `dynamodbav:"content_destroyed_at,omitempty"`
	// EndedAt is when the run finished (setDone); its retention counts
	// from it.
	EndedAt string `dynamodbav:"ended_at,omitempty"`
	// The run's place among its matter's runs (GSI1, retention.go).
	GSI1PK string `dynamodbav:"GSI1PK,omitempty"`
	GSI1SK string `dynamodbav:"GSI1SK,omitempty"`
}

type projItem struct {
	Status    string `dynamodbav:"status,omitempty"`
	State     []byte `dynamodbav:"state,omitempty"`
	Halted    string `dynamodbav:"halted,omitempty"`
	UpdatedAt string `dynamodbav:"updated_at,omitempty"`
}

func (r runItem) run() warrant.Run {
	out := warrant.Run{
		FirmID: r.FirmID, RunID: r.RunID, MatterID: r.MatterID, UserID: r.UserID,
		AgentKey: r.AgentKey, ModelID: r.ModelID, PromptVersion: r.PromptVersion,
		CorrelationID: r.CorrelationID, CostCapUSD: r.CostCapUSD,
		Status:    warrant.RunStatus(r.Status),
		CreatedAt: parseTime(r.CreatedAt), UpdatedAt: parseTime(r.UpdatedAt),
	}
	// held_on means something only while held (an endpoint that ignores
	// REMOVE, like minidyn, may leave a stale one behind).
	if out.Status == warrant.RunHeld {
		out.HeldOn = r.HeldOn
	}
	out.Head = warrant.LedgerHead{Seq: r.HeadSeq, Hash: r.HeadHash, MAC: r.HeadMAC, KeyID: r.HeadKey}
	out.DataKey, out.ContentDestroyedAt, out.EndedAt = r.DataKey, parseTime(r.ContentDestroyedAt), parseTime(r.EndedAt)
	if r.ContentDestroyedAt != "" {
		out.DataKey = nil // destroyed: no reader is handed a key, whatever an endpoint kept
	}
	out.Lease, out.Restarts = warrant.Lease{Until: parseTime(r.LeaseUntil), Epoch: r.LeaseEpoch}, r.Restarts
	if r.LeaseOwner != noOwner {
		out.Lease.Owner = r.LeaseOwner
	}
	if r.ProjLastSeq != nil {
		out.Projection.LastSeq = *r.ProjLastSeq
	}
	if r.Proj != nil {
		out.Projection.Status, out.Projection.State, out.Projection.Halted = warrant.RunStatus(r.Proj.Status), r.Proj.State, r.Proj.Halted
		out.Projection.UpdatedAt = parseTime(r.Proj.UpdatedAt)
	}
	return out
}

type lineItem struct {
	Seq  int64  `dynamodbav:"seq"`
	Line string `dynamodbav:"line"`
}

type warrantItem struct {
	PK     string `dynamodbav:"PK"`
	SK     string `dynamodbav:"SK"`
	GSI1PK string `dynamodbav:"GSI1PK,omitempty"`
	GSI1SK string `dynamodbav:"GSI1SK,omitempty"`
	// A pending warrant's place among those about to expire (GSI2
	// WEXP#<shard>, sorted by an hour before expiry), for the sweeper's
	// warrant.expiring notification; WEXPDONE once sent or decided.
	GSI2PK        string `dynamodbav:"GSI2PK,omitempty"`
	GSI2SK        string `dynamodbav:"GSI2SK,omitempty"`
	FirmID        string `dynamodbav:"firm_id"`
	RunID         string `dynamodbav:"run_id"`
	ApprovalID    string `dynamodbav:"approval_id"`
	MatterID      string `dynamodbav:"matter_id,omitempty"`
	ToolName      string `dynamodbav:"tool_name"`
	ToolUseID     string `dynamodbav:"tool_use_id,omitempty"`
	ToolInputHash string `dynamodbav:"tool_input_hash"`
	Attempt       int    `dynamodbav:"attempt,omitempty"`
	Input         string `dynamodbav:"input,omitempty"`
	RiskTier      string `dynamodbav:"risk_tier,omitempty"`
	Reason        string `dynamodbav:"reason,omitempty"`
	HumanSummary  string `dynamodbav:"human_summary,omitempty"`
	RequestedBy   string `dynamodbav:"requested_by,omitempty"`
	RequestedName string `dynamodbav:"requested_by_name,omitempty"`
	RequestedAt   string `dynamodbav:"requested_at"`
	ExpiresAt     string `dynamodbav:"expires_at"`
	Status        string `dynamodbav:"status"`
	Decision      string `dynamodbav:"decision,omitempty"`
	DecidedBy     string `dynamodbav:"decided_by,omitempty"`
	DecidedName   string `dynamodbav:"decided_by_name,omitempty"`
	DecidedAt     string `dynamodbav:"decided_at,omitempty"`
	Note          string `dynamodbav:"note,omitempty"`
	ConsumedAt    string `dynamodbav:"consumed_at,omitempty"`
	EditedInput   string `dynamodbav:"edited_input,omitempty"`
	EditedHash    string `dynamodbav:"edited_hash,omitempty"`
	FiredRules    string `dynamodbav:"fired_rules,omitempty"` // JSON array of {id, effect, reason}
	PolicyVersion string `dynamodbav:"policy_version,omitempty"`
	ToolServer    string `dynamodbav:"tool_server,omitempty"`
	ToolSchema    string `dynamodbav:"tool_schema_sha256,omitempty"`
}

// editItem is counsel's edit of a warrant's call, stored beside the warrant
// (SK APR#<id>#EDIT) rather than in it: the requested input and the edit
// can each be as large as a ledger line, and together they would not fit
// one item. The warrant item keeps edited_hash, which the resume's
// transaction is conditioned on; warrants decided before the edit moved out
// keep edited_input in their own item, and are read as they are.
type editItem struct {
	PK          string `dynamodbav:"PK"`
	SK          string `dynamodbav:"SK"`
	ApprovalID  string `dynamodbav:"approval_id"`
	EditedInput string `dynamodbav:"edited_input"`
	EditedHash  string `dynamodbav:"edited_hash"`
}

// editSK is the key of a warrant's edit.
func editSK(approvalID string) string { return aprSK(approvalID) + "#EDIT" }

func (w warrantItem) warrant() warrant.Warrant {
	var input json.RawMessage
	if w.Input != "" {
		input = json.RawMessage(w.Input)
	}
	out := warrant.Warrant{
		FirmID: w.FirmID, RunID: w.RunID, ApprovalID: w.ApprovalID, MatterID: w.MatterID,
		ToolName: w.ToolName, ToolUseID: w.ToolUseID, ToolInputHash: w.ToolInputHash, Attempt: max(w.Attempt, 1), Input: input,
		RiskTier: w.RiskTier, Reason: w.Reason, HumanSummary: w.HumanSummary, RequestedBy: w.RequestedBy, RequestedByName: w.RequestedName,
		RequestedAt: parseTime(w.RequestedAt), ExpiresAt: parseTime(w.ExpiresAt),
		Status: warrant.WarrantStatus(w.Status), Decision: warrant.Decision(w.Decision), DecidedBy: w.DecidedBy, DecidedByName: w.DecidedName,
		DecidedAt: parseTime(w.DecidedAt), Note: w.Note, EditedHash: w.EditedHash, PolicyVersion: w.PolicyVersion,
		FiredRules: firedRulesFrom(w.FiredRules), ToolServer: w.ToolServer, ToolSchemaSHA256: w.ToolSchema,
	}
	if w.EditedInput != "" {
		out.EditedInput = json.RawMessage(w.EditedInput)
	}
	return out
}

// firedRulesAttr is the warrant item's fired_rules attribute: a JSON array.
func firedRulesAttr(rules []warrant.FiredRule) string {
	if len(rules) == 0 {
		return ""
	}
	b, _ := json.Marshal(rules) // plain strings: always marshals
	return string(b)
}

func firedRulesFrom(attr string) []warrant.FiredRule {
	var out []warrant.FiredRule
	if attr == "" || json.Unmarshal([]byte(attr), &out) != nil {
		return nil
	}
	return out
}

type claimItem struct {
	PK                  string `dynamodbav:"PK"`
	SK                  string `dynamodbav:"SK"`
	FirmID              string `dynamodbav:"firm_id"`
	RunID               string `dynamodbav:"run_id"`
	ToolName            string `dynamodbav:"tool_name"`
	InputSHA256         string `dynamodbav:"input_sha256"`
	Attempt             int    `dynamodbav:"attempt,omitempty"`
	EffectRef           string `dynamodbav:"effect_ref,omitempty"`
	ApprovalID          string `dynamodbav:"approval_id,omitempty"`
	Owner               string `dynamodbav:"owner,omitempty"`
	LeaseUntil          string `dynamodbav:"lease_until,omitempty"`
	State               string `dynamodbav:"state"`
	ClaimedAt           string `dynamodbav:"claimed_at"`
	CompletedAt         string `dynamodbav:"completed_at,omitempty"`
	ToolStatus          string `dynamodbav:"tool_status,omitempty"`
	Result              string `dynamodbav:"result,omitempty"`
	NeedsReconciliation bool   `dynamodbav:"needs_reconciliation,omitempty"`
	Reconciled          string `dynamodbav:"reconciled,omitempty"`
	ExternalRef         string `dynamodbav:"external_ref,omitempty"`
}

func (c claimItem) claim() warrant.Claim {
	var result json.RawMessage
	if c.Result != "" {
		result = json.RawMessage(c.Result)
	}
	return warrant.Claim{
		FirmID: c.FirmID, RunID: c.RunID, ToolName: c.ToolName, InputSHA256: c.InputSHA256, Attempt: max(c.Attempt, 1),
		EffectRef: c.EffectRef, ApprovalID: c.ApprovalID, Owner: ownerFrom(c.Owner),
		LeaseUntil: parseTime(c.LeaseUntil), ClaimedAt: parseTime(c.ClaimedAt),
		CompletedAt: parseTime(c.CompletedAt), State: warrant.ClaimState(c.State),
		ToolStatus: c.ToolStatus, Result: result, NeedsReconciliation: c.NeedsReconciliation, Reconciled: c.Reconciled, ExternalRef: c.ExternalRef,
	}
}

type outboundItem struct {
	PK        string `dynamodbav:"PK"`
	SK        string `dynamodbav:"SK"`
	FirmID    string `dynamodbav:"firm_id"`
	RunID     string `dynamodbav:"run_id"`
	EffectRef string `dynamodbav:"effect_ref"`
	ToolName  string `dynamodbav:"tool_name,omitempty"`
	Kind      string `dynamodbav:"kind,omitempty"`
	Body      string `dynamodbav:"body,omitempty"`
	CreatedAt string `dynamodbav:"created_at"`
}

func (o outboundItem) outbound() warrant.Outbound {
	var body json.RawMessage
	if o.Body != "" {
		body = json.RawMessage(o.Body)
	}
	return warrant.Outbound{FirmID: o.FirmID, RunID: o.RunID, EffectRef: o.EffectRef, ToolName: o.ToolName,
		Kind: o.Kind, Body: body, CreatedAt: parseTime(o.CreatedAt)}
}

func marshal(v any) (map[string]types.AttributeValue, error) { return attributevalue.MarshalMap(v) }

func unmarshal[T any](m map[string]types.AttributeValue) (T, error) {
	var v T
	err := attributevalue.UnmarshalMap(m, &v)
	return v, err
}

// expired reports whether a warrant's signature window has closed at now.
func expiredAt(expiresAt string, now time.Time) bool {
	return expiresAt == "" || fmtTime(now) >= expiresAt
}

// ItemText is every attribute value of a stored item as text, one a line
// (strings and binaries as they are, maps, lists and sets flattened), in
// no particular order: what a raw read of the table shows an operator or a
// backup, for checking that no content is stored in the clear.
func ItemText(item map[string]types.AttributeValue) string {
	var b strings.Builder
	for _, v := range item {
		attrText(&b, v)
	}
	return b.String()
}

func attrText(b *strings.Builder, v types.AttributeValue) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		b.WriteString(v.Value + "\n")
	case *types.AttributeValueMemberB:
		b.Write(v.Value)
		b.WriteString("\n")
	case *types.AttributeValueMemberSS:
		b.WriteString(strings.Join(v.Value, "\n") + "\n")
	case *types.AttributeValueMemberBS:
		for _, e := range v.Value {
			b.Write(e)
			b.WriteString("\n")
		}
	case *types.AttributeValueMemberM:
		for _, e := range v.Value {
			attrText(b, e)
		}
	case *types.AttributeValueMemberL:
		for _, e := range v.Value {
			attrText(b, e)
		}
	}
}
