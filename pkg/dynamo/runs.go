package dynamo

import (
	"bytes"
	"context"
	"maps"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// DefaultPickup is how long a new run waits for a worker when the caller
// names no lease: past it, the sweeper restarts or fails the run.
const DefaultPickup = 5 * time.Minute

// CreateRun writes the run item (status running) and ledger line 1 in one
// transaction. A run id that exists is ErrRunExists and nothing is written.
func (s *Store) CreateRun(ctx context.Context, r warrant.Run, first contracts.Line) error {
	const op = "create run"
	if err := checkIDs(op, "firm_id", r.FirmID, "run_id", r.RunID); err != nil {
		return err
	}
	lines, err := checkLines(op, r.FirmID, r.RunID, []contracts.Line{first})
	if err != nil {
		return err
	}
	if lines[0].Seq != 1 || lines[0].Type != contracts.TypeRunStarted {
		return invalid(op, "the first line must be run.started at seq 1, got %s at %d", lines[0].Type, lines[0].Seq)
	}
	now := s.nowUTC()
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	lease := r.Lease.Until
	if lease.IsZero() {
		lease = now.Add(DefaultPickup)
	}
	pk := runPK(r.FirmID, r.RunID)
	h, err := s.headOf(ctx, r.FirmID, r.RunID, lines)
	if err != nil {
		return wrap(op, err)
	}
	item, err := marshal(runItem{
		PK: pk, SK: skRun, FirmID: r.FirmID, RunID: r.RunID, MatterID: r.MatterID, UserID: r.UserID,
		AgentKey: r.AgentKey, ModelID: r.ModelID, PromptVersion: r.PromptVersion,
		CorrelationID: r.CorrelationID, CostCapUSD: r.CostCapUSD, DataKey: r.DataKey,
		Status: string(warrant.RunRunning), CreatedAt: fmtTime(r.CreatedAt), UpdatedAt: fmtTime(now),
		HeadSeq: h.seq, HeadHash: h.hash, HeadMAC: h.mac, HeadKey: h.keyID,
		// Waiting for a worker until r.Lease.Until (or holding it, when the
		// caller runs the run itself), in the sweeper's index meanwhile.
		LeaseOwner: ownerOf(r.Lease.Owner), LeaseUntil: fmtTime(lease), GSI2PK: shardOf(r.RunID), GSI2SK: fmtTime(lease),
	}.ofMatter())
	if err != nil {
		return wrap(op, err)
	}
	err = s.transact(ctx, []types.TransactWriteItem{
		{Put: &types.Put{
			TableName: aws.String(s.table),
			Item:      item,
			// No run item with this key yet: a run id is created once, so a
			// replayed create cannot reset a run's status or ledger.
			ConditionExpression:      aws.String("attribute_not_exists(#SK)"),
			ExpressionAttributeNames: names("#SK"),
		}},
		{Put: s.linePut(pk, lines[0])},
	})
	if c, ok := firstFailedCondition(err); ok {
		if s.committed(ctx, pk, lines) {
			return nil
		}
		if c.index == 0 {
			return fail(warrant.ErrRunExists, err, "run %s", r.RunID)
		}
		return &SeqTakenError{Seq: 1, Err: err}
	}
	return wrap(op, err)
}

// GetRun reads the run item (consistently).
func (s *Store) GetRun(ctx context.Context, firm, run string) (warrant.Run, error) {
	if !idsOK(firm, run) {
		return warrant.Run{}, fail(warrant.ErrNotFound, nil, "run %q", run)
	}
	m, err := s.getItem(ctx, runPK(firm, run), skRun)
	if err != nil {
		return warrant.Run{}, wrap("get run", err)
	}
	if m == nil {
		return warrant.Run{}, fail(warrant.ErrNotFound, nil, "run %s", run)
	}
	it, err := unmarshal[runItem](m)
	if err != nil {
		return warrant.Run{}, wrap("get run", err)
	}
	return it.run(), nil
}

// AppendEvents stores ledger lines and moves the run's signed head to the
// last of them, in TransactWriteItems of at most 99 lines and the run item
// each, in order (each chunk is atomic, the chunks are not atomic together).
// A seq that is taken (or a head another writer moved) is ErrSeqTaken
// (*SeqTakenError) and no line is overwritten; a missing run is ErrNotFound.
// Storing lines that are already stored byte for byte (a retry of a write
// whose answer was lost) succeeds.
func (s *Store) AppendEvents(ctx context.Context, firm, run string, lines ...contracts.Line) error {
	const op = "append events"
	if err := checkIDs(op, "firm_id", firm, "run_id", run); err != nil {
		return err
	}
	parsed, err := checkLines(op, firm, run, lines)
	if err != nil || len(parsed) == 0 {
		return err
	}
	pk := runPK(firm, run)
	for start, end := 0, 0; start < len(parsed); start = end {
		// Lines, the head and the matter's record of the completed steps
		// among them (stepPuts) fit one transaction.
		var steps []types.TransactWriteItem
		for end = start; end < len(parsed); end++ {
			more := s.stepPuts(ctx, firm, run, parsed[end:end+1])
			if end-start+1+len(steps)+len(more)+1 > maxTxItems {
				break
			}
			steps = append(steps, more...)
		}
		chunk := parsed[start:end]
		h, err := s.headOf(ctx, firm, run, chunk)
		if err != nil {
			return wrap(op, err)
		}
		// Lines first: minidyn reports only the first failing item, and a
		// taken seq says more than the head that moved with it.
		items := make([]types.TransactWriteItem, 0, len(chunk)+1)
		for _, l := range chunk {
			items = append(items, types.TransactWriteItem{Put: s.linePut(pk, l)})
		}
		items = append(items, types.TransactWriteItem{Update: s.headUpdate(pk, h)})
		items = append(items, steps...) // last: they have no condition
		err = s.transact(ctx, items)
		c, ok := firstFailedCondition(err)
		switch {
		case ok && s.committed(ctx, pk, chunk):
			continue
		case ok && c.index < len(chunk):
			return s.seqTaken(ctx, pk, chunk, nil, err)
		case ok:
			return s.runRefused(ctx, c.item, pk, run, nil, chunk[0].Seq, err)
		case err != nil:
			return wrap(op, err)
		}
	}
	return nil
}

// seqTaken decides a failed line put: if every line is already stored with
// exactly these bytes, the write had happened (nil); otherwise the first line
// whose seq is held by other bytes is a *SeqTakenError.
func (s *Store) seqTaken(ctx context.Context, pk string, lines []contracts.Line, old map[string]types.AttributeValue, cause error) error {
	var stored map[int64][]byte
	if len(lines) == 1 && len(old) > 0 {
		it, err := unmarshal[lineItem](old)
		if err == nil {
			stored = map[int64][]byte{it.Seq: []byte(it.Line)}
		}
	}
	if stored == nil {
		items, err := s.queryLedger(ctx, pk, lines[0].Seq-1, lines[len(lines)-1].Seq, 0)
		if err != nil {
			return wrap("append events", err)
		}
		stored = make(map[int64][]byte, len(items))
		for _, it := range items {
			stored[it.Seq] = it.Raw
		}
	}
	for _, l := range lines {
		if got, ok := stored[l.Seq]; !ok || !bytes.Equal(got, l.Raw) {
			return &SeqTakenError{Seq: l.Seq, Err: cause}
		}
	}
	return nil
}

// committed reports whether a refused call had in fact committed before: all
// its lines are stored byte for byte. Transactions are atomic and a line's
// bytes are unique to the call that built it (they carry the chain's hash and
// a timestamp), so a caller retrying with the same lines after a lost answer
// gets success, not a conflict with itself.
func (s *Store) committed(ctx context.Context, pk string, lines []contracts.Line) bool {
	return len(lines) > 0 && s.seqTaken(ctx, pk, lines, nil, nil) == nil
}

// FinishRun ends a running run (completed, failed or aborted) and stores its
// final lines in one transaction. A run that is not running is
// ErrRunNotInState; a missing one ErrNotFound.
func (s *Store) FinishRun(ctx context.Context, firm, run string, to warrant.RunStatus, lines ...contracts.Line) error {
	const op = "finish run"
	if to != warrant.RunCompleted && to != warrant.RunFailed && to != warrant.RunAborted {
		return invalid(op, "a run finishes as completed, failed or aborted, not %q", to)
	}
	if !idsOK(firm, run) {
		return fail(warrant.ErrNotFound, nil, "run %q", run)
	}
	parsed, err := checkLines(op, firm, run, lines)
	if err != nil {
		return err
	}
	pk := runPK(firm, run)
	now := s.nowUTC()
	u := setDone(newUpdate().set("status", str(string(to))).set("updated_at", str(fmtTime(now))), run, now)
	// Only a running run can finish: a held run is waiting on counsel, a
	// finished one is final. It also fails on a missing run (no status), so
	// an update never creates a run item.
	cond, vals := "#status = :running", map[string]types.AttributeValue{":running": str(string(warrant.RunRunning))}
	firstSeq := int64(0)
	if len(parsed) > 0 {
		h, err := s.headOf(ctx, firm, run, parsed)
		if err != nil {
			return wrap(op, err)
		}
		hc, hv := h.cond()
		h.set(u)
		cond += " AND " + hc
		maps.Copy(vals, hv)
		firstSeq = parsed[0].Seq
	}
	items := []types.TransactWriteItem{{Update: s.txUpdate(key(pk, skRun), u, cond, vals)}}
	for _, l := range parsed {
		items = append(items, types.TransactWriteItem{Put: s.linePut(pk, l)})
	}
	items = append(items, s.stepPuts(ctx, firm, run, parsed)...)
	err = s.transact(ctx, items)
	if c, ok := firstFailedCondition(err); ok {
		if s.committed(ctx, pk, parsed) {
			return nil
		}
		if c.index == 0 {
			return s.runRefused(ctx, c.item, pk, run, isRunning, firstSeq, err)
		}
		return &SeqTakenError{Seq: parsed[c.index-1].Seq, Err: err}
	}
	return wrap(op, err)
}

func isRunning(it runItem) bool { return it.Status == string(warrant.RunRunning) }

// ReadLedger returns the lines after afterSeq in seq order (consistently).
// limit <= 0 means all of them; more says whether lines remain past the
// last one returned.
func (s *Store) ReadLedger(ctx context.Context, firm, run string, afterSeq int64, limit int) ([]warrant.LedgerItem, bool, error) {
	if !idsOK(firm, run) || afterSeq < 0 {
		return nil, false, nil
	}
	want := 0
	if limit > 0 {
		want = limit + 1 // one extra says whether there is more
	}
	items, err := s.queryLedger(ctx, runPK(firm, run), afterSeq, maxSeq, want)
	if err != nil {
		return nil, false, wrap("read ledger", err)
	}
	if limit > 0 && len(items) > limit {
		return items[:limit], true, nil
	}
	return items, false, nil
}

// queryLedger reads lines afterSeq < seq <= toSeq, at most max (0 = all),
// following pages. The key condition is a BETWEEN on the EVT# range: a bare
// SK > EVT#n would run on into OUT# and RUN.
func (s *Store) queryLedger(ctx context.Context, pk string, afterSeq, toSeq int64, max int) ([]warrant.LedgerItem, error) {
	if afterSeq >= toSeq {
		return nil, nil
	}
	const kc = "#PK = :pk AND #SK BETWEEN :from AND :to"
	in := &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		KeyConditionExpression:   aws.String(kc),
		ExpressionAttributeNames: names(kc),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(pk), ":from": str(evtSK(afterSeq + 1)), ":to": str(evtSK(toSeq)),
		},
		ConsistentRead: aws.Bool(true),
	}
	var out []warrant.LedgerItem
	for {
		if max > 0 {
			in.Limit = aws.Int32(int32(min(max-len(out), 1000)))
		}
		page, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, classify(err)
		}
		for _, m := range page.Items {
			it, err := unmarshal[lineItem](m)
			if err != nil {
				return nil, err
			}
			out = append(out, warrant.LedgerItem{Seq: it.Seq, Raw: []byte(it.Line)})
		}
		if len(page.LastEvaluatedKey) == 0 || (max > 0 && len(out) >= max) {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// LastLine returns the run's highest-seq line (consistently); ErrNotFound
// when the run has none.
func (s *Store) LastLine(ctx context.Context, firm, run string) (warrant.LedgerItem, error) {
	if !idsOK(firm, run) {
		return warrant.LedgerItem{}, fail(warrant.ErrNotFound, nil, "run %q", run)
	}
	const kc = "#PK = :pk AND #SK BETWEEN :from AND :to"
	out, err := s.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		KeyConditionExpression:   aws.String(kc),
		ExpressionAttributeNames: names(kc),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(runPK(firm, run)), ":from": str(evtSK(0)), ":to": str(evtSK(maxSeq)),
		},
		ScanIndexForward: aws.Bool(false),
		Limit:            aws.Int32(1),
		ConsistentRead:   aws.Bool(true),
	})
	if err != nil {
		return warrant.LedgerItem{}, wrap("last line", err)
	}
	if len(out.Items) == 0 {
		return warrant.LedgerItem{}, fail(warrant.ErrNotFound, nil, "run %s has no ledger lines", run)
	}
	it, err := unmarshal[lineItem](out.Items[0])
	if err != nil {
		return warrant.LedgerItem{}, wrap("last line", err)
	}
	return warrant.LedgerItem{Seq: it.Seq, Raw: []byte(it.Line)}, nil
}

