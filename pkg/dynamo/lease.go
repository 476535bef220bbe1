package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// A run's lease lives on its item: lease_owner (noOwner while it waits for
// a worker or for counsel), lease_until, and GSI2 (GSI2PK "RUNS#<shard>",
// GSI2SK lease_until) while the run is not finished. The sweeper queries
// GSI2 for leases that passed, shard by shard, never scanning; a finished run
// moves to the retention shards (retention.go) and, once nothing is left
// to destroy, to GSI2PK "DONE", which no sweep reads (minidyn ignores
// REMOVE, so the key is rewritten rather than removed).
const (
	noOwner    = "none"
	doneShard  = "DONE"
	runShards  = 16
	gsi2Prefix = "RUNS#"
)

// ownerOf stores an empty owner as noOwner (an owner attribute is always
// there, so a condition can compare it).
func ownerOf(owner string) string {
	if owner == "" {
		return noOwner
	}
	return owner
}

// ownerFrom reads a stored owner: noOwner is nobody.
func ownerFrom(stored string) string {
	if stored == noOwner {
		return ""
	}
	return stored
}

// shardOf spreads runs over runShards GSI2 partitions by the first hex digit
// of the run id (random in a v4 or v5 UUID).
func shardOf(run string) string { return gsi2Prefix + run[:1] }

// Shards are the GSI2 partitions a sweep reads.
func Shards() []string { return shards(gsi2Prefix) }

// shards are the runShards GSI2 partitions under prefix, one per first hex
// digit of the id that places an item (shardOf, resShardOf).
func shards(prefix string) []string {
	out := make([]string, 0, runShards)
	for _, c := range "0123456789abcdef" {
		out = append(out, prefix+string(c))
	}
	return out
}

// setLease moves a run's lease in an update (and its GSI2 sort key).
func setLease(u *update, owner string, until time.Time) *update {
	t := fmtTime(until)
	return u.set("lease_owner", str(ownerOf(owner))).set("lease_until", str(t)).set(AttrGSI2SK, str(t))
}

// setDone takes a run finished at at out of the sweeper's lease shards and
// into its retention shards (retention.go), due at once: the sweeper's
// retention pass then reads the retention in force and either destroys
// the content or moves the run to when it falls due.
func setDone(u *update, run string, at time.Time) *update {
	t := str(fmtTime(at))
	return u.set("lease_owner", str(noOwner)).set("ended_at", t).set(AttrGSI2PK, str(retainShardOf(run))).set(AttrGSI2SK, t)
}

// AcquireRun gives owner the lease of a running run until until: when nobody
// holds it, when its holder's lease passed, or when owner already holds it.
// It returns the run as it is now. A run that is not running is
// ErrRunNotInState (held, finished), a live lease of another owner
// ErrLeaseHeld: of any number of workers handed the same run, one works on
// it at a time.
func (s *Store) AcquireRun(ctx context.Context, firm, run, owner string, until time.Time) (warrant.Run, error) {
	const op = "acquire run"
	if !idsOK(firm, run) {
		return warrant.Run{}, fail(warrant.ErrNotFound, nil, "run %q", run)
	}
	if owner == "" || owner == noOwner || until.IsZero() {
		return warrant.Run{}, invalid(op, "a lease needs an owner and an end")
	}
	now := s.nowUTC()
	pk := runPK(firm, run)
	const cond = "#status = :running AND (#lease_owner = :none OR #lease_owner = :me OR #lease_until < :now)"
	u := setLease(newUpdate(), owner, until)
	// Each lease taken is a new epoch: with the owner, the fence every
	// write of this worker is conditioned on.
	u.sets = append(u.sets, "#lease_epoch = if_not_exists(#lease_epoch, :zero) + :one")
	u.values[":zero"], u.values[":one"] = num(0), num(1)
	upd := s.txUpdate(key(pk, skRun), u, cond, map[string]types.AttributeValue{
		":running": str(string(warrant.RunRunning)), ":none": str(noOwner), ":me": str(owner), ":now": str(fmtTime(now))})
	err := s.updateItem(ctx, upd)
	if old, ok := conditionFailed(err); ok {
		old, rerr := s.oldImage(ctx, old, pk, skRun)
		if rerr != nil {
			return warrant.Run{}, wrap(op, rerr)
		}
		if old == nil {
			return warrant.Run{}, fail(warrant.ErrNotFound, err, "run %s", run)
		}
		it, _ := unmarshal[runItem](old)
		if it.Status != string(warrant.RunRunning) {
			return warrant.Run{}, fail(warrant.ErrRunNotInState, err, "run %s is %s", run, it.Status)
		}
		return warrant.Run{}, fail(warrant.ErrLeaseHeld, err, "run %s is leased by %s until %s", run, it.LeaseOwner, it.LeaseUntil)
	}
	if err != nil {
		return warrant.Run{}, wrap(op, err)
	}
	return s.GetRun(ctx, firm, run)
}

