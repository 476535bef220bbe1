package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// destroyReason is the instruction the crash walk's destruction carries out.
const destroyReason = "Client's instruction of 1 December 2026 to destroy the matter's records."

// destroyWalk drives the destruction on instruction of a matter with two
// finished runs: a firm admin requests it, counsel B confirms it (the
// confirming call destroys both runs' content and marks the order done), a
// sweeper pass follows, stream-reduce delivers each run's records (the
// destruction receipts) and a second sweeper pass signs the checkpoint
// over them. The DynamoDB endpoint's Faults may kill the process at one
// write; the process that crashed is replaced (Revive), the state is
// checked as the crash left it, and whoever was waiting does what the real
// one does: the client sends the same request again, the schedule runs the
// sweeper again, the event source mapping delivers the same batch again.
type destroyWalk struct {
	t    *testing.T
	s    *stack
	f    *dynamotest.Faults
	runs []string
	// abandon: counsel B does not retry a confirming call that crashed;
	// the sweeper's pass must carry the order on (or, if the confirmation
	// never committed, counsel B confirms again later).
	abandon bool
	// then is a second fault, armed once the first crashed process is
	// replaced (nil: none).
	then *fault
	// crashes are the steps in which a fault fired; handled says the last
	// one fired was dealt with.
	crashes []string
	handled bool
	// steps names, for each write so far, the step that made it; base is
	// the number of writes before the fault armed last.
	steps []string
	base  int
}

// fault is a write to fail (counted from when it is armed) and how.
type fault struct {
	k    int
	mode dynamotest.FaultMode
}

// newDestroyWalk makes a stack with two completed runs of fixMatter, both
// sealed, settled (projected, their receipts issued and checkpointed).
func newDestroyWalk(t *testing.T, ep *dynamotest.Endpoint) *destroyWalk {
	t.Helper()
	s := newStack(t, stackOptions{endpoint: ep})
	w := &destroyWalk{t: t, s: s, f: ep.Faults}
	for range 2 {
		w.runs = append(w.runs, s.completedFiling(t).runID)
	}
	if w.runs[0] == w.runs[1] {
		t.Fatalf("one run, twice: %s", w.runs[0])
	}
	for _, run := range w.runs {
		if resp := s.deliver(s.records(fixFirm, run, 0)); len(resp.BatchItemFailures) > 0 {
			t.Fatalf("stream-reduce: %+v", resp)
		}
	}
	if rep := s.sweep(); rep.Checkpoints != 1 || rep.Errors != 0 || rep.RetentionErrors != 0 {
		t.Fatalf("the sweep before the destruction: %+v", rep)
	}
	return w
}

// track runs step and names the writes it made.
func (w *destroyWalk) track(step string, fn func()) {
	fn()
	for n := w.base + len(w.f.Ops()); len(w.steps) < n; {
		w.steps = append(w.steps, step)
	}
}

// revive replaces a crashed process and checks what the crash left, then
// arms the second fault, if any; it reports whether the step crashed.
func (w *destroyWalk) revive(step string) bool {
	if w.handled || !w.f.Fired() {
		return false
	}
	w.crashes, w.handled = append(w.crashes, step), true
	w.f.Revive()
	w.track("check", func() { w.atomic("right after the crash in " + step) })
	if w.then != nil {
		w.base = len(w.steps)
		w.f.Arm(w.then.k, w.then.mode)
		w.then, w.handled = nil, false
	}
	return true
}

// runState is a run as an insider's scan (or a backup) of the table finds
// it: whether its item stores a wrapped data key and says its content was
// destroyed, its head, and its stored ledger's content.destroyed lines.
type runState struct {
	key, gone          bool
	head, lines        int64
	destroyed          int
	lastType           contracts.EventType
	requester, confirm string
}

