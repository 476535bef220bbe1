package handlers_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// crashIdemKey is the crash walk's Idempotency-Key: a client that lost its
// answer retries POST /v1/runs with it.
const crashIdemKey = "c4a5b6c7-d8e9-4f0a-8b1c-2d3e4f5a6b7c"

// crashWalk drives one run through invoke -> worker -> hold -> approve ->
// resume -> worker -> complete, as a client, counsel, SQS and the sweeper
// would, over a DynamoDB endpoint whose Faults may kill the process at one
// write. The process that crashed is replaced (Revive) and whoever was
// waiting does what the real one does: the client retries the same request,
// SQS delivers the same message again.
type crashWalk struct {
	t      *testing.T
	s      *stack
	f      *dynamotest.Faults
	runID  string
	crash  string // the step in which the fault fired
	sweeps int
	// steps names, for each write so far, the step that made it (invoke,
	// approve, resume, worker(<reason>), sweep).
	steps []string
}

// track runs step and names the writes it made.
func (c *crashWalk) track(step string, fn func()) {
	fn()
	for n := len(c.f.Ops()); len(c.steps) < n; {
		c.steps = append(c.steps, step)
	}
}

func newCrashWalk(t *testing.T, ep *dynamotest.Endpoint, system string) *crashWalk {
	// With a system, the tools are on it (the firm's, writing with a client
	// of its own: the faults are the functions').
	s := newStack(t, stackOptions{endpoint: ep, system: system})
	return &crashWalk{t: t, s: s, f: ep.Faults}
}

// revive replaces a crashed process; it reports whether the step crashed.
func (c *crashWalk) revive(step string) bool {
	if c.crash != "" || !c.f.Fired() {
		return false
	}
	c.crash = step
	c.f.Revive()
	return true
}

// http sends a request; if the process crashed in it, the client retries
// once, and that answer must be the request's success or a precise 409
// (never a 5xx).
func (c *crashWalk) http(step string, ev *event) events.APIGatewayV2HTTPResponse {
	c.t.Helper()
	var resp events.APIGatewayV2HTTPResponse
	c.track(step, func() { resp = c.s.post(ev) })
	if !c.revive(step) {
		return resp
	}
	var retry events.APIGatewayV2HTTPResponse
	c.track(step, func() { retry = c.s.post(ev) })
	switch {
	case retry.StatusCode == 409:
		if p := decode[problem](c.t, retry); p.Kind != "conflict" {
			c.t.Errorf("%s retry: a 409 of kind %q", step, p.Kind)
		}
	case retry.StatusCode >= 300:
		c.t.Errorf("%s retry after the crash: %d %s", step, retry.StatusCode, retry.Body)
	}
	return retry
}

// work delivers every queued worker message; a message whose worker
// crashed is delivered again (SQS redelivery).
func (c *crashWalk) work() {
	for {
		msgs := c.s.queue.take()
		if len(msgs) == 0 {
			return
		}
		for _, m := range msgs {
			step := "worker(" + m.Reason + ")"
			c.track(step, func() { c.s.work(m, 1) })
			if c.revive(step) {
				c.track(step, func() { c.s.work(m, 2) })
			}
		}
	}
}

