package dynamo

import (
	"bytes"
	"context"
	"iter"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
)

// CreateWarrantRequest holds a running run on a new warrant in one
// transaction: the run goes running -> held (held_on = the approval id), the
// APR# item is put pending (listed in GSI1), and the lines (tool.requested,
// run.blocked) are stored. A run that is not running is ErrRunNotInState
// (missing: ErrNotFound); a reused approval id is ErrWarrantExists; an input
// that does not hash to ToolInputHash is ErrHashMismatch.
func (s *Store) CreateWarrantRequest(ctx context.Context, w warrant.Warrant, lines ...contracts.Line) error {
	const op = "create warrant request"
	if err := checkIDs(op, "firm_id", w.FirmID, "run_id", w.RunID, "approval_id", w.ApprovalID); err != nil {
		return err
	}
	if err := checkKey(op, warrant.EffectKey{ToolName: w.ToolName, InputSHA256: w.ToolInputHash, Attempt: w.Attempt}); err != nil {
		return err
	}
	// Counsel reads Input and signs ToolInputHash: they must be the same
	// call, or the signature would cover something nobody saw. A sealed
	// input (issue 26) is held to it by whoever opens it (agent.OpenWarrant)
	// and by the run.blocked line stored with it.
	if got, err := contracts.InputHash(w.Input); !seal.IsSealed(w.Input) && (err != nil || got != w.ToolInputHash) {
		return fail(warrant.ErrHashMismatch, err, "warrant input does not hash to tool_input_hash")
	}
	parsed, err := checkLines(op, w.FirmID, w.RunID, lines)
	if err != nil {
		return err
	}
	now := s.nowUTC()
	if w.RequestedAt.IsZero() {
		w.RequestedAt = now
	}
	if w.ExpiresAt.IsZero() {
		w.ExpiresAt = w.RequestedAt.Add(warrant.DefaultWarrantTTL)
	}
	if !w.ExpiresAt.After(w.RequestedAt) {
		return invalid(op, "expires_at must be after requested_at")
	}
	pk := runPK(w.FirmID, w.RunID)
	item, err := marshal(warrantItem{
		PK: pk, SK: aprSK(w.ApprovalID),
		// The sparse index: only a pending warrant has GSI1 keys, so GSI1
		// lists exactly the firm's open requests, oldest first.
		GSI1PK: pendingPK(w.FirmID), GSI1SK: fmtTime(w.RequestedAt) + "#" + w.ApprovalID,
		GSI2PK: expiringShardOf(w.ApprovalID), GSI2SK: fmtTime(w.ExpiresAt.Add(-ExpiringNotice)),
		FirmID: w.FirmID, RunID: w.RunID, ApprovalID: w.ApprovalID, MatterID: w.MatterID,
		ToolName: w.ToolName, ToolUseID: w.ToolUseID, ToolInputHash: w.ToolInputHash, Input: string(w.Input),
		Attempt: attemptAttr(w.Attempt), RiskTier: w.RiskTier, Reason: w.Reason, HumanSummary: w.HumanSummary, RequestedBy: w.RequestedBy, RequestedName: w.RequestedByName,
		RequestedAt: fmtTime(w.RequestedAt), ExpiresAt: fmtTime(w.ExpiresAt), Status: string(warrant.WarrantPending),
		FiredRules: firedRulesAttr(w.FiredRules), PolicyVersion: w.PolicyVersion, ToolServer: w.ToolServer, ToolSchema: w.ToolSchemaSHA256,
	})
	if err != nil {
		return wrap(op, err)
	}
	if err := checkItemSize(item, "the tool's input is too large to hold for counsel", "approval %s: the warrant", w.ApprovalID); err != nil {
		return err
	}
	if len(parsed) == 0 {
		return invalid(op, "a hold is recorded by its lines")
	}
	h, err := s.headOf(ctx, w.FirmID, w.RunID, parsed)
	if err != nil {
		return wrap(op, err)
	}
	hc, hv := h.cond()
	hv[":running"] = str(string(warrant.RunRunning))
	items := []types.TransactWriteItem{
		{Update: s.txUpdate(key(pk, skRun),
			// Held: nobody works on it, and the sweeper looks again when
			// the warrant expires.
			setLease(h.set(newUpdate().set("status", str(string(warrant.RunHeld))).set("held_on", str(w.ApprovalID)).
				set("updated_at", str(fmtTime(now)))), "", w.ExpiresAt),
			// Only a running run can block: a run already held waits on
			// exactly one warrant, and a finished run asks for nothing.
			"#status = :running AND "+hc, hv)},
		{Put: &types.Put{
			TableName: aws.String(s.table),
			Item:      item,
			// A new approval id: an existing warrant (pending, signed or
			// burnt) is never reset to pending.
			ConditionExpression:                 aws.String("attribute_not_exists(#SK)"),
			ExpressionAttributeNames:            names("#SK"),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
	}
	for _, l := range parsed {
		items = append(items, types.TransactWriteItem{Put: s.linePut(pk, l)})
	}
	items = append(items, s.stepPuts(ctx, w.FirmID, w.RunID, parsed)...) // last: no condition
	err = s.transact(ctx, items)
	if c, ok := firstFailedCondition(err); ok {
		if s.committed(ctx, pk, parsed) {
			return nil
		}
		switch c.index {
		case 0:
			return s.runRefused(ctx, c.item, pk, w.RunID, isRunning, parsed[0].Seq, err)
		case 1:
			return fail(warrant.ErrWarrantExists, err, "approval %s", w.ApprovalID)
		default:
			return &SeqTakenError{Seq: parsed[c.index-2].Seq, Err: err}
		}
	}
	return wrap(op, err)
}

// DecideWarrant records counsel's decision on a pending warrant and stores the
// approval.decided line, in one transaction. Counsel's edit, if any, is an
// item of its own beside the warrant (editItem), put in the same
// transaction. Missing is ErrNotFound, already decided ErrWarrantNotPending,
// a presented hash other than the warrant's ErrHashMismatch, past expires_at
// ErrWarrantExpired, the line's seq taken ErrSeqTaken, and a decided warrant
// or an edit too large for an item ErrTooLarge (its message names the note
// or the edit); in each case nothing is written. It returns the decided
// warrant.
func (s *Store) DecideWarrant(ctx context.Context, firm, run, approvalID string, d warrant.CounselDecision, line contracts.Line) (warrant.Warrant, error) {
	const op = "decide warrant"
	if d.Decision != warrant.DecisionApproved && d.Decision != warrant.DecisionDenied {
		return warrant.Warrant{}, invalid(op, "decision must be approved or denied, got %q", d.Decision)
	}
	if d.DecidedBy == "" {
		return warrant.Warrant{}, invalid(op, "decided_by is required")
	}
	if !idsOK(firm, run, approvalID) {
		return warrant.Warrant{}, fail(warrant.ErrNotFound, nil, "approval %q", approvalID)
	}
	parsed, err := checkLines(op, firm, run, []contracts.Line{line})
	if err != nil {
		return warrant.Warrant{}, err
	}
	// A sealed line's edit is held to the decision by its hash, which is in
	// the clear (contracts.OpenLine re-derives it from the plaintext).
	ev, ok := parsed[0].Event.(*contracts.ApprovalDecided)
	if !ok || ev.ApprovalRequestID != approvalID || ev.Decision != d.Decision || ev.ToolInputHash != d.PresentedHash ||
		ev.EditedInputSHA256 != d.EditedHash || (!parsed[0].Sealed && !bytes.Equal(ev.EditedInput, d.EditedInput)) {
		return warrant.Warrant{}, invalid(op, "the line must be the approval.decided of this approval, decision, hash and edit")
	}
	if d.EditedHash != "" && d.Decision != warrant.DecisionApproved {
		return warrant.Warrant{}, invalid(op, "only an approval edits the call")
	}
	pk, sk := runPK(firm, run), aprSK(approvalID)
	// Read first so the answer is precise and a refused decision costs no
	// write. The read authorizes nothing: the transaction's condition
	// re-checks everything atomically.
	m, err := s.getItem(ctx, pk, sk)
	if err != nil {
		return warrant.Warrant{}, wrap(op, err)
	}
	if m == nil {
		return warrant.Warrant{}, fail(warrant.ErrNotFound, nil, "approval %s", approvalID)
	}
	cur, err := unmarshal[warrantItem](m)
	if err != nil {
		return warrant.Warrant{}, wrap(op, err)
	}
	now := s.nowUTC()
	if err := decideRefusal(cur, d.PresentedHash, now, nil); err != nil {
		if cur.Status == string(d.Decision) && cur.DecidedBy == d.DecidedBy && s.committed(ctx, pk, parsed) {
			// This very decision, repeated: its line is stored, so the
			// edit is the one stored beside the warrant.
			if cur.EditedHash != "" && cur.EditedInput == "" {
				cur.EditedInput = string(d.EditedInput)
			}
			return cur.warrant(), nil
		}
		return warrant.Warrant{}, err
	}
	next := cur
	next.Status, next.Decision, next.DecidedBy, next.DecidedAt, next.Note = string(d.Decision), string(d.Decision), d.DecidedBy, fmtTime(now), d.Note
	next.DecidedName = d.DecidedByName
	next.EditedInput, next.EditedHash = string(d.EditedInput), d.EditedHash
	// Leaving pending leaves the sparse index: the item is put back without
	// GSI1PK/GSI1SK. It is a whole-item Put of the item just read (every
	// attribute kept) rather than an UpdateItem with REMOVE, because
	// minidyn ignores REMOVE; the condition makes it exact, since nothing
	// about a warrant changes while it is pending.
	item := maps.Clone(m)
	delete(item, AttrGSI1PK)
	delete(item, AttrGSI1SK)
	item[AttrGSI2PK] = str(expiringDone) // decided: nothing to warn of
	delete(item, "note")
	decided, err := marshal(struct {
		Status     string `dynamodbav:"status"`
		Decision   string `dynamodbav:"decision"`
		DecidedBy  string `dynamodbav:"decided_by"`
		DecidedNm  string `dynamodbav:"decided_by_name,omitempty"`
		DecidedAt  string `dynamodbav:"decided_at"`
		Note       string `dynamodbav:"note,omitempty"`
		EditedHash string `dynamodbav:"edited_hash,omitempty"`
	}{next.Status, next.Decision, next.DecidedBy, next.DecidedName, next.DecidedAt, next.Note, next.EditedHash})
	if err != nil {
		return warrant.Warrant{}, wrap(op, err)
	}
	maps.Copy(item, decided)
	// The warrant grows by the decision and its note: a note beside an input
	// near a ledger line's size can pass the item limit.
	if err := checkItemSize(item, "field note: too long to record beside the warrant's input; shorten it or leave it out",
		"approval %s: the decided warrant", approvalID); err != nil {
		return warrant.Warrant{}, err
	}
	var edit map[string]types.AttributeValue
	if d.EditedHash != "" {
		if edit, err = marshal(editItem{PK: pk, SK: editSK(approvalID), ApprovalID: approvalID,
			EditedInput: string(d.EditedInput), EditedHash: d.EditedHash}); err != nil {
			return warrant.Warrant{}, wrap(op, err)
		}
		if err := checkItemSize(edit, "field edited_input: too large to record", "approval %s: the edit", approvalID); err != nil {
			return warrant.Warrant{}, err
		}
	}
	h, err := s.headOf(ctx, firm, run, parsed)
	if err != nil {
		return warrant.Warrant{}, wrap(op, err)
	}
	const cond = "#status = :pending AND #tool_input_hash = :presented AND #expires_at > :now"
	items := []types.TransactWriteItem{
		{Put: &types.Put{
			TableName: aws.String(s.table),
			Item:      item,
			// status = pending: a warrant is decided once, so a second
			// decision (or one racing the first) fails instead of flipping
			// it. tool_input_hash = :presented: the signature covers the
			// input counsel was shown. expires_at > :now: a stale request
			// cannot be signed. (A missing item fails all three.)
			ConditionExpression:      aws.String(cond),
			ExpressionAttributeNames: names(cond),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pending": str(string(warrant.WarrantPending)), ":presented": str(d.PresentedHash), ":now": str(fmtTime(now)),
			},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
		{Put: s.linePut(pk, parsed[0])},
		{Update: s.headUpdate(pk, h)},
	}
	if edit != nil {
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(s.table), Item: edit,
			// A pending warrant has no edit: one already there was
			// written by a decision that won.
			ConditionExpression: aws.String("attribute_not_exists(#SK)"), ExpressionAttributeNames: names("#SK"),
		}})
	}
	err = s.transact(ctx, items)
	if c, ok := firstFailedCondition(err); ok {
		if s.committed(ctx, pk, parsed) {
			return next.warrant(), nil
		}
		switch c.index {
		case 1:
			return warrant.Warrant{}, &SeqTakenError{Seq: parsed[0].Seq, Err: err}
		case 2:
			return warrant.Warrant{}, s.runRefused(ctx, c.item, pk, run, nil, parsed[0].Seq, err)
		case 3:
			return warrant.Warrant{}, fail(warrant.ErrWarrantNotPending, err, "approval %s was edited by another decision", approvalID)
		}
		old, rerr := s.oldImage(ctx, c.item, pk, sk)
		if rerr != nil {
			return warrant.Warrant{}, wrap(op, rerr)
		}
		if old == nil {
			return warrant.Warrant{}, fail(warrant.ErrNotFound, err, "approval %s", approvalID)
		}
		it, _ := unmarshal[warrantItem](old)
		if rerr := decideRefusal(it, d.PresentedHash, now, err); rerr != nil {
			return warrant.Warrant{}, rerr
		}
		return warrant.Warrant{}, fail(warrant.ErrWarrantNotPending, err, "approval %s changed while deciding", approvalID)
	}
	if err != nil {
		return warrant.Warrant{}, wrap(op, err)
	}
	return next.warrant(), nil
}

