package dynamo_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"

	"github.com/seed-f6d3920e/warrant"
)

// The run lease and the sweep (lease.go): who may work on a run and until
// when, the sweeper's index of leases that passed (GSI2), restarts, the
// ending of a stuck run, and counsel's reconciliation of an effect whose
// outcome was unknown.

// idIn is a fresh run id in GSI2 shard c (the first hex digit of the id).
func idIn(c byte) string { return string(c) + id()[1:] }

// newRunID creates a run with the given id and lease (newRun's run, with
// the id and lease chosen).
func (e *env) newRunID(firm, runID string, lease warrant.Lease) *run {
	e.t.Helper()
	r := &run{firm: firm, id: runID, matter: id(), user: id()}
	r.chain = contracts.NewChain(r.id, r.firm)
	first := e.line(r, &contracts.RunStarted{
		AgentKey: "drafting", Mode: contracts.ModeInvoke, ModelID: "model-x", PromptVersion: "p1",
		SchemaVersion: contracts.SchemaVersion, CostCapUSD: "1.00", MaxTokens: 1024,
		MatterID: r.matter, UserID: r.user, History: []contracts.HistoryMessage{},
	})
	must(e.t, e.store.CreateRun(e.ctx, warrant.Run{
		FirmID: firm, RunID: r.id, MatterID: r.matter, UserID: r.user, AgentKey: "drafting",
		ModelID: "model-x", PromptVersion: "p1", CorrelationID: "corr-1", CostCapUSD: "1.00", Lease: lease,
	}, first))
	return r
}

// hold holds a running run on a new pending warrant (newHeld's hold, of a
// run made by the caller).
func (e *env) hold(r *run) *held {
	e.t.Helper()
	h := &held{run: r, approval: id(), tool: newToolCall(e.t, "file_court_document"),
		expires: e.clock.Now().Add(warrant.DefaultWarrantTTL)}
	req := e.line(r, requested(h.tool, "require_approval"))
	blocked := e.line(r, &contracts.RunBlocked{Approval: contracts.BlockedApproval{
		ApprovalRequestID: h.approval, ToolUseID: h.tool.useID, ToolName: h.tool.name, ToolInput: h.tool.input, ToolInputHash: h.tool.hash,
		RiskTier: "high", Reason: "files with a court", HumanSummary: "File the motion",
		ExpiresAt: contracts.FormatTime(h.expires),
	}})
	must(e.t, e.store.CreateWarrantRequest(e.ctx, e.warrant(h), req, blocked))
	return h
}

// released holds a new run, approves and resumes it: the run is running,
// owner-less until c.PickupBy, and c's claim is reserved for a worker.
func (e *env) released(firm string) (*held, warrant.ResumeClaim, warrant.EffectKey) {
	e.t.Helper()
	h := e.newHeld(firm)
	_, err := e.decide(h, warrant.DecisionApproved)
	must(e.t, err)
	c, l := e.resume(h, warrant.DecisionApproved)
	must(e.t, e.store.ResumeClaim(e.ctx, c, l))
	h.chain.Advance(l)
	return h, c, warrant.EffectKey{ToolName: c.ToolName, InputSHA256: c.InputSHA256}
}

func (e *env) getRun(r *run) warrant.Run {
	e.t.Helper()
	got, err := e.store.GetRun(e.ctx, r.firm, r.id)
	must(e.t, err)
	return got
}

// runItem is the stored run item, as plain values.
func (e *env) runItem(r *run) map[string]any {
	e.t.Helper()
	for _, it := range e.partition(r.firm, r.id) {
		if it[dynamo.AttrSK] == "RUN" {
			return it
		}
	}
	e.t.Fatalf("run %s has no run item", r.id)
	return nil
}

// inSweepIndex checks the run item's place in GSI2: its shard with the lease
// end as sort key while unfinished; once finished, out of the lease shards
// and in its retention shard, due at its end (ended_at).
func (e *env) inSweepIndex(r *run, want bool, what string) {
	e.t.Helper()
	it := e.runItem(r)
	switch pk := it[dynamo.AttrGSI2PK]; {
	case want && (pk != "RUNS#"+r.id[:1] || it[dynamo.AttrGSI2SK] != it["lease_until"] || it["lease_until"] == nil):
		e.t.Errorf("%s: GSI2 keys %v / %v, lease_until %v: want RUNS#%s by lease end", what, pk, it[dynamo.AttrGSI2SK], it["lease_until"], r.id[:1])
	case !want && (pk != "RETAIN#"+r.id[:1] || it["ended_at"] == nil || it[dynamo.AttrGSI2SK] != it["ended_at"]):
		e.t.Errorf("%s: GSI2 keys %v / %v, ended_at %v: want RETAIN#%s by its end (out of the sweeper's lease shards)", what, pk,
			it[dynamo.AttrGSI2SK], it["ended_at"], r.id[:1])
	}
}

// checkHead checks the run's signed head is its chain's last line.
func (e *env) checkHead(r *run, what string) {
	e.t.Helper()
	h := e.getRun(r).Head
	if h.Seq != r.chain.Seq || h.Hash != r.chain.Head || h.KeyID != e.ring.KeyID() {
		e.t.Errorf("%s: head %+v, want seq %d hash %s", what, h, r.chain.Seq, r.chain.Head)
		return
	}
	if err := e.ring.VerifyHead(e.ctx, r.firm, r.id, h.Seq, h.Hash, h.MAC, h.KeyID); err != nil {
		e.t.Errorf("%s: the head does not verify: %v", what, err)
	}
}

// tail checks the run's ledger ends with lines, byte for byte.
func (e *env) tail(r *run, what string, lines ...contracts.Line) {
	e.t.Helper()
	items := e.ledger(r)
	if len(items) < len(lines) {
		e.t.Errorf("%s: ledger has %d lines, want at least %d", what, len(items), len(lines))
		return
	}
	for i, l := range lines {
		got := items[len(items)-len(lines)+i]
		if got.Seq != l.Seq || string(got.Raw) != string(l.Raw) {
			e.t.Errorf("%s: line %d stored as seq %d %q, want seq %d %q", what, i, got.Seq, got.Raw, l.Seq, l.Raw)
		}
	}
}

// nextLines encodes evs as the next lines without advancing the run's
// chain (for writes that are to be refused).
func (e *env) nextLines(r *run, evs ...contracts.Event) []contracts.Line {
	e.t.Helper()
	probe := *r
	chain := *r.chain
	probe.chain = &chain
	out := make([]contracts.Line, len(evs))
	for i, ev := range evs {
		out[i] = e.line(&probe, ev)
	}
	return out
}

func (e *env) expired(now time.Time, limit int) []warrant.RunRef {
	e.t.Helper()
	refs, err := e.store.ExpiredLeases(e.ctx, now, limit)
	must(e.t, err)
	return refs
}

func ref(r *run) warrant.RunRef { return warrant.RunRef{FirmID: r.firm, RunID: r.id} }

func runFailed(kind string) *contracts.RunFailed {
	return &contracts.RunFailed{ErrorClass: kind, ErrorMessage: "the run cannot go on", FailureKind: kind, FailureStage: "sweep"}
}

