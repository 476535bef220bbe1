package evidence

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// Schemas of the documents this package signs and serves.
const (
	ReceiptSchema    = "warrant/receipt/v1"
	CheckpointSchema = "warrant/checkpoint/v1"
	BundleSchema     = "warrant/evidence/v1"
	LogSchema        = "warrant/firm-log/v1"
)

// Receipt kinds (closed).
const (
	// KindEffect: an effect was executed (or its executor was lost with
	// the outcome unknown): one per tool.completed line with an effect_ref.
	KindEffect = "effect"
	// KindReconciliation: counsel recorded what became of an effect whose
	// outcome was unknown (effect.reconciled).
	KindReconciliation = "reconciliation"
	// KindRun: the run ended (run.completed or run.failed).
	KindRun = "run"
	// KindStart: the run was accepted (run.started, seq 1). It is the
	// first receipt of every run, so its entry is the first of the run in
	// the firm log: a run's bundle starts its log segment there, and a run
	// that never reached an effect is in the log all the same.
	KindStart = "start"
	// KindDestruction: the run's content was destroyed with its data key
	// (content.destroyed, issue 26): the firm's certificate that it was,
	// when, why and until when backups still held the key.
	KindDestruction = "destruction"
)

// OutcomeStarted is a start receipt's outcome.
const OutcomeStarted = "started"

// Authorities of an effect.
const (
	AuthorityWarrant = "warrant" // counsel signed a warrant for it
	AuthorityPolicy  = "policy"  // the risk policy allowed it without one
)

// Receipt is what a signed receipt says. Every field but KeyID and IssuedAt
// is derived from the run's ledger (Derive), so a verifier re-derives it and
// compares; Seq and LineSHA256 pin the ledger line it covers, and through
// the chain every line before it.
type Receipt struct {
	Schema     string `json:"schema"`
	Kind       string `json:"kind"`
	FirmID     string `json:"firm_id"`
	RunID      string `json:"run_id"`
	Seq        int64  `json:"seq"`
	LineSHA256 string `json:"line_sha256"`
	// Outcome: for an effect, the tool call's status (success, error or
	// unknown); for a reconciliation, the outcome counsel recorded; for a
	// run, its terminal status (completed, failed or aborted); for a
	// destruction, its reason (retention or instruction).
	Outcome string `json:"outcome"`

	EffectRef   string `json:"effect_ref,omitempty"`
	ToolName    string `json:"tool_name,omitempty"`
	InputSHA256 string `json:"input_sha256,omitempty"` // the input that ran
	// Authority says what allowed the effect; for a warrant, who decided,
	// as what, and when.
	Authority     string `json:"authority,omitempty"`
	WarrantID     string `json:"warrant_id,omitempty"`
	DecidedBy     string `json:"decided_by,omitempty"`
	DecidedAs     string `json:"decided_as,omitempty"`
	ApprovedAt    string `json:"approved_at,omitempty"`
	ExecutedAt    string `json:"executed_at,omitempty"`
	RiskTier      string `json:"risk_tier,omitempty"`
	MatchedPolicy string `json:"matched_policy,omitempty"`
	PolicyVersion string `json:"policy_version,omitempty"`
	// PolicyMetadataSHA256 is the hash of what the policy's decision
	// weighed beyond the input (tool.requested's policy_metadata_sha256).
	PolicyMetadataSHA256 string `json:"policy_metadata_sha256,omitempty"`
	// ReconciledBy is the counsel who recorded a reconciliation.
	ReconciledBy string `json:"reconciled_by,omitempty"`

	// FailureKind is a failed or aborted run's kind.
	FailureKind string `json:"failure_kind,omitempty"`
	StartedAt   string `json:"started_at,omitempty"`
	EndedAt     string `json:"ended_at,omitempty"`

	// The configuration the run was started under (run.started).
	PolicySHA256  string `json:"policy_sha256,omitempty"`
	CatalogSHA256 string `json:"catalog_sha256,omitempty"`

	// A destruction's matter, when (the line's time), the retention that
	// applied (days, whose: matter or firm) or the two users who
	// instructed it, and the time after which no backup of the table holds
	// the run's key.
	MatterID        string `json:"matter_id,omitempty"`
	DestroyedAt     string `json:"destroyed_at,omitempty"`
	RetentionDays   int    `json:"retention_days,omitempty"`
	RetentionSource string `json:"retention_source,omitempty"`
	RequestedBy     string `json:"requested_by,omitempty"`
	ConfirmedBy     string `json:"confirmed_by,omitempty"`
	BackupsUntil    string `json:"backups_until,omitempty"`

	KeyID    string `json:"key_id"`
	IssuedAt string `json:"issued_at"`
}