// decideRefusal says why a warrant cannot take a decision, or nil.
func decideRefusal(it warrantItem, presented string, now time.Time, cause error) error {
	switch {
	case it.Status != string(warrant.WarrantPending):
		return fail(warrant.ErrWarrantNotPending, cause, "approval %s is %s", it.ApprovalID, it.Status)
	case it.ToolInputHash != presented:
		return fail(warrant.ErrHashMismatch, cause, "approval %s", it.ApprovalID)
	case expiredAt(it.ExpiresAt, now):
		return fail(warrant.ErrWarrantExpired, cause, "approval %s expired at %s", it.ApprovalID, it.ExpiresAt)
	}
	return nil
}

// GetWarrant reads a warrant from the base table (consistently). Status is
// the stored status; a pending warrant past ExpiresAt is not signable.
func (s *Store) GetWarrant(ctx context.Context, firm, run, approvalID string) (warrant.Warrant, error) {
	it, err := s.readWarrant(ctx, firm, run, approvalID)
	if err != nil {
		return warrant.Warrant{}, err
	}
	return it.warrant(), nil
}

func (s *Store) readWarrant(ctx context.Context, firm, run, approvalID string) (warrantItem, error) {
	if !idsOK(firm, run, approvalID) {
		return warrantItem{}, fail(warrant.ErrNotFound, nil, "approval %q", approvalID)
	}
	m, err := s.getItem(ctx, runPK(firm, run), aprSK(approvalID))
	if err != nil {
		return warrantItem{}, wrap("get warrant", err)
	}
	if m == nil {
		return warrantItem{}, fail(warrant.ErrNotFound, nil, "approval %s", approvalID)
	}
	it, err := unmarshal[warrantItem](m)
	if err != nil {
		return warrantItem{}, wrap("get warrant", err)
	}
	if it.EditedHash != "" && it.EditedInput == "" {
		// The edit is stored beside the warrant (editItem). One missing
		// leaves the warrant without it, which the resume's check of the
		// ledger's edit against the warrant's refuses.
		em, err := s.getItem(ctx, runPK(firm, run), editSK(approvalID))
		if err != nil {
			return warrantItem{}, wrap("get warrant", err)
		}
		if em != nil {
			e, err := unmarshal[editItem](em)
			if err != nil {
				return warrantItem{}, wrap("get warrant", err)
			}
			if e.EditedHash == it.EditedHash {
				it.EditedInput = e.EditedInput
			}
		}
	}
	return it, nil
}