// UpdateProjection stores the reducer's projection if the stored one is still
// at prevSeq (0: none stored yet). Another writer's newer projection is
// ErrProjectionConflict; a missing run is ErrNotFound.
func (s *Store) UpdateProjection(ctx context.Context, firm, run string, prevSeq int64, p warrant.Projection) error {
	const op = "update projection"
	if p.LastSeq < prevSeq || prevSeq < 0 {
		return invalid(op, "projection seq %d is behind %d", p.LastSeq, prevSeq)
	}
	if !idsOK(firm, run) {
		return fail(warrant.ErrNotFound, nil, "run %q", run)
	}
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = s.nowUTC()
	}
	proj, err := attributevalue.Marshal(projItem{Status: string(p.Status), State: p.State, Halted: p.Halted, UpdatedAt: fmtTime(p.UpdatedAt)})
	if err != nil {
		return wrap(op, err)
	}
	u := newUpdate().set("proj_last_seq", num(p.LastSeq)).set("proj", proj)
	// Compare-and-set on proj_last_seq: the projection only moves from the
	// state this reducer read, so two stream batches delivered out of order
	// or twice cannot overwrite a newer projection with an older one.
	// attribute_exists(SK) keeps the update from creating a run item.
	cond := "attribute_exists(#SK) AND #proj_last_seq = :prev"
	vals := map[string]types.AttributeValue{":prev": num(prevSeq)}
	if prevSeq == 0 {
		cond, vals = "attribute_exists(#SK) AND attribute_not_exists(#proj_last_seq)", nil
	}
	upd := s.txUpdate(key(runPK(firm, run), skRun), u, cond, vals)
	err = s.updateItem(ctx, upd)
	if old, ok := conditionFailed(err); ok {
		old, rerr := s.oldImage(ctx, old, runPK(firm, run), skRun)
		if rerr != nil {
			return wrap(op, rerr)
		}
		if old == nil {
			return fail(warrant.ErrNotFound, err, "run %s", run)
		}
		it, _ := unmarshal[runItem](old)
		stored := "none"
		if it.ProjLastSeq != nil {
			stored = strconv.FormatInt(*it.ProjLastSeq, 10)
		}
		return fail(warrant.ErrProjectionConflict, err, "stored projection is at seq %s, not %d", stored, prevSeq)
	}
	return wrap(op, err)
}