func unknownOutcome(tc toolCall, effectRef string) *contracts.ToolCompleted {
	return &contracts.ToolCompleted{ToolUseID: tc.useID, ToolName: tc.name, InputSHA256: tc.hash,
		Status: contracts.ToolUnknown, EffectRef: effectRef, Result: []byte(`{"error":"effect_outcome_unknown"}`)}
}

// wantInvalid: a caller bug is refused as invalid input, matching none of
// the store's sentinels (which would tell a caller to act on the run).
func wantInvalid(t testing.TB, err error, what string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "invalid input") {
		t.Errorf("%s: got %v, want invalid input", what, err)
		return
	}
	for _, s := range []error{warrant.ErrNotFound, warrant.ErrRunNotInState, warrant.ErrLeaseHeld, warrant.ErrEffectClaimed,
		warrant.ErrNotReconcilable, warrant.ErrSeqTaken} {
		if errors.Is(err, s) {
			t.Errorf("%s: invalid input %v matches %v", what, err, s)
		}
	}
}

// testLeaseOnWrites: the writes that move a run between states set its
// lease: a new run waits for a worker until the pickup deadline (or is held
// by the worker that created it), a held run waits for counsel until the
// warrant's expiry, a released run for a worker until its pickup deadline;
// a finished run leaves the sweeper's index.
func testLeaseOnWrites(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	t0 := e.clock.Now()
	firm := id()

	r := e.newRun(firm)
	if got := e.getRun(r); got.Lease.Owner != "" || !got.Lease.Until.Equal(t0.Add(dynamo.DefaultPickup)) || got.Restarts != 0 {
		t.Errorf("new run: lease %+v, restarts %d; want owner-less until %v", got.Lease, got.Restarts, t0.Add(dynamo.DefaultPickup))
	}
	if it := e.runItem(r); it["lease_owner"] != "none" {
		t.Errorf("new run: lease_owner %v, want none", it["lease_owner"])
	}
	e.inSweepIndex(r, true, "new run")

	// A run created with a lease is its creator's.
	own := warrant.Lease{Owner: "worker-1", Until: t0.Add(30 * time.Second)}
	mine := e.newRunID(firm, id(), own)
	if got := e.getRun(mine); got.Lease != own {
		t.Errorf("run created with lease %+v has %+v", own, got.Lease)
	}
	e.inSweepIndex(mine, true, "run created with a lease")
	_, err := e.store.AcquireRun(e.ctx, firm, mine.id, "worker-2", t0.Add(time.Minute))
	wantErr(t, err, warrant.ErrLeaseHeld, "acquire of a run its creator holds")

	// Held: nobody works on it until the warrant expires.
	if _, err := e.store.AcquireRun(e.ctx, firm, r.id, "worker-1", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	h := e.hold(r)
	if got := e.getRun(r); got.Lease.Owner != "" || !got.Lease.Until.Equal(h.expires) {
		t.Errorf("held run: lease %+v, want owner-less until the warrant's expiry %v", got.Lease, h.expires)
	}
	e.inSweepIndex(r, true, "held run")

	// Released: waits for a worker until the pickup deadline.
	_, err = e.decide(h, warrant.DecisionApproved)
	must(t, err)
	e.clock.Advance(time.Second)
	c, l := e.resume(h, warrant.DecisionApproved)
	must(t, e.store.ResumeClaim(e.ctx, c, l))
	h.chain.Advance(l)
	if got := e.getRun(r); got.Lease.Owner != "" || !got.Lease.Until.Equal(c.PickupBy) {
		t.Errorf("released run: lease %+v, want owner-less until the pickup deadline %v", got.Lease, c.PickupBy)
	}
	e.inSweepIndex(r, true, "released run")

	// Finished: out of the sweeper's shards, owned by nobody.
	_, err = e.store.AcquireRun(e.ctx, firm, r.id, "worker-2", e.clock.Now().Add(time.Minute))
	must(t, err)
	must(t, e.store.FinishRun(e.ctx, firm, r.id, warrant.RunCompleted, e.line(r, &contracts.RunCompleted{StopReason: "end_turn", FinalText: "Filed."})))
	if got := e.getRun(r); got.Lease.Owner != "" {
		t.Errorf("finished run: lease %+v, want no owner", got.Lease)
	}
	e.inSweepIndex(r, false, "finished run")
	if refs := e.expired(e.clock.Now().Add(48*time.Hour), 0); slices.Contains(refs, ref(r)) || !slices.Contains(refs, ref(mine)) {
		t.Errorf("expired leases %v: want %v (unfinished) and not %v (finished)", refs, ref(mine), ref(r))
	}
}

// testAcquireRun: one worker at a time holds a running run; the holder
// renews, another waits until the lease passed; a held or finished run is
// nobody's to work on; a missing run, another firm's or bad arguments write
// nothing.
func testAcquireRun(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	t0 := e.clock.Now()
	firm := id()
	r := e.newRun(firm)
	h := e.newHeld(firm)
	f := e.newRun(firm)
	must(t, e.store.FinishRun(e.ctx, firm, f.id, warrant.RunFailed, e.line(f, runFailed("internal"))))

	// Bad arguments are refused before anything is written (the zero end
	// is asked of the owner-less run, which any worker could take).
	before := e.partition(firm, r.id)
	for _, c := range []struct {
		owner string
		until time.Time
	}{{"", t0.Add(time.Minute)}, {"none", t0.Add(time.Minute)}, {"worker-a", time.Time{}}} {
		_, err := e.store.AcquireRun(e.ctx, firm, r.id, c.owner, c.until)
		wantInvalid(t, err, fmt.Sprintf("acquire by %q until %v", c.owner, c.until))
	}
	e.unchanged(before, firm, r.id, "acquire with bad arguments")

	// A new run waits for a worker: the first to ask gets it, and the run
	// it is handed carries its lease.
	got, err := e.store.AcquireRun(e.ctx, firm, r.id, "worker-a", t0.Add(time.Minute))
	must(t, err)
	// Each lease taken is a new epoch (the fence of the worker's writes).
	if want := (warrant.Lease{Owner: "worker-a", Until: t0.Add(time.Minute), Epoch: 1}); got.Lease != want ||
		got.RunID != r.id || got.FirmID != firm || got.Status != warrant.RunRunning || got.Head.Seq != 1 {
		t.Errorf("acquired run = %+v, want running with lease %+v", got, want)
	}
	if stored := e.getRun(r); stored.Lease != got.Lease {
		t.Errorf("stored lease %+v, returned %+v", stored.Lease, got.Lease)
	}
	e.inSweepIndex(r, true, "acquired run")

	// The holder renews.
	got, err = e.store.AcquireRun(e.ctx, firm, r.id, "worker-a", t0.Add(2*time.Minute))
	must(t, err)
	if want := (warrant.Lease{Owner: "worker-a", Until: t0.Add(2 * time.Minute), Epoch: 2}); got.Lease != want || e.getRun(r).Lease != want {
		t.Errorf("renewed lease %+v, want %+v", got.Lease, want)
	}

	// Another worker waits while the lease is live, up to its very end.
	before = e.partition(firm, r.id)
	_, err = e.store.AcquireRun(e.ctx, firm, r.id, "worker-b", t0.Add(5*time.Minute))
	wantErr(t, err, warrant.ErrLeaseHeld, "acquire of a live lease")
	e.clock.Advance(2 * time.Minute)
	_, err = e.store.AcquireRun(e.ctx, firm, r.id, "worker-b", t0.Add(5*time.Minute))
	wantErr(t, err, warrant.ErrLeaseHeld, "acquire at the lease's end")
	e.unchanged(before, firm, r.id, "acquire of a live lease")

	// Once it passed, the other worker takes over and the lost one is out.
	e.clock.Advance(time.Millisecond)
	got, err = e.store.AcquireRun(e.ctx, firm, r.id, "worker-b", e.clock.Now().Add(time.Minute))
	must(t, err)
	if want := (warrant.Lease{Owner: "worker-b", Until: e.clock.Now().Add(time.Minute), Epoch: 3}); got.Lease != want {
		t.Errorf("lease taken over: %+v, want %+v", got.Lease, want)
	}
	before = e.partition(firm, r.id)
	_, err = e.store.AcquireRun(e.ctx, firm, r.id, "worker-a", e.clock.Now().Add(time.Minute))
	wantErr(t, err, warrant.ErrLeaseHeld, "acquire by the worker whose lease was taken over")
	e.unchanged(before, firm, r.id, "acquire by the worker whose lease was taken over")

	// A held run (even once its warrant, its lease, passed) and a finished
	// run are not running: nobody acquires them.
	for _, c := range []struct {
		r    *run
		what string
	}{{h.run, "held run"}, {f, "finished run"}} {
		before := e.partition(firm, c.r.id)
		_, err = e.store.AcquireRun(e.ctx, firm, c.r.id, "worker-c", e.clock.Now().Add(time.Minute))
		wantErr(t, err, warrant.ErrRunNotInState, "acquire of a "+c.what)
		e.clock.Advance(warrant.DefaultWarrantTTL + time.Second)
		_, err = e.store.AcquireRun(e.ctx, firm, c.r.id, "worker-c", e.clock.Now().Add(time.Minute))
		wantErr(t, err, warrant.ErrRunNotInState, "acquire of a "+c.what+" whose lease passed")
		e.unchanged(before, firm, c.r.id, "acquire of a "+c.what)
	}

	// A missing run, another firm's run, or ids that are not ids: not
	// found, and no run item is made up.
	missing, other := id(), id()
	_, err = e.store.AcquireRun(e.ctx, firm, missing, "worker-c", e.clock.Now().Add(time.Minute))
	wantErr(t, err, warrant.ErrNotFound, "acquire of a missing run")
	_, err = e.store.AcquireRun(e.ctx, other, r.id, "worker-c", e.clock.Now().Add(time.Minute))
	wantErr(t, err, warrant.ErrNotFound, "acquire of another firm's run")
	_, err = e.store.AcquireRun(e.ctx, "FIRM#"+firm, r.id, "worker-c", e.clock.Now().Add(time.Minute))
	wantErr(t, err, warrant.ErrNotFound, "acquire under a firm id that is not a UUID")
	for _, c := range [][2]string{{firm, missing}, {other, r.id}} {
		if p := e.partition(c[0], c[1]); len(p) != 0 {
			t.Errorf("a refused acquire wrote %v", p)
		}
	}
}

// testTakeClaim: of the workers handed a released run, one becomes the
// executor of the claim its resume reserved; nobody takes a claim that is
// taken, finished or declined.
func testTakeClaim(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm := id()
	h, c, key := e.released(firm)
	until := e.clock.Now().Add(time.Minute)

	before := e.partition(firm, h.id)
	wantInvalid(t, e.store.TakeClaim(e.ctx, firm, h.id, key, "", until), "take by no owner")
	wantInvalid(t, e.store.TakeClaim(e.ctx, firm, h.id, key, "none", until), "take by owner none")
	wantInvalid(t, e.store.TakeClaim(e.ctx, firm, h.id, key, "worker-a", time.Time{}), "take without a lease end")
	wantInvalid(t, e.store.TakeClaim(e.ctx, firm, h.id, warrant.EffectKey{ToolName: key.ToolName, InputSHA256: "nothex"}, "worker-a", until),
		"take of a malformed key")
	e.unchanged(before, firm, h.id, "take with bad arguments")

	// Only the run's lease holder takes the claim (TestLeaseGuards).
	acquire := func(run, owner string, until time.Time) {
		t.Helper()
		_, err := e.store.AcquireRun(e.ctx, firm, run, owner, until)
		must(t, err)
	}
	acquire(h.id, "worker-a", until)
	must(t, e.store.TakeClaim(e.ctx, firm, h.id, key, "worker-a", until))
	got, err := e.store.GetEffect(e.ctx, firm, h.id, key)
	must(t, err)
	if got.Owner != "worker-a" || !got.Taken() || !got.LeaseUntil.Equal(until) || got.EffectRef != c.EffectRef || got.State != warrant.ClaimClaimed {
		t.Errorf("taken claim = %+v", got)
	}
	// The same owner again (its answer was lost): fine, nothing changes.
	before = e.partition(firm, h.id)
	must(t, e.store.TakeClaim(e.ctx, firm, h.id, key, "worker-a", until))
	wantErr(t, e.store.TakeClaim(e.ctx, firm, h.id, key, "worker-b", until), warrant.ErrLeaseHeld, "take under another's lease")
	e.unchanged(before, firm, h.id, "second takes")
	// worker-a is lost; worker-b leases the run after it, and still cannot
	// take the claim worker-a took.
	e.clock.Advance(2 * time.Minute)
	until = e.clock.Now().Add(time.Minute)
	acquire(h.id, "worker-b", until)
	before = e.partition(firm, h.id)
	wantErr(t, e.store.TakeClaim(e.ctx, firm, h.id, key, "worker-b", until), warrant.ErrEffectClaimed, "take of a taken claim")
	e.unchanged(before, firm, h.id, "take of a taken claim")

	// Completed: its outcome is recorded, nobody executes it again, not
	// even its executor.
	must(t, e.store.CompleteEffect(e.ctx, firm, h.id, key, "worker-a",
		warrant.Completion{State: warrant.ClaimCompleted, ToolStatus: contracts.ToolSuccess}, e.line(h.run, completed(h.tool, c.EffectRef))))
	before = e.partition(firm, h.id)
	wantErr(t, e.store.TakeClaim(e.ctx, firm, h.id, key, "worker-b", until), warrant.ErrEffectClaimed, "take of a completed claim")
	e.clock.Advance(2 * time.Minute)
	until = e.clock.Now().Add(time.Minute)
	acquire(h.id, "worker-a", until)
	before = e.partition(firm, h.id)
	wantErr(t, e.store.TakeClaim(e.ctx, firm, h.id, key, "worker-a", until), warrant.ErrEffectClaimed, "take of a completed claim by its executor")
	e.unchanged(before, firm, h.id, "takes of a completed claim")

	// Declined by counsel: nobody ever executes it.
	d := e.newHeld(firm)
	_, err = e.decide(d, warrant.DecisionDenied)
	must(t, err)
	dc, dl := e.resume(d, warrant.DecisionDenied)
	must(t, e.store.ResumeClaim(e.ctx, dc, dl))
	acquire(d.id, "worker-a", until)
	before = e.partition(firm, d.id)
	wantErr(t, e.store.TakeClaim(e.ctx, firm, d.id, warrant.EffectKey{ToolName: d.tool.name, InputSHA256: d.tool.hash}, "worker-a", until),
		warrant.ErrEffectClaimed, "take of a declined claim")

	// Reconciled by counsel before anyone took it (the pickup passed, the
	// claim was flagged): its outcome is decided, nobody executes it.
	rh, rc, rkey := e.released(firm)
	must(t, e.store.FlagForReconciliation(e.ctx, firm, rh.id, rkey))
	must(t, e.store.ReconcileEffect(e.ctx, firm, rh.id, rkey,
		warrant.Reconciliation{Outcome: warrant.OutcomeNotExecuted, By: "counsel-1"},
		e.line(rh.run, &contracts.EffectReconciled{EffectRef: rc.EffectRef, ToolName: rkey.ToolName, InputSHA256: rkey.InputSHA256,
			Outcome: warrant.OutcomeNotExecuted, ReconciledBy: "counsel-1"})))
	acquire(rh.id, "worker-a", until)
	rbefore := e.partition(firm, rh.id)
	wantErr(t, e.store.TakeClaim(e.ctx, firm, rh.id, rkey, "worker-a", until), warrant.ErrEffectClaimed, "take of a reconciled claim")
	e.unchanged(rbefore, firm, rh.id, "take of a reconciled claim")

	// A claim nobody reserved: not found, and not made up.
	other := newToolCall(t, "file_court_document")
	okey := warrant.EffectKey{ToolName: other.name, InputSHA256: other.hash}
	wantErr(t, e.store.TakeClaim(e.ctx, firm, d.id, okey, "worker-a", until), warrant.ErrNotFound, "take of an unknown claim")
	e.unchanged(before, firm, d.id, "takes of a declined and an unknown claim")
}

// testRaceTakeClaim: 16 workers handed the same released run race to lease
// it and take its reserved claim; exactly one becomes its executor.
func testRaceTakeClaim(t *testing.T, ep *dynamotest.Endpoint) {
	const n = 16
	e := newEnv(t, ep)
	h, _, key := e.released(id())
	until := e.clock.Now().Add(time.Minute)
	errs := make([]error, n)
	race(n, func(i int) {
		owner := fmt.Sprintf("worker-%02d", i)
		if _, errs[i] = e.store.AcquireRun(e.ctx, h.firm, h.id, owner, until); errs[i] == nil {
			errs[i] = e.store.TakeClaim(e.ctx, h.firm, h.id, key, owner, until)
		}
	})
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("workers %d and %d both took the claim", winner, i)
			}
			winner = i
		case errors.Is(err, warrant.ErrEffectClaimed), errors.Is(err, warrant.ErrLeaseHeld):
		default:
			t.Errorf("worker %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("nobody took the claim")
	}
	got, err := e.store.GetEffect(e.ctx, h.firm, h.id, key)
	must(t, err)
	if want := fmt.Sprintf("worker-%02d", winner); got.Owner != want || !got.Taken() {
		t.Errorf("claim after the race: %+v, want taken by %s", got, want)
	}
}