// GetReleaseAuthorizedRequest returns the warrant a resume may act on: it
// must exist in that firm's run (another firm's approval id is simply
// ErrNotFound), belong to matterID (else ErrNotFound), and be decided and
// live: consumed is ErrWarrantConsumed, past expiry ErrWarrantExpired,
// pending ErrWarrantNotDecided. The read is consistent, on the base table.
func (s *Store) GetReleaseAuthorizedRequest(ctx context.Context, approvalID, firmID, runID, matterID string) (warrant.Warrant, error) {
	it, err := s.readWarrant(ctx, firmID, runID, approvalID)
	if err != nil {
		return warrant.Warrant{}, err
	}
	if it.FirmID != firmID || it.RunID != runID || it.MatterID != matterID {
		return warrant.Warrant{}, fail(warrant.ErrNotFound, nil, "approval %s", approvalID)
	}
	if err := releaseRefusal(it, "", s.nowUTC(), nil); err != nil {
		return warrant.Warrant{}, err
	}
	return it.warrant(), nil
}

// releaseRefusal says why a warrant cannot release a run (with decision, if
// given), or nil.
func releaseRefusal(it warrantItem, decision warrant.Decision, now time.Time, cause error) error {
	switch st := warrant.WarrantStatus(it.Status); {
	case st == warrant.WarrantConsumed:
		return fail(warrant.ErrWarrantConsumed, cause, "approval %s", it.ApprovalID)
	case st == warrant.WarrantRefused:
		return fail(warrant.ErrWarrantRefused, cause, "approval %s", it.ApprovalID)
	case st == warrant.WarrantExpired || expiredAt(it.ExpiresAt, now):
		return fail(warrant.ErrWarrantExpired, cause, "approval %s expired at %s", it.ApprovalID, it.ExpiresAt)
	case st != warrant.WarrantApproved && st != warrant.WarrantDenied:
		return fail(warrant.ErrWarrantNotDecided, cause, "approval %s is %s", it.ApprovalID, it.Status)
	case decision != "" && it.Status != string(decision):
		return fail(warrant.ErrWarrantNotDecided, cause, "approval %s was %s, not %s", it.ApprovalID, it.Status, decision)
	}
	return nil
}