func (w *destroyWalk) state(run string) runState {
	w.t.Helper()
	ctx := context.Background()
	out, err := w.s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(w.s.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: runPK(fixFirm, run)}, "SK": &types.AttributeValueMemberS{Value: "RUN"}}})
	if err != nil || out.Item == nil {
		w.t.Fatalf("run item %s: %v %v", run, err, out.Item)
	}
	var st runState
	_, st.key = out.Item["data_key"]
	_, st.gone = out.Item["content_destroyed_at"]
	st.head = numAttr(out.Item, "head_seq")
	items, _, err := w.s.store.ReadLedger(ctx, fixFirm, run, 0, 0)
	if err != nil {
		w.t.Fatal(err)
	}
	st.lines = int64(len(items))
	for _, it := range items {
		// Parsed, never opened: the key may be gone.
		l, err := contracts.ParseEventLine(it.Raw)
		if err != nil {
			w.t.Fatalf("run %s line %d: %v", run, it.Seq, err)
		}
		if l.Type == contracts.TypeContentDestroyed {
			st.destroyed++
			if ev, ok := l.Event.(*contracts.ContentDestroyed); ok {
				st.requester, st.confirm = ev.RequestedBy, ev.ConfirmedBy
			}
		}
		st.lastType = l.Type
	}
	return st
}

// atomic checks issue 26's requirement on every run of the matter: either
// it keeps its data key and its ledger has no content.destroyed line, or
// it has no key and its ledger ends at its one content.destroyed line; its
// head is its ledger's last line either way.
func (w *destroyWalk) atomic(when string) (destroyed int) {
	w.t.Helper()
	for _, run := range w.runs {
		st := w.state(run)
		switch {
		case st.key && !st.gone && st.destroyed == 0 && st.head == st.lines:
		case !st.key && st.gone && st.destroyed == 1 && st.lastType == contracts.TypeContentDestroyed && st.head == st.lines:
			destroyed++
		default:
			w.t.Errorf("%s: run %s has data key %v, destroyed mark %v, %d content.destroyed line(s), its ledger ends at %d (%s), its head at %d",
				when, run, st.key, st.gone, st.destroyed, st.lines, st.lastType, st.head)
		}
	}
	return destroyed
}

// call sends a request as the client does: if the process crashed in it,
// the client sends the same request again, once (unless it gives up), and
// that answer is returned, with whether the first crashed.
func (w *destroyWalk) call(step string, ev *event, giveUp bool) (events.APIGatewayV2HTTPResponse, bool) {
	w.t.Helper()
	var resp events.APIGatewayV2HTTPResponse
	w.track(step, func() { resp = w.s.post(ev) })
	if !w.revive(step) {
		return resp, false
	}
	if !giveUp {
		w.track(step, func() { resp = w.s.post(ev) })
	}
	return resp, true
}

// wantConflict accepts a retry's precise refusal: a 409 of kind conflict.
func (w *destroyWalk) wantConflict(step string, resp events.APIGatewayV2HTTPResponse) {
	w.t.Helper()
	if resp.StatusCode != 409 {
		w.t.Errorf("%s retry after the crash: %d %s", step, resp.StatusCode, resp.Body)
	} else if p := decode[problem](w.t, resp); p.Kind != "conflict" {
		w.t.Errorf("%s retry: a 409 of kind %q", step, p.Kind)
	}
}

func (w *destroyWalk) request() {
	w.t.Helper()
	ev := matterReq(w.t, handlers.DestroyRoute, fixMatter, map[string]any{"reason": destroyReason}).claim("sub", firmAdmin).roles("firm_admin")
	resp, crashed := w.call("request", ev, false)
	if resp.StatusCode == 202 {
		if o := decode[handlers.DestructionView](w.t, resp); o.Status != "requested" || o.RequestedBy != firmAdmin || o.Reason != destroyReason ||
			o.Runs != len(w.runs) {
			w.t.Errorf("request: %s", resp.Body)
		}
		return
	}
	if !crashed {
		w.t.Fatalf("request: %d %s", resp.StatusCode, resp.Body)
	}
	// A retry of a request that went through: the request as it stands
	// (202) or, precisely, that it waits (409); never the requester's
	// self-confirmation refused (403), nor a 5xx.
	w.wantConflict("request", resp)
}