// testExpiredLeases: the sweeper's listing reads GSI2 by shard (never
// a Scan) and finds every unfinished run whose lease passed, of every firm:
// a run nobody picked up, a lost worker's, a held run whose warrant expired;
// not a live lease, nor a finished run.
func testExpiredLeases(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	t0 := e.clock.Now()
	firmA, firmB := id(), id()
	acquire := func(r *run, until time.Time) {
		t.Helper()
		_, err := e.store.AcquireRun(e.ctx, r.firm, r.id, "worker-"+r.id[:4], until)
		must(t, err)
	}
	unpicked := e.newRunID(firmA, idIn('0'), warrant.Lease{}) // pickup at t0+5m
	lost := e.newRunID(firmB, idIn('3'), warrant.Lease{})
	acquire(lost, t0.Add(time.Minute))
	lost2 := e.newRunID(firmA, idIn('3'), warrant.Lease{})
	acquire(lost2, t0.Add(2*time.Minute))
	live := e.newRunID(firmB, idIn('9'), warrant.Lease{})
	acquire(live, t0.Add(time.Hour))
	held := e.hold(e.newRunID(firmA, idIn('c'), warrant.Lease{})) // until t0+24h
	rel := e.hold(e.newRunID(firmB, idIn('e'), warrant.Lease{}))
	_, err := e.decide(rel, warrant.DecisionApproved)
	must(t, err)
	c, l := e.resume(rel, warrant.DecisionApproved) // pickup at t0+1m
	must(t, e.store.ResumeClaim(e.ctx, c, l))
	finished := e.newRunID(firmA, idIn('f'), warrant.Lease{})
	must(t, e.store.FinishRun(e.ctx, firmA, finished.id, warrant.RunCompleted, e.line(finished, &contracts.RunCompleted{StopReason: "end_turn"})))
	swept := e.newRunID(firmB, idIn('f'), warrant.Lease{})
	acquire(swept, t0.Add(time.Minute))
	must(t, e.store.SweepFail(e.ctx, warrant.SweepFailure{FirmID: firmB, RunID: swept.id, Owner: "worker-" + swept.id[:4]},
		e.line(swept, runFailed("effect_outcome_unknown"))))

	check := func(what string, got []warrant.RunRef, want ...*run) {
		t.Helper()
		refs := make([]warrant.RunRef, len(want))
		for i, r := range want {
			refs[i] = ref(r)
		}
		if !slices.Equal(got, refs) {
			t.Errorf("%s: expired leases\n got  %v\n want %v", what, got, refs)
		}
	}
	check("at t0", e.expired(t0, 0))
	// One from each shard in turn (0, 3, 9, c, e), then the next of each,
	// oldest lease first within a shard.
	check("ten minutes on", e.expired(t0.Add(10*time.Minute), 0), unpicked, lost, rel.run, lost2)
	check("a day on", e.expired(t0.Add(25*time.Hour), 0), unpicked, lost, live, held.run, rel.run, lost2)
	// The lease end itself is not past it.
	check("at the first lease end", e.expired(t0.Add(time.Minute), 0))
	check("just past it", e.expired(t0.Add(time.Minute+time.Millisecond), 0), lost, rel.run)

	// At most limit, in the same order (the limit is shared among the
	// shards: testExpiredLeasesShareTheLimit); <= 0 is all.
	all := []*run{unpicked, lost, live, held.run, rel.run, lost2}
	for _, limit := range []int{1, 2, 3, 4, 6, 7, 100, -1} {
		want := all
		if limit > 0 && limit < len(all) {
			want = all[:limit]
		}
		check(fmt.Sprintf("limit %d", limit), e.expired(t0.Add(25*time.Hour), limit), want...)
	}

	// Queries on GSI2, one per shard; never a Scan.
	ep.Counter.Reset()
	e.expired(t0.Add(25*time.Hour), 0)
	ops := ep.Counter.ByOp()
	if ops["Scan"] != 0 || ops["Query"] != len(dynamo.Shards()) || len(ops) != 1 {
		t.Errorf("ExpiredLeases used %v, want %d Queries and nothing else", ops, len(dynamo.Shards()))
	}
}