// walk runs the scenario until the run settles: completed, failed or held
// with nothing left for anyone to do. A run still running with nothing
// queued gets one sweeper pass (after its leases passed), never two.
func (c *crashWalk) walk() {
	c.t.Helper()
	resp := c.http("invoke", fixture(c.t, "invoke.json").set("headers.idempotency-key", crashIdemKey))
	if resp.StatusCode != 202 && resp.StatusCode != 200 {
		c.t.Fatalf("invoke: %d %s", resp.StatusCode, resp.Body)
	}
	c.runID = decode[handlers.RunView](c.t, resp).RunID
	for range 12 {
		c.work()
		v := c.s.view(c.runID)
		switch v.Status {
		case "completed", "failed", "aborted":
			return
		case "held":
			w, err := c.s.store.GetWarrant(context.Background(), fixFirm, c.runID, v.PendingApproval.ApprovalRequestID)
			if err != nil {
				c.t.Fatal(err)
			}
			h := held{runID: c.runID, approvalID: w.ApprovalID, hash: w.ToolInputHash}
			switch w.Status {
			case warrant.WarrantPending:
				c.http("approve", approveReq(c.t, h, "approve", h.hash))
			case warrant.WarrantApproved:
				c.http("resume", resumeReq(c.t, h))
			default:
				c.t.Fatalf("held on a %s warrant", w.Status)
			}
		case "running":
			if c.sweeps > 0 {
				c.t.Errorf("still running after a sweeper pass: %+v", v)
				return
			}
			c.s.clock.Advance(10 * time.Minute)
			c.track("sweep", func() {
				if rep := c.s.sweep(); rep.Errors != 0 {
					c.t.Errorf("sweep: %+v", rep)
				}
			})
			c.sweeps++
		default:
			c.t.Fatalf("run status %q", v.Status)
		}
	}
	c.t.Fatalf("the run did not settle")
}

// outcome checks the walk's end and describes it.
func (c *crashWalk) outcome() string {
	c.t.Helper()
	v := c.s.view(c.runID)
	st := c.s.auditRun(c.runID) // the chain verifies against its signed head, and audits
	out, err := c.s.store.ListOutbound(context.Background(), fixFirm, c.runID)
	if err != nil {
		c.t.Fatal(err)
	}
	if len(out) > 1 {
		c.t.Errorf("%d effects: executed twice", len(out))
	}
	// Every effect that went out is on the record: a tool.completed with
	// its effect_ref, success or unknown (flagged for counsel), never lost
	// behind a failure of the store's kind.
	answered, toolFailed := map[string]string{}, false
	for _, l := range c.s.ledgerLines(c.runID) {
		if tc, ok := l.Event.(*contracts.ToolCompleted); ok && tc.EffectRef != "" {
			answered[tc.EffectRef] = tc.Status
			toolFailed = toolFailed || tc.Status == contracts.ToolError
		}
	}
	for _, o := range out {
		if st := answered[o.EffectRef]; st != contracts.ToolSuccess && st != contracts.ToolUnknown {
			c.t.Errorf("effect %s went out and the ledger says %q of it (run %s)", o.EffectRef, st, v.Status)
		}
	}
	desc := v.Status
	switch v.Status {
	case "completed":
		// The filing ran once, or its tool failed (a transient fault on
		// the downstream record: nothing went out) and the model was told.
		if (len(out) != 1 && !toolFailed) || v.FinalText == "" {
			c.t.Errorf("completed with %d effects: %+v", len(out), v)
		}
	case "failed":
		desc += "(" + v.Failure.Kind + ")"
		// A failure after the filing's claim leaves it for counsel, never
		// re-executed.
		if v.Failure.Kind == "effect_outcome_unknown" && len(st.Unreconciled) != 1 {
			c.t.Errorf("effect_outcome_unknown without an effect to reconcile: %+v", st)
		}
	case "held":
	default:
		c.t.Errorf("the run ended %s", v.Status)
	}
	c.budgetSettled()
	return fmt.Sprintf("%s, %d effect(s), %d sweep(s)", desc, len(out), c.sweeps)
}

// budgetSettled checks the firm's budget counted every model call of the
// walk exactly once: once every lease passed and a sweeper pass released
// what lost workers held, it spent what the run's usage lines cost and
// holds nothing.
func (c *crashWalk) budgetSettled() {
	c.t.Helper()
	c.s.clock.Advance(10 * time.Minute)
	if rep := c.s.sweep(); rep.Errors != 0 || rep.Restarted != 0 {
		c.t.Errorf("the closing sweep: %+v", rep)
	}
	spent, calls := c.s.usageCost(fixFirm, c.runID)
	b, err := c.s.store.GetBudget(context.Background(), fixFirm, warrant.MonthOf(c.s.clock.Now()), 100)
	if err != nil {
		c.t.Fatal(err)
	}
	if b.SpentNano != int64(spent) || b.ReservedNano != 0 || len(b.Open) != 0 || b.HeadroomNano != b.LimitNano-b.SpentNano {
		c.t.Errorf("budget after the walk: %+v; its %d usage lines cost %s", b, calls, spent)
	}
}

