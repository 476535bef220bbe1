package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant"
)

// ExpiringNotice is how long before its expiry a pending warrant is
// announced as expiring (warrant.expiring).
const ExpiringNotice = time.Hour

const (
	expiringPfx  = "WEXP#"  // pending, not yet announced
	noticedPfx   = "WEXPN#" // pending, announced
	expiringDone = "WEXPDONE"
)

// expiringShardOf spreads warrants over GSI2 partitions by the first hex
// digit of the approval id.
func expiringShardOf(approval string) string { return expiringPfx + approval[:1] }

// ExpiringWarrants lists the warrants whose notice time (an hour before
// expiry) passed by now and that were not yet announced or decided, by
// GSI2 (never a scan), each read back consistently, at most limit.
func (s *Store) ExpiringWarrants(ctx context.Context, now time.Time, limit int) ([]warrant.Warrant, error) {
	return s.warrantsIn(ctx, shards(expiringPfx), fmtTime(now), limit)
}

// PendingWarrants lists the warrants still in the expiring index, announced
// or not (the pending ones, and any decided since whose index entry the
// decision already moved are not among them), at most limit: what the
// sweeper's pending-age metric is made of.
func (s *Store) PendingWarrants(ctx context.Context, limit int) ([]warrant.Warrant, error) {
	return s.warrantsIn(ctx, append(shards(expiringPfx), shards(noticedPfx)...), "~", limit)
}

// warrantsIn reads the warrants of GSI2 partitions up to sort key upTo,
// each read back from the table consistently.
func (s *Store) warrantsIn(ctx context.Context, parts []string, upTo string, limit int) ([]warrant.Warrant, error) {
	var out []warrant.Warrant
	for _, shard := range parts {
		const kc = "#GSI2PK = :shard AND #GSI2SK <= :now"
		in := &dynamodb.QueryInput{
			TableName: aws.String(s.table), IndexName: aws.String(IndexGSI2),
			KeyConditionExpression: aws.String(kc), ExpressionAttributeNames: names(kc),
			ExpressionAttributeValues: map[string]types.AttributeValue{":shard": str(shard), ":now": str(upTo)},
		}
		err := s.queryPages(ctx, in, func(k map[string]types.AttributeValue) (bool, error) {
			pk, _ := k[AttrPK].(*types.AttributeValueMemberS)
			sk, _ := k[AttrSK].(*types.AttributeValueMemberS)
			if pk == nil || sk == nil {
				return false, nil
			}
			m, err := s.getItem(ctx, pk.Value, sk.Value)
			if err != nil || m == nil {
				return false, err
			}
			it, err := unmarshal[warrantItem](m)
			if err != nil {
				return false, err
			}
			out = append(out, it.warrant())
			return limit > 0 && len(out) >= limit, nil
		})
		if err != nil || (limit > 0 && len(out) >= limit) {
			return out, wrap("expiring warrants", err)
		}
	}
	return out, nil
}

// ExpiryNoticed takes a warrant out of the expiring index: announced and
// still pending (it stays among the pending ones PendingWarrants counts), or
// no longer pending. The next sweep does not list it again.
func (s *Store) ExpiryNoticed(ctx context.Context, firm, run, approval string, stillPending bool) error {
	if !idsOK(firm, run, approval) {
		return fail(warrant.ErrNotFound, nil, "approval %q", approval)
	}
	to := expiringDone
	if stillPending {
		to = noticedPfx + approval[:1]
	}
	u := newUpdate().set(AttrGSI2PK, str(to))
	err := s.updateItem(ctx, s.txUpdate(key(runPK(firm, run), aprSK(approval)), u, "attribute_exists(#SK)", nil))
	if _, ok := conditionFailed(err); ok {
		return nil // gone: nothing to announce
	}
	return wrap("expiry noticed", err)
}
