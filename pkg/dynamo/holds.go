package dynamo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// A matter's legal hold: FIRM#<firm> / HOLD#<matter>, in the firm's key
// space beside the matter's record (outside every run's partition and the
// stream's EVT# filter). Its presence is the hold: DestroyContent checks
// the item's absence in its own transaction (a ConditionCheck), so a hold
// placed while a destruction is in flight either is there when the
// destruction commits (refused) or comes after it (the content was
// already destroyed). Each placement and release is also kept in the
// matter's hold history, FIRM#<firm> / HOLDLOG#<matter>#<time>#<action>#<nonce>,
// written in the same transaction (the nonce keeps two entries of one
// instant apart).
const (
	skHold    = "HOLD#"
	skHoldLog = "HOLDLOG#"
)

func holdSK(matter string) string { return skHold + matter }

type holdItem struct {
	PK       string `dynamodbav:"PK"`
	SK       string `dynamodbav:"SK"`
	FirmID   string `dynamodbav:"firm_id"`
	MatterID string `dynamodbav:"matter_id"`
	By       string `dynamodbav:"placed_by"`
	ByName   string `dynamodbav:"placed_by_name,omitempty"`
	Reason   string `dynamodbav:"reason"`
	PlacedAt string `dynamodbav:"placed_at"`
}

func (it holdItem) hold() warrant.Hold {
	return warrant.Hold{FirmID: it.FirmID, MatterID: it.MatterID, By: it.By, ByName: it.ByName, Reason: it.Reason, PlacedAt: parseTime(it.PlacedAt)}
}

type holdLogItem struct {
	PK       string `dynamodbav:"PK"`
	SK       string `dynamodbav:"SK"`
	FirmID   string `dynamodbav:"firm_id"`
	MatterID string `dynamodbav:"matter_id"`
	Action   string `dynamodbav:"action"`
	By       string `dynamodbav:"by"`
	ByName   string `dynamodbav:"by_name,omitempty"`
	Reason   string `dynamodbav:"reason,omitempty"`
	At       string `dynamodbav:"at"`
}

// holdLogPut is the put of one entry of a matter's hold history; it never
// overwrites one.
func (s *Store) holdLogPut(e warrant.HoldEvent) (*types.Put, error) {
	var nonce [8]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, err
	}
	item, err := marshal(holdLogItem{PK: firmPK(e.FirmID), SK: skHoldLog + e.MatterID + "#" + fmtTime(e.At) + "#" + e.Action + "#" + hex.EncodeToString(nonce[:]),
		FirmID: e.FirmID, MatterID: e.MatterID, Action: e.Action, By: e.By, ByName: e.ByName, Reason: e.Reason, At: fmtTime(e.At)})
	if err != nil {
		return nil, err
	}
	const fresh = "attribute_not_exists(#SK)"
	return &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String(fresh), ExpressionAttributeNames: names(fresh)}, nil
}

// PutHold places a legal hold on a matter, by h.By (a user id) for
// h.Reason (1 to warrant.MaxHoldReason characters), at h.PlacedAt (zero:
// now), and records the placement in the matter's hold history, in one
// transaction. It returns the hold placed.
//
// A matter already on hold keeps the hold it has: PutHold returns that
// hold and an error matching warrant.ErrMatterOnHold, and writes nothing
// (the first placement's who, when and why stay the record; a caller
// whose own answer was lost finds its hold there).
func (s *Store) PutHold(ctx context.Context, h warrant.Hold) (warrant.Hold, error) {
	const op = "put hold"
	if err := checkIDs(op, "firm_id", h.FirmID, "matter_id", h.MatterID); err != nil {
		return warrant.Hold{}, err
	}
	if contracts.CheckUserID("placed_by", h.By) != nil {
		return warrant.Hold{}, invalid(op, "placed_by: not a user id")
	}
	if strings.TrimSpace(h.Reason) == "" || !utf8.ValidString(h.Reason) || utf8.RuneCountInString(h.Reason) > warrant.MaxHoldReason {
		return warrant.Hold{}, invalid(op, "a hold's reason is 1 to %d characters of text", warrant.MaxHoldReason)
	}
	if h.PlacedAt.IsZero() {
		h.PlacedAt = s.nowUTC()
	}
	h.PlacedAt = parseTime(fmtTime(h.PlacedAt)) // as stored
	item, err := marshal(holdItem{PK: firmPK(h.FirmID), SK: holdSK(h.MatterID), FirmID: h.FirmID, MatterID: h.MatterID,
		By: h.By, ByName: h.ByName, Reason: h.Reason, PlacedAt: fmtTime(h.PlacedAt)})
	if err != nil {
		return warrant.Hold{}, wrap(op, err)
	}
	logPut, err := s.holdLogPut(warrant.HoldEvent{FirmID: h.FirmID, MatterID: h.MatterID, Action: warrant.HoldPlaced, By: h.By, ByName: h.ByName, Reason: h.Reason, At: h.PlacedAt})
	if err != nil {
		return warrant.Hold{}, wrap(op, err)
	}
	const absent = "attribute_not_exists(#PK)"
	err = s.transact(ctx, []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String(absent), ExpressionAttributeNames: names(absent)}},
		{Put: logPut},
	})
	if _, ok := firstFailedCondition(err); ok {
		cur, gerr := s.GetHold(ctx, h.FirmID, h.MatterID)
		if gerr != nil {
			// Released again meanwhile: nothing was written; the caller
			// may try again.
			return warrant.Hold{}, wrap(op, err)
		}
		return cur, fail(warrant.ErrMatterOnHold, err, "matter %s is on hold since %s, placed by %s", h.MatterID, fmtTime(cur.PlacedAt), cur.By)
	}
	if err != nil {
		return warrant.Hold{}, wrap(op, err)
	}
	return h, nil
}

