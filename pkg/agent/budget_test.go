package agent_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"

	"github.com/seed-f6d3920e/warrant"
)

// The firm's monthly budget (docs/DECISIONS.md, "Hard caps by
// reservation"): every model call reserves its worst case first, and is
// settled to its cost with its model.usage line.

const summarize = "Summarize the matter for me."

// budget is the harness firm's budget this month.
func (h *harness) budget() warrant.Budget {
	h.t.Helper()
	b, err := h.store.GetBudget(context.Background(), h.firm, warrant.MonthOf(time.Now()), 100)
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

// setBudget gives the harness firm a monthly budget of its own.
func (h *harness) setBudget(n pricing.Nano) {
	h.t.Helper()
	v := int64(n)
	if err := h.store.PutFirmSettings(context.Background(), warrant.FirmSettings{FirmID: h.firm, SeparationOfDuties: true, MonthlyBudgetNano: &v}); err != nil {
		h.t.Fatal(err)
	}
}

// spent sums the cost_usd of the model.usage lines of runs.
func (h *harness) spent(runs ...string) pricing.Nano {
	var n pricing.Nano
	for _, r := range runs {
		for _, u := range h.usages(r) {
			n += usd(h.t, u.CostUSD)
		}
	}
	return n
}

// wantSettled checks the firm's budget holds exactly what its runs' usage
// lines cost, with nothing reserved.
func (h *harness) wantSettled(what string, limit pricing.Nano, runs ...string) {
	h.t.Helper()
	b, spent := h.budget(), h.spent(runs...)
	if b.LimitNano != int64(limit) || b.SpentNano != int64(spent) || b.ReservedNano != 0 || len(b.Open) != 0 ||
		b.HeadroomNano != int64(limit-spent) {
		h.t.Errorf("%s: budget %+v; want limit %s, spent %s (the usage lines), nothing reserved", what, b, limit, spent)
	}
}

// reference runs the two-call summary in a firm of its own and returns
// what the budget tests size against: the first call's worst case and
// cost, and the second call's worst case.
func reference(t *testing.T) (w1, c1, w2 pricing.Nano) {
	t.Helper()
	h := newHarness(t, demo, options{})
	res := h.start(summarize, "")
	us := h.usages(res.State.RunID)
	if res.State.Status != warrant.RunCompleted || len(us) != 2 {
		t.Fatalf("reference run: %+v, %d calls", res.State, len(us))
	}
	return usd(t, us[0].ReservedUSD), usd(t, us[0].CostUSD), usd(t, us[1].ReservedUSD)
}

// TestFirmBudgetRefusesBeforeTheCall: a firm whose month holds the first
// call's cost and the second call's worst case makes both calls; one
// nano-dollar less and the second is refused before it is made
// (firm_budget_exceeded in the ledger, nothing sent to the model), the
// budget holding exactly the first call's cost; a budget below the first
// call's worst case makes no call.
func TestFirmBudgetRefusesBeforeTheCall(t *testing.T) {
	w1, c1, w2 := reference(t)
	if w1 >= c1+w2 {
		t.Fatalf("reference: w1 %s, c1 %s, w2 %s", w1, c1, w2)
	}
	h := newHarness(t, demo, options{})

	h.setBudget(c1 + w2)
	full := h.start(summarize, "")
	if full.State.Status != warrant.RunCompleted || h.fake.Calls() != 2 {
		t.Fatalf("budget = c1 + w2: %+v, %d calls", full.State, h.fake.Calls())
	}
	h.wantSettled("exact budget", c1+w2, full.State.RunID)

	h.firm = uuid.NewString()
	h.setBudget(c1 + w2 - 1)
	h.ep.Counter.Reset()
	res := h.start(summarize, "")
	if res.State.Status != warrant.RunFailed || res.State.FailureKind != string(failure.KindFirmBudgetExceeded) ||
		res.State.FailureStage != string(failure.StageModelCall) || res.State.ModelCalls != 1 || h.fake.Calls() != 3 {
		t.Fatalf("one nano below: %+v, %d calls", res.State, h.fake.Calls())
	}
	h.report("firm budget stops before crossing", res.State.RunID)
	h.wantSettled("one nano below", c1+w2-1, res.State.RunID)
	if got := res.State.Cost; got != c1 {
		t.Errorf("the refused run cost %s, want the first call's %s", got, c1)
	}

	h.firm = uuid.NewString()
	h.setBudget(w1 - 1)
	res = h.start(summarize, "")
	if res.State.Status != warrant.RunFailed || res.State.FailureKind != string(failure.KindFirmBudgetExceeded) || h.fake.Calls() != 3 {
		t.Fatalf("below the first call's worst case: %+v, %d calls", res.State, h.fake.Calls())
	}
	if b := h.budget(); b.Exists || len(b.Open) != 0 {
		t.Errorf("a refused first reservation left %+v", b)
	}
}

// TestNoBudgetConfiguredIsNoSpending: without FIRM_MONTHLY_BUDGET_USD and
// without a budget of the firm's own, no call is made.
func TestNoBudgetConfiguredIsNoSpending(t *testing.T) {
	h := newHarness(t, demo, options{env: map[string]string{"FIRM_MONTHLY_BUDGET_USD": ""}})
	res := h.start(summarize, "")
	if res.State.Status != warrant.RunFailed || res.State.FailureKind != string(failure.KindFirmBudgetExceeded) || h.fake.Calls() != 0 {
		t.Fatalf("no budget anywhere: %+v, %d calls", res.State, h.fake.Calls())
	}
	// The firm's own budget is enough.
	h.setBudget(usd(t, "5.00"))
	if res := h.start(summarize, ""); res.State.Status != warrant.RunCompleted {
		t.Fatalf("with a budget of its own: %+v", res.State)
	}
}

// TestRunCapRefusalReservesNothing: the run's cap is checked before the
// firm's budget, so a call refused by the cap holds nothing of the firm's.
func TestRunCapRefusalReservesNothing(t *testing.T) {
	h := newHarness(t, demo, options{})
	res := h.start(summarize, "0.000001")
	if res.State.FailureKind != string(failure.KindCostCapExceeded) || h.fake.Calls() != 0 {
		t.Fatalf("%+v", res.State)
	}
	if b := h.budget(); b.Exists {
		t.Errorf("a run refused by its cap touched the firm's budget: %+v", b)
	}
}

// TestSettlementIsTheUsageLinesCost: over a whole governed run (held on a
// warrant, approved, resumed by another worker) and a second run, the
// firm's budget holds exactly the sum of the usage lines' cost_usd, each
// call's cost within its reservation, nothing left reserved.
func TestSettlementIsTheUsageLinesCost(t *testing.T) {
	h := newHarness(t, demo, options{})
	res := h.start("Please file the motion.", "")
	h.wantSettled("held", usd(t, "100.00"), res.State.RunID)
	h.decide(res, warrant.DecisionApproved)
	if _, err := h.resume(res); err != nil {
		t.Fatal(err)
	}
	done, err := h.brain.Continue(context.Background(), h.firm, res.State.RunID, "")
	if err != nil || done.State.Status != warrant.RunCompleted {
		t.Fatalf("continue: %+v %v", done.State, err)
	}
	other := h.start(summarize, "")
	h.wantSettled("two runs", usd(t, "100.00"), res.State.RunID, other.State.RunID)
	calls := 0
	for _, r := range []string{res.State.RunID, other.State.RunID} {
		for _, u := range h.usages(r) {
			calls++
			if usd(t, u.CostUSD) > usd(t, u.ReservedUSD) {
				t.Errorf("a call cost %s, above its reservation %s", u.CostUSD, u.ReservedUSD)
			}
		}
	}
	if calls != 5 || h.fake.Calls() != 5 {
		t.Errorf("%d usage lines, %d model calls", calls, h.fake.Calls())
	}
}

// TestFailedCallReleasesItsReservation: a call the model refused (throttled,
// after the client's retries) was not billed: its reservation is released
// whole, when the run is deferred (issue 25, item 3) and when it fails in
// the end.
func TestFailedCallReleasesItsReservation(t *testing.T) {
	h := newHarness(t, func(*harness) bedrocktest.Script {
		return bedrocktest.Script{Fallback: &bedrocktest.Reply{Fault: bedrocktest.FaultThrottle}}
	}, options{})
	released := func(when string) {
		t.Helper()
		b := h.budget()
		if !b.Exists || b.SpentNano != 0 || b.ReservedNano != 0 || b.HeadroomNano != b.LimitNano || len(b.Open) != 0 {
			t.Errorf("%s: %+v", when, b)
		}
	}
	res := h.start(summarize, "")
	if res.State.Status != warrant.RunRunning {
		t.Fatalf("%+v", res.State)
	}
	released("after a deferred call")
	if res = h.drive(res.State.RunID); res.State.Status != warrant.RunFailed || res.State.FailureKind != string(failure.KindModelThrottled) {
		t.Fatalf("%+v", res.State)
	}
	released("after the run failed")
}

// hookModel is the model with a hook after each answered call.
type hookModel struct {
	agent.Converser
	mu    sync.Mutex
	calls int
	after func(call int)
}

func (m *hookModel) Converse(ctx context.Context, in *bedrockruntime.ConverseInput, onDelta func(string)) (*bedrockruntime.ConverseOutput, error) {
	out, err := m.Converser.Converse(ctx, in, onDelta)
	m.mu.Lock()
	m.calls++
	n := m.calls
	m.mu.Unlock()
	if err == nil && m.after != nil {
		m.after(n)
	}
	return out, err
}

// TestLoweredBudgetHoldsWorkersAlreadyRunning: a worker read the firm's
// limit when it started; the firm lowers it mid-run. The worker's next
// reservation finds the settings changed, reads them again and is held to
// the new limit: the call is refused before it is made.
func TestLoweredBudgetHoldsWorkersAlreadyRunning(t *testing.T) {
	h := newHarness(t, demo, options{})
	ctx := context.Background()
	model := &hookModel{Converser: h.model}
	policy, _ := toolpolicy.Embedded()
	brain, err := agent.New(h.store, model, policy, h.cfg.Prices, failure.NewLogger(h.logs),
		agent.Config{ModelID: testModel, Keys: h.dataKeys, FirmBudget: h.cfg.DefaultFirmBudget()}, h.reference(), agent.MatterAssistant)
	if err != nil {
		t.Fatal(err)
	}
	var lowered pricing.Nano
	model.after = func(call int) {
		if call == 1 {
			// Lowered to what this first call holds: once it is settled,
			// no second call fits.
			lowered = pricing.Nano(h.budget().ReservedNano)
			h.setBudget(lowered)
		}
	}
	inv := contracts.AgentInvoke{AgentKey: "matter_assistant", Mode: contracts.ModeInvoke,
		Meta:    contracts.InvokeMeta{RunID: uuid.NewString(), FirmID: h.firm, UserID: h.user, MatterID: h.matter},
		History: []contracts.HistoryMessage{}, CounselMessage: summarize}
	res, err := brain.Run(ctx, inv, agent.StartOptions{CostCapUSD: "1.00"})
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Status != warrant.RunFailed || res.State.FailureKind != string(failure.KindFirmBudgetExceeded) || model.calls != 1 {
		t.Fatalf("after the limit was lowered: %+v, %d calls", res.State, model.calls)
	}
	// The settlement of the first call ran at the old limit; the refused
	// reservation moved nothing.
	b := h.budget()
	if b.SpentNano != int64(h.spent(res.State.RunID)) || b.ReservedNano != 0 || len(b.Open) != 0 {
		t.Errorf("budget %+v", b)
	}
}
