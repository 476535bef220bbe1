package dynamo_test

import (
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"

	"github.com/seed-f6d3920e/warrant"
)

// Firm budgets (budget.go): a model call's worst case is reserved against
// the firm's month before the call, and settled to its cost with its
// model.usage line, or released whole; never both, never twice.

// leased is a running run leased to a worker until a minute from now.
func (e *env) leased(firm string) (*run, string) {
	e.t.Helper()
	owner := "lambda-" + id()[:8]
	return e.newRunID(firm, id(), warrant.Lease{Owner: owner, Until: e.clock.Now().Add(time.Minute)}), owner
}

// reservation is a call's reservation of amount nano-USD by owner for r.
func (e *env) reservation(r *run, owner string, amount int64) warrant.Reservation {
	return warrant.Reservation{FirmID: r.firm, RunID: r.id, ID: id(), Turn: 1, Owner: owner, AmountNano: amount,
		ExpiresAt: e.clock.Now().Add(time.Minute)}
}

// usageLine is the run's next line: a model.usage of cost nano-USD.
func (e *env) usageLine(r *run, cost int64) contracts.Line {
	return e.next(r, &contracts.ModelUsage{Turn: 1, ModelID: "model-x", Usage: contracts.Usage{InputTokens: 10, OutputTokens: 5},
		CostUSD: pricing.FormatUSD(pricing.Nano(cost))})
}

// budget is the firm's budget this month, with its open reservations.
func (e *env) budget(firm string) warrant.Budget {
	e.t.Helper()
	b, err := e.store.GetBudget(e.ctx, firm, warrant.MonthOf(e.clock.Now()), 100)
	must(e.t, err)
	return b
}

// wantBudget checks the stored counters and the invariant headroom =
// limit - spent - reserved.
func (e *env) wantBudget(what string, b warrant.Budget, limit, spent, reserved int64, open int) {
	e.t.Helper()
	if !b.Exists || b.LimitNano != limit || b.SpentNano != spent || b.ReservedNano != reserved || b.HeadroomNano != limit-spent-reserved || len(b.Open) != open {
		e.t.Errorf("%s: budget limit %d spent %d reserved %d headroom %d, %d open; want %d %d %d %d, %d open",
			what, b.LimitNano, b.SpentNano, b.ReservedNano, b.HeadroomNano, len(b.Open), limit, spent, reserved, limit-spent-reserved, open)
	}
	var held int64
	for _, r := range b.Open {
		held += r.AmountNano
	}
	if held != b.ReservedNano {
		e.t.Errorf("%s: open reservations hold %d, reserved_nano says %d", what, held, b.ReservedNano)
	}
}

