package dynamo

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// Retention (issue 26). A finished run waits in GSI2 under
// RETAIN#<first hex digit of its id>, sorted by when the sweeper should
// next look at it (setDone puts it there due at once, its end). The
// sweeper's retention pass reads the due ones (RetentionDue), works out
// the retention in force (the matter's, else the firm's) and either
// destroys the run's content (DestroyContent moves it to DONE) or moves it
// to when it falls due, at the latest a week on (RetainUntil), so that a
// retention set or shortened later reaches it too. A run with nothing to
// destroy (no data key of its own, or destroyed) leaves the shards. A
// destruction puts the run back, due at once: the pass that looks at a run
// first catches up its projection if the stream lost the line's record.
//
// A run is also listed among its matter's runs, in GSI1 under
// FIRM#<firm>#MATTER#<matter>#RUNS sorted by creation (RunsOfMatter), for a
// destruction on instruction and a hold's checks; runs created before
// this change are not listed there.
const retainPrefix = "RETAIN#"

func retainShardOf(run string) string { return retainPrefix + run[:1] }

// RetainShards are the GSI2 partitions of finished runs awaiting their
// retention.
func RetainShards() []string { return shards(retainPrefix) }

func matterRunsPK(firm, matter string) string { return "FIRM#" + firm + "#MATTER#" + matter + "#RUNS" }

// ofMatter places a new run item among its matter's runs.
func (it runItem) ofMatter() runItem {
	if it.MatterID != "" {
		it.GSI1PK, it.GSI1SK = matterRunsPK(it.FirmID, it.MatterID), it.CreatedAt+"#"+it.RunID
	}
	return it
}

// RetentionDue finds finished runs whose retention is due to be looked at
// by now (GSI2, never a scan), at most limit, shared among the shards.
func (s *Store) RetentionDue(ctx context.Context, now time.Time, limit int) ([]warrant.RunRef, error) {
	return s.dueRuns(ctx, "retention due", RetainShards(), now, limit)
}

// RetainUntil moves a finished run's next retention look to next; a zero
// next takes it out of the retention shards (nothing is left to destroy:
// its content was destroyed, or it has no data key of its own). A run
// that is no longer in the shards (destroyed meanwhile) is left as it is.
func (s *Store) RetainUntil(ctx context.Context, firm, run string, next time.Time) error {
	const op = "retain until"
	if !idsOK(firm, run) {
		return fail(warrant.ErrNotFound, nil, "run %q", run)
	}
	u := newUpdate().set(AttrGSI2SK, str(fmtTime(next)))
	if next.IsZero() {
		u = newUpdate().set(AttrGSI2PK, str(doneShard))
	}
	// A finished run is in its retention shard or in DONE (minidyn refuses
	// begins_with on a missing attribute, so the test is <> DONE).
	const cond = "#status IN (:completed, :failed, :aborted) AND #GSI2PK <> :done"
	err := s.updateItem(ctx, s.txUpdate(key(runPK(firm, run), skRun), u, cond, map[string]types.AttributeValue{
		":completed": str(string(warrant.RunCompleted)), ":failed": str(string(warrant.RunFailed)),
		":aborted": str(string(warrant.RunAborted)), ":done": str(doneShard)}))
	if old, ok := conditionFailed(err); ok {
		old, rerr := s.oldImage(ctx, old, runPK(firm, run), skRun)
		switch {
		case rerr != nil:
			return wrap(op, rerr)
		case old == nil:
			return fail(warrant.ErrNotFound, err, "run %s", run)
		}
		it, _ := unmarshal[runItem](old)
		if !warrant.RunStatus(it.Status).Terminal() {
			return fail(warrant.ErrRunNotInState, err, "run %s is %s", run, it.Status)
		}
		return nil // out of the shards already
	}
	return wrap(op, err)
}

// RunsOfMatter lists a matter's runs (GSI1: eventually consistent; a
// caller that acts on one reads it again), oldest first.
func (s *Store) RunsOfMatter(ctx context.Context, firm, matter string) ([]warrant.Run, error) {
	if !idsOK(firm, matter) {
		return nil, nil
	}
	var out []warrant.Run
	const kc = "#GSI1PK = :pk"
	in := &dynamodb.QueryInput{TableName: aws.String(s.table), IndexName: aws.String(IndexGSI1),
		KeyConditionExpression: aws.String(kc), ExpressionAttributeNames: names(kc),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(matterRunsPK(firm, matter))}}
	err := s.queryPages(ctx, in, func(m map[string]types.AttributeValue) (bool, error) {
		it, err := unmarshal[runItem](m)
		if err != nil {
			return true, err
		}
		if it.FirmID == firm && it.MatterID == matter && it.SK == skRun {
			out = append(out, it.run())
		}
		return false, nil
	})
	return out, wrap("runs of matter", err)
}