func (w *destroyWalk) confirmReq() *event {
	return matterReq(w.t, handlers.DestroyRoute, fixMatter, map[string]any{}).claim("sub", counselB)
}

func (w *destroyWalk) confirm() {
	w.t.Helper()
	resp, crashed := w.call("confirm", w.confirmReq(), w.abandon)
	switch {
	case crashed && w.abandon:
		// Whatever the dying process answered, nobody reads it.
	case resp.StatusCode == 200:
		o := decode[handlers.DestructionView](w.t, resp)
		if o.Status != "done" || o.ConfirmedBy != counselB || len(o.Destroyed)+len(o.AlreadyDestroyed) != len(w.runs) || len(o.NotEnded) != 0 ||
			(!crashed && len(o.Destroyed) != len(w.runs)) {
			w.t.Errorf("confirm: %s", resp.Body)
		}
	case !crashed:
		w.t.Fatalf("confirm: %d %s", resp.StatusCode, resp.Body)
	default:
		// The order was done before the answer was lost: nothing left.
		w.wantConflict("confirm", resp)
	}
}

// sweepOnce is one sweeper pass as the schedule invokes it; a pass whose
// process crashed may fail.
func (w *destroyWalk) sweepOnce() (handlers.SweepReport, error) {
	var rep handlers.SweepReport
	out, err := lambda.NewHandler(w.s.sweeper.Handle).Invoke(context.Background(), []byte(`{}`))
	if err != nil {
		return rep, err
	}
	return rep, json.Unmarshal(out, &rep)
}

func (w *destroyWalk) sweep(step string) handlers.SweepReport {
	w.t.Helper()
	var rep handlers.SweepReport
	var err error
	w.track(step, func() { rep, err = w.sweepOnce() })
	if w.revive(step) {
		w.track(step, func() { rep, err = w.sweepOnce() }) // the next scheduled pass
	}
	if err != nil || rep.Errors != 0 || rep.RetentionErrors != 0 || rep.CheckpointErrors != 0 {
		w.t.Errorf("%s: %+v %v", step, rep, err)
	}
	return rep
}

// deliver hands stream-reduce the run's records; a batch whose process
// crashed is delivered again.
func (w *destroyWalk) deliver(run string) {
	w.t.Helper()
	var resp events.DynamoDBEventResponse
	recs := w.s.records(fixFirm, run, 0)
	w.track("deliver", func() { resp = w.s.deliver(recs) })
	if w.revive("deliver") {
		w.track("deliver", func() { resp = w.s.deliver(recs) })
	}
	if len(resp.BatchItemFailures) > 0 {
		w.t.Errorf("stream-reduce of run %s: %+v", run, resp.BatchItemFailures)
	}
}

// walk runs the destruction from its request to its checkpointed receipts.
func (w *destroyWalk) walk() {
	w.t.Helper()
	w.request()
	w.confirm()
	w.sweep("sweep")
	if w.abandon {
		// The sweeper carried on the confirmed order; one never confirmed
		// (its confirmation failed) is confirmed again, by a later call.
		if st := holdStatus(w.t, w.s, fixMatter); st.Destruction != nil && st.Destruction.Status == "requested" {
			if w.atomic("an order never confirmed") != 0 {
				w.t.Errorf("content destroyed on a request alone")
			}
			w.track("confirm-later", func() {
				if resp := w.s.post(w.confirmReq()); resp.StatusCode != 200 {
					w.t.Errorf("confirming again: %d %s", resp.StatusCode, resp.Body)
				}
			})
		}
	}
	for _, run := range w.runs {
		w.deliver(run)
	}
	w.sweep("checkpoint")
}