// TestCrashInjection kills the process at every write of the walk, in both
// ways a write can die (failed before it applied; applied with its answer
// lost), and refuses every write once, transiently (a throttle that outlasts
// the SDK's retries, the process living on), on minidyn and on moto with the
// reference tools run in process. With the tools on the firm's systems (their
// MCP server, their HTTPS endpoint and their Lambda function, on minidyn) it
// does the same at every write from counsel's approval on: the writes before it (the run's start, its turns, the hold)
// are the same store calls whatever serves the tools, and are walked by the
// in-process variants; from the approval on, the claim, the call on the
// firm's system and its completion meet. Every time: no effect executes
// twice, the run settles (completed, failed or held) after at most one
// sweeper pass, its chain verifies against the signed head and audits, and a
// retried request gets its answer or a precise 409.
//
// The variants run in parallel: each has its own tables (moto's requests are
// serialized by dynamotest), and moto's time is mostly its own process's.
// moto walks the in-process variant only: what it adds is DynamoDB's own
// answers (every reason of a cancelled transaction, ALL_OLD), which are the
// same store calls whatever serves the tools, and a second walk on it (the
// MCP server's, the longest variant after moto's own, all serialized on the
// one moto process) cost CI some two minutes for no call the two walks do
// not make between them (docs/DECISIONS.md, "CI's budget").
func TestCrashInjection(t *testing.T) {
	// Beside TestDestructionCrashInjection: moto's walks wait on its one
	// process, minidyn's on the CPU, so the two overlap.
	t.Parallel()
	for _, ep := range []struct {
		name   string
		new    func(testing.TB) *dynamotest.Endpoint
		system string
	}{{"minidyn", dynamotest.Minidyn, ""}, {"moto", dynamotest.Moto, ""}, {"minidyn-mcp", dynamotest.Minidyn, catalog.TargetMCP},
		{"minidyn-https", dynamotest.Minidyn, catalog.TargetHTTPS},
		{"minidyn-lambda", dynamotest.Minidyn, catalog.TargetLambda}} {
		t.Run(ep.name, func(t *testing.T) {
			t.Parallel()
			clean := newCrashWalk(t, ep.new(t), ep.system)
			clean.f.Arm(1<<30, dynamotest.FaultFail) // counts, never fires
			clean.walk()
			ops := clean.f.Ops()
			if got := clean.outcome(); got != "completed, 1 effect(s), 0 sweep(s)" || clean.crash != "" {
				t.Fatalf("the walk without a crash: %s", got)
			}
			if len(clean.steps) != len(ops) {
				t.Fatalf("%d writes named by step, %d made", len(clean.steps), len(ops))
			}
			from := 1
			if ep.system != "" {
				from = slices.Index(clean.steps, "approve") + 1
				if from == 0 {
					t.Fatalf("no write in counsel's approval: %v", clean.steps)
				}
			}
			t.Logf("%s: %d writes in the walk, %d injection points from write %d: %s", ep.name, len(ops), 3*(len(ops)-from+1), from, strings.Join(ops, " "))
			for k := from; k <= len(ops); k++ {
				for _, mode := range []dynamotest.FaultMode{dynamotest.FaultFail, dynamotest.FaultLose, dynamotest.FaultTransient} {
					t.Run(fmt.Sprintf("%02d-%s-%s", k, ops[k-1], mode), func(t *testing.T) {
						c := newCrashWalk(t, ep.new(t), ep.system)
						c.f.Arm(k, mode)
						c.walk()
						if !c.f.Fired() && c.crash == "" {
							t.Fatalf("the fault at write %d never fired", k)
						}
						t.Logf("crash in %s: %s", c.crash, c.outcome())
					})
				}
			}
		})
	}
}