// HandOverRun gives up owner's lease of a running run so that a new
// invocation can take it at once: nobody holds it until pickupBy (past it,
// the sweeper restarts the run). Only the lease holder can, in the epoch
// ctx's fence names; another's lease is ErrLeaseHeld and nothing changes.
func (s *Store) HandOverRun(ctx context.Context, firm, run, owner string, pickupBy time.Time) error {
	const op = "hand over run"
	if !idsOK(firm, run) {
		return fail(warrant.ErrNotFound, nil, "run %q", run)
	}
	if owner == "" || owner == noOwner || pickupBy.IsZero() {
		return invalid(op, "a hand-over names the lease holder and a pickup deadline")
	}
	cond, vals := leaseHeldBy(ctx, owner)
	err := s.updateItem(ctx, s.txUpdate(key(runPK(firm, run), skRun), setLease(newUpdate(), "", pickupBy), cond, vals))
	if _, ok := conditionFailed(err); ok {
		return fail(warrant.ErrLeaseHeld, err, "run %s is not leased to %s", run, owner)
	}
	return wrap(op, err)
}

// leaseHeldBy is the run item condition that owner holds the running run's
// lease, in the epoch ctx's fence names when it is owner's.
func leaseHeldBy(ctx context.Context, owner string) (string, map[string]types.AttributeValue) {
	c, v := "#status = :running AND #lease_owner = :owner", map[string]types.AttributeValue{
		":running": str(string(warrant.RunRunning)), ":owner": str(owner)}
	if f, ok := warrant.FenceFromContext(ctx); ok && f.Owner == owner {
		c += " AND #lease_epoch = :epoch"
		v[":epoch"] = num(f.Epoch)
	}
	return c, v
}

