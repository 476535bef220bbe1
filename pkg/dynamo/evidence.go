package dynamo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
)

// The evidence items (issue 20):
//
//   - a receipt, in its run's partition: SK RCPT#<seq, 12 digits>, the
//     signed body, its signature, its kind and the firm log index it was
//     appended at;
//   - the firm's log, in its own partition FIRM#<firm>#LOG: one item per
//     entry (SK ENT#<index, 12 digits>: the entry's exact line and the chain
//     value after it), one per checkpoint (SK CKP#<number, 12 digits>), and
//     the head (SK HEAD: size, chain head, last entry time, last checkpoint).
//
// A receipt, its entry and the head move in one transaction conditioned on
// the head's size, so the log has one writer per index and no gaps, and a
// receipt is never stored without its entry. The head sits in GSI2 under
// LOGDUE#<shard> while entries wait for a checkpoint, and under LOGDONE once
// a checkpoint covers them: the sweeper finds the firms to checkpoint there,
// never by a scan.
const (
	skRcpt      = "RCPT#"
	skEnt       = "ENT#"
	skCkp       = "CKP#"
	skLogHead   = "HEAD"
	logDuePfx   = "LOGDUE#"
	logDone     = "LOGDONE"
	appendTries = 8
)

func logPK(firm string) string      { return "FIRM#" + firm + "#LOG" }
func rcptSK(seq int64) string       { return fmt.Sprintf("%s%012d", skRcpt, seq) }
func entSK(i int64) string          { return fmt.Sprintf("%s%012d", skEnt, i) }
func ckpSK(n int64) string          { return fmt.Sprintf("%s%012d", skCkp, n) }
func logShardOf(firm string) string { return logDuePfx + firm[:1] }

// LogShards are the GSI2 partitions of firm logs awaiting a checkpoint.
func LogShards() []string { return shards(logDuePfx) }

type receiptItem struct {
	PK        string `dynamodbav:"PK"`
	SK        string `dynamodbav:"SK"`
	Seq       int64  `dynamodbav:"seq"`
	Kind      string `dynamodbav:"kind"`
	Body      string `dynamodbav:"body"`
	Signature string `dynamodbav:"signature"`
	LogIndex  int64  `dynamodbav:"log_index"`
}

type entryItem struct {
	PK    string `dynamodbav:"PK"`
	SK    string `dynamodbav:"SK"`
	Index int64  `dynamodbav:"i"`
	Line  string `dynamodbav:"line"`
	Chain string `dynamodbav:"chain"`
	At    string `dynamodbav:"at"`
}

type checkpointItem struct {
	PK        string `dynamodbav:"PK"`
	SK        string `dynamodbav:"SK"`
	Number    int64  `dynamodbav:"number"`
	Body      string `dynamodbav:"body"`
	Signature string `dynamodbav:"signature"`
	// Note: the checkpoint as a C2SP signed note (absent on checkpoints
	// signed before notes were).
	Note string `dynamodbav:"note,omitempty"`
	// Timestamp: the RFC 3161 token over the body (base64), set once,
	// after the checkpoint (absent until the TSA answered).
	Timestamp string `dynamodbav:"timestamp,omitempty"`
	// Cosignatures: witnesses' signature lines over the note, appended
	// as each witness answers (absent until one did).
	Cosignatures []string `dynamodbav:"cosignatures,omitempty"`
}

type logHeadItem struct {
	PK             string `dynamodbav:"PK"`
	SK             string `dynamodbav:"SK"`
	FirmID         string `dynamodbav:"firm_id"`
	Size           int64  `dynamodbav:"size"`
	Head           string `dynamodbav:"head"`
	LastAt         string `dynamodbav:"last_at"`
	Checkpoint     int64  `dynamodbav:"ckpt_number"`
	CheckpointSHA  string `dynamodbav:"ckpt_sha256,omitempty"`
	CheckpointSize int64  `dynamodbav:"ckpt_size"`
	GSI2PK         string `dynamodbav:"GSI2PK"`
	GSI2SK         string `dynamodbav:"GSI2SK"`
}

