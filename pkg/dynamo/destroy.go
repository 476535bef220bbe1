package dynamo

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// destroyAttempts bounds DestroyContent's reads and writes when the run
// item changed under it in a way that does not refuse the destruction
// (the stream reducer moved its projection, a hold was lifted).
const destroyAttempts = 4

// DestroyContent destroys a finished run's content by destroying its key
// (issue 26): in ONE transaction the run item loses its wrapped data key
// and gains content_destroyed_at, its signed head moves to line (the run's
// content.destroyed, of the run's matter, extending its head), the line is
// stored, and the matter's hold is checked absent. A crash leaves either
// the key and no record of its destruction, or the record and no key; the
// ledger is never edited, and verifies as before.
//
// The run item is put back whole, every other attribute as it was read,
// rather than updated with REMOVE (minidyn ignores REMOVE, and a key left
// behind would be no destruction). Its condition holds it to what was read
// of everything that changes on a finished run: still ended, still with
// its key and not destroyed, its head and its projection where they were,
// its matter the line's.
//
// Refusals, nothing written: a matter on hold is warrant.ErrMatterOnHold;
// content already destroyed warrant.ErrContentDestroyed; a run that has
// not ended (running, held) warrant.ErrRunNotInState; a run without a data
// key of its own (content in the clear) warrant.ErrContentNotSealed; a
// head that moved on (another line came first) ErrSeqTaken; a missing run
// ErrNotFound. The same line stored again (a retry of a lost answer)
// succeeds. Its writer holds no lease: a fence in ctx is not used.
func (s *Store) DestroyContent(ctx context.Context, firm, run string, line contracts.Line) error {
	const op = "destroy content"
	if !idsOK(firm, run) {
		return fail(warrant.ErrNotFound, nil, "run %q", run)
	}
	parsed, err := checkLines(op, firm, run, []contracts.Line{line})
	if err != nil {
		return err
	}
	l := parsed[0]
	ev, ok := l.Event.(*contracts.ContentDestroyed)
	if !ok {
		return invalid(op, "the line must be the run's content.destroyed, not %s", l.Type)
	}
	at, err := time.Parse(contracts.TimeLayout, l.CreatedAt)
	if err != nil {
		return invalid(op, "created_at: %v", err)
	}
	if until, _ := time.Parse(contracts.TimeLayout, ev.BackupsUntil); until.Before(at.Add(warrant.BackupWindow)) {
		// The record says when backups stop holding the key: no earlier
		// than the point-in-time recovery window after the destruction.
		return invalid(op, "backups_until %s is earlier than %s after the destruction", ev.BackupsUntil, warrant.BackupWindow)
	}
	h, err := s.headOf(ctx, firm, run, parsed) // its fence, if ctx has one, is not in the condition
	if err != nil {
		return wrap(op, err)
	}
	pk := runPK(firm, run)
	hold := &types.ConditionCheck{TableName: aws.String(s.table), Key: key(firmPK(firm), holdSK(ev.MatterID)),
		ConditionExpression: aws.String("attribute_not_exists(#PK)"), ExpressionAttributeNames: names("#PK")}
	for attempt := 1; ; attempt++ {
		m, err := s.getItem(ctx, pk, skRun)
		if err != nil {
			return wrap(op, err)
		}
		if err := destroyRefusal(m, run, l, ev); err != nil {
			if (errors.Is(err, warrant.ErrContentDestroyed) || errors.Is(err, warrant.ErrSeqTaken)) && s.committed(ctx, pk, parsed) {
				return nil // this very destruction, repeated
			}
			return err
		}
		it, _ := unmarshal[runItem](m) // destroyRefusal read it
		item := maps.Clone(m)
		delete(item, "data_key")
		item["content_destroyed_at"] = str(fmtTime(at))
		// Due once more in the retention shards: the pass that looks at it
		// catches up a projection whose stream record of this line was lost,
		// then, with nothing left to destroy, moves it to DONE.
		item[AttrGSI2PK], item[AttrGSI2SK] = str(retainShardOf(run)), str(fmtTime(at))
		item["updated_at"] = str(fmtTime(s.nowUTC()))
		item["head_seq"], item["head_hash"] = num(h.seq), str(h.hash)
		for attr, v := range map[string]string{"head_mac": h.mac, "head_key": h.keyID} {
			if v == "" {
				delete(item, attr)
			} else {
				item[attr] = str(v)
			}
		}
		cond := "#status IN (:completed, :failed, :aborted) AND attribute_exists(#data_key) AND attribute_not_exists(#content_destroyed_at)" +
			" AND #matter_id = :matter AND #head_seq = :head_prev"
		vals := map[string]types.AttributeValue{":completed": str(string(warrant.RunCompleted)), ":failed": str(string(warrant.RunFailed)),
			":aborted": str(string(warrant.RunAborted)), ":matter": str(ev.MatterID), ":head_prev": num(h.prev)}
		if it.ProjLastSeq != nil {
			cond += " AND #proj_last_seq = :proj"
			vals[":proj"] = num(*it.ProjLastSeq)
		} else {
			cond += " AND attribute_not_exists(#proj_last_seq)"
		}
		err = s.transact(ctx, []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String(cond),
				ExpressionAttributeNames: names(cond), ExpressionAttributeValues: vals}},
			{Put: s.linePut(pk, l)},
			{ConditionCheck: hold},
		})
		if _, ok := firstFailedCondition(err); !ok {
			return wrap(op, err)
		}
		// Which item refused is read, not taken from the cancellation
		// reasons (minidyn reports only the first failing item, DynamoDB
		// and moto every one): the run as it is now first (destroyed,
		// ended, its head), then the hold.
		if s.committed(ctx, pk, parsed) {
			return nil
		}
		now, rerr := s.getItem(ctx, pk, skRun)
		if rerr != nil {
			return wrap(op, rerr)
		}
		if rerr := destroyRefusal(now, run, l, ev); rerr != nil {
			return rerr
		}
		held, herr := s.GetHold(ctx, firm, ev.MatterID)
		switch {
		case herr == nil:
			return fail(warrant.ErrMatterOnHold, err, "matter %s is on hold since %s, placed by %s: run %s keeps its content",
				ev.MatterID, fmtTime(held.PlacedAt), held.By, run)
		case !errors.Is(herr, warrant.ErrNotFound):
			return wrap(op, herr)
		case attempt == destroyAttempts:
			return fail(warrant.ErrProjectionConflict, err, "run %s kept changing while its content was destroyed", run)
		}
		// The projection moved, or a hold was lifted: read again.
	}
}

