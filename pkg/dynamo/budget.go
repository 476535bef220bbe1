package dynamo

import (
	"context"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
)

// A firm's monthly budget lives in the firm's own partition FIRM#<firm>,
// outside every run's (and outside the stream's EVT# filter):
//
//   - the budget item BUDGET#<yyyy-mm>: limit_nano (the limit last applied),
//     spent_nano (settled calls), reserved_nano (open reservations) and
//     headroom_nano = limit - spent - reserved, kept as its own attribute
//     because a condition cannot add two attributes: a reservation is
//     "SET headroom = headroom - :w IF headroom >= :w";
//   - one reservation item per model call, RES#<yyyy-mm>#<run>#<id>:
//     amount_nano, owner (the worker), turn, expires_at (the worker's lease
//     end), in GSI2 under RESV#<first hex digit of id> with GSI2SK =
//     expires_at, so the sweeper finds the expired ones by query, never by
//     scan. It is written in the transaction that takes its amount off the
//     headroom, and deleted (conditioned on being there) in the one that
//     gives it back: settled to the call's cost with its model.usage line,
//     or released whole. Of a settle and a release, only one can happen.
const (
	skBudget       = "BUDGET#"
	skReservation  = "RES#"
	resShardPrefix = "RESV#"
)

func budgetSK(month string) string { return skBudget + month }
func resSK(month, run, id string) string {
	return skReservation + month + "#" + run + "#" + id
}
func resShardOf(id string) string { return resShardPrefix + id[:1] }

// ReservationShards are the GSI2 partitions of open reservations.
func ReservationShards() []string { return shards(resShardPrefix) }

type budgetItem struct {
	PK           string `dynamodbav:"PK"`
	SK           string `dynamodbav:"SK"`
	FirmID       string `dynamodbav:"firm_id"`
	Month        string `dynamodbav:"month"`
	LimitNano    int64  `dynamodbav:"limit_nano"`
	SpentNano    int64  `dynamodbav:"spent_nano"`
	ReservedNano int64  `dynamodbav:"reserved_nano"`
	HeadroomNano int64  `dynamodbav:"headroom_nano"`
	UpdatedAt    string `dynamodbav:"updated_at"`
}

type reservationItem struct {
	PK            string `dynamodbav:"PK"`
	SK            string `dynamodbav:"SK"`
	FirmID        string `dynamodbav:"firm_id"`
	RunID         string `dynamodbav:"run_id"`
	ReservationID string `dynamodbav:"reservation_id"`
	Month         string `dynamodbav:"month"`
	Turn          int64  `dynamodbav:"turn"`
	Owner         string `dynamodbav:"owner"`
	AmountNano    int64  `dynamodbav:"amount_nano"`
	ExpiresAt     string `dynamodbav:"expires_at"`
	CreatedAt     string `dynamodbav:"created_at"`
	GSI2PK        string `dynamodbav:"GSI2PK"`
	GSI2SK        string `dynamodbav:"GSI2SK"`
}

func (r reservationItem) reservation() warrant.Reservation {
	return warrant.Reservation{FirmID: r.FirmID, RunID: r.RunID, ID: r.ReservationID, Month: r.Month, Turn: r.Turn,
		Owner: r.Owner, AmountNano: r.AmountNano, ExpiresAt: parseTime(r.ExpiresAt), CreatedAt: parseTime(r.CreatedAt)}
}

func checkMonth(op, month string) error {
	if t, err := time.Parse(warrant.MonthLayout, month); err != nil || t.Format(warrant.MonthLayout) != month {
		return invalid(op, "month must be yyyy-mm, got %q", month)
	}
	return nil
}

// checkReservation checks what names a reservation's item.
func checkReservation(op string, r warrant.Reservation) error {
	if err := checkIDs(op, "firm_id", r.FirmID, "run_id", r.RunID, "reservation id", r.ID); err != nil {
		return err
	}
	return checkMonth(op, r.Month)
}