// TakeClaim makes owner the executor of a reserved effect claim (one a
// resume reserved, owned by nobody) until until. Only the worker holding the
// run's lease may (a ConditionCheck on the run item in the same
// transaction): a worker whose lease passed cannot start the effect of a run
// the sweeper may already have settled; that is ErrLeaseHeld. Of any number
// of takers one succeeds; a claim already taken or finished is
// ErrEffectClaimed: its outcome is not this taker's to decide, and nobody
// executes it again.
//
// counters are the policy's counts the effect adds to (limits.go), in the
// same transaction, after the claim: the call counsel signed is counted
// (with Max 0, not held to a bound); a bounded one at its bound is a
// *warrant.LimitReachedError and nothing is written.
func (s *Store) TakeClaim(ctx context.Context, firm, run string, k warrant.EffectKey, owner string, until time.Time, counters ...warrant.Counter) error {
	const op = "take claim"
	if err := checkKey(op, k); err != nil {
		return err
	}
	if err := checkCounters(op, counters); err != nil {
		return err
	}
	if !idsOK(firm, run) {
		return fail(warrant.ErrNotFound, nil, "effect %s", k.ToolName)
	}
	if owner == "" || owner == noOwner || until.IsZero() {
		return invalid(op, "a claim needs an owner and a lease")
	}
	pk, sk := runPK(firm, run), effSK(k)
	runCond, runVals := leaseHeldBy(ctx, owner)
	check := &types.ConditionCheck{
		TableName: aws.String(s.table), Key: key(pk, skRun), ConditionExpression: aws.String(runCond),
		ExpressionAttributeNames: names(runCond), ExpressionAttributeValues: runVals,
	}
	const cond = "#state = :claimed AND #owner = :none"
	upd := s.txUpdate(key(pk, sk), newUpdate().set("owner", str(owner)).set("lease_until", str(fmtTime(until))), cond,
		map[string]types.AttributeValue{":claimed": str(string(warrant.ClaimClaimed)), ":none": str(noOwner)})
	err := s.transact(ctx, append([]types.TransactWriteItem{{ConditionCheck: check}, {Update: upd}}, s.counterUpdates(firm, counters)...))
	if c, ok := firstFailedCondition(err); ok {
		if c.index >= 2 {
			return limitReached(counters, c.index-2, err)
		}
		got, gerr := s.GetEffect(ctx, firm, run, k)
		if gerr != nil {
			return gerr
		}
		if got.State == warrant.ClaimClaimed && got.Owner == owner {
			return nil // taken by this very owner: its answer was lost
		}
		if c.index == 0 {
			return fail(warrant.ErrLeaseHeld, err, "run %s is not leased to %s", run, owner)
		}
		return fail(warrant.ErrEffectClaimed, err, "%s %s is %s, owned by %q", k.ToolName, k.InputSHA256, got.State, got.Owner)
	}
	return wrap(op, err)
}

// ExpiredLeases lists the unfinished runs whose lease ended before now, at
// most limit in all (<= 0: all). The index is eventually consistent: the
// sweeper re-reads each run item before acting, and every action is
// conditioned on the lease it saw.
//
// The limit is shared among the GSI2 shards (see Shards), so one shard
// holding more expired runs than the limit cannot starve the others: each
// round asks every shard that may hold more for an equal share of what is
// left (at least one), until the limit is reached or every shard is read
// out. Each shard gives its oldest leases first, and the list takes one
// from each shard in turn (shard order, then the next oldest of each), so a
// pass that runs out of time defers the newest of every shard, not the
// whole of the last shards. With no limit, or fewer expired runs than a
// share, it is one query per shard.
func (s *Store) ExpiredLeases(ctx context.Context, now time.Time, limit int) ([]warrant.RunRef, error) {
	return s.dueRuns(ctx, "expired leases", Shards(), now, limit)
}

// dueRuns reads the run items of GSI2 shards whose sort key is before now,
// at most limit (<= 0: all), the limit shared among the shards so that no
// shard's backlog starves the others, oldest first within each.
func (s *Store) dueRuns(ctx context.Context, op string, shards []string, now time.Time, limit int) ([]warrant.RunRef, error) {
	found := make([][]warrant.RunRef, len(shards))
	from := make([]map[string]types.AttributeValue, len(shards)) // where a shard's next read starts
	open := make([]bool, len(shards))
	for i := range open {
		open[i] = true
	}
	total := 0
	for {
		var active []int
		for i, o := range open {
			if o {
				active = append(active, i)
			}
		}
		if len(active) == 0 || (limit > 0 && total >= limit) {
			break
		}
		share := 0 // all
		if limit > 0 {
			share = max(1, (limit-total)/len(active))
		}
		for _, i := range active {
			ask := share
			if limit > 0 {
				if ask = min(share, limit-total); ask <= 0 {
					break
				}
			}
			refs, next, err := s.dueIn(ctx, op, shards[i], now, ask, from[i])
			if err != nil {
				return interleave(found), err
			}
			found[i] = append(found[i], refs...)
			total += len(refs)
			from[i], open[i] = next, len(next) > 0
		}
	}
	return interleave(found), nil
}