// destroyRefusal says why the run item m (nil: missing) cannot lose its
// content to line l now, or nil when it can.
func destroyRefusal(m map[string]types.AttributeValue, run string, l contracts.Line, ev *contracts.ContentDestroyed) error {
	const op = "destroy content"
	if m == nil {
		return fail(warrant.ErrNotFound, nil, "run %s", run)
	}
	it, err := unmarshal[runItem](m)
	if err != nil {
		return wrap(op, err)
	}
	switch {
	case it.ContentDestroyedAt != "":
		return fail(warrant.ErrContentDestroyed, nil, "run %s: its content was destroyed at %s", run, it.ContentDestroyedAt)
	case !warrant.RunStatus(it.Status).Terminal():
		return fail(warrant.ErrRunNotInState, nil, "run %s is %s: its content is destroyed only after it ended", run, it.Status)
	case len(it.DataKey) == 0:
		return fail(warrant.ErrContentNotSealed, nil, "run %s has no data key", run)
	case it.MatterID != ev.MatterID:
		return invalid(op, "the line names matter %s, run %s is of matter %s", ev.MatterID, run, it.MatterID)
	case it.HeadSeq != l.Seq-1:
		return &SeqTakenError{Seq: l.Seq}
	case it.HeadHash != l.PrevHash:
		return invalid(op, "line %d does not extend the run's head (prev_hash %s, head %s)", l.Seq, l.PrevHash, it.HeadHash)
	}
	return nil
}