// Signed is a signed document: Body its exact canonical bytes (a JSON string
// here, so `jq -j .body` writes the bytes that were signed) and Signature the
// base64 ASN.1 DER ECDSA signature over their SHA-256.
type Signed struct {
	Body      string `json:"body"`
	Signature string `json:"signature"`
	// Note is, on a checkpoint only, the same checkpoint as a C2SP signed
	// note (SignCheckpointNote), kept and served with it; empty on a
	// receipt and on a checkpoint signed before notes were.
	Note string `json:"note,omitempty"`
	// Timestamp is, on a checkpoint only, an RFC 3161 timestamp token
	// (base64 of the DER TimeStampToken, a CMS ContentInfo) over the
	// SHA-256 of Body, from the time-stamping authority the firm
	// configured; empty until one was obtained (a TSA that is down delays
	// it, never the checkpoint).
	Timestamp string `json:"timestamp,omitempty"`
	// Cosignatures are, on a checkpoint with a Note only, the signature
	// lines witnesses added to the note (c2sp.org/tlog-cosignature), each
	// "— <witness name> <base64>", in the order they were obtained.
	Cosignatures []string `json:"cosignatures,omitempty"`
}

// SHA256 is the hex SHA-256 of the body: what the firm log records.
func (s Signed) SHA256() string {
	sum := sha256.Sum256([]byte(s.Body))
	return hex.EncodeToString(sum[:])
}

// Sign canonicalizes doc (RFC 8785) and signs it.
func Sign(ctx context.Context, k Signer, doc any) (Signed, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return Signed{}, err
	}
	body, err := contracts.Canonicalize(raw)
	if err != nil {
		return Signed{}, err
	}
	sum := sha256.Sum256(body)
	sig, err := k.SignDigest(ctx, sum[:])
	if err != nil {
		return Signed{}, err
	}
	return Signed{Body: string(body), Signature: base64.StdEncoding.EncodeToString(sig)}, nil
}

// open checks a signed document against keys and decodes its body into v
// strictly; keyID is the key the body says signed it.
func open(keys KeySet, s Signed, v any, keyID func() string) error {
	canon, err := contracts.Canonicalize([]byte(s.Body))
	if err != nil || string(canon) != s.Body {
		return errors.New("the body is not canonical JSON (RFC 8785)")
	}
	if err := contracts.DecodeStrict([]byte(s.Body), v); err != nil {
		return err
	}
	sig, err := base64.StdEncoding.DecodeString(s.Signature)
	if err != nil {
		return errors.New("the signature is not base64")
	}
	return keys.verify(keyID(), []byte(s.Body), sig)
}

