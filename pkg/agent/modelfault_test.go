package agent_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// modelFaulting is the demo model answering every call with fault while
// failing is set: a fault that outlasts the SDK's retries however many
// they are.
func modelFaulting(failing *atomic.Bool, fault bedrocktest.Fault) func(*harness) bedrocktest.Script {
	return func(*harness) bedrocktest.Script {
		s := bedrocktest.DemoScript()
		s.Rules = append([]bedrocktest.Rule{{Name: "fault", When: func(bedrocktest.Conversation) bool { return failing.Load() },
			Reply: bedrocktest.Reply{Fault: fault}}}, s.Rules...)
		return s
	}
}

// restart is the sweeper's pass over a run a worker gave back, once its
// lease passed: the run goes to a new worker.
func (h *harness) restart(runID string) {
	h.t.Helper()
	h.expireLease(runID)
	if action, err := h.brain.Sweep(context.Background(), h.firm, runID); err != nil || action != agent.SweepRestarted {
		h.t.Fatalf("sweep: %s %v", action, err)
	}
}

// drive takes a run a worker gave back to its end as the sweeper and the
// next workers do: restarted once its lease passed, then continued, until
// it stops running (a bounded number of times).
func (h *harness) drive(runID string) agent.Result {
	h.t.Helper()
	for range 3 {
		h.restart(runID)
		res, err := h.brain.Continue(context.Background(), h.firm, runID, "")
		if err != nil {
			h.t.Fatal(err)
		}
		if res.State.Status != warrant.RunRunning {
			return res
		}
	}
	h.t.Fatalf("run %s still running after its restarts", runID)
	return agent.Result{}
}

// The model faults a later attempt may not meet: Bedrock's throttle, its
// ModelTimeoutException (a 408 the SDK's standard retryer does not retry;
// pkg/bedrock adds it) and its 5xx.
var modelFaults = []struct {
	name  string
	fault bedrocktest.Fault
	kind  failure.Kind
}{
	{"throttled", bedrocktest.FaultThrottle, failure.KindModelThrottled},
	{"model timeout", bedrocktest.FaultModelTimeout, failure.KindModelTimeout},
	{"500", bedrocktest.FaultInternal, failure.KindModelError},
	{"503", bedrocktest.FaultServiceUnavailable, failure.KindModelError},
}

// Issue 25, item 3: a model fault that outlasted the SDK's retries does not
// end the run. The worker gives the run back, still running and its ledger
// unchanged, with a backoff (its pickup lease) for the sweeper to hand to
// a new worker, counted among its restarts; the call's reservation is
// released whole (the call was not paid); the next worker carries the run
// on and it completes.
func TestModelFaultDefersTheRun(t *testing.T) {
	for _, tc := range modelFaults {
		t.Run(tc.name, func(t *testing.T) {
			var failing atomic.Bool
			h := newHarness(t, modelFaulting(&failing, tc.fault), options{})
			ctx := context.Background()
			runID := newID()
			if _, err := h.brain.Start(ctx, h.invoke(runID, summarize), agent.StartOptions{CostCapUSD: "1.00"}); err != nil {
				t.Fatal(err)
			}
			failing.Store(true)
			res, err := h.brain.Continue(ctx, h.firm, runID, "")
			if err != nil || res.State.Status != warrant.RunRunning || res.State.FailureKind != "" {
				t.Fatalf("after the model's fault: %+v %v", res.State, err)
			}
			run, err := h.store.GetRun(ctx, h.firm, runID)
			if err != nil || run.Status != warrant.RunRunning || run.Lease.Owner != "" || !run.Lease.Until.After(time.Now()) || run.Restarts != 0 {
				t.Fatalf("the run the worker gave back: %+v %v", run, err)
			}
			if n := len(h.ledger(runID)); n != 1 {
				t.Fatalf("the deferred call left %d lines, want run.started alone", n)
			}
			if b := h.budget(); b.SpentNano != 0 || b.ReservedNano != 0 || len(b.Open) != 0 {
				t.Fatalf("the deferred call's reservation: %+v", b)
			}
			if !strings.Contains(h.logs.String(), `"failure_kind":"`+string(tc.kind)+`"`) {
				t.Fatalf("the deferral is not logged with the model's kind: %s", h.logs)
			}
			failing.Store(false)
			h.restart(runID)
			done, err := h.brain.Continue(ctx, h.firm, runID, "")
			if err != nil || done.State.Status != warrant.RunCompleted {
				t.Fatalf("the next worker: %+v %v", done.State, err)
			}
			if run, _ := h.store.GetRun(ctx, h.firm, runID); run.Restarts != 1 {
				t.Fatalf("%d restarts counted, want 1", run.Restarts)
			}
			if b := h.budget(); b.SpentNano != int64(h.spent(runID)) || b.SpentNano == 0 || b.ReservedNano != 0 || len(b.Open) != 0 {
				t.Fatalf("budget %+v, usage lines %d", b, h.spent(runID))
			}
		})
	}
}