// A destruction order (warrant.DestructionOrder): FIRM#<firm> /
// DESTROY#<matter>, one per matter, replaced by the next request once done
// or expired (each run's content.destroyed line and the firm log's receipt
// are the lasting record). A confirmed order waits in GSI2 under SHRED
// until it is done, for the sweeper to finish what its confirming call
// did not. A requested order is in GSI2 already, under SHREDREQ (which no
// one reads): its confirmation moves its index keys rather than adding
// them, since minidyn (v0.8.2) loses another item's index entry when an
// update adds an item's first index keys, and the sweeper's query of SHRED
// then missed the confirmed order.
const (
	skOrder        = "DESTROY#"
	orderRequested = "SHREDREQ"
	orderShard     = "SHRED"
	orderDone      = "SHREDDONE"
	orderAttempts  = 3
)

type orderItem struct {
	PK              string `dynamodbav:"PK"`
	SK              string `dynamodbav:"SK"`
	GSI2PK          string `dynamodbav:"GSI2PK,omitempty"`
	GSI2SK          string `dynamodbav:"GSI2SK,omitempty"`
	FirmID          string `dynamodbav:"firm_id"`
	MatterID        string `dynamodbav:"matter_id"`
	Status          string `dynamodbav:"status"`
	RequestedBy     string `dynamodbav:"requested_by"`
	RequestedByName string `dynamodbav:"requested_by_name,omitempty"`
	Reason          string `dynamodbav:"reason"`
	RequestedAt     string `dynamodbav:"requested_at"`
	ExpiresAt       string `dynamodbav:"expires_at"`
	ConfirmedBy     string `dynamodbav:"confirmed_by,omitempty"`
	ConfirmedByName string `dynamodbav:"confirmed_by_name,omitempty"`
	ConfirmedAt     string `dynamodbav:"confirmed_at,omitempty"`
	DoneAt          string `dynamodbav:"done_at,omitempty"`
}

func (it orderItem) order() warrant.DestructionOrder {
	return warrant.DestructionOrder{FirmID: it.FirmID, MatterID: it.MatterID, Status: it.Status,
		RequestedBy: it.RequestedBy, RequestedByName: it.RequestedByName, Reason: it.Reason,
		RequestedAt: parseTime(it.RequestedAt), ExpiresAt: parseTime(it.ExpiresAt),
		ConfirmedBy: it.ConfirmedBy, ConfirmedByName: it.ConfirmedByName, ConfirmedAt: parseTime(it.ConfirmedAt),
		DoneAt: parseTime(it.DoneAt)}
}

func orderSK(matter string) string { return skOrder + matter }

// GetDestructionOrder reads a matter's destruction order (consistently);
// none is ErrNotFound.
func (s *Store) GetDestructionOrder(ctx context.Context, firm, matter string) (warrant.DestructionOrder, error) {
	if !idsOK(firm, matter) {
		return warrant.DestructionOrder{}, fail(warrant.ErrNotFound, nil, "matter %q", matter)
	}
	m, err := s.getItem(ctx, firmPK(firm), orderSK(matter))
	if err != nil {
		return warrant.DestructionOrder{}, wrap("get destruction order", err)
	}
	if m == nil {
		return warrant.DestructionOrder{}, fail(warrant.ErrNotFound, nil, "no destruction order for matter %s", matter)
	}
	it, err := unmarshal[orderItem](m)
	if err != nil {
		return warrant.DestructionOrder{}, wrap("get destruction order", err)
	}
	return it.order(), nil
}