// Reserve holds r.AmountNano of the firm's budget for the current month
// (the store's clock, UTC) for one model call, in one transaction:
//
//  0. only the worker holding the run's lease (r.Owner) may reserve for it
//     (a ConditionCheck on the run item): otherwise ErrLeaseHeld;
//  1. the firm's settings still say what limit.FirmUSD says their
//     monthly_budget_usd is (absent when it is empty): otherwise
//     ErrBudgetLimitChanged, and the caller reads them again;
//  2. the month's headroom holds the amount (headroom_nano >= amount, then
//     reduced by it): otherwise ErrFirmBudgetExceeded. The budget item is
//     created at limit.Nano by the month's first reservation, and one last
//     applied with another limit moves to limit.Nano in the same write (its
//     headroom by the difference);
//  3. the reservation item is written.
//
// It returns r with its Month and CreatedAt. A refusal writes nothing.
func (s *Store) Reserve(ctx context.Context, r warrant.Reservation, limit warrant.BudgetLimit) (warrant.Reservation, error) {
	const op = "reserve"
	now := s.nowUTC()
	r.Month, r.CreatedAt = warrant.MonthOf(now), now
	if err := checkReservation(op, r); err != nil {
		return warrant.Reservation{}, err
	}
	if r.Owner == "" || r.Owner == noOwner || r.ExpiresAt.IsZero() || r.AmountNano <= 0 || limit.Nano < 0 {
		return warrant.Reservation{}, invalid(op, "a reservation needs an owner, an expiry and a positive amount, and a limit that is not negative")
	}
	pk, sk := firmPK(r.FirmID), resSK(r.Month, r.RunID, r.ID)
	item, err := marshal(reservationItem{PK: pk, SK: sk, FirmID: r.FirmID, RunID: r.RunID, ReservationID: r.ID, Month: r.Month,
		Turn: r.Turn, Owner: r.Owner, AmountNano: r.AmountNano, ExpiresAt: fmtTime(r.ExpiresAt), CreatedAt: fmtTime(now),
		GSI2PK: resShardOf(r.ID), GSI2SK: fmtTime(r.ExpiresAt)})
	if err != nil {
		return warrant.Reservation{}, wrap(op, err)
	}
	runCond, runVals := leaseHeldBy(ctx, r.Owner)
	lease := &types.ConditionCheck{
		TableName: aws.String(s.table), Key: key(runPK(r.FirmID, r.RunID), skRun), ConditionExpression: aws.String(runCond),
		ExpressionAttributeNames: names(runCond), ExpressionAttributeValues: runVals,
	}
	settingsCond, settingsVals := "attribute_not_exists(#monthly_budget_usd)", map[string]types.AttributeValue(nil)
	if limit.FirmUSD != "" {
		settingsCond, settingsVals = "#monthly_budget_usd = :budget", map[string]types.AttributeValue{":budget": str(limit.FirmUSD)}
	}
	settings := &types.ConditionCheck{
		TableName: aws.String(s.table), Key: key(pk, skSettings), ConditionExpression: aws.String(settingsCond),
		ExpressionAttributeNames: names(settingsCond), ExpressionAttributeValues: settingsVals,
	}
	put := &types.Put{TableName: aws.String(s.table), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(#SK)"), ExpressionAttributeNames: names("#SK")}
	// applied is the limit the stored budget was last applied with, when it
	// is not limit.Nano (the reservation moves it).
	var applied *int64
	for range 4 {
		upd := s.reserveUpdate(pk, r, limit.Nano, applied, now)
		err := s.transact(ctx, []types.TransactWriteItem{{ConditionCheck: lease}, {ConditionCheck: settings}, {Update: upd}, {Put: put}})
		c, ok := firstFailedCondition(err)
		if !ok {
			if err != nil {
				return warrant.Reservation{}, wrap(op, err)
			}
			return r, nil
		}
		switch c.index {
		case 0:
			return warrant.Reservation{}, fail(warrant.ErrLeaseHeld, err, "run %s is not running under %s", r.RunID, r.Owner)
		case 1:
			return warrant.Reservation{}, fail(warrant.ErrBudgetLimitChanged, err, "firm %s's monthly budget is no longer %q", r.FirmID, limit.FirmUSD)
		case 3:
			// The reservation is there: this very write committed and its
			// answer was lost (ids are fresh per call).
			if got, gerr := s.getItem(ctx, pk, sk); gerr == nil && got != nil {
				if it, _ := unmarshal[reservationItem](got); it.Owner == r.Owner && it.AmountNano == r.AmountNano {
					return r, nil
				}
			}
			return warrant.Reservation{}, wrap(op, err)
		}
		m, rerr := s.oldImage(ctx, c.item, pk, budgetSK(r.Month))
		if rerr != nil {
			return warrant.Reservation{}, wrap(op, rerr)
		}
		if m == nil {
			// No budget yet, and the limit cannot hold the amount.
			return warrant.Reservation{}, fail(warrant.ErrFirmBudgetExceeded, err, "firm %s %s: limit %s, call %s",
				r.FirmID, r.Month, pricing.Nano(limit.Nano), pricing.Nano(r.AmountNano))
		}
		b, uerr := unmarshal[budgetItem](m)
		if uerr != nil {
			return warrant.Reservation{}, wrap(op, uerr)
		}
		headroom := b.HeadroomNano
		applied = nil
		if b.LimitNano != limit.Nano {
			headroom += limit.Nano - b.LimitNano
			old := b.LimitNano
			applied = &old
		}
		if headroom < r.AmountNano {
			return warrant.Reservation{}, fail(warrant.ErrFirmBudgetExceeded, err, "firm %s %s: headroom %s at limit %s, call %s",
				r.FirmID, r.Month, pricing.Nano(headroom), pricing.Nano(limit.Nano), pricing.Nano(r.AmountNano))
		}
		// The budget moved between the write and the read: again.
	}
	return warrant.Reservation{}, wrap(op, errBudgetMoving)
}

var errBudgetMoving = &storeError{kind: warrant.ErrBudgetLimitChanged, detail: "the firm's budget kept moving under the reservation"}

// reserveUpdate takes r's amount off the month's headroom. applied nil:
// the stored budget is at limitNano, or there is none yet (it is created
// at limitNano, when that can hold the amount). applied set: the stored
// budget is at *applied and moves to limitNano.
func (s *Store) reserveUpdate(pk string, r warrant.Reservation, limitNano int64, applied *int64, now time.Time) *types.Update {
	u := newUpdate().set("limit_nano", num(limitNano)).set("updated_at", str(fmtTime(now)))
	vals := map[string]types.AttributeValue{":w": num(r.AmountNano)}
	var cond string
	if applied == nil {
		u = u.set("firm_id", str(r.FirmID)).set("month", str(r.Month))
		u.sets = append(u.sets,
			"#spent_nano = if_not_exists(#spent_nano, :zero)",
			"#reserved_nano = if_not_exists(#reserved_nano, :zero) + :w",
			"#headroom_nano = if_not_exists(#headroom_nano, :limit) - :w")
		u.values[":zero"], u.values[":limit"] = num(0), num(limitNano)
		cond = "#limit_nano = :limit AND #headroom_nano >= :w"
		if limitNano >= r.AmountNano {
			cond = "attribute_not_exists(#headroom_nano) OR (" + cond + ")"
		}
	} else {
		// headroom' = headroom + (limit - applied) - w = headroom - need.
		need := r.AmountNano - (limitNano - *applied)
		u.sets = append(u.sets, "#reserved_nano = #reserved_nano + :w", "#headroom_nano = #headroom_nano - :need")
		u.values[":need"] = num(need)
		cond = "#limit_nano = :applied AND #headroom_nano >= :need"
		vals[":applied"] = num(*applied)
	}
	return s.txUpdate(key(pk, budgetSK(r.Month)), u, cond, vals)
}

// SettleUsage stores a call's model.usage line and settles its reservation
// to the line's cost_usd, in one transaction: the line, the run's signed
// head (and, when finish is a terminal status, the run's end), the
// reservation's deletion (conditioned on it being there, this owner's, of
// this amount) and the budget's update (spent += cost, reserved -= amount,
// headroom += amount - cost). A call is counted in the budget exactly when
// its line is in the ledger.
//
// If the reservation is gone (the sweeper released it: its worker's lease
// passed), the cost is charged to the budget directly with the line
// (spent += cost, headroom -= cost): it was given back whole, so the call
// is still counted once. A line already stored byte for byte (a retry) is
// success; other refusals are AppendEvents' and FinishRun's.
func (s *Store) SettleUsage(ctx context.Context, r warrant.Reservation, finish warrant.RunStatus, line contracts.Line) error {
	const op = "settle usage"
	if err := checkReservation(op, r); err != nil {
		return err
	}
	if finish != "" && !finish.Terminal() {
		return invalid(op, "a settlement finishes a run as completed, failed or aborted, or not at all, not %q", finish)
	}
	parsed, err := checkLines(op, r.FirmID, r.RunID, []contracts.Line{line})
	if err != nil {
		return err
	}
	u, ok := parsed[0].Event.(*contracts.ModelUsage)
	if !ok {
		return invalid(op, "the line must be the call's model.usage, got %s", parsed[0].Type)
	}
	cost, err := pricing.ParseUSD(u.CostUSD)
	if err != nil {
		return invalid(op, "cost_usd: %v", err)
	}
	pk := runPK(r.FirmID, r.RunID)
	h, err := s.headOf(ctx, r.FirmID, r.RunID, parsed)
	if err != nil {
		return wrap(op, err)
	}
	var runUpd *types.Update
	var inState func(runItem) bool
	if finish == "" {
		runUpd = s.headUpdate(pk, h)
	} else {
		hc, hv := h.cond()
		now := s.nowUTC()
		upd := h.set(setDone(newUpdate().set("status", str(string(finish))).set("updated_at", str(fmtTime(now))), r.RunID, now))
		hv[":running"] = str(string(warrant.RunRunning))
		runUpd, inState = s.txUpdate(key(pk, skRun), upd, "#status = :running AND "+hc, hv), isRunning
	}
	fpk, bsk := firmPK(r.FirmID), budgetSK(r.Month)
	const delCond = "attribute_exists(#SK) AND #owner = :owner AND #amount_nano = :w"
	del := &types.Delete{TableName: aws.String(s.table), Key: key(fpk, resSK(r.Month, r.RunID, r.ID)),
		ConditionExpression: aws.String(delCond), ExpressionAttributeNames: names(delCond),
		ExpressionAttributeValues: map[string]types.AttributeValue{":owner": str(r.Owner), ":w": num(r.AmountNano)}}
	settle := newUpdate().set("updated_at", str(fmtTime(s.nowUTC())))
	settle.sets = append(settle.sets, "#spent_nano = #spent_nano + :cost", "#reserved_nano = #reserved_nano - :w",
		"#headroom_nano = #headroom_nano + :back")
	settle.values[":cost"], settle.values[":w"], settle.values[":back"] = num(int64(cost)), num(r.AmountNano), num(r.AmountNano-int64(cost))
	items := []types.TransactWriteItem{
		{Put: s.linePut(pk, parsed[0])},
		{Update: runUpd},
		{Delete: del},
		{Update: s.txUpdate(key(fpk, bsk), settle, "attribute_exists(#SK)", nil)},
	}
	for {
		err = s.transact(ctx, items)
		c, ok := firstFailedCondition(err)
		switch {
		case !ok:
			return wrap(op, err)
		case s.committed(ctx, pk, parsed):
			return nil
		case c.index == 0:
			return &SeqTakenError{Seq: parsed[0].Seq, Err: err}
		case c.index == 1:
			return s.runRefused(ctx, c.item, pk, r.RunID, inState, parsed[0].Seq, err)
		case c.index == 2 && len(items) == 4:
			// Released meanwhile: charge the cost on its own.
			charge := newUpdate().set("updated_at", str(fmtTime(s.nowUTC())))
			charge.sets = append(charge.sets, "#spent_nano = #spent_nano + :cost", "#headroom_nano = #headroom_nano - :cost")
			charge.values[":cost"] = num(int64(cost))
			items = []types.TransactWriteItem{items[0], items[1], {Update: s.txUpdate(key(fpk, bsk), charge, "attribute_exists(#SK)", nil)}}
			continue
		}
		return wrap(op, err)
	}
}

// ReleaseReservation gives a reservation's amount back to its month's
// budget whole and deletes it, in one transaction: the reservation must be
// there (so a release and a settle never both happen), and either
// expiredBefore is zero and r.Owner, its worker, releases it (the call
// failed: nothing was billed), or its expiry passed before expiredBefore
// (the sweeper: its worker was lost), in which case only r's keys are needed
// and the amount is read first. released is false when there was nothing
// to release (settled, released or not expired).
func (s *Store) ReleaseReservation(ctx context.Context, r warrant.Reservation, expiredBefore time.Time) (released bool, err error) {
	const op = "release reservation"
	if err := checkReservation(op, r); err != nil {
		return false, err
	}
	fpk, sk := firmPK(r.FirmID), resSK(r.Month, r.RunID, r.ID)
	cond := "attribute_exists(#SK) AND #amount_nano = :w"
	vals := map[string]types.AttributeValue{}
	if expiredBefore.IsZero() {
		if r.Owner == "" || r.AmountNano <= 0 {
			return false, invalid(op, "an owner's release names the owner and the amount")
		}
		cond += " AND #owner = :owner"
		vals[":owner"] = str(r.Owner)
	} else {
		m, err := s.getItem(ctx, fpk, sk)
		if err != nil || m == nil {
			return false, wrap(op, err)
		}
		it, err := unmarshal[reservationItem](m)
		if err != nil {
			return false, wrap(op, err)
		}
		if !parseTime(it.ExpiresAt).Before(expiredBefore) {
			return false, nil
		}
		r.AmountNano = it.AmountNano
		cond += " AND #expires_at < :before"
		vals[":before"] = str(fmtTime(expiredBefore))
	}
	vals[":w"] = num(r.AmountNano)
	del := &types.Delete{TableName: aws.String(s.table), Key: key(fpk, sk),
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: names(cond), ExpressionAttributeValues: vals}
	back := newUpdate().set("updated_at", str(fmtTime(s.nowUTC())))
	back.sets = append(back.sets, "#reserved_nano = #reserved_nano - :w", "#headroom_nano = #headroom_nano + :w")
	back.values[":w"] = num(r.AmountNano)
	err = s.transact(ctx, []types.TransactWriteItem{
		{Delete: del},
		{Update: s.txUpdate(key(fpk, budgetSK(r.Month)), back, "attribute_exists(#SK)", nil)},
	})
	if c, ok := firstFailedCondition(err); ok && c.index == 0 {
		return false, nil // settled or released meanwhile
	}
	if err != nil {
		return false, wrap(op, err)
	}
	return true, nil
}

// ExpiredReservations lists open reservations whose expiry is before
// before, by GSI2 shard (ReservationShards), at most limit in all (<= 0:
// all). Only their keys are known (firm, month, run, id); the index is
// eventually consistent, and ReleaseReservation reads each again.
func (s *Store) ExpiredReservations(ctx context.Context, before time.Time, limit int) ([]warrant.Reservation, error) {
	var out []warrant.Reservation
	for _, shard := range ReservationShards() {
		const kc = "#GSI2PK = :shard AND #GSI2SK < :before"
		in := &dynamodb.QueryInput{
			TableName: aws.String(s.table), IndexName: aws.String(IndexGSI2),
			KeyConditionExpression: aws.String(kc), ExpressionAttributeNames: names(kc),
			ExpressionAttributeValues: map[string]types.AttributeValue{":shard": str(shard), ":before": str(fmtTime(before))},
		}
		for {
			if limit > 0 {
				if limit <= len(out) {
					return out, nil
				}
				in.Limit = aws.Int32(int32(min(limit-len(out), 1000)))
			}
			page, err := s.client.Query(ctx, in)
			if err != nil {
				return out, wrap("expired reservations", err)
			}
			for _, m := range page.Items {
				pk, _ := m[AttrPK].(*types.AttributeValueMemberS)
				sk, _ := m[AttrSK].(*types.AttributeValueMemberS)
				if pk == nil || sk == nil {
					continue
				}
				if r, ok := parseReservationKey(pk.Value, sk.Value); ok {
					out = append(out, r)
				}
			}
			if len(page.LastEvaluatedKey) == 0 {
				break
			}
			in.ExclusiveStartKey = page.LastEvaluatedKey
		}
	}
	return out, nil
}

// parseReservationKey reads firm, month, run and id off a reservation's
// keys; ok is false for any other item.
func parseReservationKey(pk, sk string) (warrant.Reservation, bool) {
	firm, ok := strings.CutPrefix(pk, "FIRM#")
	rest, ok2 := strings.CutPrefix(sk, skReservation)
	if !ok || !ok2 || !isUUID(firm) {
		return warrant.Reservation{}, false
	}
	parts := strings.Split(rest, "#")
	if len(parts) != 3 || checkMonth("", parts[0]) != nil || !isUUID(parts[1]) || !isUUID(parts[2]) {
		return warrant.Reservation{}, false
	}
	return warrant.Reservation{FirmID: firm, Month: parts[0], RunID: parts[1], ID: parts[2]}, true
}

// GetBudget reads a firm's budget for month and its open reservations
// (consistently), at most maxOpen of them (More says there are others), in
// run order. A month with no reservation yet is all zero (Exists false).
func (s *Store) GetBudget(ctx context.Context, firm, month string, maxOpen int) (warrant.Budget, error) {
	const op = "get budget"
	if !idsOK(firm) {
		return warrant.Budget{}, fail(warrant.ErrNotFound, nil, "firm %q", firm)
	}
	if err := checkMonth(op, month); err != nil {
		return warrant.Budget{}, err
	}
	out := warrant.Budget{FirmID: firm, Month: month}
	m, err := s.getItem(ctx, firmPK(firm), budgetSK(month))
	if err != nil {
		return warrant.Budget{}, wrap(op, err)
	}
	if m != nil {
		b, err := unmarshal[budgetItem](m)
		if err != nil {
			return warrant.Budget{}, wrap(op, err)
		}
		out.Exists, out.LimitNano, out.SpentNano, out.ReservedNano, out.HeadroomNano = true, b.LimitNano, b.SpentNano, b.ReservedNano, b.HeadroomNano
		out.UpdatedAt = parseTime(b.UpdatedAt)
	}
	if maxOpen <= 0 {
		return out, nil
	}
	const kc = "#PK = :pk AND begins_with(#SK, :prefix)"
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.table), KeyConditionExpression: aws.String(kc), ExpressionAttributeNames: names(kc),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(firmPK(firm)), ":prefix": str(skReservation + month + "#")},
		ConsistentRead:            aws.Bool(true),
	}
	for {
		in.Limit = aws.Int32(int32(min(maxOpen+1-len(out.Open), 1000)))
		page, err := s.client.Query(ctx, in)
		if err != nil {
			return warrant.Budget{}, wrap(op, err)
		}
		for _, m := range page.Items {
			it, err := unmarshal[reservationItem](m)
			if err != nil {
				return warrant.Budget{}, wrap(op, err)
			}
			out.Open = append(out.Open, it.reservation())
		}
		if len(out.Open) > maxOpen {
			out.Open, out.More = out.Open[:maxOpen], true
			return out, nil
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
