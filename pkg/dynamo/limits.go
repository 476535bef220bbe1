package dynamo

import (
	"context"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant"
)

// The risk policy's counters (warrant.Counter) live in the firm's own
// partition, FIRM#<firm> / LIMIT#<limit>#<per>#<scope>#<window start>:
// n, the count, and AttrTTL, when DynamoDB may delete the item (some time
// after its window ended; TTL deletes it within days, and a later window
// never reads it). A counter is added to only in the transaction that
// writes an effect's claim, so it counts the claims written and nothing
// else: "ADD n 1", conditioned, when bounded, on
// "attribute_not_exists(n) OR n < max". The condition and the claim are
// one transaction, so no two claims can both take the last unit, however
// many run at once, and a claim refused for any reason adds nothing.
const skLimit = "LIMIT#"

// AttrTTL is the table's time-to-live attribute (epoch seconds), which
// template.yaml enables. Only counters carry it: nothing of a run expires.
const AttrTTL = "expires_epoch"

func limitSK(c warrant.Counter) string { return skLimit + c.Key() }

// checkCounters refuses counters the store cannot key or vouch for.
func checkCounters(op string, cs []warrant.Counter) error {
	seen := make(map[string]bool, len(cs))
	for i, c := range cs {
		switch {
		case c.Limit == "" || len(c.Limit) > 64 || strings.ContainsRune(c.Limit, '#'):
			return invalid(op, "counter %d: a limit id of 1 to 64 characters without '#', got %q", i, c.Limit)
		case c.Per != "run" && c.Per != "matter" && c.Per != "firm":
			return invalid(op, "counter %d: per must be run, matter or firm, got %q", i, c.Per)
		case !isUUID(c.Scope):
			return invalid(op, "counter %d: the scope must be the run's, matter's or firm's id, got %q", i, c.Scope)
		case c.Window.IsZero() || c.Expires.Before(c.Window):
			return invalid(op, "counter %d: a window start, and an expiry after it", i)
		case c.Max < 0:
			return invalid(op, "counter %d: max must not be negative", i)
		case seen[c.Key()]:
			// A transaction cannot touch an item twice.
			return invalid(op, "counter %d: %s is named twice", i, c.Key())
		}
		seen[c.Key()] = true
	}
	return nil
}

// counterUpdate adds one to a counter, under its bound when it has one.
func (s *Store) counterUpdate(firm string, c warrant.Counter) *types.Update {
	const expr = "SET #limit_id = :limit, #per = :per, #scope = :scope, #window_start = :window, #" + AttrTTL + " = :expires ADD #n :one"
	values := map[string]types.AttributeValue{
		":limit": str(c.Limit), ":per": str(c.Per), ":scope": str(c.Scope), ":window": str(fmtTime(c.Window)),
		":expires": num(c.Expires.Unix()), ":one": num(1),
	}
	u := &types.Update{
		TableName:        aws.String(s.table),
		Key:              key(firmPK(firm), limitSK(c)),
		UpdateExpression: aws.String(expr),
	}
	cond := ""
	if c.Max > 0 {
		// The count is below the bound before this claim adds to it.
		cond = "attribute_not_exists(#n) OR #n < :max"
		values[":max"] = num(c.Max)
		u.ConditionExpression = aws.String(cond)
	}
	u.ExpressionAttributeNames, u.ExpressionAttributeValues = names(expr, cond), values
	return u
}

// counterUpdates are the counters' transaction items, in the order given.
func (s *Store) counterUpdates(firm string, cs []warrant.Counter) []types.TransactWriteItem {
	items := make([]types.TransactWriteItem, len(cs))
	for i, c := range cs {
		items[i] = types.TransactWriteItem{Update: s.counterUpdate(firm, c)}
	}
	return items
}

// limitReached is the error of a transaction whose failed condition is
// the counter at index i of cs.
func limitReached(cs []warrant.Counter, i int, cause error) error {
	return &warrant.LimitReachedError{Limit: cs[i].Limit, Err: cause}
}

// Count reads a counter of the firm (consistently): 0 when nothing counted
// it yet.
func (s *Store) Count(ctx context.Context, firm string, c warrant.Counter) (int64, error) {
	if !idsOK(firm) {
		return 0, nil
	}
	m, err := s.getItem(ctx, firmPK(firm), limitSK(c))
	if err != nil {
		return 0, wrap("count", err)
	}
	n, ok := m["n"].(*types.AttributeValueMemberN)
	if !ok {
		return 0, nil
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, wrap("count", err)
	}
	return v, nil
}