// RequestDestruction records o (its firm, matter, requester and reason;
// requested now, expiring warrant.DestructionRequestTTL later) as the
// matter's destruction order, awaiting another counsel's confirmation, in
// one transaction with a check that the matter is not on hold. A matter
// with a live order (requested and not expired, or confirmed and not done)
// is warrant.ErrDestructionPending and returns that order; a matter on
// hold is warrant.ErrMatterOnHold. Nothing is written on a refusal.
func (s *Store) RequestDestruction(ctx context.Context, o warrant.DestructionOrder) (warrant.DestructionOrder, error) {
	const op = "request destruction"
	if err := checkIDs(op, "firm_id", o.FirmID, "matter_id", o.MatterID); err != nil {
		return warrant.DestructionOrder{}, err
	}
	if contracts.CheckUserID("", o.RequestedBy) != nil || strings.TrimSpace(o.Reason) == "" || utf8.RuneCountInString(o.Reason) > warrant.MaxDestructionReason {
		return warrant.DestructionOrder{}, invalid(op, "a destruction request needs its requester and a reason of 1 to %d characters", warrant.MaxDestructionReason)
	}
	now := s.nowUTC()
	o.Status, o.RequestedAt, o.ExpiresAt = warrant.OrderRequested, parseTime(fmtTime(now)), parseTime(fmtTime(now.Add(warrant.DestructionRequestTTL)))
	o.ConfirmedBy, o.ConfirmedByName, o.ConfirmedAt, o.DoneAt = "", "", time.Time{}, time.Time{}
	item, err := marshal(orderItem{PK: firmPK(o.FirmID), SK: orderSK(o.MatterID), GSI2PK: orderRequested, GSI2SK: fmtTime(o.RequestedAt),
		FirmID: o.FirmID, MatterID: o.MatterID, Status: o.Status, RequestedBy: o.RequestedBy, RequestedByName: o.RequestedByName, Reason: o.Reason,
		RequestedAt: fmtTime(o.RequestedAt), ExpiresAt: fmtTime(o.ExpiresAt)})
	if err != nil {
		return warrant.DestructionOrder{}, wrap(op, err)
	}
	const cond = "attribute_not_exists(#PK) OR #status = :done OR (#status = :requested AND #expires_at < :now)"
	err = s.transact(ctx, []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String(cond),
			ExpressionAttributeNames: names(cond), ExpressionAttributeValues: map[string]types.AttributeValue{
				":done": str(warrant.OrderDone), ":requested": str(warrant.OrderRequested), ":now": str(fmtTime(now))}}},
		s.holdAbsent(o.FirmID, o.MatterID),
	})
	if _, ok := firstFailedCondition(err); ok {
		return s.orderRefusal(ctx, op, o.FirmID, o.MatterID, now, err)
	}
	if err != nil {
		return warrant.DestructionOrder{}, wrap(op, err)
	}
	return o, nil
}

// holdAbsent is a transaction's check that the matter is not on hold.
func (s *Store) holdAbsent(firm, matter string) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String(s.table), Key: key(firmPK(firm), holdSK(matter)),
		ConditionExpression: aws.String("attribute_not_exists(#PK)"), ExpressionAttributeNames: names("#PK")}}
}

// orderRefusal says why a write of a matter's order was refused: read,
// not taken from the cancellation reasons (minidyn reports only the first
// failing item), the hold first, then the order.
func (s *Store) orderRefusal(ctx context.Context, op, firm, matter string, now time.Time, cause error) (warrant.DestructionOrder, error) {
	held, herr := s.GetHold(ctx, firm, matter)
	switch {
	case herr == nil:
		return warrant.DestructionOrder{}, fail(warrant.ErrMatterOnHold, cause, "matter %s is on hold since %s, placed by %s",
			matter, fmtTime(held.PlacedAt), held.By)
	case !errors.Is(herr, warrant.ErrNotFound):
		return warrant.DestructionOrder{}, wrap(op, herr)
	}
	cur, rerr := s.GetDestructionOrder(ctx, firm, matter)
	switch {
	case rerr == nil && (cur.Status == warrant.OrderConfirmed || (cur.Status == warrant.OrderRequested && !cur.ExpiresAt.Before(now))):
		return cur, fail(warrant.ErrDestructionPending, cause, "matter %s: destruction %s by %s at %s", matter, cur.Status,
			cur.RequestedBy, fmtTime(cur.RequestedAt))
	case rerr != nil && !errors.Is(rerr, warrant.ErrNotFound):
		return warrant.DestructionOrder{}, wrap(op, rerr)
	}
	return warrant.DestructionOrder{}, fail(warrant.ErrOrderMoved, cause, "%s: matter %s changed meanwhile", op, matter)
}