// testRestartRun: a running run whose worker was lost (its lease passed) is
// handed to a new worker: owner-less until the pickup deadline, one restart
// more, at most max; a live lease, a held or finished run is not restarted.
func testRestartRun(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	t0 := e.clock.Now()
	firm := id()
	r := e.newRun(firm)
	h := e.newHeld(firm)
	f := e.newRun(firm)
	must(t, e.store.FinishRun(e.ctx, firm, f.id, warrant.RunCompleted, e.line(f, &contracts.RunCompleted{StopReason: "end_turn"})))

	restart := func(pickup time.Time, max int) error {
		return e.store.RestartRun(e.ctx, firm, r.id, pickup, max)
	}
	refused := func(what string, pickup time.Time, max int) {
		t.Helper()
		before := e.partition(firm, r.id)
		wantErr(t, restart(pickup, max), warrant.ErrRunNotInState, what)
		e.unchanged(before, firm, r.id, what)
	}
	// Its pickup deadline has not passed: it waits for its first worker.
	refused("restart before the pickup deadline", t0.Add(10*time.Minute), 2)

	// A worker takes it and is lost; another that came back renewed it.
	_, err := e.store.AcquireRun(e.ctx, firm, r.id, "worker-a", t0.Add(time.Minute))
	must(t, err)
	refused("restart of a live lease", t0.Add(10*time.Minute), 2)
	e.clock.Advance(2 * time.Minute)
	_, err = e.store.AcquireRun(e.ctx, firm, r.id, "worker-a", e.clock.Now().Add(time.Minute))
	must(t, err)
	refused("restart of a renewed lease", e.clock.Now().Add(10*time.Minute), 2)

	// Lost for good: restarted, owner-less until the pickup deadline.
	e.clock.Advance(2 * time.Minute)
	pickup := e.clock.Now().Add(5 * time.Minute)
	must(t, restart(pickup, 2))
	got := e.getRun(r)
	if got.Status != warrant.RunRunning || got.Lease.Owner != "" || !got.Lease.Until.Equal(pickup) || got.Restarts != 1 {
		t.Errorf("restarted run: %s, lease %+v, restarts %d; want running, owner-less until %v, 1 restart", got.Status, got.Lease, got.Restarts, pickup)
	}
	if it := e.runItem(r); it["lease_owner"] != "none" {
		t.Errorf("restarted run: lease_owner %v, want none", it["lease_owner"])
	}
	e.inSweepIndex(r, true, "restarted run")
	if refs := e.expired(e.clock.Now().Add(time.Minute), 0); slices.Contains(refs, ref(r)) {
		t.Errorf("restarted run listed before its pickup deadline: %v", refs)
	}
	if refs := e.expired(pickup.Add(time.Millisecond), 0); !slices.Contains(refs, ref(r)) {
		t.Errorf("restarted run not listed past its pickup deadline: %v", refs)
	}
	refused("second restart before the pickup deadline", e.clock.Now().Add(10*time.Minute), 2)

	// Nobody picked it up: once more, then the restarts ran out.
	e.clock.Advance(6 * time.Minute)
	must(t, restart(e.clock.Now().Add(5*time.Minute), 2))
	if got := e.getRun(r); got.Restarts != 2 {
		t.Errorf("restarts = %d, want 2", got.Restarts)
	}
	e.clock.Advance(6 * time.Minute)
	refused("restart past max", e.clock.Now().Add(5*time.Minute), 2)
	refused("restart past a lower max", e.clock.Now().Add(5*time.Minute), 1)
	must(t, restart(e.clock.Now().Add(5*time.Minute), 3))
	if got := e.getRun(r); got.Restarts != 3 {
		t.Errorf("restarts = %d, want 3", got.Restarts)
	}
	// A worker picks up the restarted run.
	_, err = e.store.AcquireRun(e.ctx, firm, r.id, "worker-b", e.clock.Now().Add(time.Minute))
	must(t, err)

	// A held run whose warrant passed and a finished run: their leases
	// passed, but they are not running.
	e.clock.Advance(warrant.DefaultWarrantTTL + time.Second)
	for _, c := range []struct {
		r    *run
		what string
	}{{h.run, "held run"}, {f, "finished run"}} {
		before := e.partition(firm, c.r.id)
		wantErr(t, e.store.RestartRun(e.ctx, firm, c.r.id, e.clock.Now().Add(time.Minute), 2), warrant.ErrRunNotInState, "restart of a "+c.what)
		e.unchanged(before, firm, c.r.id, "restart of a "+c.what)
	}
	// A missing run is refused, and not made up.
	missing := id()
	if err := e.store.RestartRun(e.ctx, firm, missing, e.clock.Now().Add(time.Minute), 2); !errors.Is(err, warrant.ErrRunNotInState) && !errors.Is(err, warrant.ErrNotFound) {
		t.Errorf("restart of a missing run: %v", err)
	}
	if p := e.partition(firm, missing); len(p) != 0 {
		t.Errorf("restart of a missing run wrote %v", p)
	}
}