// firmItems is the firm partition's items (budgets, reservations), for
// comparing.
func (e *env) firmItems(firm string) []map[string]any {
	e.t.Helper()
	out, err := e.ep.Client.Query(e.ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(e.table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": "PK"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "FIRM#" + firm}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	var items []map[string]any
	if err := attributevalue.UnmarshalListOfMaps(out.Items, &items); err != nil {
		e.t.Fatal(err)
	}
	return items
}

// testBudgetReserveSettle: a reservation takes its amount off the headroom
// and is listed; its settlement stores the usage line, moves the head and
// turns the amount into the line's cost, once (a repeat changes nothing);
// a release after it finds nothing.
func testBudgetReserveSettle(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm := id()
	r, owner := e.leased(firm)
	res, err := e.store.Reserve(e.ctx, e.reservation(r, owner, 300), warrant.BudgetLimit{Nano: 1000})
	must(t, err)
	if res.Month != warrant.MonthOf(e.clock.Now()) || res.CreatedAt.IsZero() {
		t.Fatalf("reservation %+v", res)
	}
	b := e.budget(firm)
	e.wantBudget("after the reservation", b, 1000, 0, 300, 1)
	if got := b.Open[0]; got.ID != res.ID || got.RunID != r.id || got.Owner != owner || got.Turn != 1 || !got.ExpiresAt.Equal(res.ExpiresAt) {
		t.Errorf("open reservation %+v, reserved %+v", got, res)
	}

	line := e.usageLine(r, 120)
	must(t, e.store.SettleUsage(e.ctx, res, "", line))
	r.chain.Advance(line)
	e.wantBudget("after the settlement", e.budget(firm), 1000, 120, 0, 0)
	if got := e.getRun(r); got.Head.Seq != line.Seq || got.Head.Hash != line.Hash || got.Status != warrant.RunRunning {
		t.Errorf("run after the settlement: %+v", got)
	}
	if items := e.ledger(r); len(items) != 2 || string(items[1].Raw) != string(line.Raw) {
		t.Errorf("ledger after the settlement: %d lines", len(items))
	}

	// The same settlement again (its answer lost): success, counted once.
	before := e.firmItems(firm)
	must(t, e.store.SettleUsage(e.ctx, res, "", line))
	if after := e.firmItems(firm); !reflect.DeepEqual(before, after) {
		t.Errorf("a repeated settlement changed the budget:\n%v\n%v", before, after)
	}
	// Nothing left to release, by its owner or by the sweeper.
	for _, cutoff := range []time.Time{{}, e.clock.Now().Add(time.Hour)} {
		if ok, err := e.store.ReleaseReservation(e.ctx, res, cutoff); ok || err != nil {
			t.Errorf("release after the settlement: %v %v", ok, err)
		}
	}
	e.wantBudget("after the releases", e.budget(firm), 1000, 120, 0, 0)

	// A settlement that ends the run (the reducer's abort) finishes it in
	// the same write.
	res2, err := e.store.Reserve(e.ctx, e.reservation(r, owner, 200), warrant.BudgetLimit{Nano: 1000})
	must(t, err)
	line2 := e.usageLine(r, 200)
	must(t, e.store.SettleUsage(e.ctx, res2, warrant.RunAborted, line2))
	r.chain.Advance(line2)
	if got := e.getRun(r); got.Status != warrant.RunAborted || got.Head.Seq != line2.Seq {
		t.Errorf("run after a finishing settlement: %+v", got)
	}
	e.wantBudget("after the finishing settlement", e.budget(firm), 1000, 320, 0, 0)
}

// testBudgetRefusalWritesNothing: a reservation the month cannot hold, or
// one by a worker that does not hold the run's lease, is refused and
// writes nothing; the budget is created on the first reservation that fits.
func testBudgetRefusalWritesNothing(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm := id()
	r, owner := e.leased(firm)
	runBefore := e.partition(firm, r.id)
	_, err := e.store.Reserve(e.ctx, e.reservation(r, owner, 101), warrant.BudgetLimit{Nano: 100})
	wantErr(t, err, warrant.ErrFirmBudgetExceeded, "first reservation above the limit")
	if items := e.firmItems(firm); len(items) != 0 {
		t.Errorf("a refused first reservation wrote %v", items)
	}
	_, err = e.store.Reserve(e.ctx, e.reservation(r, owner, 1), warrant.BudgetLimit{Nano: 0})
	wantErr(t, err, warrant.ErrFirmBudgetExceeded, "a limit of zero")
	if b, err := e.store.GetBudget(e.ctx, firm, warrant.MonthOf(e.clock.Now()), 10); err != nil || b.Exists || len(b.Open) != 0 {
		t.Errorf("budget of a firm that reserved nothing: %+v %v", b, err)
	}

	_, err = e.store.Reserve(e.ctx, e.reservation(r, owner, 60), warrant.BudgetLimit{Nano: 100})
	must(t, err)
	before := e.firmItems(firm)
	_, err = e.store.Reserve(e.ctx, e.reservation(r, owner, 41), warrant.BudgetLimit{Nano: 100})
	wantErr(t, err, warrant.ErrFirmBudgetExceeded, "a reservation one nano past the headroom")
	_, err = e.store.Reserve(e.ctx, e.reservation(r, "lambda-stale", 1), warrant.BudgetLimit{Nano: 100})
	wantErr(t, err, warrant.ErrLeaseHeld, "a reservation by a worker without the lease")
	other, _ := e.leased(firm)
	_, err = e.store.Reserve(e.ctx, e.reservation(other, owner, 1), warrant.BudgetLimit{Nano: 100})
	wantErr(t, err, warrant.ErrLeaseHeld, "a reservation for another worker's run")
	if after := e.firmItems(firm); !reflect.DeepEqual(before, after) {
		t.Errorf("refused reservations changed the firm's items:\n%v\n%v", before, after)
	}
	e.unchanged(runBefore, firm, r.id, "reservations")
	// Exactly the headroom fits.
	_, err = e.store.Reserve(e.ctx, e.reservation(r, owner, 40), warrant.BudgetLimit{Nano: 100})
	must(t, err)
	e.wantBudget("full", e.budget(firm), 100, 0, 100, 2)
}

// testBudgetReleaseOnce: a reservation is released once, whole, by its
// worker (the call failed) or, after its expiry, by the sweeper, which
// finds it on GSI2; a settlement after the sweeper's release charges the
// cost directly, so the call is counted exactly once.
func testBudgetReleaseOnce(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm := id()
	r, owner := e.leased(firm)

	// By its owner.
	res, err := e.store.Reserve(e.ctx, e.reservation(r, owner, 250), warrant.BudgetLimit{Nano: 1000})
	must(t, err)
	if ok, err := e.store.ReleaseReservation(e.ctx, warrant.Reservation{FirmID: firm, RunID: r.id, ID: res.ID, Month: res.Month,
		Owner: "lambda-other", AmountNano: 250}, time.Time{}); ok || err != nil {
		t.Errorf("release by another owner: %v %v", ok, err)
	}
	for i, want := range []bool{true, false} {
		if ok, err := e.store.ReleaseReservation(e.ctx, res, time.Time{}); ok != want || err != nil {
			t.Errorf("owner's release %d: %v %v", i+1, ok, err)
		}
	}
	e.wantBudget("after the owner's release", e.budget(firm), 1000, 0, 0, 0)

	// By the sweeper, once expired.
	res, err = e.store.Reserve(e.ctx, e.reservation(r, owner, 400), warrant.BudgetLimit{Nano: 1000})
	must(t, err)
	if ok, err := e.store.ReleaseReservation(e.ctx, warrant.Reservation{FirmID: firm, RunID: r.id, ID: res.ID, Month: res.Month},
		res.ExpiresAt); ok || err != nil {
		t.Errorf("sweeper's release at its expiry: %v %v", ok, err)
	}
	after := res.ExpiresAt.Add(time.Millisecond)
	// The local endpoints' indexes are consistent at once (DynamoDB's are
	// not: the sweeper reads each reservation again before it acts).
	ep.Counter.Reset()
	refs, err := e.store.ExpiredReservations(e.ctx, after, 0)
	must(t, err)
	if ops := ep.Counter.ByOp(); ops["Scan"] != 0 || ops["Query"] != len(dynamo.ReservationShards()) || len(ops) != 1 {
		t.Errorf("ExpiredReservations used %v, want %d Queries and nothing else", ops, len(dynamo.ReservationShards()))
	}
	if len(refs) != 1 {
		t.Fatalf("expired reservations %+v, want 1", refs)
	}
	if got := refs[0]; got.FirmID != firm || got.RunID != r.id || got.ID != res.ID || got.Month != res.Month {
		t.Fatalf("expired reservation %+v, want %+v", got, res)
	}
	if refs, err := e.store.ExpiredReservations(e.ctx, res.ExpiresAt, 0); err != nil || len(refs) != 0 {
		t.Errorf("expired before its expiry: %+v %v", refs, err)
	}
	var released atomic.Int32
	var wg sync.WaitGroup
	for range 8 { // overlapping sweeper passes
		wg.Go(func() {
			ok, err := e.store.ReleaseReservation(e.ctx, refs[0], after)
			if err != nil {
				t.Errorf("sweeper's release: %v", err)
			}
			if ok {
				released.Add(1)
			}
		})
	}
	wg.Wait()
	if released.Load() != 1 {
		t.Errorf("%d sweeper passes released it", released.Load())
	}
	e.wantBudget("after the sweeper's release", e.budget(firm), 1000, 0, 0, 0)
	if refs, err := e.store.ExpiredReservations(e.ctx, after, 0); err != nil || len(refs) != 0 {
		t.Errorf("a released reservation is still in the index: %+v %v", refs, err)
	}

	// Its worker was not dead after all: its settlement still counts the
	// call, once.
	line := e.usageLine(r, 330)
	must(t, e.store.SettleUsage(e.ctx, res, "", line))
	r.chain.Advance(line)
	e.wantBudget("settled after the release", e.budget(firm), 1000, 330, 0, 0)
	must(t, e.store.SettleUsage(e.ctx, res, "", line))
	e.wantBudget("that settlement repeated", e.budget(firm), 1000, 330, 0, 0)
}

// testBudgetLimitChange: a reservation holds only while the firm's
// settings say what its reserver read (otherwise ErrBudgetLimitChanged,
// nothing written); one made with the limit in force moves a budget last
// applied with another limit to it, the headroom by the difference.
func testBudgetLimitChange(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm := id()
	r, owner := e.leased(firm)
	dflt := int64(1000)
	settings := func() warrant.BudgetLimit {
		t.Helper()
		fs, err := e.store.GetFirmSettings(e.ctx, firm)
		must(t, err)
		return fs.Limit(&dflt)
	}
	setBudget := func(n int64) {
		t.Helper()
		must(t, e.store.PutFirmSettings(e.ctx, warrant.FirmSettings{FirmID: firm, SeparationOfDuties: true, MonthlyBudgetNano: &n}))
	}
	stale := settings() // the deployment's default: 1000
	_, err := e.store.Reserve(e.ctx, e.reservation(r, owner, 300), stale)
	must(t, err)

	setBudget(500)
	before := e.firmItems(firm)
	_, err = e.store.Reserve(e.ctx, e.reservation(r, owner, 1), stale)
	wantErr(t, err, warrant.ErrBudgetLimitChanged, "a reserver that read the settings before the change")
	if after := e.firmItems(firm); !reflect.DeepEqual(before, after) {
		t.Errorf("a stale reserver wrote:\n%v\n%v", before, after)
	}
	// Lowered to 500: 200 left, so 201 does not fit and 200 does.
	lowered := settings()
	if lowered.Nano != 500 || lowered.FirmUSD == "" {
		t.Fatalf("settings read %+v", lowered)
	}
	_, err = e.store.Reserve(e.ctx, e.reservation(r, owner, 201), lowered)
	wantErr(t, err, warrant.ErrFirmBudgetExceeded, "above the lowered limit")
	if after := e.firmItems(firm); !reflect.DeepEqual(before, after) {
		t.Errorf("a refused reservation at a new limit wrote:\n%v\n%v", before, after)
	}
	_, err = e.store.Reserve(e.ctx, e.reservation(r, owner, 200), lowered)
	must(t, err)
	e.wantBudget("lowered", e.budget(firm), 500, 0, 500, 2)
	_, err = e.store.Reserve(e.ctx, e.reservation(r, owner, 1), lowered)
	wantErr(t, err, warrant.ErrFirmBudgetExceeded, "the lowered budget is full")

	// Raised to 2000.
	setBudget(2000)
	_, err = e.store.Reserve(e.ctx, e.reservation(r, owner, 1), lowered)
	wantErr(t, err, warrant.ErrBudgetLimitChanged, "a reserver that read the lowered budget")
	_, err = e.store.Reserve(e.ctx, e.reservation(r, owner, 1500), settings())
	must(t, err)
	e.wantBudget("raised", e.budget(firm), 2000, 0, 2000, 3)
}

// testBudgetRace64: 64 workers, one run each, reserve at once against a
// budget that holds 10 of their reservations: exactly 10 succeed and the
// budget never goes below zero; then they all settle at once.
func testBudgetRace64(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm := id()
	const n, amount, limit = 64, 1_000_000, 10_500_000
	runs, owners := make([]*run, n), make([]string, n)
	for i := range n {
		runs[i], owners[i] = e.leased(firm)
	}
	got := make([]*warrant.Reservation, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			res, err := e.store.Reserve(e.ctx, e.reservation(runs[i], owners[i], amount), warrant.BudgetLimit{Nano: limit})
			switch {
			case err == nil:
				got[i] = &res
			case !errors.Is(err, warrant.ErrFirmBudgetExceeded):
				t.Errorf("worker %d: %v", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for _, r := range got {
		if r != nil {
			won++
		}
	}
	if won != 10 {
		t.Fatalf("%d of %d reservations of %d fit in %d", won, n, amount, limit)
	}
	e.wantBudget("after the race", e.budget(firm), limit, 0, 10*amount, 10)
	for i, r := range got {
		if r == nil {
			continue
		}
		wg.Go(func() {
			if err := e.store.SettleUsage(e.ctx, *r, "", e.usageLine(runs[i], amount/2)); err != nil {
				t.Errorf("settle %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	e.wantBudget("after the settlements", e.budget(firm), limit, 10*amount/2, 0, 0)
}

// testBudgetRoundTrips: a reservation is one round trip, its settlement one
// (the same one that stores the usage line, as before reservations), a
// refusal one (the budget's old image comes back with the cancellation).
func testBudgetRoundTrips(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm := id()
	r, owner := e.leased(firm)
	trips := func(what string, want int, fn func()) {
		t.Helper()
		ep.Counter.Reset()
		fn()
		if got := ep.Counter.Count(); got != want {
			t.Errorf("%s: %d round trips %v, want %d", what, got, ep.Counter.ByOp(), want)
		}
	}
	var res warrant.Reservation
	trips("Reserve", 1, func() {
		var err error
		res, err = e.store.Reserve(e.ctx, e.reservation(r, owner, 500), warrant.BudgetLimit{Nano: 1000})
		must(t, err)
	})
	trips("SettleUsage", 1, func() {
		l := e.usageLine(r, 100)
		must(t, e.store.SettleUsage(e.ctx, res, "", l))
		r.chain.Advance(l)
	})
	trips("refused Reserve", 1, func() {
		_, err := e.store.Reserve(e.ctx, e.reservation(r, owner, 901), warrant.BudgetLimit{Nano: 1000})
		wantErr(t, err, warrant.ErrFirmBudgetExceeded, "refused")
	})
	trips("GetBudget", 2, func() { e.budget(firm) })
}