// LogHead reads a firm's log head (consistently); the zero head when the
// firm has no log yet.
func (s *Store) LogHead(ctx context.Context, firm string) (evidence.LogHead, error) {
	if !idsOK(firm) {
		return evidence.LogHead{}, invalid("log head", "firm id %q is not a UUID", firm)
	}
	m, err := s.getItem(ctx, logPK(firm), skLogHead)
	if err != nil || m == nil {
		return evidence.LogHead{Head: evidence.Genesis}, wrap("log head", err)
	}
	it, err := unmarshal[logHeadItem](m)
	if err != nil {
		return evidence.LogHead{}, wrap("log head", err)
	}
	return evidence.LogHead{Size: it.Size, Head: it.Head, LastAt: it.LastAt, Checkpoint: it.Checkpoint,
		CheckpointSHA: it.CheckpointSHA, CheckpointSize: it.CheckpointSize}, nil
}

// AppendReceipt stores a run's receipt for the line at seq and appends its
// entry to the firm's log, in one transaction. appended is false when a
// receipt for that line was already stored (a redelivered stream record, a
// second reducer): the first one stands, and entry is that receipt's. A
// lost race for the log's next index is retried with the new head.
func (s *Store) AppendReceipt(ctx context.Context, firm, run string, seq int64, kind string, rc evidence.Signed) (entry evidence.Entry, appended bool, err error) {
	if !idsOK(firm, run) || seq < 1 {
		return entry, false, invalid("append receipt", "firm %q, run %q, seq %d", firm, run, seq)
	}
	backoff := 5 * time.Millisecond
	for try := 1; ; try++ {
		h, err := s.LogHead(ctx, firm)
		if err != nil {
			return entry, false, err
		}
		at := s.nowUTC()
		if last, err := time.Parse(contracts.TimeLayout, h.LastAt); err == nil && at.Before(last) {
			at = last // the log never goes back in time
		}
		entry = evidence.Entry{Index: h.Size + 1, At: contracts.FormatTime(at), RunID: run, Seq: seq, Kind: kind, ReceiptSHA256: rc.SHA256()}
		line := entry.Line()
		chain := evidence.Link(h.Head, line)
		rcpt, err := marshal(receiptItem{PK: runPK(firm, run), SK: rcptSK(seq), Seq: seq, Kind: kind, Body: rc.Body,
			Signature: rc.Signature, LogIndex: entry.Index})
		if err != nil {
			return entry, false, err
		}
		ent, err := marshal(entryItem{PK: logPK(firm), SK: entSK(entry.Index), Index: entry.Index, Line: line, Chain: chain, At: entry.At})
		if err != nil {
			return entry, false, err
		}
		head := logHeadItem{PK: logPK(firm), SK: skLogHead, FirmID: firm, Size: entry.Index, Head: chain, LastAt: entry.At,
			Checkpoint: h.Checkpoint, CheckpointSHA: h.CheckpointSHA, CheckpointSize: h.CheckpointSize,
			GSI2PK: logShardOf(firm), GSI2SK: entry.At}
		hm, err := marshal(head)
		if err != nil {
			return entry, false, err
		}
		headPut := &types.Put{TableName: aws.String(s.table), Item: hm}
		if h.Size == 0 {
			headPut.ConditionExpression = aws.String("attribute_not_exists(#PK)")
			headPut.ExpressionAttributeNames = names("#PK")
		} else {
			const cond = "#size = :size AND #ckpt_number = :ckpt"
			headPut.ConditionExpression = aws.String(cond)
			headPut.ExpressionAttributeNames = names(cond)
			headPut.ExpressionAttributeValues = map[string]types.AttributeValue{":size": num(h.Size), ":ckpt": num(h.Checkpoint)}
		}
		// The receipt first: when it is already stored, that is the answer
		// (minidyn reports only the first failed condition).
		items := []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String(s.table), Item: rcpt,
				ConditionExpression: aws.String("attribute_not_exists(#SK)"), ExpressionAttributeNames: names("#SK")}},
			{Put: &types.Put{TableName: aws.String(s.table), Item: ent,
				ConditionExpression: aws.String("attribute_not_exists(#SK)"), ExpressionAttributeNames: names("#SK")}},
			{Put: headPut},
		}
		err = s.transact(ctx, items)
		if err == nil {
			return entry, true, nil
		}
		c, ok := firstFailedCondition(err)
		switch {
		case !ok:
			return entry, false, wrap("append receipt", err)
		case c.index == 0:
			stored, err := s.receipt(ctx, firm, run, seq)
			if err != nil {
				return entry, false, err
			}
			e, err := s.entry(ctx, firm, stored.LogIndex)
			return e, false, err
		case try == appendTries:
			return entry, false, fail(warrant.ErrLogMoved, err, "append receipt: the firm log kept moving")
		}
		wait := backoff/2 + rand.N(backoff)
		select {
		case <-ctx.Done():
			return entry, false, wrap("append receipt", ctx.Err())
		case <-time.After(wait):
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

func (s *Store) receipt(ctx context.Context, firm, run string, seq int64) (evidence.Stored, error) {
	m, err := s.getItem(ctx, runPK(firm, run), rcptSK(seq))
	if err != nil || m == nil {
		return evidence.Stored{}, fail(warrant.ErrNotFound, err, "receipt for seq %d", seq)
	}
	it, err := unmarshal[receiptItem](m)
	if err != nil {
		return evidence.Stored{}, wrap("receipt", err)
	}
	return evidence.Stored{Seq: it.Seq, Kind: it.Kind, Signed: evidence.Signed{Body: it.Body, Signature: it.Signature}, LogIndex: it.LogIndex}, nil
}

func (s *Store) entry(ctx context.Context, firm string, i int64) (evidence.Entry, error) {
	m, err := s.getItem(ctx, logPK(firm), entSK(i))
	if err != nil || m == nil {
		return evidence.Entry{}, fail(warrant.ErrNotFound, err, "firm log entry %d", i)
	}
	it, err := unmarshal[entryItem](m)
	if err != nil {
		return evidence.Entry{}, wrap("firm log entry", err)
	}
	return evidence.ParseEntry(it.Line)
}

// Receipts lists a run's stored receipts in seq order (consistently).
func (s *Store) Receipts(ctx context.Context, firm, run string) ([]evidence.Stored, error) {
	if !idsOK(firm, run) {
		return nil, nil
	}
	var out []evidence.Stored
	err := s.queryRange(ctx, runPK(firm, run), rcptSK(1), rcptSK(maxSeq), func(m map[string]types.AttributeValue) error {
		it, err := unmarshal[receiptItem](m)
		if err != nil {
			return err
		}
		out = append(out, evidence.Stored{Seq: it.Seq, Kind: it.Kind, Signed: evidence.Signed{Body: it.Body, Signature: it.Signature}, LogIndex: it.LogIndex})
		return nil
	})
	return out, wrap("receipts", err)
}

// LogSegment reads the firm log's entries from..to (inclusive) and the chain
// value before from, as a bundle carries them.
func (s *Store) LogSegment(ctx context.Context, firm string, from, to int64) (evidence.Segment, error) {
	seg := evidence.Segment{From: from, Prev: evidence.Genesis, Entries: []string{}}
	if !idsOK(firm) || from < 1 || to < from-1 {
		return seg, invalid("log segment", "entries %d to %d", from, to)
	}
	if from > 1 {
		m, err := s.getItem(ctx, logPK(firm), entSK(from-1))
		if err != nil || m == nil {
			return seg, fail(warrant.ErrNotFound, err, "firm log entry %d", from-1)
		}
		it, err := unmarshal[entryItem](m)
		if err != nil {
			return seg, wrap("log segment", err)
		}
		seg.Prev = it.Chain
	}
	if to < from {
		return seg, nil
	}
	err := s.queryRange(ctx, logPK(firm), entSK(from), entSK(to), func(m map[string]types.AttributeValue) error {
		it, err := unmarshal[entryItem](m)
		if err != nil {
			return err
		}
		seg.Entries = append(seg.Entries, it.Line)
		return nil
	})
	if err == nil && int64(len(seg.Entries)) != to-from+1 {
		err = fail(warrant.ErrNotFound, nil, "firm log entries %d to %d: %d found", from, to, len(seg.Entries))
	}
	return seg, wrap("log segment", err)
}

// LogIndexBefore is the last entry appended at or before t (0: none), found
// by bisecting the log's indexes (entries never go back in time): where a
// run's bundle starts its log segment.
func (s *Store) LogIndexBefore(ctx context.Context, firm string, t time.Time, size int64) (int64, error) {
	lo, hi := int64(0), size // entry lo is at or before t (0: none); entries past hi are after
	for lo < hi {
		mid := (lo + hi + 1) / 2
		m, err := s.getItem(ctx, logPK(firm), entSK(mid))
		if err != nil || m == nil {
			return 0, fail(warrant.ErrNotFound, err, "firm log entry %d", mid)
		}
		it, err := unmarshal[entryItem](m)
		if err != nil {
			return 0, wrap("firm log entry", err)
		}
		at, err := time.Parse(contracts.TimeLayout, it.At)
		if err != nil {
			return 0, fail(warrant.ErrNotFound, err, "firm log entry %d has no time", mid)
		}
		if !at.After(t) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, nil
}

// Checkpoint reads a firm's checkpoint by number.
func (s *Store) Checkpoint(ctx context.Context, firm string, n int64) (evidence.Signed, error) {
	if !idsOK(firm) || n < 1 {
		return evidence.Signed{}, fail(warrant.ErrNotFound, nil, "checkpoint %d", n)
	}
	m, err := s.getItem(ctx, logPK(firm), ckpSK(n))
	if err != nil || m == nil {
		return evidence.Signed{}, fail(warrant.ErrNotFound, err, "checkpoint %d", n)
	}
	it, err := unmarshal[checkpointItem](m)
	if err != nil {
		return evidence.Signed{}, wrap("checkpoint", err)
	}
	return it.signed(), nil
}

// signed is the checkpoint as stored.
func (it checkpointItem) signed() evidence.Signed {
	return evidence.Signed{Body: it.Body, Signature: it.Signature, Note: it.Note, Timestamp: it.Timestamp, Cosignatures: it.Cosignatures}
}

// Checkpoints reads a firm's checkpoints from..to by number, in order (one
// query): all of them, or warrant.ErrNotFound.
func (s *Store) Checkpoints(ctx context.Context, firm string, from, to int64) ([]evidence.Signed, error) {
	if !idsOK(firm) || from < 1 || to < from {
		return nil, invalid("checkpoints", "checkpoints %d to %d", from, to)
	}
	var out []evidence.Signed
	err := s.queryRange(ctx, logPK(firm), ckpSK(from), ckpSK(to), func(m map[string]types.AttributeValue) error {
		it, err := unmarshal[checkpointItem](m)
		if err != nil {
			return err
		}
		out = append(out, it.signed())
		return nil
	})
	if err == nil && int64(len(out)) != to-from+1 {
		err = fail(warrant.ErrNotFound, nil, "checkpoints %d to %d: %d found", from, to, len(out))
	}
	return out, wrap("checkpoints", err)
}

// PutCheckpoint stores checkpoint cp (signed) after the head h it was made
// from, and marks the head: the checkpoint's number and size, and out of
// GSI2's due shards when it covers every entry (a checkpoint kept outside the
// table and restored to it may cover fewer than the head holds). ErrLogMoved
// when another checkpoint or an append got there first (nothing is written;
// the next pass makes the checkpoint again).
func (s *Store) PutCheckpoint(ctx context.Context, firm string, h evidence.LogHead, cp evidence.Checkpoint, signed evidence.Signed) error {
	if !idsOK(firm) || cp.Number != h.Checkpoint+1 || cp.Size > h.Size || cp.Size < h.CheckpointSize {
		return invalid("put checkpoint", "checkpoint %d of %d entries after head %d/%d", cp.Number, cp.Size, h.Checkpoint, h.Size)
	}
	item, err := marshal(checkpointItem{PK: logPK(firm), SK: ckpSK(cp.Number), Number: cp.Number, Body: signed.Body, Signature: signed.Signature, Note: signed.Note})
	if err != nil {
		return err
	}
	u := newUpdate().set("ckpt_number", num(cp.Number)).setStr("ckpt_sha256", signed.SHA256()).
		set("ckpt_size", num(cp.Size))
	if cp.Size == h.Size && !s.attested {
		u = u.set(AttrGSI2PK, str(logDone))
	}
	const cond = "#size = :size AND #ckpt_number = :prev"
	err = s.transact(ctx, []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.table), Item: item,
			ConditionExpression: aws.String("attribute_not_exists(#SK)"), ExpressionAttributeNames: names("#SK")}},
		{Update: s.txUpdate(key(logPK(firm), skLogHead), u, cond, map[string]types.AttributeValue{
			":size": num(h.Size), ":prev": num(h.Checkpoint)})},
	})
	if _, ok := firstFailedCondition(err); ok {
		return fail(warrant.ErrLogMoved, err, "checkpoint %d: the log moved", cp.Number)
	}
	return wrap("put checkpoint", err)
}

