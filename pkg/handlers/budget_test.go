package handlers_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
)

// The firm's monthly budget through the handlers: GET /v1/budget, the
// sweeper's release of a lost worker's reservation, and 64 runs of one firm
// at once never spending past it.

// getBudget is GET /v1/budget (events/get-budget.json, any user of the
// fixture firm) with query q.
func (s *stack) getBudget(q map[string]string) handlers.BudgetView {
	s.t.Helper()
	resp := s.post(fixture(s.t, "get-budget.json").query(q))
	if resp.StatusCode != 200 || resp.Headers["Content-Type"] != "application/json" {
		s.t.Fatalf("get budget: %d %v %s", resp.StatusCode, resp.Headers, resp.Body)
	}
	return decode[handlers.BudgetView](s.t, resp)
}

// usageCost sums the cost_usd of runs' model.usage lines and counts them.
func (s *stack) usageCost(firm string, runs ...string) (pricing.Nano, int) {
	s.t.Helper()
	var sum pricing.Nano
	n := 0
	for _, r := range runs {
		items, _, err := s.store.ReadLedger(context.Background(), firm, r, 0, 0)
		if err != nil {
			s.t.Fatal(err)
		}
		for _, it := range items {
			l, err := contracts.ParseEventLine(it.Raw)
			if err != nil {
				s.t.Fatal(err)
			}
			if u, ok := l.Event.(*contracts.ModelUsage); ok {
				c, err := pricing.ParseUSD(u.CostUSD)
				if err != nil {
					s.t.Fatal(err)
				}
				sum += c
				n++
			}
		}
	}
	return sum, n
}

// setFirmBudget gives the fixture firm a monthly budget of its own.
func (s *stack) setFirmBudget(firm string, n pricing.Nano) {
	s.t.Helper()
	v := int64(n)
	if err := s.store.PutFirmSettings(context.Background(), warrant.FirmSettings{FirmID: firm, SeparationOfDuties: true, MonthlyBudgetNano: &v}); err != nil {
		s.t.Fatal(err)
	}
}

// lostReservation leaves a run as a worker does that reserved its first
// call and died before it was answered: the run leased to it for a
// minute, the reservation open. The run's hand-over message is lost with it.
func (s *stack) lostReservation(t *testing.T, amount pricing.Nano) (string, warrant.Reservation) {
	t.Helper()
	ctx := context.Background()
	resp := s.post(fixture(t, "invoke.json"))
	if resp.StatusCode != 202 {
		t.Fatalf("invoke: %d %s", resp.StatusCode, resp.Body)
	}
	runID := decode[handlers.RunView](t, resp).RunID
	s.lose()
	const dead = "worker-that-died"
	lease := s.clock.Now().Add(time.Minute)
	if _, err := s.store.AcquireRun(ctx, fixFirm, runID, dead, lease); err != nil {
		t.Fatal(err)
	}
	fs, err := s.store.GetFirmSettings(ctx, fixFirm)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.store.Reserve(ctx, warrant.Reservation{FirmID: fixFirm, RunID: runID, ID: uuid.NewString(), Turn: 1, Owner: dead,
		AmountNano: int64(amount), ExpiresAt: lease}, fs.Limit(s.runsCfg.DefaultFirmBudget()))
	if err != nil {
		t.Fatal(err)
	}
	return runID, res
}

