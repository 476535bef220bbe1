package dynamo

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// claimPut is the conditional put of a new effect claim.
func (s *Store) claimPut(item map[string]types.AttributeValue) *types.Put {
	return &types.Put{
		TableName: aws.String(s.table),
		Item:      item,
		// attribute_not_exists(SK) on EFF#<tool>#<input_sha256>: one claim per
		// tool call and input in a run, ever. Whoever creates it executes;
		// everyone else, including after a crash or a lease that passed,
		// finds the claim and does not execute again.
		ConditionExpression:                 aws.String("attribute_not_exists(#SK)"),
		ExpressionAttributeNames:            names("#SK"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// ClaimToolEffectOnce claims an effect in one round trip: the EFF# put, the
// given lines (the tool.requested line) and the claim's counters
// (c.Counters, limits.go) in one transaction, or a plain conditional
// PutItem with neither. If the effect is already claimed it returns
// claimed=false, the stored claim and no error, and nothing was written
// (the caller then writes its own lines). A claim whose lease passed is
// returned as it is (OutcomeUnknown), never taken over. A counter at its
// bound refuses the claim with a *warrant.LimitReachedError naming its
// limit, and nothing was written.
//
// The items are ordered most informative first (the claim, the lines, the
// head, then the counters in the order given), and the first failed
// condition in that order is the answer, on an endpoint that reports one
// reason (minidyn) as on one that reports all (DynamoDB, moto).
func (s *Store) ClaimToolEffectOnce(ctx context.Context, c warrant.ClaimInput, lines ...contracts.Line) (bool, *warrant.Claim, error) {
	const op = "claim tool effect"
	if err := checkIDs(op, "firm_id", c.FirmID, "run_id", c.RunID, "effect_ref", c.EffectRef); err != nil {
		return false, nil, err
	}
	if err := checkTool(op, c.ToolName, c.InputSHA256); err != nil {
		return false, nil, err
	}
	if c.Owner == "" || c.Owner == noOwner || c.LeaseUntil.IsZero() {
		return false, nil, invalid(op, "a claim needs an owner (not %q, the store's word for nobody) and a lease", noOwner)
	}
	parsed, err := checkLines(op, c.FirmID, c.RunID, lines)
	if err != nil {
		return false, nil, err
	}
	if err := checkCounters(op, c.Counters); err != nil {
		return false, nil, err
	}
	pk, sk := runPK(c.FirmID, c.RunID), effSK(warrant.EffectKey{ToolName: c.ToolName, InputSHA256: c.InputSHA256})
	item, err := marshal(claimItem{
		PK: pk, SK: sk, FirmID: c.FirmID, RunID: c.RunID, ToolName: c.ToolName, InputSHA256: c.InputSHA256,
		EffectRef: c.EffectRef, Owner: c.Owner, LeaseUntil: fmtTime(c.LeaseUntil),
		State: string(warrant.ClaimClaimed), ClaimedAt: fmtTime(s.nowUTC()),
	})
	if err != nil {
		return false, nil, wrap(op, err)
	}
	put := s.claimPut(item)
	var old map[string]types.AttributeValue
	if len(parsed) == 0 && len(c.Counters) == 0 {
		err = s.withConflictRetry(ctx, func() error {
			_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
				TableName: put.TableName, Item: put.Item, ConditionExpression: put.ConditionExpression,
				ExpressionAttributeNames:            put.ExpressionAttributeNames,
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			})
			return err
		})
		var ok bool
		if old, ok = conditionFailed(err); !ok {
			return err == nil, nil, wrap(op, err)
		}
	} else {
		items := []types.TransactWriteItem{{Put: put}}
		if len(parsed) > 0 {
			h, herr := s.headOf(ctx, c.FirmID, c.RunID, parsed)
			if herr != nil {
				return false, nil, wrap(op, herr)
			}
			for _, l := range parsed {
				items = append(items, types.TransactWriteItem{Put: s.linePut(pk, l)})
			}
			items = append(items, types.TransactWriteItem{Update: s.headUpdate(pk, h)})
		}
		counters := len(items) // the index of the first counter
		items = append(items, s.counterUpdates(c.FirmID, c.Counters)...)
		items = append(items, s.stepPuts(ctx, c.FirmID, c.RunID, parsed)...) // last: no condition
		err = s.transact(ctx, items)
		cf, ok := firstFailedCondition(err)
		switch {
		case !ok:
			return err == nil, nil, wrap(op, err)
		case cf.index >= counters:
			return false, nil, limitReached(c.Counters, cf.index-counters, err)
		case cf.index > len(parsed):
			return false, nil, s.runRefused(ctx, cf.item, pk, c.RunID, nil, parsed[0].Seq, err)
		case cf.index > 0:
			return false, nil, &SeqTakenError{Seq: parsed[cf.index-1].Seq, Err: err}
		}
		old = cf.item
	}
	old, err = s.oldImage(ctx, old, pk, sk)
	if err != nil {
		return false, nil, wrap(op, err)
	}
	if old == nil { // claimed and gone: claims are never deleted, so this is an endpoint fault
		return false, nil, wrap(op, errClaimVanished)
	}
	it, err := unmarshal[claimItem](old)
	if err != nil {
		return false, nil, wrap(op, err)
	}
	existing := it.claim()
	// Our own claim (same fresh effect_ref and owner): the SDK retried a
	// put whose answer was lost. The transaction is atomic, so our lines
	// are stored too.
	if existing.EffectRef == c.EffectRef && existing.Owner == c.Owner {
		return true, nil, nil
	}
	return false, &existing, nil
}

var errClaimVanished = &storeError{kind: warrant.ErrNotFound, detail: "effect claim condition failed but the claim is missing"}

// CompleteEffect records the outcome of a claimed effect and stores the lines
// (tool.completed) in one round trip. Only the claim's owner can complete it,
// and only once: a stale owner (or a second completion) is
// ErrNotClaimOwner, a missing claim ErrNotFound. Repeating a completion that
// was stored exactly succeeds.
func (s *Store) CompleteEffect(ctx context.Context, firm, run string, k warrant.EffectKey, owner string, c warrant.Completion, lines ...contracts.Line) error {
	const op = "complete effect"
	if c.State != warrant.ClaimCompleted && c.State != warrant.ClaimFailed {
		return invalid(op, "completion state must be completed or failed, got %q", c.State)
	}
	if err := checkKey(op, k); err != nil {
		return err
	}
	tool, inputSHA256 := k.ToolName, k.InputSHA256
	if !idsOK(firm, run) {
		return fail(warrant.ErrNotFound, nil, "effect %s", tool)
	}
	if len(c.Result) > 0 && !json.Valid(c.Result) {
		return invalid(op, "result must be JSON")
	}
	if owner == "" || owner == noOwner {
		// A claim nobody took (a resume's reservation) has no executor
		// that could know its outcome.
		return invalid(op, "only the claim's executor completes it; %q is nobody", owner)
	}
	parsed, err := checkLines(op, firm, run, lines)
	if err != nil {
		return err
	}
	pk, sk := runPK(firm, run), effSK(k)
	upd := s.txUpdate(key(pk, sk),
		newUpdate().set("state", str(string(c.State))).setStr("tool_status", c.ToolStatus).
			setStr("result", string(c.Result)).set("completed_at", str(fmtTime(s.nowUTC()))),
		// owner = :owner: a Lambda whose claim was given up on (or any
		// other writer) cannot write over the outcome. state = claimed:
		// the outcome is written once. Both fail on a missing claim, so
		// this update never creates one.
		"#owner = :owner AND #state = :claimed",
		map[string]types.AttributeValue{":owner": str(owner), ":claimed": str(string(warrant.ClaimClaimed))})
	var old map[string]types.AttributeValue
	if len(parsed) == 0 {
		err = s.updateItem(ctx, upd)
		var ok bool
		if old, ok = conditionFailed(err); !ok {
			return wrap(op, err)
		}
	} else {
		h, herr := s.headOf(ctx, firm, run, parsed)
		if herr != nil {
			return wrap(op, herr)
		}
		items := []types.TransactWriteItem{{Update: upd}}
		for _, l := range parsed {
			items = append(items, types.TransactWriteItem{Put: s.linePut(pk, l)})
		}
		items = append(items, types.TransactWriteItem{Update: s.headUpdate(pk, h)})
		items = append(items, s.stepPuts(ctx, firm, run, parsed)...) // last: no condition
		err = s.transact(ctx, items)
		cf, ok := firstFailedCondition(err)
		switch {
		case !ok:
			return wrap(op, err)
		case cf.index > len(parsed):
			if s.seqTaken(ctx, pk, parsed, nil, err) == nil {
				return nil // stored by this very completion: its answer was lost
			}
			return s.runRefused(ctx, cf.item, pk, run, nil, parsed[0].Seq, err)
		case cf.index > 0:
			return &SeqTakenError{Seq: parsed[cf.index-1].Seq, Err: err}
		}
		old = cf.item
	}
	cause := err
	old, err = s.oldImage(ctx, old, pk, sk)
	if err != nil {
		return wrap(op, err)
	}
	if old == nil {
		return fail(warrant.ErrNotFound, cause, "effect %s %s", tool, inputSHA256)
	}
	it, _ := unmarshal[claimItem](old)
	if it.Owner == owner && it.State == string(c.State) && it.ToolStatus == c.ToolStatus && bytes.Equal([]byte(it.Result), c.Result) {
		// Already stored exactly so by this owner: a retry of a completion
		// whose answer was lost. (The transaction was atomic, so its lines
		// were stored with it.)
		if len(parsed) == 0 || s.seqTaken(ctx, pk, parsed, nil, cause) == nil {
			return nil
		}
	}
	return fail(warrant.ErrNotClaimOwner, cause, "effect %s is %s, owned by %q", tool, it.State, it.Owner)
}

// GetEffect reads one attempt's effect claim (consistently).
func (s *Store) GetEffect(ctx context.Context, firm, run string, k warrant.EffectKey) (warrant.Claim, error) {
	if !idsOK(firm, run) || checkKey("", k) != nil {
		return warrant.Claim{}, fail(warrant.ErrNotFound, nil, "effect %q", k.ToolName)
	}
	m, err := s.getItem(ctx, runPK(firm, run), effSK(k))
	if err != nil {
		return warrant.Claim{}, wrap("get effect", err)
	}
	if m == nil {
		return warrant.Claim{}, fail(warrant.ErrNotFound, nil, "effect %s %s", k.ToolName, k.InputSHA256)
	}
	it, err := unmarshal[claimItem](m)
	if err != nil {
		return warrant.Claim{}, wrap("get effect", err)
	}
	return it.claim(), nil
}

// LatestEffect reads the claim of the latest attempt at a call in a run
// (consistently): nil, nil when the call was never claimed. The brain
// consults it before asking counsel, so a call that completed, was declined
// or has an unknown outcome is answered from the record rather than held
// on a warrant that could never run.
func (s *Store) LatestEffect(ctx context.Context, firm, run, tool, inputSHA256 string) (*warrant.Claim, error) {
	if !idsOK(firm, run) || checkTool("", tool, inputSHA256) != nil {
		return nil, nil
	}
	// The first attempt's key is a prefix of every retry's, and retries
	// sort by attempt: the last item under the prefix is the latest.
	const kc = "#PK = :pk AND begins_with(#SK, :eff)"
	out, err := s.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		KeyConditionExpression:   aws.String(kc),
		ExpressionAttributeNames: names(kc),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(runPK(firm, run)), ":eff": str(effSK(warrant.EffectKey{ToolName: tool, InputSHA256: inputSHA256})),
		},
		ScanIndexForward: aws.Bool(false),
		Limit:            aws.Int32(1),
		ConsistentRead:   aws.Bool(true),
	})
	if err != nil {
		return nil, wrap("latest effect", err)
	}
	if len(out.Items) == 0 {
		return nil, nil
	}
	it, err := unmarshal[claimItem](out.Items[0])
	if err != nil {
		return nil, wrap("latest effect", err)
	}
	c := it.claim()
	return &c, nil
}