// GetHold reads a matter's hold (consistently); a matter with none is
// ErrNotFound.
func (s *Store) GetHold(ctx context.Context, firm, matter string) (warrant.Hold, error) {
	if !idsOK(firm, matter) {
		return warrant.Hold{}, fail(warrant.ErrNotFound, nil, "hold of matter %q", matter)
	}
	m, err := s.getItem(ctx, firmPK(firm), holdSK(matter))
	if err != nil {
		return warrant.Hold{}, wrap("get hold", err)
	}
	if m == nil {
		return warrant.Hold{}, fail(warrant.ErrNotFound, nil, "matter %s has no hold", matter)
	}
	it, err := unmarshal[holdItem](m)
	if err != nil {
		return warrant.Hold{}, wrap("get hold", err)
	}
	return it.hold(), nil
}

// ReleaseHold lifts a matter's hold, by r.By (a user id; r.ByName shown)
// for r.Reason (optional, at most warrant.MaxHoldReason characters), and
// records the release in the matter's hold history, in one transaction. A
// matter with no hold is ErrNotFound and nothing is written.
func (s *Store) ReleaseHold(ctx context.Context, firm, matter string, r warrant.HoldEvent) error {
	const op = "release hold"
	if !idsOK(firm, matter) {
		return fail(warrant.ErrNotFound, nil, "hold of matter %q", matter)
	}
	if contracts.CheckUserID("released_by", r.By) != nil {
		return invalid(op, "released_by: not a user id")
	}
	if !utf8.ValidString(r.Reason) || utf8.RuneCountInString(r.Reason) > warrant.MaxHoldReason {
		return invalid(op, "a release's reason is at most %d characters of text", warrant.MaxHoldReason)
	}
	logPut, err := s.holdLogPut(warrant.HoldEvent{FirmID: firm, MatterID: matter, Action: warrant.HoldReleased, By: r.By, ByName: r.ByName,
		Reason: r.Reason, At: s.nowUTC()})
	if err != nil {
		return wrap(op, err)
	}
	const present = "attribute_exists(#PK)"
	err = s.transact(ctx, []types.TransactWriteItem{
		{Delete: &types.Delete{TableName: aws.String(s.table), Key: key(firmPK(firm), holdSK(matter)),
			ConditionExpression: aws.String(present), ExpressionAttributeNames: names(present)}},
		{Put: logPut},
	})
	if _, ok := firstFailedCondition(err); ok {
		if _, gerr := s.GetHold(ctx, firm, matter); gerr != nil {
			return gerr // ErrNotFound: no hold to release (or a failed read)
		}
		return wrap(op, err) // placed again meanwhile: nothing written
	}
	return wrap(op, err)
}

// HoldHistory lists a matter's hold placements and releases (consistently),
// oldest first.
func (s *Store) HoldHistory(ctx context.Context, firm, matter string) ([]warrant.HoldEvent, error) {
	if !idsOK(firm, matter) {
		return nil, nil
	}
	var out []warrant.HoldEvent
	prefix := skHoldLog + matter + "#"
	err := s.queryRange(ctx, firmPK(firm), prefix, prefix+"~", func(m map[string]types.AttributeValue) error {
		it, err := unmarshal[holdLogItem](m)
		if err != nil {
			return err
		}
		out = append(out, warrant.HoldEvent{FirmID: it.FirmID, MatterID: it.MatterID, Action: it.Action, By: it.By, ByName: it.ByName,
			Reason: it.Reason, At: parseTime(it.At)})
		return nil
	})
	return out, wrap("hold history", err)
}