// PutCheckpointTimestamp stores checkpoint n's timestamp token (base64
// DER), once: evidence.ErrTimestampExists when it holds one already (the
// first stands), warrant.ErrNotFound when there is no such checkpoint. The
// sweeper settles the head (CheckpointSettled) once every attestation is
// kept; this does not.
func (s *Store) PutCheckpointTimestamp(ctx context.Context, firm string, n int64, token string) error {
	if !idsOK(firm) || n < 1 || token == "" {
		return invalid("put checkpoint timestamp", "checkpoint %d", n)
	}
	const cond = "attribute_exists(#SK) AND attribute_not_exists(#timestamp)"
	err := s.updateItem(ctx, s.txUpdate(key(logPK(firm), ckpSK(n)), newUpdate().set("timestamp", str(token)), cond, nil))
	if _, ok := conditionFailed(err); ok {
		// Read rather than trust the old image: not every endpoint
		// returns it.
		if m, rerr := s.getItem(ctx, logPK(firm), ckpSK(n)); rerr != nil || m == nil {
			return fail(warrant.ErrNotFound, rerr, "checkpoint %d", n)
		}
		return fmt.Errorf("checkpoint %d: %w", n, evidence.ErrTimestampExists)
	}
	return wrap("put checkpoint timestamp", err)
}