// outcome checks the walk's end: every run's content destroyed once, the
// order done, nothing readable, each run's evidence complete and ending at
// its one destruction receipt.
func (w *destroyWalk) outcome() {
	w.t.Helper()
	if n := w.atomic("after the walk"); n != len(w.runs) {
		w.t.Errorf("%d of %d runs destroyed", n, len(w.runs))
	}
	st := holdStatus(w.t, w.s, fixMatter)
	if o := st.Destruction; o == nil || o.Status != "done" || o.RequestedBy != firmAdmin || o.ConfirmedBy != counselB || o.DoneAt == "" {
		w.t.Errorf("the order after the walk: %+v", o)
	}
	keys := w.s.trusted()
	for _, run := range w.runs {
		if rs := w.state(run); rs.requester != firmAdmin || rs.confirm != counselB {
			w.t.Errorf("run %s: the content.destroyed line names %q and %q", run, rs.requester, rs.confirm)
		}
		if v := w.s.view(run); v.FinalText != "" || v.ContentDestroyed == nil || v.ContentDestroyed.Reason != "instruction" || v.Status != "completed" {
			w.t.Errorf("run %s after the walk: %+v", run, v)
		}
		rep, err := evidence.Verify(w.s.bundle(run, nil), keys)
		if err != nil {
			w.t.Errorf("run %s's evidence: %v", run, err)
			continue
		}
		n := 0
		for _, r := range rep.Receipts {
			if r.Kind == evidence.KindDestruction {
				n++
			}
		}
		last := rep.Receipts[len(rep.Receipts)-1]
		if !rep.Complete || rep.Covered != rep.LastSeq || n != 1 || last.Kind != evidence.KindDestruction || last.Outcome != "instruction" {
			w.t.Errorf("run %s's evidence: %d destruction receipt(s), report %+v, last receipt %+v", run, n, rep, last)
		}
	}
}