// testSweepFailLeaseExpired: the sweeper ends a running run whose lease
// passed before its cutoff: run.failed stored, the head moved, the run out
// of the index, in one transaction; a live lease, a held run or a ledger
// that moved on is refused and nothing is written; a repeat whose answer was
// lost is success.
func testSweepFailLeaseExpired(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	t0 := e.clock.Now()
	firm := id()
	r := e.newRun(firm)
	_, err := e.store.AcquireRun(e.ctx, firm, r.id, "worker-a", t0.Add(time.Minute))
	must(t, err)
	moved := e.newRun(firm)
	_, err = e.store.AcquireRun(e.ctx, firm, moved.id, "worker-b", t0.Add(time.Minute))
	must(t, err)
	h := e.newHeld(firm)
	sw := warrant.SweepFailure{FirmID: firm, RunID: r.id}

	refused := func(what string, r *run, sw warrant.SweepFailure, lines ...contracts.Line) {
		t.Helper()
		before := e.partition(r.firm, r.id)
		wantErr(t, e.store.SweepFail(e.ctx, sw, lines...), warrant.ErrRunNotInState, what)
		e.unchanged(before, r.firm, r.id, what)
	}
	// The cutoff is before the lease's end, or at it: the lease is live.
	sw.LeaseExpiredBy = t0.Add(30 * time.Second)
	refused("sweep of a live lease", r, sw, e.next(r, runFailed("worker_lost")))
	sw.LeaseExpiredBy = t0.Add(time.Minute)
	refused("sweep at the lease's end", r, sw, e.next(r, runFailed("worker_lost")))

	e.clock.Advance(2 * time.Minute)
	now := e.clock.Now()
	// A held run ends only by its warrant.
	refused("lease sweep of a held run", h.run, warrant.SweepFailure{FirmID: firm, RunID: h.id, LeaseExpiredBy: now.Add(48 * time.Hour)},
		e.next(h.run, runFailed("worker_lost")))
	// The sweeper read the ledger, then the worker wrote a line: refused.
	late := e.next(moved, runFailed("worker_lost"))
	must(t, e.store.AppendEvents(e.ctx, firm, moved.id, e.line(moved, delta("still here"))))
	refused("sweep of a ledger that moved on", moved, warrant.SweepFailure{FirmID: firm, RunID: moved.id, LeaseExpiredBy: now}, late)
	if got := e.getRun(moved); got.Status != warrant.RunRunning {
		t.Errorf("a refused sweep ended the run: %s", got.Status)
	}

	sw.LeaseExpiredBy = now
	fl := e.line(r, runFailed("worker_lost"))
	must(t, e.store.SweepFail(e.ctx, sw, fl))
	got := e.getRun(r)
	if got.Status != warrant.RunFailed || got.Lease.Owner != "" {
		t.Errorf("swept run: %s, lease %+v; want failed, no owner", got.Status, got.Lease)
	}
	e.tail(r, "swept run", fl)
	e.checkHead(r, "swept run")
	e.inSweepIndex(r, false, "swept run")
	if refs := e.expired(now.Add(48*time.Hour), 0); slices.Contains(refs, ref(r)) {
		t.Errorf("swept run still listed: %v", refs)
	}

	// The same sweep again (its answer was lost): success, nothing written.
	before := e.partition(firm, r.id)
	must(t, e.store.SweepFail(e.ctx, sw, fl))
	e.unchanged(before, firm, r.id, "repeated sweep")
	// Another sweep, or a worker, finds the run over.
	refused("second sweep", r, sw, e.next(r, runFailed("worker_lost")))
	_, err = e.store.AcquireRun(e.ctx, firm, r.id, "worker-c", now.Add(time.Minute))
	wantErr(t, err, warrant.ErrRunNotInState, "acquire of a swept run")
}