// ConfirmDestruction confirms a matter's requested destruction by by (a
// user id; byName is shown, never compared), who is not its requester, in
// one transaction with a check that the matter is not on hold; the order
// then waits in the sweeper's shard until it is done. It returns the order
// as confirmed. The same confirmation again (a retry) returns the order.
// Refusals, nothing written: no request, or one that expired,
// warrant.ErrNoOrder; a confirmation by the requester warrant.ErrSelfConfirm; one
// confirmed by another user, warrant.ErrDestructionPending; a matter on
// hold, warrant.ErrMatterOnHold.
func (s *Store) ConfirmDestruction(ctx context.Context, firm, matter, by, byName string) (warrant.DestructionOrder, error) {
	const op = "confirm destruction"
	if !idsOK(firm, matter) {
		return warrant.DestructionOrder{}, fail(warrant.ErrNoOrder, nil, "matter %q", matter)
	}
	if contracts.CheckUserID("", by) != nil {
		return warrant.DestructionOrder{}, invalid(op, "a confirmation names its user")
	}
	now := s.nowUTC()
	cur, err := s.GetDestructionOrder(ctx, firm, matter)
	switch {
	case errors.Is(err, warrant.ErrNotFound):
		return warrant.DestructionOrder{}, fail(warrant.ErrNoOrder, err, "matter %s", matter)
	case err != nil:
		return warrant.DestructionOrder{}, wrap(op, err)
	case cur.Status == warrant.OrderConfirmed && cur.ConfirmedBy == by:
		return cur, nil
	case cur.Status == warrant.OrderConfirmed:
		return cur, fail(warrant.ErrDestructionPending, nil, "matter %s: destruction confirmed by %s", matter, cur.ConfirmedBy)
	case cur.Status != warrant.OrderRequested || cur.ExpiresAt.Before(now):
		return warrant.DestructionOrder{}, fail(warrant.ErrNoOrder, nil, "matter %s: the last request is %s", matter, cur.Status)
	case cur.RequestedBy == by:
		return cur, fail(warrant.ErrSelfConfirm, nil, "matter %s", matter)
	}
	at := fmtTime(now)
	u := newUpdate().set("status", str(warrant.OrderConfirmed)).set("confirmed_by", str(by)).set("confirmed_at", str(at)).
		set(AttrGSI2PK, str(orderShard)).set(AttrGSI2SK, str(at))
	if byName != "" {
		u.set("confirmed_by_name", str(byName))
	}
	const cond = "#status = :requested AND #requested_at = :req AND #expires_at >= :now"
	upd := s.txUpdate(key(firmPK(firm), orderSK(matter)), u, cond, map[string]types.AttributeValue{
		":requested": str(warrant.OrderRequested), ":req": str(fmtTime(cur.RequestedAt)), ":now": str(at)})
	err = s.transact(ctx, []types.TransactWriteItem{{Update: upd}, s.holdAbsent(firm, matter)})
	if _, ok := firstFailedCondition(err); ok {
		now2, rerr := s.GetDestructionOrder(ctx, firm, matter)
		if rerr == nil && now2.Status == warrant.OrderConfirmed && now2.ConfirmedBy == by {
			return now2, nil // this confirmation, committed before its answer was lost
		}
		return s.orderRefusal(ctx, op, firm, matter, now, err)
	}
	if err != nil {
		return warrant.DestructionOrder{}, wrap(op, err)
	}
	cur.Status, cur.ConfirmedBy, cur.ConfirmedByName, cur.ConfirmedAt = warrant.OrderConfirmed, by, byName, parseTime(at)
	return cur, nil
}

// DestructionOrders lists the confirmed orders not yet done (GSI2 SHRED),
// at most limit, read back consistently.
func (s *Store) DestructionOrders(ctx context.Context, limit int) ([]warrant.DestructionOrder, error) {
	var out []warrant.DestructionOrder
	const kc = "#GSI2PK = :shard"
	in := &dynamodb.QueryInput{TableName: aws.String(s.table), IndexName: aws.String(IndexGSI2),
		KeyConditionExpression: aws.String(kc), ExpressionAttributeNames: names(kc),
		ExpressionAttributeValues: map[string]types.AttributeValue{":shard": str(orderShard)}}
	err := s.queryPages(ctx, in, func(m map[string]types.AttributeValue) (bool, error) {
		pk, _ := m[AttrPK].(*types.AttributeValueMemberS)
		sk, _ := m[AttrSK].(*types.AttributeValueMemberS)
		if pk == nil || sk == nil || !strings.HasPrefix(pk.Value, "FIRM#") || !strings.HasPrefix(sk.Value, skOrder) {
			return false, nil
		}
		o, err := s.GetDestructionOrder(ctx, strings.TrimPrefix(pk.Value, "FIRM#"), strings.TrimPrefix(sk.Value, skOrder))
		if errors.Is(err, warrant.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return true, err
		}
		if o.Status == warrant.OrderConfirmed {
			out = append(out, o)
		}
		return limit > 0 && len(out) >= limit, nil
	})
	return out, wrap("destruction orders", err)
}

// FinishDestruction marks a confirmed order done (it leaves the sweeper's
// shard); an order already done, or replaced, is left as it is.
func (s *Store) FinishDestruction(ctx context.Context, o warrant.DestructionOrder) error {
	const op = "finish destruction"
	if !idsOK(o.FirmID, o.MatterID) {
		return fail(warrant.ErrNotFound, nil, "matter %q", o.MatterID)
	}
	u := newUpdate().set("status", str(warrant.OrderDone)).set("done_at", str(fmtTime(s.nowUTC()))).set(AttrGSI2PK, str(orderDone))
	const cond = "#status = :confirmed AND #confirmed_at = :at"
	err := s.updateItem(ctx, s.txUpdate(key(firmPK(o.FirmID), orderSK(o.MatterID)), u, cond, map[string]types.AttributeValue{
		":confirmed": str(warrant.OrderConfirmed), ":at": str(fmtTime(o.ConfirmedAt))}))
	if _, ok := conditionFailed(err); ok {
		return nil
	}
	return wrap(op, err)
}