// ResumeClaim releases a held run under its decided warrant in ONE
// TransactWriteItems: burn the warrant (approved|denied -> consumed), release
// the run (held on this warrant -> running), claim the warrant's effect
// attempt (approved: claimed by Owner; denied: declined, so nothing in the
// run can execute that call later), store the run.released line. All or
// nothing. A failure says which
// condition failed: the warrant (ErrWarrantConsumed, ErrWarrantNotDecided,
// ErrWarrantExpired, ErrHashMismatch, ErrNotFound), the run
// (ErrRunNotInState), the effect (ErrEffectClaimed) or the line
// (ErrSeqTaken).
func (s *Store) ResumeClaim(ctx context.Context, c warrant.ResumeClaim, released contracts.Line) error {
	const op = "resume claim"
	approved := c.Decision == warrant.DecisionApproved
	if !approved && c.Decision != warrant.DecisionDenied {
		return invalid(op, "decision must be approved or denied, got %q", c.Decision)
	}
	if !idsOK(c.FirmID, c.RunID, c.ApprovalID) {
		return fail(warrant.ErrNotFound, nil, "approval %q", c.ApprovalID)
	}
	k := warrant.EffectKey{ToolName: c.ToolName, InputSHA256: c.InputSHA256, Attempt: c.Attempt}
	if err := checkKey(op, k); err != nil {
		return err
	}
	if approved {
		if err := checkIDs(op, "effect_ref", c.EffectRef); err != nil {
			return err
		}
	}
	if c.PickupBy.IsZero() {
		return invalid(op, "a released run needs a pickup deadline")
	}
	parsed, err := checkLines(op, c.FirmID, c.RunID, []contracts.Line{released})
	if err != nil {
		return err
	}
	ev, ok := parsed[0].Event.(*contracts.RunReleased)
	if !ok || ev.ApprovalRequestID != c.ApprovalID || ev.Decision != c.Decision || ev.EffectRef != c.EffectRef {
		return invalid(op, "the line must be the run.released of this approval, decision and effect_ref")
	}
	now := s.nowUTC()
	pk := runPK(c.FirmID, c.RunID)
	h, err := s.headOf(ctx, c.FirmID, c.RunID, parsed)
	if err != nil {
		return wrap(op, err)
	}
	hc, hv := h.cond()
	hv[":held"], hv[":approval"] = str(string(warrant.RunHeld)), str(c.ApprovalID)

	// Item order matters: minidyn reports only the first failing item, so
	// the most telling condition goes first (warrant, run, effect, line).
	// The claim (or the decline) is for the very call counsel decided: the
	// requested one, or counsel's edit of it.
	aprCond := "#status = :decision AND #expires_at > :now AND #tool_name = :tool AND " +
		"((attribute_not_exists(#edited_hash) AND #tool_input_hash = :hash) OR #edited_hash = :hash)"
	aprVals := map[string]types.AttributeValue{":decision": str(string(c.Decision)), ":now": str(fmtTime(now)),
		":tool": str(c.ToolName), ":hash": str(c.InputSHA256)}
	if k.Attempt > 1 {
		aprCond += " AND #attempt = :attempt"
		aprVals[":attempt"] = num(int64(k.Attempt))
	} else {
		aprCond += " AND attribute_not_exists(#attempt)"
	}
	items := []types.TransactWriteItem{
		{Update: s.txUpdate(key(pk, aprSK(c.ApprovalID)),
			newUpdate().set("status", str(string(warrant.WarrantConsumed))).set("consumed_at", str(fmtTime(now))),
			// status = :decision: the warrant is decided as the caller read
			// it and not yet consumed. consumed is terminal, so this is the
			// burn: of any number of concurrent resumes exactly one passes
			// it. A missing warrant has no status and fails it too.
			// expires_at > :now: an expired warrant releases nothing.
			aprCond, aprVals)},
		{Update: s.txUpdate(key(pk, skRun),
			setLease(h.set(newUpdate().set("status", str(string(warrant.RunRunning))).set("updated_at", str(fmtTime(now))).remove("held_on")),
				"", c.PickupBy),
			// The run is parked on this very warrant: a warrant cannot
			// release a run that is running, finished, or held on another.
			"#status = :held AND #held_on = :approval AND "+hc, hv)},
	}
	ci := claimItem{
		PK: pk, SK: effSK(k), FirmID: c.FirmID, RunID: c.RunID, ToolName: c.ToolName, InputSHA256: c.InputSHA256,
		ApprovalID: c.ApprovalID, State: string(warrant.ClaimDeclined), ClaimedAt: fmtTime(now),
	}
	ci.Attempt = attemptAttr(k.Attempt)
	if approved {
		// Reserved for the worker that takes it (TakeClaim) by the pickup
		// deadline; nobody executes it before.
		ci.EffectRef, ci.Owner, ci.LeaseUntil, ci.State = c.EffectRef, noOwner, fmtTime(c.PickupBy), string(warrant.ClaimClaimed)
	}
	claim, err := marshal(ci)
	if err != nil {
		return wrap(op, err)
	}
	items = append(items, types.TransactWriteItem{Put: s.claimPut(claim)})
	items = append(items, types.TransactWriteItem{Put: s.linePut(pk, parsed[0])})

	err = s.transact(ctx, items)
	cf, ok := firstFailedCondition(err)
	if !ok {
		return wrap(op, err)
	}
	if s.committed(ctx, pk, parsed) {
		return nil // this very resume, repeated after its answer was lost
	}
	switch {
	case cf.index == 0:
		old, rerr := s.oldImage(ctx, cf.item, pk, aprSK(c.ApprovalID))
		if rerr != nil {
			return wrap(op, rerr)
		}
		if old == nil {
			return fail(warrant.ErrNotFound, err, "approval %s", c.ApprovalID)
		}
		it, _ := unmarshal[warrantItem](old)
		if rerr := releaseRefusal(it, c.Decision, now, err); rerr != nil {
			return rerr
		}
		if _, executes := it.warrant().Executes(); it.ToolName != c.ToolName || executes != c.InputSHA256 || max(it.Attempt, 1) != max(c.Attempt, 1) {
			return fail(warrant.ErrHashMismatch, err, "approval %s signs another tool call", c.ApprovalID)
		}
		return fail(warrant.ErrWarrantConsumed, err, "approval %s changed while resuming", c.ApprovalID)
	case cf.index == 1:
		heldOnIt := func(it runItem) bool { return it.Status == string(warrant.RunHeld) && it.HeldOn == c.ApprovalID }
		return s.runRefused(ctx, cf.item, pk, c.RunID, heldOnIt, parsed[0].Seq, err)
	case cf.index == 2:
		return fail(warrant.ErrEffectClaimed, err, "%s %s attempt %d", c.ToolName, c.InputSHA256, max(c.Attempt, 1))
	default:
		return &SeqTakenError{Seq: parsed[0].Seq, Err: err}
	}
}