// TestGetBudget: any user of a firm reads its budget this month: the limit
// in force (the deployment's default, then the firm's own), what its
// settled calls cost (the sum of its usage lines), what open reservations
// hold and list, the headroom; another firm sees its own.
func TestGetBudget(t *testing.T) {
	s := newStack(t, stackOptions{})
	month := warrant.MonthOf(s.clock.Now())
	v := s.getBudget(nil)
	if v.Month != month || v.LimitUSD != "100.00" || v.SpentUSD != "0.00" || v.ReservedUSD != "0.00" || v.HeadroomUSD != "100.00" ||
		v.OpenReservations == nil || len(v.OpenReservations) != 0 || v.MoreReservations {
		t.Fatalf("a firm that spent nothing: %+v", v)
	}

	done := s.completeRun(t)
	spent, calls := s.usageCost(fixFirm, done.runID)
	if calls != 3 {
		t.Fatalf("the completed run made %d model calls", calls)
	}
	v = s.getBudget(nil)
	if v.SpentUSD != pricing.FormatUSD(spent) || v.ReservedUSD != "0.00" || v.HeadroomUSD != pricing.FormatUSD(usd(t, "100.00")-spent) ||
		len(v.OpenReservations) != 0 {
		t.Fatalf("after a completed run costing %s: %+v", spent, v)
	}

	r1, res1 := s.lostReservation(t, usd(t, "0.25"))
	r2, _ := s.lostReservation(t, usd(t, "0.50"))
	v = s.getBudget(nil)
	if v.ReservedUSD != "0.75" || v.HeadroomUSD != pricing.FormatUSD(usd(t, "99.25")-spent) || len(v.OpenReservations) != 2 || v.MoreReservations {
		t.Fatalf("with two open reservations: %+v", v)
	}
	byRun := map[string]handlers.ReservationView{}
	for _, o := range v.OpenReservations {
		byRun[o.RunID] = o
	}
	if o := byRun[r1]; o.Turn != 1 || o.AmountUSD != "0.25" || o.ExpiresAt != contracts.FormatTime(res1.ExpiresAt) {
		t.Errorf("open reservation of %s: %+v", r1, o)
	}
	if o := byRun[r2]; o.AmountUSD != "0.50" {
		t.Errorf("open reservation of %s: %+v", r2, o)
	}
	if v := s.getBudget(map[string]string{"limit": "1"}); len(v.OpenReservations) != 1 || !v.MoreReservations || v.ReservedUSD != "0.75" {
		t.Errorf("limit=1: %+v", v)
	}

	// The firm's own budget is the limit in force; below what is spent and
	// reserved, no headroom.
	s.setFirmBudget(fixFirm, usd(t, "250.00"))
	if v := s.getBudget(nil); v.LimitUSD != "250.00" || v.HeadroomUSD != pricing.FormatUSD(usd(t, "249.25")-spent) {
		t.Errorf("the firm's own budget: %+v", v)
	}
	s.setFirmBudget(fixFirm, usd(t, "0.50"))
	if v := s.getBudget(nil); v.LimitUSD != "0.50" || v.HeadroomUSD != "0.00" || v.SpentUSD != pricing.FormatUSD(spent) {
		t.Errorf("lowered below what is held: %+v", v)
	}

	// Another firm's user sees that firm's budget, not this one's.
	other := s.post(fixture(t, "get-budget.json").claim("firm_id", otherFirm))
	if ov := decode[handlers.BudgetView](t, other); other.StatusCode != 200 || ov.SpentUSD != "0.00" || ov.ReservedUSD != "0.00" ||
		ov.LimitUSD != "100.00" || len(ov.OpenReservations) != 0 {
		t.Errorf("another firm: %d %s", other.StatusCode, other.Body)
	}

	// Refusals write nothing.
	for _, tc := range []struct {
		name   string
		req    *event
		status int
		kind   failure.Kind
	}{
		{"unknown query parameter", fixture(t, "get-budget.json").query(map[string]string{"month": "2026-01"}), 400, failure.KindInvalidRequest},
		{"limit zero", fixture(t, "get-budget.json").query(map[string]string{"limit": "0"}), 400, failure.KindInvalidRequest},
		{"limit above 500", fixture(t, "get-budget.json").query(map[string]string{"limit": "501"}), 400, failure.KindInvalidRequest},
		{"no authorizer", fixture(t, "get-budget.json").set("requestContext.authorizer", nil), 401, failure.KindUnauthenticated},
		{"missing firm claim", fixture(t, "get-budget.json").set("requestContext.authorizer.jwt.claims.firm_id", nil), 401, failure.KindUnauthenticated},
	} {
		before := s.scan()
		if p := s.wantProblem(tc.name, s.post(tc.req), tc.status); p.Kind != string(tc.kind) {
			t.Errorf("%s: kind %q, want %q", tc.name, p.Kind, tc.kind)
		}
		s.wantUnchanged(tc.name, before)
	}
}

// TestSweeperReleasesALostWorkersReservation: a worker that reserved a
// call's worst case and died leaves it open until its lease passed; one
// sweeper pass gives it back whole (once) and restarts the run, whose new
// worker reserves and settles its own calls.
func TestSweeperReleasesALostWorkersReservation(t *testing.T) {
	s := newStack(t, stackOptions{})
	runID, _ := s.lostReservation(t, usd(t, "0.04"))
	if v := s.getBudget(nil); v.ReservedUSD != "0.04" || len(v.OpenReservations) != 1 {
		t.Fatalf("the lost worker's reservation: %+v", v)
	}
	// Not before its lease (and the grace) passed.
	if rep := s.sweep(); rep.ExpiredReservations != 0 || rep.Released != 0 || rep.Restarted != 0 {
		t.Fatalf("a sweep within the lease: %+v", rep)
	}
	s.clock.Advance(5 * time.Minute)
	rep := s.sweep()
	if rep.ExpiredReservations != 1 || rep.Released != 1 || rep.Restarted != 1 || rep.Errors != 0 {
		t.Fatalf("sweep: %+v, want the reservation released and the run restarted", rep)
	}
	if v := s.getBudget(nil); v.ReservedUSD != "0.00" || v.SpentUSD != "0.00" || v.HeadroomUSD != "100.00" || len(v.OpenReservations) != 0 {
		t.Fatalf("after the release: %+v", v)
	}
	if rep := s.sweep(); rep.ExpiredReservations != 0 || rep.Released != 0 {
		t.Fatalf("released twice: %+v", rep)
	}
	s.drain()
	if v := s.view(runID); v.Status != "held" {
		t.Fatalf("the restarted run: %+v", v)
	}
	spent, calls := s.usageCost(fixFirm, runID)
	v := s.getBudget(nil)
	if calls != 2 || v.SpentUSD != pricing.FormatUSD(spent) || v.ReservedUSD != "0.00" || len(v.OpenReservations) != 0 {
		t.Fatalf("after the restarted run's %d calls costing %s: %+v", calls, spent, v)
	}
	s.auditRun(runID)
}