// FlagForReconciliation marks a claim whose outcome is unknown for a human to
// reconcile. Missing is ErrNotFound.
func (s *Store) FlagForReconciliation(ctx context.Context, firm, run string, k warrant.EffectKey) error {
	const op = "flag for reconciliation"
	if !idsOK(firm, run) || checkKey("", k) != nil {
		return fail(warrant.ErrNotFound, nil, "effect %q", k.ToolName)
	}
	upd := s.txUpdate(key(runPK(firm, run), effSK(k)),
		newUpdate().set("needs_reconciliation", &types.AttributeValueMemberBOOL{Value: true}),
		// The claim must exist: flagging never creates a claim (which would
		// block the effect's first real execution).
		"attribute_exists(#SK)", nil)
	err := s.updateItem(ctx, upd)
	if _, ok := conditionFailed(err); ok {
		return fail(warrant.ErrNotFound, err, "effect %s %s", k.ToolName, k.InputSHA256)
	}
	return wrap(op, err)
}

// RecordOutbound records an outbound effect once per effect_ref: a repeat
// with the same effect_ref is created=false and no error (effect_ref is the
// downstream idempotency key), and the first record stays as it was.
func (s *Store) RecordOutbound(ctx context.Context, o warrant.Outbound) (bool, error) {
	const op = "record outbound"
	if err := checkIDs(op, "firm_id", o.FirmID, "run_id", o.RunID, "effect_ref", o.EffectRef); err != nil {
		return false, err
	}
	if len(o.Body) > 0 && !json.Valid(o.Body) {
		return false, invalid(op, "body must be JSON")
	}
	if o.CreatedAt.IsZero() {
		o.CreatedAt = s.nowUTC()
	}
	item, err := marshal(outboundItem{
		PK: runPK(o.FirmID, o.RunID), SK: outSK(o.EffectRef), FirmID: o.FirmID, RunID: o.RunID,
		EffectRef: o.EffectRef, ToolName: o.ToolName, Kind: o.Kind, Body: string(o.Body), CreatedAt: fmtTime(o.CreatedAt),
	})
	if err != nil {
		return false, wrap(op, err)
	}
	err = s.withConflictRetry(ctx, func() error {
		_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(s.table),
			Item:      item,
			// One record per effect_ref: the downstream system sees each
			// effect at most once however often the tool is retried.
			ConditionExpression:      aws.String("attribute_not_exists(#SK)"),
			ExpressionAttributeNames: names("#SK"),
		})
		return err
	})
	if _, ok := conditionFailed(err); ok {
		return false, nil
	}
	return err == nil, wrap(op, err)
}

// ListOutbound lists a run's outbox (consistently), in effect_ref order.
func (s *Store) ListOutbound(ctx context.Context, firm, run string) ([]warrant.Outbound, error) {
	if !idsOK(firm, run) {
		return nil, nil
	}
	const kc = "#PK = :pk AND begins_with(#SK, :out)"
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String(kc),
		ExpressionAttributeNames:  names(kc),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(runPK(firm, run)), ":out": str(skOut)},
		ConsistentRead:            aws.Bool(true),
	}
	var out []warrant.Outbound
	for {
		page, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, wrap("list outbound", err)
		}
		for _, m := range page.Items {
			it, err := unmarshal[outboundItem](m)
			if err != nil {
				return nil, wrap("list outbound", err)
			}
			out = append(out, it.outbound())
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