// ListPendingWarrants lists a firm's pending, unexpired warrants, oldest
// first, from GSI1 (see PendingWarrants). limit <= 0 means all.
func (s *Store) ListPendingWarrants(ctx context.Context, firm string, limit int) ([]warrant.Warrant, error) {
	var out []warrant.Warrant
	for w, err := range s.FirmPendingWarrants(ctx, firm, nil, limit) {
		if err != nil {
			return nil, err
		}
		if limit > 0 && len(out) == limit {
			break
		}
		out = append(out, w)
	}
	return out, nil
}

// FirmPendingWarrants yields a firm's pending, unexpired warrants, oldest
// request first, from GSI1, after the warrant after (nil: from the first).
// after need only carry what places it in the list, its RequestedAt and
// ApprovalID (the index's sort key), and the list goes on from there
// whether or not that warrant is still pending. The index is read a page at
// a time as the caller consumes: a caller that stops stops the reading. The
// index is eventually consistent: this is for showing counsel their queue,
// never for authorizing anything (DecideWarrant and ResumeClaim re-check
// the base table). batch (> 0) is how many items a query reads at most, for
// a caller that knows how many it wants (the list goes on past it). An
// error is yielded once, and ends the list.
func (s *Store) FirmPendingWarrants(ctx context.Context, firm string, after *warrant.Warrant, batch int) iter.Seq2[warrant.Warrant, error] {
	return func(yield func(warrant.Warrant, error) bool) {
		if !idsOK(firm) {
			return
		}
		kc := "#GSI1PK = :pk"
		values := map[string]types.AttributeValue{":pk": str(pendingPK(firm))}
		if after != nil {
			// A sort key condition, not ExclusiveStartKey: the position
			// need not be an item the index still holds.
			kc += " AND #GSI1SK > :after"
			values[":after"] = str(fmtTime(after.RequestedAt) + "#" + after.ApprovalID)
		}
		in := &dynamodb.QueryInput{
			TableName:                 aws.String(s.table),
			IndexName:                 aws.String(IndexGSI1),
			KeyConditionExpression:    aws.String(kc),
			ExpressionAttributeNames:  names(kc),
			ExpressionAttributeValues: values,
		}
		if batch > 0 {
			in.Limit = aws.Int32(int32(min(batch, 1000)))
		}
		now := s.nowUTC()
		for {
			page, err := s.client.Query(ctx, in)
			if err != nil {
				yield(warrant.Warrant{}, wrap("list pending warrants", err))
				return
			}
			for _, m := range page.Items {
				it, err := unmarshal[warrantItem](m)
				if err != nil {
					yield(warrant.Warrant{}, wrap("list pending warrants", err))
					return
				}
				if it.Status != string(warrant.WarrantPending) || expiredAt(it.ExpiresAt, now) {
					continue
				}
				if !yield(it.warrant(), nil) {
					return
				}
			}
			if len(page.LastEvaluatedKey) == 0 {
				return
			}
			in.ExclusiveStartKey = page.LastEvaluatedKey
		}
	}
}

// attemptAttr is the stored attempt: absent for the first, so items written
// before retries existed read the same.
func attemptAttr(n int) int {
	if n <= 1 {
		return 0
	}
	return n
}