// TestDestructionCrashInjection proves issue 26's requirement that a crash
// at any step of a destruction leaves either the key and no destruction
// receipt, or no key and its receipt: it kills the process at every write
// of a matter's destruction on instruction (the request, the confirmation
// that destroys both of the matter's runs, the sweeper pass after it,
// stream-reduce's delivery of the runs' records with their destruction
// receipts, and the sweeper's checkpoint over them), in every way
// dynamotest's Faults make a write die: failed before it applied, applied
// with its answer lost, refused once by a throttle that outlasts the SDK's
// retries. Right after each crash every run of the matter has its key and
// no content.destroyed line, or no key and its ledger ends at that line.
// Then the client retries the same request once (answered with its success
// or a precise 409, never a 5xx), the schedule runs the sweeper, the
// stream delivers the batch again, and at the end every run's content is
// destroyed exactly once, the order is done, nothing is readable, and each
// run's evidence verifies complete, its one destruction receipt its last.
//
// A crash in the confirming call is also walked with the confirmer giving
// up: the sweeper's pass finishes the order. And since then the sweeper
// makes the destructions, its pass is walked too: the confirming call
// crashes at its first destruction and is abandoned, and the sweeper's
// pass crashes at each of its writes (the next pass finishes).
//
// On minidyn every write is walked, in every mode (some 55 walks, 20 to 30
// s on 2 cores). On moto (its requests serialized, a few hundred a second)
// a walk with its two runs takes 5 to 10 s, and walking every write would
// take five minutes: moto walks only the writes that destroy content, the
// confirming call's two transactions after its confirmation (the first
// run's destruction, then the second's: a crash between the two), failed
// and with the answer lost, the confirmer retrying. (A transient refusal
// is a failed write to the table; what the process does after it, and the
// sweeper's carrying on, are walked on minidyn.)
func TestDestructionCrashInjection(t *testing.T) {
	// Beside TestCrashInjection (see there).
	t.Parallel()
	modes := []dynamotest.FaultMode{dynamotest.FaultFail, dynamotest.FaultLose, dynamotest.FaultTransient}
	for _, ep := range []struct {
		name string
		new  func(testing.TB) *dynamotest.Endpoint
		all  bool // every write, or only the destructions'
	}{{"minidyn", dynamotest.Minidyn, true}, {"moto", dynamotest.Moto, false}} {
		t.Run(ep.name, func(t *testing.T) {
			t.Parallel()
			clean := newDestroyWalk(t, ep.new(t))
			clean.f.Arm(1<<30, dynamotest.FaultFail) // counts, never fires
			clean.walk()
			ops := clean.f.Ops()
			clean.outcome()
			if len(clean.crashes) != 0 || t.Failed() {
				t.Fatalf("the walk without a crash failed")
			}
			if len(clean.steps) != len(ops) {
				t.Fatalf("%d writes named by step, %d made", len(clean.steps), len(ops))
			}
			named := make([]string, len(ops))
			var destructions []int // the writes that destroy a run's content
			for i, op := range ops {
				if clean.steps[i] == "check" {
					t.Fatalf("the checks wrote: %v", clean.steps)
				}
				named[i] = clean.steps[i] + ":" + op
				if clean.steps[i] == "confirm" && op == "TransactWriteItems" && i > 0 && clean.steps[i-1] == "confirm" {
					destructions = append(destructions, i+1)
				}
			}
			if len(destructions) != len(clean.runs) {
				t.Fatalf("%d destructions among the writes %v", len(destructions), named)
			}
			walked := destructions
			if ep.all {
				walked = nil
				for k := 1; k <= len(ops); k++ {
					walked = append(walked, k)
				}
			}
			t.Logf("%s: %d writes in the destruction (%s); walking writes %v", ep.name, len(ops), strings.Join(named, " "), walked)
			for _, k := range walked {
				for _, mode := range modes {
					for _, abandon := range []bool{false, true} {
						if !ep.all && (abandon || mode == dynamotest.FaultTransient) || abandon && clean.steps[k-1] != "confirm" {
							continue
						}
						name := fmt.Sprintf("%02d-%s-%s-%s", k, clean.steps[k-1], ops[k-1], mode)
						if abandon {
							name += "-abandoned"
						}
						t.Run(name, func(t *testing.T) {
							w := newDestroyWalk(t, ep.new(t))
							w.abandon = abandon
							w.f.Arm(k, mode)
							w.walk()
							if len(w.crashes) != 1 {
								t.Fatalf("the fault at write %d fired in %v", k, w.crashes)
							}
							w.outcome()
						})
					}
				}
			}
			if !ep.all {
				return
			}

			// The sweeper carrying on: the confirmation commits, the first
			// destruction fails and counsel gives up; the sweeper's pass
			// crashes at each of its writes.
			first := fault{destructions[0], dynamotest.FaultFail}
			counted := newDestroyWalk(t, ep.new(t))
			counted.abandon, counted.then = true, &fault{1 << 30, dynamotest.FaultFail}
			counted.f.Arm(first.k, first.mode)
			counted.walk()
			counted.outcome()
			after := counted.f.Ops() // the writes after the first crash
			if len(counted.crashes) != 1 || counted.crashes[0] != "confirm" || t.Failed() {
				t.Fatalf("the sweeper's walk without a second crash: crashes %v", counted.crashes)
			}
			var sweeps []int
			for j := range after {
				if counted.steps[counted.base+j] == "sweep" {
					sweeps = append(sweeps, j+1)
				}
			}
			// Each run's destruction, its catch-up (the destruction's receipt
			// and the projection past it), the order done: at least one
			// write per run and the order's.
			if len(sweeps) < len(clean.runs)+1 {
				t.Fatalf("the sweeper's pass made writes %v of %v", sweeps, counted.steps[counted.base:])
			}
			t.Logf("%s: the sweeper's pass carrying on the order: writes %v of %v after the crash", ep.name, sweeps, after)
			for _, j := range sweeps {
				for _, mode := range modes {
					t.Run(fmt.Sprintf("sweeper-%02d-%s-%s", j, after[j-1], mode), func(t *testing.T) {
						w := newDestroyWalk(t, ep.new(t))
						w.abandon, w.then = true, &fault{j, mode}
						w.f.Arm(first.k, first.mode)
						w.walk()
						if len(w.crashes) != 2 || w.crashes[1] != "sweep" {
							t.Fatalf("the faults fired in %v", w.crashes)
						}
						w.outcome()
					})
				}
			}
		})
	}
}