// Derive returns the receipts a ledger calls for, in seq order, with every
// field but KeyID and IssuedAt: one for the run's start (run.started), one
// per executed effect (tool.completed with an effect_ref, not a reuse), per
// reconciliation and per line that ends the run (folded with the shared
// reducer: run.completed, run.failed, or the model.usage that takes a run
// over its cost cap). lines is the run's ledger from line 1.
func Derive(lines []contracts.Line) ([]Receipt, error) {
	var out []Receipt
	var st reducer.RunState
	var started *contracts.RunStarted
	var startedAt string
	requested := map[string]*contracts.ToolRequested{} // by tool_use_id
	released := map[string]string{}                    // effect_ref -> approval id
	decided := map[string]struct {
		ev *contracts.ApprovalDecided
		at string
	}{}
	for _, l := range lines {
		wasTerminal := st.Status.Terminal()
		var err error
		if st, err = reducer.Apply(st, l); err != nil {
			return nil, fmt.Errorf("seq %d: %w", l.Seq, err)
		}
		base := Receipt{Schema: ReceiptSchema, FirmID: l.FirmID, RunID: l.RunID, Seq: l.Seq, LineSHA256: l.Hash}
		if started != nil {
			base.PolicySHA256, base.CatalogSHA256 = started.PolicySHA256, started.CatalogVersion
		}
		switch e := l.Event.(type) {
		case *contracts.RunStarted:
			started, startedAt = e, l.CreatedAt
			r := base
			r.Kind, r.Outcome, r.StartedAt = KindStart, OutcomeStarted, l.CreatedAt
			r.PolicySHA256, r.CatalogSHA256 = e.PolicySHA256, e.CatalogVersion
			out = append(out, r)
		case *contracts.ToolRequested:
			requested[e.ToolUseID] = e
		case *contracts.ApprovalDecided:
			decided[e.ApprovalRequestID] = struct {
				ev *contracts.ApprovalDecided
				at string
			}{e, l.CreatedAt}
		case *contracts.RunReleased:
			if e.EffectRef != "" {
				released[e.EffectRef] = e.ApprovalRequestID
			}
		case *contracts.ToolCompleted:
			if e.EffectRef == "" || e.Reused {
				continue
			}
			r := base
			r.Kind, r.Outcome, r.EffectRef, r.ToolName = KindEffect, e.Status, e.EffectRef, e.ToolName
			r.InputSHA256, r.ExecutedAt = e.InputSHA256, l.CreatedAt
			if e.ExecutedInputSHA256 != "" {
				r.InputSHA256 = e.ExecutedInputSHA256
			}
			if q := requested[e.ToolUseID]; q != nil {
				r.RiskTier, r.MatchedPolicy, r.PolicyVersion, r.PolicyMetadataSHA256 = q.RiskTier, q.MatchedPolicy, q.PolicyVersion, q.PolicyMetadataSHA256
			}
			r.Authority = AuthorityPolicy
			if id, ok := released[e.EffectRef]; ok {
				r.Authority, r.WarrantID = AuthorityWarrant, id
				if d, ok := decided[id]; ok {
					r.DecidedBy, r.DecidedAs, r.ApprovedAt = d.ev.DecidedBy, d.ev.DecidedAs, d.at
				}
			}
			out = append(out, r)
		case *contracts.EffectReconciled:
			r := base
			r.Kind, r.Outcome, r.EffectRef, r.ToolName = KindReconciliation, e.Outcome, e.EffectRef, e.ToolName
			r.InputSHA256, r.ReconciledBy = e.InputSHA256, e.ReconciledBy
			out = append(out, r)
		case *contracts.ContentDestroyed:
			r := base
			r.Kind, r.Outcome, r.MatterID, r.DestroyedAt = KindDestruction, e.Reason, e.MatterID, l.CreatedAt
			r.RetentionDays, r.RetentionSource, r.RequestedBy, r.ConfirmedBy = e.RetentionDays, e.RetentionSource, e.RequestedBy, e.ConfirmedBy
			r.BackupsUntil = e.BackupsUntil
			out = append(out, r)
		}
		if !wasTerminal && st.Status.Terminal() {
			r := base
			r.Kind, r.Outcome, r.FailureKind = KindRun, string(st.Status), st.FailureKind
			r.StartedAt, r.EndedAt = startedAt, l.CreatedAt
			out = append(out, r)
		}
	}
	return out, nil
}

// Issue signs a derived receipt with k at issuedAt.
func Issue(ctx context.Context, k Signer, r Receipt, issuedAt string) (Signed, error) {
	r.KeyID, r.IssuedAt = k.KeyID(), issuedAt
	return Sign(ctx, k, r)
}

// OpenReceipt checks a signed receipt's form and signature.
func OpenReceipt(keys KeySet, s Signed) (Receipt, error) {
	var r Receipt
	if s.Note != "" {
		return r, errors.New("a receipt carries no note")
	}
	if len(s.Cosignatures) > 0 {
		return r, errors.New("a receipt carries no cosignatures")
	}
	if err := open(keys, s, &r, func() string { return r.KeyID }); err != nil {
		return r, err
	}
	if r.Schema != ReceiptSchema {
		return r, fmt.Errorf("schema %q is not %s", r.Schema, ReceiptSchema)
	}
	if r.Seq < 1 || !contracts.IsHash(r.LineSHA256) {
		return r, errors.New("its seq or line hash is malformed")
	}
	return r, nil
}

// sameFacts compares what a receipt says about the ledger with what the
// ledger says, naming the first field that differs.
func sameFacts(got, want Receipt) error {
	got.KeyID, got.IssuedAt = "", ""
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	if string(a) == string(b) {
		return nil
	}
	var ma, mb map[string]any
	_ = json.Unmarshal(a, &ma)
	_ = json.Unmarshal(b, &mb)
	for k, v := range mb {
		if fmt.Sprint(ma[k]) != fmt.Sprint(v) {
			return fmt.Errorf("its %s is %v, the ledger says %v", k, ma[k], v)
		}
	}
	for k, v := range ma {
		if _, ok := mb[k]; !ok {
			return fmt.Errorf("its %s is %v, the ledger has none", k, v)
		}
	}
	return errors.New("it differs from the ledger")
}

// NeedsReceipt reports whether a line may call for a receipt: the run's
// start, an executed effect, a reconciliation, a run's end or the
// destruction of its content. (A model.usage that takes a run
// over its cost cap ends it too; a caller holding the folded state checks
// that with RunStatus.Terminal.)
func NeedsReceipt(l contracts.Line) bool {
	switch e := l.Event.(type) {
	case *contracts.ToolCompleted:
		return e.EffectRef != "" && !e.Reused
	case *contracts.RunStarted, *contracts.EffectReconciled, *contracts.RunCompleted, *contracts.RunFailed, *contracts.ContentDestroyed:
		return true
	}
	return false
}