func usd(t *testing.T, s string) pricing.Nano {
	t.Helper()
	n, err := pricing.ParseUSD(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestConcurrentRunsNeverExceedTheFirmBudget: 64 runs of one firm, started
// at once and worked at once by 64 workers (each model call slowed so that
// calls overlap), against a budget of a few calls' worst cases. The firm
// never spends past it: the sum of every model.usage line's cost is within
// the limit and is exactly what the budget says was spent, nothing stays
// reserved, every model call that was made has its usage line, and every
// run either completed or failed with firm_budget_exceeded in its ledger.
func TestConcurrentRunsNeverExceedTheFirmBudget(t *testing.T) {
	script := bedrocktest.DemoScript().WithDelay(20 * time.Millisecond)
	s := newStack(t, stackOptions{script: &script})
	const n = 64
	// Four calls' worst cases (about 0.04 each, a summary call costs about
	// 0.003): a few runs complete, most are refused.
	limit := usd(t, "0.16")
	s.setFirmBudget(fixFirm, limit)

	summarize := func() *event {
		return fixture(t, "invoke.json").editBody(func(m map[string]any) { m["counsel_message"] = "Summarize the matter for me." })
	}
	evs := make([]*event, n)
	for i := range evs {
		evs[i] = summarize()
	}
	runs := make([]string, 0, n)
	for _, resp := range s.callAll(evs) {
		if resp.StatusCode != 202 {
			t.Fatalf("invoke: %d %s", resp.StatusCode, resp.Body)
		}
		runs = append(runs, decode[handlers.RunView](t, resp).RunID)
	}
	msgs := s.queue.take()
	if len(msgs) != n {
		t.Fatalf("%d worker messages, want %d", len(msgs), n)
	}
	// 64 workers at once, each handed one message as SQS hands it.
	var wg sync.WaitGroup
	errs := make([]error, n)
	failed := make([][]events.SQSBatchItemFailure, n)
	start := make(chan struct{})
	for i, m := range msgs {
		body, _ := json.Marshal(m)
		payload, _ := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{{MessageId: "msg-" + strconv.Itoa(i), Body: string(body),
			EventSource: "aws:sqs", Attributes: map[string]string{"ApproximateReceiveCount": "1"}}}})
		wg.Go(func() {
			<-start
			out, err := lambda.NewHandler(s.worker.Handle).Invoke(context.Background(), payload)
			var resp events.SQSEventResponse
			if err == nil {
				err = json.Unmarshal(out, &resp)
			}
			errs[i], failed[i] = err, resp.BatchItemFailures
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || len(failed[i]) != 0 {
			t.Fatalf("worker %d: %v %v", i, errs[i], failed[i])
		}
	}

	spent, calls := s.usageCost(fixFirm, runs...)
	if spent > limit {
		t.Fatalf("the firm spent %s, over its budget of %s", spent, limit)
	}
	if got := s.fake.Calls(); got != calls {
		t.Errorf("the model was called %d times, the ledgers hold %d usage lines", got, calls)
	}
	completed, refused := 0, 0
	for _, r := range runs {
		st := s.auditRun(r)
		switch {
		case st.Status == warrant.RunCompleted:
			completed++
		case st.Status == warrant.RunFailed && st.FailureKind == string(failure.KindFirmBudgetExceeded):
			refused++
		default:
			t.Errorf("run %s ended %s (%s)", r, st.Status, st.FailureKind)
		}
	}
	v := s.getBudget(map[string]string{"limit": "500"})
	if v.SpentUSD != pricing.FormatUSD(spent) || v.ReservedUSD != "0.00" || len(v.OpenReservations) != 0 || v.LimitUSD != pricing.FormatUSD(limit) {
		t.Errorf("budget %+v; the usage lines cost %s", v, spent)
	}
	if completed == 0 || refused == 0 {
		t.Errorf("%d completed, %d refused: the budget should let some runs through and refuse others", completed, refused)
	}
	t.Logf("64 runs: %d completed, %d refused (firm_budget_exceeded); %d model calls cost %s of a %s budget",
		completed, refused, calls, spent, limit)
}
