package agent_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// throttledOutcomes is the store whose first fails effect-outcome writes
// are throttled (a KMS GenerateMac or DynamoDB throttle that outlasted the
// SDK's retries), and whose unknown-outcome ends fail too while failUnknown.
type throttledOutcomes struct {
	agent.Store
	fails       atomic.Int32
	failUnknown bool
}

func (s *throttledOutcomes) CompleteEffect(ctx context.Context, firm, run string, k warrant.EffectKey, owner string, c warrant.Completion, lines ...contracts.Line) error {
	if s.fails.Add(-1) >= 0 {
		return failure.New(failure.KindStoreThrottled, "injected throttle")
	}
	return s.Store.CompleteEffect(ctx, firm, run, k, owner, c, lines...)
}

func (s *throttledOutcomes) SweepFail(ctx context.Context, sw warrant.SweepFailure, lines ...contracts.Line) error {
	if s.failUnknown {
		return failure.New(failure.KindStoreThrottled, "injected throttle")
	}
	return s.Store.SweepFail(ctx, sw, lines...)
}

// Issue 17, item 3: once a tool has executed, its outcome write is retried;
// if it still cannot be written the run ends through the unknown-outcome
// path, never with the store's kind; if even that cannot be written,
// nothing is, and the sweeper ends it the same way once the lease passed.
func TestExecutedEffectsOutcomeIsNeverHidden(t *testing.T) {
	for _, tc := range []struct {
		name        string
		fails       int32
		failUnknown bool
		want        warrant.RunStatus
		kind        failure.Kind
		line        string // the filing's tool.completed status, in the end
	}{
		{"a throttle once: retried", 1, false, warrant.RunCompleted, "", contracts.ToolSuccess},
		{"throttled through every retry: unknown", 100, false, warrant.RunFailed, failure.KindEffectOutcomeUnknown, contracts.ToolUnknown},
		{"the unknown end throttled too: left for the sweeper", 100, true, warrant.RunRunning, "", contracts.ToolUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, demo, options{})
			ctx := context.Background()
			store := &throttledOutcomes{Store: h.store, failUnknown: tc.failUnknown}
			policy, _ := toolpolicy.Embedded()
			brain, err := agent.New(store, h.model, policy, h.cfg.Prices, failure.NewLogger(h.logs),
				agent.Config{ModelID: testModel, Keys: h.dataKeys, FirmBudget: h.cfg.DefaultFirmBudget(), Heads: h.keys,
					OutcomeBackoff: []time.Duration{time.Millisecond, time.Millisecond}},
				h.reference(), agent.MatterAssistant)
			if err != nil {
				t.Fatal(err)
			}
			held, err := brain.Run(ctx, h.invoke(newID(), "Please file the motion."), agent.StartOptions{CostCapUSD: "1.00"})
			if err != nil || held.State.PendingApproval == nil {
				t.Fatalf("not held: %+v %v", held.State, err)
			}
			h.decide(held, warrant.DecisionApproved)
			store.fails.Store(tc.fails)
			res, err := brain.Resume(ctx, agent.ResumeRequest{FirmID: h.firm, RunID: held.State.RunID,
				ApprovalID: held.State.PendingApproval.ApprovalRequestID, UserID: h.user})
			if err != nil {
				t.Fatal(err)
			}
			runID := held.State.RunID
			if n := len(h.outbound(runID)); n != 1 {
				t.Fatalf("%d filings went out, want 1", n)
			}
			if res.State.Status != tc.want || res.State.FailureKind != string(tc.kind) {
				t.Fatalf("run %s (%s), want %s (%s)", res.State.Status, res.State.FailureKind, tc.want, tc.kind)
			}
			if tc.want == warrant.RunRunning {
				// Nothing was written; the sweeper finds the taken claim once
				// the lease passed and flags it.
				h.expireLease(runID)
				if action, err := h.brain.Sweep(ctx, h.firm, runID); err != nil || action != agent.SweepOutcomeUnknown {
					t.Fatalf("sweep: %s %v", action, err)
				}
			}
			var line string
			for _, c := range h.completions(runID) {
				if c.ToolName == "file_court_document" && c.EffectRef != "" {
					line = c.Status
				}
			}
			if line != tc.line {
				t.Fatalf("the filing's line says %q, want %q", line, tc.line)
			}
		})
	}
}

// throttledSettle throttles the first fails usage settlements.
type throttledSettle struct {
	agent.Store
	fails atomic.Int32
}

func (s *throttledSettle) SettleUsage(ctx context.Context, r warrant.Reservation, finish warrant.RunStatus, line contracts.Line) error {
	if s.fails.Add(-1) >= 0 {
		return failure.New(failure.KindStoreThrottled, "injected throttle")
	}
	return s.Store.SettleUsage(ctx, r, finish, line)
}