// testSweepFailOwner: a worker that holds the run's lease and finds an
// effect of unknown outcome ends the run and flags the claim in one
// transaction; another owner cannot; a Flag on a claim that is not open
// refuses the whole sweep.
func testSweepFailOwner(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm := id()
	h, c, key := e.released(firm)
	_, err := e.store.AcquireRun(e.ctx, firm, h.id, "worker-a", e.clock.Now().Add(time.Minute))
	must(t, err)
	must(t, e.store.TakeClaim(e.ctx, firm, h.id, key, "worker-a", e.clock.Now().Add(time.Minute)))

	refused := func(what string, r *run, sw warrant.SweepFailure, lines ...contracts.Line) {
		t.Helper()
		before := e.partition(r.firm, r.id)
		wantErr(t, e.store.SweepFail(e.ctx, sw, lines...), warrant.ErrRunNotInState, what)
		e.unchanged(before, r.firm, r.id, what)
	}
	refused("sweep by another owner", h.run, warrant.SweepFailure{FirmID: firm, RunID: h.id, Owner: "worker-b", Flag: &key},
		e.nextLines(h.run, unknownOutcome(h.tool, c.EffectRef), runFailed("effect_outcome_unknown"))...)

	// The owner ends it, lease live, with the claim flagged.
	sw := warrant.SweepFailure{FirmID: firm, RunID: h.id, Owner: "worker-a", Flag: &key}
	lines := []contracts.Line{e.line(h.run, unknownOutcome(h.tool, c.EffectRef)), e.line(h.run, runFailed("effect_outcome_unknown"))}
	must(t, e.store.SweepFail(e.ctx, sw, lines...))
	if got := e.getRun(h.run); got.Status != warrant.RunFailed {
		t.Errorf("run ended by its owner: %s", got.Status)
	}
	e.tail(h.run, "run ended by its owner", lines...)
	e.checkHead(h.run, "run ended by its owner")
	e.inSweepIndex(h.run, false, "run ended by its owner")
	claim, err := e.store.GetEffect(e.ctx, firm, h.id, key)
	must(t, err)
	if claim.State != warrant.ClaimClaimed || !claim.NeedsReconciliation || claim.Owner != "worker-a" || claim.EffectRef != c.EffectRef {
		t.Errorf("flagged claim = %+v", claim)
	}
	before := e.partition(firm, h.id)
	must(t, e.store.SweepFail(e.ctx, sw, lines...))
	e.unchanged(before, firm, h.id, "repeated owner sweep")

	// A Flag on a claim that is not open (completed), or that does not
	// exist, refuses the whole transaction: the run goes on, no line, no
	// claim made up.
	r := e.newRun(firm)
	_, err = e.store.AcquireRun(e.ctx, firm, r.id, "worker-x", e.clock.Now().Add(time.Minute))
	must(t, err)
	tc := newToolCall(t, "send_email")
	claimed, _, err := e.store.ClaimToolEffectOnce(e.ctx, e.claimInput(r, tc, "worker-x"), e.line(r, requested(tc, "allow")))
	if err != nil || !claimed {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	done := warrant.EffectKey{ToolName: tc.name, InputSHA256: tc.hash}
	must(t, e.store.CompleteEffect(e.ctx, firm, r.id, done, "worker-x",
		warrant.Completion{State: warrant.ClaimCompleted, ToolStatus: contracts.ToolSuccess}, e.line(r, completed(tc, "ref-1"))))
	other := newToolCall(t, "send_email")
	absent := warrant.EffectKey{ToolName: other.name, InputSHA256: other.hash}
	rsw := warrant.SweepFailure{FirmID: firm, RunID: r.id, Owner: "worker-x"}
	rsw.Flag = &done
	refused("sweep flagging a completed claim", r, rsw, e.next(r, runFailed("effect_outcome_unknown")))
	rsw.Flag = &absent
	refused("sweep flagging a missing claim", r, rsw, e.next(r, runFailed("effect_outcome_unknown")))
	if got := e.getRun(r); got.Status != warrant.RunRunning {
		t.Errorf("a refused sweep ended the run: %s", got.Status)
	}
	// Without the Flag the same sweep goes through: it was the Flag.
	rsw.Flag = nil
	must(t, e.store.SweepFail(e.ctx, rsw, e.line(r, runFailed("effect_outcome_unknown"))))
	if got := e.getRun(r); got.Status != warrant.RunFailed {
		t.Errorf("owner sweep without a flag: %s", got.Status)
	}
}

// testSweepFailExpireApproval: a held run whose warrant expired unused is
// ended and its warrant becomes expired (out of counsel's queue), in one
// transaction; a warrant not yet expired, used, or not the run's is refused
// and nothing is written.
func testSweepFailExpireApproval(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm := id()
	pending := e.newHeld(firm)
	approved := e.newHeld(firm)
	_, err := e.decide(approved, warrant.DecisionApproved)
	must(t, err)
	denied := e.newHeld(firm)
	_, err = e.decide(denied, warrant.DecisionDenied)
	must(t, err)
	resumed, _, _ := e.released(firm)
	// Consumed while the run is still held on it: a state no call makes,
	// so that the warrant's own condition is what refuses.
	burnt := e.newHeld(firm)
	_, err = e.decide(burnt, warrant.DecisionApproved)
	must(t, err)
	e.rawUpdate(burnt, "APR#"+burnt.approval, "SET #s = :s", "status", string(warrant.WarrantConsumed))
	// Likewise, so that the run's own condition is what refuses: a run
	// held on another warrant, and a run no longer held, each with this
	// warrant unused.
	elsewhere := e.newHeld(firm)
	e.rawUpdate(elsewhere, "RUN", "SET #s = :s", "held_on", id())
	ended := e.newHeld(firm)
	e.rawUpdate(ended, "RUN", "SET #s = :s", "status", string(warrant.RunFailed))

	expire := func(h *held) warrant.SweepFailure {
		return warrant.SweepFailure{FirmID: h.firm, RunID: h.id, ExpireApproval: h.approval}
	}
	refused := func(what string, h *held, sw warrant.SweepFailure) {
		t.Helper()
		before := e.partition(h.firm, h.id)
		wantErr(t, e.store.SweepFail(e.ctx, sw, e.next(h.run, runFailed("warrant_expired"))), warrant.ErrRunNotInState, what)
		e.unchanged(before, h.firm, h.id, what)
	}
	refused("expiry of a live warrant", pending, expire(pending))
	refused("expiry of a live approved warrant", approved, expire(approved))

	e.clock.Advance(warrant.DefaultWarrantTTL + time.Second)
	refused("expiry of a consumed warrant (run released)", resumed, expire(resumed))
	refused("expiry of a consumed warrant (run still held)", burnt, expire(burnt))
	refused("expiry of a warrant the run is not held on", elsewhere, expire(elsewhere))
	refused("expiry of a warrant of a run no longer held", ended, expire(ended))
	wrong := expire(pending)
	wrong.ExpireApproval = approved.approval
	refused("expiry of another run's warrant", pending, wrong)
	wrong.ExpireApproval = id()
	refused("expiry of an unknown warrant", pending, wrong)
	refused("lease sweep of a held run", pending, warrant.SweepFailure{FirmID: firm, RunID: pending.id, LeaseExpiredBy: e.clock.Now()})

	for _, c := range []struct {
		h    *held
		what string
	}{{pending, "pending"}, {approved, "approved"}, {denied, "denied"}} {
		was, err := e.store.GetWarrant(e.ctx, firm, c.h.id, c.h.approval)
		must(t, err)
		l := e.line(c.h.run, runFailed("warrant_expired"))
		must(t, e.store.SweepFail(e.ctx, expire(c.h), l))
		if got := e.getRun(c.h.run); got.Status != warrant.RunFailed || got.Lease.Owner != "" {
			t.Errorf("%s: run after expiry: %s, lease %+v", c.what, got.Status, got.Lease)
		}
		w, err := e.store.GetWarrant(e.ctx, firm, c.h.id, c.h.approval)
		must(t, err)
		if w.Status != warrant.WarrantExpired || w.Decision != was.Decision || w.ToolInputHash != c.h.tool.hash {
			t.Errorf("%s: warrant after expiry: %s (decision %q, was %q)", c.what, w.Status, w.Decision, was.Decision)
		}
		e.tail(c.h.run, c.what+": expired run", l)
		e.checkHead(c.h.run, c.what+": expired run")
		e.inSweepIndex(c.h.run, false, c.what+": expired run")
		before := e.partition(firm, c.h.id)
		must(t, e.store.SweepFail(e.ctx, expire(c.h), l))
		e.unchanged(before, firm, c.h.id, c.what+": repeated expiry")
	}

	// Out of counsel's queue: not listed, and not in the sparse index.
	list, err := e.store.ListPendingWarrants(e.ctx, firm, 0)
	must(t, err)
	if len(list) != 0 {
		t.Errorf("pending after expiry: %v", approvals(list))
	}
	out, err := ep.Client.Query(e.ctx, &dynamodb.QueryInput{
		TableName: aws.String(e.table), IndexName: aws.String(dynamo.IndexGSI1),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": dynamo.AttrGSI1PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "FIRM#" + firm + "#WARRANTS#pending"}},
	})
	must(t, err)
	for _, it := range out.Items {
		if a, _ := it["approval_id"].(*types.AttributeValueMemberS); a != nil && a.Value == pending.approval {
			t.Error("the expired warrant is still in the pending index")
		}
	}
}

// testSweepFailShapes: a sweep is exactly one of its shapes, with lines of
// its own run; anything else is a caller bug and writes nothing.
func testSweepFailShapes(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm := id()
	r := e.newRun(firm)
	_, err := e.store.AcquireRun(e.ctx, firm, r.id, "worker-a", e.clock.Now().Add(time.Minute))
	must(t, err)
	other := e.newRun(firm)
	tc := newToolCall(t, "send_email")
	key := warrant.EffectKey{ToolName: tc.name, InputSHA256: tc.hash}
	now := e.clock.Now().Add(time.Hour)
	l := e.next(r, runFailed("worker_lost"))
	base := warrant.SweepFailure{FirmID: firm, RunID: r.id}
	with := func(f func(*warrant.SweepFailure)) warrant.SweepFailure { sw := base; f(&sw); return sw }

	before := e.partition(firm, r.id)
	for what, sw := range map[string]warrant.SweepFailure{
		"no shape":           base,
		"lease and owner":    with(func(s *warrant.SweepFailure) { s.LeaseExpiredBy, s.Owner = now, "worker-a" }),
		"owner and approval": with(func(s *warrant.SweepFailure) { s.Owner, s.ExpireApproval = "worker-a", id() }),
		"lease and approval": with(func(s *warrant.SweepFailure) { s.LeaseExpiredBy, s.ExpireApproval = now, id() }),
		"all three":          with(func(s *warrant.SweepFailure) { s.LeaseExpiredBy, s.Owner, s.ExpireApproval = now, "worker-a", id() }),
		"flag with approval": with(func(s *warrant.SweepFailure) { s.ExpireApproval, s.Flag = id(), &key }),
		"flag alone":         with(func(s *warrant.SweepFailure) { s.Flag = &key }),
		"malformed flag with owner": with(func(s *warrant.SweepFailure) {
			s.Owner, s.Flag = "worker-a", &warrant.EffectKey{ToolName: "a#b", InputSHA256: tc.hash}
		}),
	} {
		wantInvalid(t, e.store.SweepFail(e.ctx, sw, l), what)
	}
	owner := with(func(s *warrant.SweepFailure) { s.Owner = "worker-a" })
	wantInvalid(t, e.store.SweepFail(e.ctx, owner), "sweep without lines")
	wantInvalid(t, e.store.SweepFail(e.ctx, owner, e.next(other, runFailed("worker_lost"))), "sweep with another run's line")
	e.unchanged(before, firm, r.id, "invalid sweeps")
	foreign := owner
	foreign.FirmID = "FIRM#" + firm
	wantErr(t, e.store.SweepFail(e.ctx, foreign, l), warrant.ErrNotFound, "sweep under a firm id that is not a UUID")

	// The owner's sweep itself was fine all along.
	must(t, e.store.SweepFail(e.ctx, owner, e.line(r, runFailed("worker_lost"))))
}

// testReconcileEffect: counsel records what happened to an effect whose
// outcome was unknown, once: the flagged claim becomes reconciled with the
// outcome and the downstream reference, and effect.reconciled is stored with
// the head, even on the failed run; a claim not waiting for it is refused.
func testReconcileEffect(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm := id()
	// The sweeper's path: the worker took the claim and was lost; the
	// lease sweep ends the run and flags the claim.
	h, c, key := e.released(firm)
	_, err := e.store.AcquireRun(e.ctx, firm, h.id, "worker-a", e.clock.Now().Add(time.Minute))
	must(t, err)
	must(t, e.store.TakeClaim(e.ctx, firm, h.id, key, "worker-a", e.clock.Now().Add(time.Minute)))
	e.clock.Advance(2 * time.Minute)
	must(t, e.store.SweepFail(e.ctx, warrant.SweepFailure{FirmID: firm, RunID: h.id, LeaseExpiredBy: e.clock.Now(), Flag: &key},
		e.line(h.run, unknownOutcome(h.tool, c.EffectRef)), e.line(h.run, runFailed("effect_outcome_unknown"))))
	if got, err := e.store.GetEffect(e.ctx, firm, h.id, key); err != nil || !got.NeedsReconciliation || got.State != warrant.ClaimClaimed {
		t.Fatalf("claim after the lease sweep: %+v, %v", got, err)
	}

	reconciled := func(tc toolCall, ref string, rec warrant.Reconciliation) *contracts.EffectReconciled {
		return &contracts.EffectReconciled{EffectRef: ref, ToolName: tc.name, InputSHA256: tc.hash,
			Outcome: rec.Outcome, ExternalRef: rec.ExternalRef, ReconciledBy: rec.By, Note: rec.Note}
	}
	refused := func(what string, r *run, k warrant.EffectKey, rec warrant.Reconciliation, l contracts.Line, want error) {
		t.Helper()
		before := e.partition(r.firm, r.id)
		err := e.store.ReconcileEffect(e.ctx, r.firm, r.id, k, rec, l)
		if want == nil {
			wantInvalid(t, err, what)
		} else {
			wantErr(t, err, want, what)
		}
		e.unchanged(before, r.firm, r.id, what)
	}
	executed := warrant.Reconciliation{Outcome: warrant.OutcomeExecuted, ExternalRef: "SF-2024-000123", By: "counsel-1", Note: "on the court's docket"}
	for _, o := range []string{"", "maybe", "completed"} {
		bad := executed
		bad.Outcome = o
		good := e.next(h.run, reconciled(h.tool, c.EffectRef, executed))
		refused(fmt.Sprintf("outcome %q", o), h.run, key, bad, good, nil)
	}
	// A claim nobody flagged, or none at all: not reconcilable, and not
	// made up.
	missing := newToolCall(t, "file_court_document")
	mkey := warrant.EffectKey{ToolName: missing.name, InputSHA256: missing.hash}
	refused("reconcile of a missing claim", h.run, mkey, executed, e.next(h.run, reconciled(missing, id(), executed)), warrant.ErrNotReconcilable)

	r := e.newRun(firm)
	tc := newToolCall(t, "send_email")
	in := e.claimInput(r, tc, "worker-x")
	claimed, _, err := e.store.ClaimToolEffectOnce(e.ctx, in, e.line(r, requested(tc, "allow")))
	if err != nil || !claimed {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	rkey := warrant.EffectKey{ToolName: tc.name, InputSHA256: tc.hash}
	notExecuted := warrant.Reconciliation{Outcome: warrant.OutcomeNotExecuted, By: "counsel-2"}
	refused("reconcile of an open claim nobody flagged", r, rkey, notExecuted, e.next(r, reconciled(tc, in.EffectRef, notExecuted)), warrant.ErrNotReconcilable)

	// A claim whose outcome is known is not reconcilable, flagged or not.
	known := newToolCall(t, "send_email")
	kin := e.claimInput(r, known, "worker-x")
	claimed, _, err = e.store.ClaimToolEffectOnce(e.ctx, kin, e.line(r, requested(known, "allow")))
	if err != nil || !claimed {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	kkey := warrant.EffectKey{ToolName: known.name, InputSHA256: known.hash}
	must(t, e.store.CompleteEffect(e.ctx, firm, r.id, kkey, "worker-x",
		warrant.Completion{State: warrant.ClaimCompleted, ToolStatus: contracts.ToolSuccess}, e.line(r, completed(known, kin.EffectRef))))
	must(t, e.store.FlagForReconciliation(e.ctx, firm, r.id, kkey))
	refused("reconcile of a completed claim flagged by hand", r, kkey, executed, e.next(r, reconciled(known, kin.EffectRef, executed)), warrant.ErrNotReconcilable)

	// Reconciled, once.
	l := e.line(h.run, reconciled(h.tool, c.EffectRef, executed))
	must(t, e.store.ReconcileEffect(e.ctx, firm, h.id, key, executed, l))
	got, err := e.store.GetEffect(e.ctx, firm, h.id, key)
	must(t, err)
	if got.State != warrant.ClaimReconciled || got.Reconciled != warrant.OutcomeExecuted || got.ExternalRef != executed.ExternalRef ||
		got.NeedsReconciliation || got.EffectRef != c.EffectRef || got.Owner != "worker-a" {
		t.Errorf("reconciled claim = %+v", got)
	}
	e.tail(h.run, "reconciled effect", l)
	e.checkHead(h.run, "reconciled effect")
	if run := e.getRun(h.run); run.Status != warrant.RunFailed {
		t.Errorf("reconciliation changed the run: %s", run.Status)
	}
	before := e.partition(firm, h.id)
	must(t, e.store.ReconcileEffect(e.ctx, firm, h.id, key, executed, l)) // its answer was lost
	e.unchanged(before, firm, h.id, "repeated reconciliation")
	refused("second reconciliation", h.run, key, notExecuted, e.next(h.run, reconciled(h.tool, c.EffectRef, notExecuted)), warrant.ErrNotReconcilable)

	// Flagged by hand (FlagForReconciliation), reconciled as not executed.
	must(t, e.store.FlagForReconciliation(e.ctx, firm, r.id, rkey))
	rl := e.line(r, reconciled(tc, in.EffectRef, notExecuted))
	must(t, e.store.ReconcileEffect(e.ctx, firm, r.id, rkey, notExecuted, rl))
	got, err = e.store.GetEffect(e.ctx, firm, r.id, rkey)
	must(t, err)
	if got.State != warrant.ClaimReconciled || got.Reconciled != warrant.OutcomeNotExecuted || got.ExternalRef != "" || got.NeedsReconciliation {
		t.Errorf("claim reconciled as not executed = %+v", got)
	}
	e.tail(r, "reconciled as not executed", rl)
	e.checkHead(r, "reconciled as not executed")
}