// AddCheckpointCosignatures appends witnesses' signature lines to checkpoint
// n (warrant.ErrNotFound when there is none). Lines are not deduplicated: a
// witness asked twice (two sweepers) signs twice, and each line verifies.
func (s *Store) AddCheckpointCosignatures(ctx context.Context, firm string, n int64, lines []string) error {
	if !idsOK(firm) || n < 1 || len(lines) == 0 {
		return invalid("add checkpoint cosignatures", "checkpoint %d", n)
	}
	list := make([]types.AttributeValue, len(lines))
	for i, l := range lines {
		list[i] = str(l)
	}
	const cond = "attribute_exists(#SK)"
	u := newUpdate().setExpr("cosignatures", "list_append(if_not_exists(#cosignatures, :empty), :lines)",
		map[string]types.AttributeValue{":empty": &types.AttributeValueMemberL{Value: []types.AttributeValue{}},
			":lines": &types.AttributeValueMemberL{Value: list}})
	err := s.updateItem(ctx, s.txUpdate(key(logPK(firm), ckpSK(n)), u, cond, nil))
	if _, ok := conditionFailed(err); ok {
		return fail(warrant.ErrNotFound, err, "checkpoint %d", n)
	}
	return wrap("add checkpoint cosignatures", err)
}

// CheckpointSettled takes the log's head out of GSI2's due shards when
// checkpoint n is its latest and covers every entry: nothing is left for
// the sweeper to do for it. A head that moved on stays due (no error).
func (s *Store) CheckpointSettled(ctx context.Context, firm string, n int64) error {
	if !idsOK(firm) || n < 1 {
		return invalid("checkpoint settled", "checkpoint %d", n)
	}
	const cond = "#ckpt_number = :n AND #size = #ckpt_size"
	err := s.updateItem(ctx, s.txUpdate(key(logPK(firm), skLogHead), newUpdate().set(AttrGSI2PK, str(logDone)), cond,
		map[string]types.AttributeValue{":n": num(n)}))
	if _, ok := conditionFailed(err); ok {
		return nil
	}
	return wrap("checkpoint settled", err)
}