// interleave takes one from each list in turn, until all are taken.
func interleave(lists [][]warrant.RunRef) []warrant.RunRef {
	var out []warrant.RunRef
	for k := 0; ; k++ {
		took := false
		for _, l := range lists {
			if k < len(l) {
				out = append(out, l[k])
				took = true
			}
		}
		if !took {
			return out
		}
	}
}

// dueIn reads at most limit (<= 0: all) of one shard's due runs, oldest
// first, starting after from (nil: at the start). next is where the
// shard's next read starts, nil when it is read out.
func (s *Store) dueIn(ctx context.Context, op, shard string, now time.Time, limit int, from map[string]types.AttributeValue) (
	out []warrant.RunRef, next map[string]types.AttributeValue, err error) {
	const kc = "#GSI2PK = :shard AND #GSI2SK < :now"
	in := &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		IndexName:                aws.String(IndexGSI2),
		KeyConditionExpression:   aws.String(kc),
		ExpressionAttributeNames: names(kc),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":shard": str(shard), ":now": str(fmtTime(now))},
		ExclusiveStartKey: from,
	}
	for {
		if limit > 0 {
			in.Limit = aws.Int32(int32(min(limit-len(out), 1000)))
		}
		page, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, nil, wrap(op, err)
		}
		for _, m := range page.Items {
			pk, _ := m[AttrPK].(*types.AttributeValueMemberS)
			sk, _ := m[AttrSK].(*types.AttributeValueMemberS)
			if pk == nil || sk == nil || sk.Value != skRun {
				continue
			}
			if firm, run, ok := ParseRunKey(pk.Value); ok {
				out = append(out, warrant.RunRef{FirmID: firm, RunID: run})
			}
		}
		if len(page.LastEvaluatedKey) == 0 || (limit > 0 && len(out) >= limit) {
			return out, page.LastEvaluatedKey, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// RestartRun hands a running run whose lease passed to a new worker: nobody
// holds it until pickupBy, and its restarts count goes up, at most to max. A
// run whose lease was renewed meanwhile (a worker came back), or that was
// restarted max times, is ErrRunNotInState.
func (s *Store) RestartRun(ctx context.Context, firm, run string, pickupBy time.Time, max int) error {
	const op = "restart run"
	if !idsOK(firm, run) {
		return fail(warrant.ErrNotFound, nil, "run %q", run)
	}
	if max <= 0 {
		return fail(warrant.ErrRunNotInState, nil, "run %s may not be restarted (max %d)", run, max)
	}
	now := s.nowUTC()
	pk := runPK(firm, run)
	const cond = "#status = :running AND #lease_until < :now AND (attribute_not_exists(#restarts) OR #restarts < :max)"
	u := setLease(newUpdate(), "", pickupBy)
	u.sets = append(u.sets, "#restarts = if_not_exists(#restarts, :zero) + :one")
	u.values[":zero"], u.values[":one"] = num(0), num(1)
	upd := s.txUpdate(key(pk, skRun), u, cond, map[string]types.AttributeValue{
		":running": str(string(warrant.RunRunning)), ":now": str(fmtTime(now)), ":max": num(int64(max))})
	err := s.updateItem(ctx, upd)
	if _, ok := conditionFailed(err); ok {
		return fail(warrant.ErrRunNotInState, err, "run %s cannot be restarted now", run)
	}
	return wrap(op, err)
}

// SweepFail ends a run the sweeper found stuck, with its lines (run.failed,
// and tool.completed with status unknown for an open effect), in one
// transaction that also moves the signed head: a running run whose lease
// passed before sw.LeaseExpiredBy (flagging sw.Flag's claim for
// reconciliation, conditioned on it still being claimed), a held run whose
// warrant sw.ExpireApproval passed its expiry (the warrant becomes expired),
// or a held run whose approved warrant sw.RefuseApproval the policy now
// denies (the warrant becomes refused).
// A run that changed meanwhile (a worker came back, counsel resumed) is
// ErrRunNotInState and nothing is written.
func (s *Store) SweepFail(ctx context.Context, sw warrant.SweepFailure, lines ...contracts.Line) error {
	const op = "sweep fail"
	if !idsOK(sw.FirmID, sw.RunID) {
		return fail(warrant.ErrNotFound, nil, "run %q", sw.RunID)
	}
	shapes := 0
	for _, set := range []bool{!sw.LeaseExpiredBy.IsZero(), sw.Owner != "", sw.ExpireApproval != "", sw.RefuseApproval != ""} {
		if set {
			shapes++
		}
	}
	if sw.Owner == noOwner {
		return invalid(op, "the Owner shape is a worker holding the lease; %q is nobody", noOwner)
	}
	if shapes != 1 || (sw.Flag != nil && (sw.ExpireApproval != "" || sw.RefuseApproval != "")) {
		return invalid(op, "a sweep ends a running run whose lease passed or is held by Owner, or a held run whose warrant expired or was refused")
	}
	parsed, err := checkLines(op, sw.FirmID, sw.RunID, lines)
	if err != nil {
		return err
	}
	if len(parsed) == 0 {
		return invalid(op, "a sweep records why with its lines")
	}
	now := s.nowUTC()
	pk := runPK(sw.FirmID, sw.RunID)
	h, err := s.headOf(ctx, sw.FirmID, sw.RunID, parsed)
	if err != nil {
		return wrap(op, err)
	}
	hc, vals := h.cond()
	cond := hc
	u := h.set(setDone(newUpdate().set("status", str(string(warrant.RunFailed))).set("updated_at", str(fmtTime(now))), sw.RunID, now))
	var items []types.TransactWriteItem
	if sw.ExpireApproval != "" {
		if !idsOK(sw.ExpireApproval) {
			return fail(warrant.ErrNotFound, nil, "approval %q", sw.ExpireApproval)
		}
		cond += " AND #status = :held AND #held_on = :approval"
		vals[":held"], vals[":approval"] = str(string(warrant.RunHeld)), str(sw.ExpireApproval)
		items = append(items, types.TransactWriteItem{Update: s.txUpdate(key(pk, aprSK(sw.ExpireApproval)),
			newUpdate().set("status", str(string(warrant.WarrantExpired))).set(AttrGSI1PK, str(doneShard)),
			// Only a warrant nobody used can expire, and only once it passed.
			"#status IN (:pending, :approved, :denied) AND #expires_at <= :now",
			map[string]types.AttributeValue{":pending": str(string(warrant.WarrantPending)), ":approved": str(string(warrant.WarrantApproved)),
				":denied": str(string(warrant.WarrantDenied)), ":now": str(fmtTime(now))})})
	} else if sw.RefuseApproval != "" {
		if !idsOK(sw.RefuseApproval) {
			return fail(warrant.ErrNotFound, nil, "approval %q", sw.RefuseApproval)
		}
		cond += " AND #status = :held AND #held_on = :approval"
		vals[":held"], vals[":approval"] = str(string(warrant.RunHeld)), str(sw.RefuseApproval)
		items = append(items, types.TransactWriteItem{Update: s.txUpdate(key(pk, aprSK(sw.RefuseApproval)),
			newUpdate().set("status", str(string(warrant.WarrantRefused))),
			// Only an approved warrant nobody used is refused at dispatch.
			"#status = :approved", map[string]types.AttributeValue{":approved": str(string(warrant.WarrantApproved))})})
	} else if sw.Owner != "" {
		cond += " AND #status = :running AND #lease_owner = :owner"
		vals[":running"], vals[":owner"] = str(string(warrant.RunRunning)), str(sw.Owner)
	} else {
		cond += " AND #status = :running AND #lease_until < :expired"
		vals[":running"], vals[":expired"] = str(string(warrant.RunRunning)), str(fmtTime(sw.LeaseExpiredBy))
	}
	items = append([]types.TransactWriteItem{{Update: s.txUpdate(key(pk, skRun), u, cond, vals)}}, items...)
	if sw.Flag != nil {
		if err := checkKey(op, *sw.Flag); err != nil {
			return err
		}
		items = append(items, types.TransactWriteItem{Update: s.txUpdate(key(pk, effSK(*sw.Flag)),
			newUpdate().set("needs_reconciliation", &types.AttributeValueMemberBOOL{Value: true}),
			"#state = :claimed", map[string]types.AttributeValue{":claimed": str(string(warrant.ClaimClaimed))})})
	}
	for _, l := range parsed {
		items = append(items, types.TransactWriteItem{Put: s.linePut(pk, l)})
	}
	err = s.transact(ctx, items)
	if _, ok := firstFailedCondition(err); ok {
		if s.committed(ctx, pk, parsed) {
			return nil
		}
		return fail(warrant.ErrRunNotInState, err, "run %s changed while sweeping", sw.RunID)
	}
	return wrap(op, err)
}

// ReconcileEffect records counsel's reconciliation of an effect whose outcome
// was unknown: the claim (flagged for reconciliation, still claimed) becomes
// reconciled with the outcome, and the effect.reconciled line is stored, in
// one transaction. Nothing is executed. A claim not waiting for
// reconciliation is ErrNotReconcilable.
func (s *Store) ReconcileEffect(ctx context.Context, firm, run string, k warrant.EffectKey, r warrant.Reconciliation, line contracts.Line) error {
	const op = "reconcile effect"
	if err := checkKey(op, k); err != nil {
		return err
	}
	if !idsOK(firm, run) {
		return fail(warrant.ErrNotFound, nil, "effect %s", k.ToolName)
	}
	if r.Outcome != warrant.OutcomeExecuted && r.Outcome != warrant.OutcomeNotExecuted {
		return invalid(op, "outcome must be executed or not_executed, got %q", r.Outcome)
	}
	parsed, err := checkLines(op, firm, run, []contracts.Line{line})
	if err != nil {
		return err
	}
	// The line says what the claim will: the same effect, outcome and
	// reference (the claim's effect_ref is held to it in the condition).
	ev, ok := parsed[0].Event.(*contracts.EffectReconciled)
	if !ok || ev.ToolName != k.ToolName || ev.InputSHA256 != k.InputSHA256 || ev.Outcome != r.Outcome || ev.ExternalRef != r.ExternalRef {
		return invalid(op, "the line must be the effect.reconciled of this effect, outcome and reference")
	}
	pk := runPK(firm, run)
	h, err := s.headOf(ctx, firm, run, parsed)
	if err != nil {
		return wrap(op, err)
	}
	err = s.transact(ctx, []types.TransactWriteItem{
		{Update: s.txUpdate(key(pk, effSK(k)),
			newUpdate().set("state", str(string(warrant.ClaimReconciled))).set("reconciled", str(r.Outcome)).
				setStr("external_ref", r.ExternalRef).set("needs_reconciliation", &types.AttributeValueMemberBOOL{Value: false}),
			// Reconciled once, only an effect whose outcome is unknown, and
			// only the effect the line names.
			"#state = :claimed AND #needs_reconciliation = :flagged AND #effect_ref = :ref",
			map[string]types.AttributeValue{":claimed": str(string(warrant.ClaimClaimed)), ":flagged": &types.AttributeValueMemberBOOL{Value: true},
				":ref": str(ev.EffectRef)})},
		{Put: s.linePut(pk, parsed[0])},
		{Update: s.headUpdate(pk, h)},
	})
	if c, ok := firstFailedCondition(err); ok {
		if s.committed(ctx, pk, parsed) {
			return nil
		}
		if c.index == 0 {
			return fail(warrant.ErrNotReconcilable, err, "effect %s %s", k.ToolName, k.InputSHA256)
		}
		return &SeqTakenError{Seq: parsed[0].Seq, Err: err}
	}
	return wrap(op, err)
}