// Issue 25, item 3: the deferrals are bounded. A model that keeps failing
// is tried by the first worker and by one more for each of the sweeper's
// restarts (Config.MaxRestarts, 2); then the run fails with the model's
// own kind (not worker_lost), nothing paid, nothing reserved.
func TestModelFaultsEndTheRunAfterTheBound(t *testing.T) {
	for _, tc := range modelFaults {
		t.Run(tc.name, func(t *testing.T) {
			var failing atomic.Bool
			failing.Store(true)
			h := newHarness(t, modelFaulting(&failing, tc.fault), options{})
			ctx := context.Background()
			runID := newID()
			if _, err := h.brain.Start(ctx, h.invoke(runID, summarize), agent.StartOptions{CostCapUSD: "1.00"}); err != nil {
				t.Fatal(err)
			}
			workers := 0
			for {
				res, err := h.brain.Continue(ctx, h.firm, runID, "")
				workers++
				if err != nil {
					t.Fatal(err)
				}
				if res.State.Status != warrant.RunRunning {
					break
				}
				if workers > 3 {
					t.Fatalf("still running after %d workers", workers)
				}
				h.restart(runID)
			}
			run, _ := h.store.GetRun(ctx, h.firm, runID)
			st := h.state(runID)
			if workers != 3 || run.Restarts != 2 || st.Status != warrant.RunFailed || st.FailureKind != string(tc.kind) ||
				st.FailureStage != string(failure.StageModelCall) || st.ModelCalls != 0 {
				t.Fatalf("after %d workers, %d restarts: %+v", workers, run.Restarts, st)
			}
			for _, r := range h.fake.Requests() {
				if r.Rule != "fault" {
					t.Fatalf("the model answered a call (rule %q)", r.Rule)
				}
			}
			if b := h.budget(); b.SpentNano != 0 || b.ReservedNano != 0 || len(b.Open) != 0 {
				t.Fatalf("budget %+v", b)
			}
		})
	}
}

// state is the run's ledger folded, held to its signed head.
func (h *harness) state(runID string) reducer.RunState {
	h.t.Helper()
	f, err := reducer.Fold(context.Background(), h.store, h.firm, runID, reducer.FoldOptions{Keys: h.keys})
	if err != nil {
		h.t.Fatal(err)
	}
	return f.State
}

// lostTurn is the store that loses the write of a turn whose model call
// was made and settled: once turn's model.usage line is stored, every
// ledger append and finish is refused as throttled (through every retry of
// the worker), as if the worker's Lambda had died right after the usage
// write.
type lostTurn struct {
	agent.Store
	turn  int64
	armed atomic.Bool
}

func (s *lostTurn) SettleUsage(ctx context.Context, r warrant.Reservation, finish warrant.RunStatus, line contracts.Line) error {
	if err := s.Store.SettleUsage(ctx, r, finish, line); err != nil {
		return err
	}
	if u, ok := line.Event.(*contracts.ModelUsage); ok && u.Turn == s.turn {
		s.armed.Store(true)
	}
	return nil
}

func (s *lostTurn) AppendEvents(ctx context.Context, firm, run string, lines ...contracts.Line) error {
	if s.armed.Load() {
		return failure.New(failure.KindStoreThrottled, "injected throttle")
	}
	return s.Store.AppendEvents(ctx, firm, run, lines...)
}

func (s *lostTurn) FinishRun(ctx context.Context, firm, run string, to warrant.RunStatus, lines ...contracts.Line) error {
	if s.armed.Load() {
		return failure.New(failure.KindStoreThrottled, "injected throttle")
	}
	return s.Store.FinishRun(ctx, firm, run, to, lines...)
}

// Issue 25, item 3: a model call whose usage was settled is never made
// again. When a ledger's last line is a model.usage with no turn.completed
// after it (the turn's write failed, or its worker died, after the call was
// paid), the next worker does not call the model for that turn again: the
// run fails model_answer_lost, the paid call counted once in the ledger and
// the firm's budget. Arrivals at the fake Bedrock are counted after the
// first worker returned, so no SDK retry of the paid call can hide among
// them: any arrival after that is a new call.
func TestSettledModelCallIsNeverMadeAgain(t *testing.T) {
	for _, tc := range []struct {
		name string
		turn int64
	}{{"a tool-use turn", 1}, {"the final turn", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, demo, options{})
			store := &lostTurn{Store: h.store, turn: tc.turn}
			policy, _ := toolpolicy.Embedded()
			brain, err := agent.New(store, h.model, policy, h.cfg.Prices, failure.NewLogger(h.logs),
				agent.Config{ModelID: testModel, Keys: h.dataKeys, FirmBudget: h.cfg.DefaultFirmBudget(), Heads: h.keys,
					OutcomeBackoff: []time.Duration{time.Millisecond, time.Millisecond}},
				h.reference(), agent.MatterAssistant)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			runID := newID()
			res, err := brain.Run(ctx, h.invoke(runID, summarize), agent.StartOptions{CostCapUSD: "1.00"})
			if err != nil || res.State.Status != warrant.RunRunning {
				t.Fatalf("the worker whose turn write failed: %+v %v", res.State, err)
			}
			lines := h.ledger(runID)
			if u, ok := lines[len(lines)-1].Event.(*contracts.ModelUsage); !ok || u.Turn != tc.turn {
				t.Fatalf("the ledger ends with %s, want turn %d's model.usage", lines[len(lines)-1].Type, tc.turn)
			}
			calls := h.fake.Calls()
			h.restart(runID)
			done, err := h.brain.Continue(ctx, h.firm, runID, "")
			if err != nil {
				t.Fatal(err)
			}
			if n := h.fake.Calls() - calls; n != 0 {
				t.Fatalf("the model was called %d more time(s) after turn %d was paid for", n, tc.turn)
			}
			if done.State.Status != warrant.RunFailed || done.State.FailureKind != string(failure.KindModelAnswerLost) {
				t.Fatalf("the next worker: %+v", done.State)
			}
			if usages := h.usages(runID); int64(len(usages)) != tc.turn || done.State.ModelCalls != tc.turn {
				t.Fatalf("%d usage lines, %d model calls, want %d", len(usages), done.State.ModelCalls, tc.turn)
			}
			if b := h.budget(); b.SpentNano != int64(h.spent(runID)) || b.ReservedNano != 0 || len(b.Open) != 0 {
				t.Fatalf("budget %+v, usage lines %d", b, h.spent(runID))
			}
		})
	}
}