// DueLogs lists the firms whose log has entries no checkpoint covers, by
// GSI2 (LogShards), at most limit.
func (s *Store) DueLogs(ctx context.Context, limit int) ([]string, error) {
	var out []string
	for _, shard := range LogShards() {
		const kc = "#GSI2PK = :shard"
		in := &dynamodb.QueryInput{
			TableName: aws.String(s.table), IndexName: aws.String(IndexGSI2),
			KeyConditionExpression: aws.String(kc), ExpressionAttributeNames: names(kc),
			ExpressionAttributeValues: map[string]types.AttributeValue{":shard": str(shard)},
		}
		err := s.queryPages(ctx, in, func(m map[string]types.AttributeValue) (bool, error) {
			// GSI2 projects keys only: the firm is in the key.
			pk, _ := m[AttrPK].(*types.AttributeValueMemberS)
			sk, _ := m[AttrSK].(*types.AttributeValueMemberS)
			if pk == nil || sk == nil || sk.Value != skLogHead {
				return false, nil
			}
			firm, ok := strings.CutSuffix(strings.TrimPrefix(pk.Value, "FIRM#"), "#LOG")
			if ok && idsOK(firm) {
				out = append(out, firm)
			}
			return limit > 0 && len(out) >= limit, nil
		})
		if err != nil || (limit > 0 && len(out) >= limit) {
			return out, wrap("due logs", err)
		}
	}
	return out, nil
}

// queryRange reads a partition's items with SK between from and to
// (consistently), following pages.
func (s *Store) queryRange(ctx context.Context, pk, from, to string, fn func(map[string]types.AttributeValue) error) error {
	const kc = "#PK = :pk AND #SK BETWEEN :from AND :to"
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.table), KeyConditionExpression: aws.String(kc), ExpressionAttributeNames: names(kc),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk), ":from": str(from), ":to": str(to)},
		ConsistentRead:            aws.Bool(true),
	}
	return s.queryPages(ctx, in, func(m map[string]types.AttributeValue) (bool, error) { return false, fn(m) })
}

// queryPages runs a query page by page, handing each item to fn until fn
// says stop (or fails).
func (s *Store) queryPages(ctx context.Context, in *dynamodb.QueryInput, fn func(map[string]types.AttributeValue) (stop bool, err error)) error {
	for {
		page, err := s.client.Query(ctx, in)
		if err != nil {
			return classify(err)
		}
		for _, m := range page.Items {
			stop, err := fn(m)
			if err != nil || stop {
				return err
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