// Issue 17, examined: a model call that was made is billed, so its usage
// write is retried like an effect's outcome: a throttle that outlasted the
// SDK's retries once does not leave a billed call out of the ledger and the
// firm's budget.
func TestBilledCallIsCountedAfterAThrottle(t *testing.T) {
	h := newHarness(t, demo, options{})
	store := &throttledSettle{Store: h.store}
	store.fails.Store(1)
	policy, _ := toolpolicy.Embedded()
	brain, err := agent.New(store, h.model, policy, h.cfg.Prices, failure.NewLogger(h.logs),
		agent.Config{ModelID: testModel, Keys: h.dataKeys, FirmBudget: h.cfg.DefaultFirmBudget(), Heads: h.keys, OutcomeBackoff: []time.Duration{time.Millisecond}},
		h.reference(), agent.MatterAssistant)
	if err != nil {
		t.Fatal(err)
	}
	res, err := brain.Run(context.Background(), h.invoke(newID(), summarize), agent.StartOptions{CostCapUSD: "1.00"})
	if err != nil || res.State.Status != warrant.RunCompleted {
		t.Fatalf("run %+v %v", res.State, err)
	}
	b := h.budget()
	if b.SpentNano != int64(h.spent(res.State.RunID)) || b.SpentNano == 0 || b.ReservedNano != 0 || int64(len(h.usages(res.State.RunID))) != res.State.ModelCalls {
		t.Fatalf("budget %+v after %d calls", b, res.State.ModelCalls)
	}
}

// Issue 17, examined: a worker starts an effect only when its invocation
// has the time for the tool and its outcome write; with less, it gives the
// run up, still running and unchanged, for a new invocation, which then
// runs the effect once.
func TestEffectNeedsTimeBeforeTheDeadline(t *testing.T) {
	h := newHarness(t, demo, options{})
	held := h.start("Please file the motion.", "")
	h.decide(held, warrant.DecisionApproved)
	ctx := context.Background()
	runID := held.State.RunID
	if _, err := h.brain.PrepareResume(ctx, agent.ResumeRequest{FirmID: h.firm, RunID: runID,
		ApprovalID: held.State.PendingApproval.ApprovalRequestID, UserID: h.user}); err != nil {
		t.Fatal(err)
	}
	before := len(h.ledger(runID))
	short, cancel := context.WithTimeout(ctx, 10*time.Second) // the filing's timeout (30 s) and its outcome write (5 s) do not fit
	defer cancel()
	res, err := h.brain.Continue(short, h.firm, runID, "")
	if err != nil || !res.HandedOver || res.State.Status != warrant.RunRunning {
		t.Fatalf("too close to the deadline: %+v handed over %v, %v", res.State, res.HandedOver, err)
	}
	run, _ := h.store.GetRun(ctx, h.firm, runID)
	if n := len(h.outbound(runID)); n != 0 || len(h.ledger(runID)) != before || run.Lease.Owner != "" || run.Status != warrant.RunRunning {
		t.Fatalf("after the hand-over: %d effects, %d new lines, lease %+v, %s", n, len(h.ledger(runID))-before, run.Lease, run.Status)
	}
	done, err := h.brain.Continue(ctx, h.firm, runID, "")
	if err != nil || done.State.Status != warrant.RunCompleted || len(h.outbound(runID)) != 1 {
		t.Fatalf("the next invocation: %+v %v, %d effects", done.State, err, len(h.outbound(runID)))
	}
}

// throttledReserve throttles the first fails budget reservations (the
// write before a model call).
type throttledReserve struct {
	agent.Store
	fails atomic.Int32
}

func (s *throttledReserve) Reserve(ctx context.Context, r warrant.Reservation, limit warrant.BudgetLimit) (warrant.Reservation, error) {
	if s.fails.Add(-1) >= 0 {
		return warrant.Reservation{}, failure.New(failure.KindStoreThrottled, "injected throttle")
	}
	return s.Store.Reserve(ctx, r, limit)
}

// A worker's store failure that a later attempt may not meet does not fail
// the run with the store's kind ("try again"): the run is given up, still
// running and unchanged, for the sweeper to hand to a new worker, which
// carries it on from the ledger. (The throttled write is the reservation
// before a model call: a turn's write after its call was paid is retried in
// place instead, TestSettledModelCallIsNeverMadeAgain.)
func TestTransientStoreFailureDefersTheRun(t *testing.T) {
	h := newHarness(t, demo, options{})
	store := &throttledReserve{Store: h.store}
	policy, _ := toolpolicy.Embedded()
	brain, err := agent.New(store, h.model, policy, h.cfg.Prices, failure.NewLogger(h.logs),
		agent.Config{ModelID: testModel, Keys: h.dataKeys, FirmBudget: h.cfg.DefaultFirmBudget(), Heads: h.keys}, h.reference(), agent.MatterAssistant)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	runID := newID()
	if _, err := brain.Start(ctx, h.invoke(runID, summarize), agent.StartOptions{CostCapUSD: "1.00"}); err != nil {
		t.Fatal(err)
	}
	store.fails.Store(1)
	res, err := brain.Continue(ctx, h.firm, runID, "")
	if err != nil || res.State.Status != warrant.RunRunning || res.State.FailureKind != "" {
		t.Fatalf("after a throttled reservation: %+v %v", res.State, err)
	}
	run, _ := h.store.GetRun(ctx, h.firm, runID)
	if run.Lease.Owner != "" || run.Status != warrant.RunRunning || !run.Lease.Until.After(time.Now()) {
		t.Fatalf("the run after the worker gave it up: %+v", run)
	}
	h.expireLease(runID)
	if action, err := h.brain.Sweep(ctx, h.firm, runID); err != nil || action != agent.SweepRestarted {
		t.Fatalf("sweep: %s %v", action, err)
	}
	done, err := h.brain.Continue(ctx, h.firm, runID, "")
	if err != nil || done.State.Status != warrant.RunCompleted {
		t.Fatalf("the next worker: %+v %v", done.State, err)
	}
	b := h.budget()
	if b.SpentNano != int64(h.spent(runID)) || b.ReservedNano != 0 {
		t.Fatalf("budget %+v", b)
	}
}
