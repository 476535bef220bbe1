package dynamo_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"

	"github.com/seed-f6d3920e/warrant"
)

// finished is a run of its own matter that completed.
func (e *env) finished(firm string) *run {
	e.t.Helper()
	r := e.newRun(firm)
	must(e.t, e.store.FinishRun(e.ctx, r.firm, r.id, warrant.RunCompleted, e.line(r, &contracts.RunCompleted{StopReason: "end_turn", FinalText: "Done."})))
	return r
}

// destroyed is the run's content.destroyed under the firm's retention, its
// backups window stated as the store requires (not advanced).
func (e *env) destroyed(r *run) contracts.Line {
	e.t.Helper()
	return e.next(r, &contracts.ContentDestroyed{MatterID: r.matter, Reason: contracts.DestroyedRetention, RetentionDays: 30,
		RetentionSource: contracts.RetentionOfFirm, BackupsUntil: contracts.FormatTime(time.Now().Add(warrant.BackupWindow + time.Hour))})
}

// hasDataKey reports whether the run item still stores a wrapped key, read
// raw: what a backup or an operator's scan of the table would find.
func (e *env) hasDataKey(r *run) bool {
	e.t.Helper()
	_, ok := e.raw(dynamo.RunKey(r.firm, r.id), "RUN")["data_key"]
	return ok
}

// testHolds: a matter's legal hold is placed with who, when and why, read
// back, kept when placed again (the first placement stays the record), and
// released; every placement and release is in the matter's history. Bad
// input and another firm's matter are refused, nothing written.
func testHolds(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm, other, matter := id(), id(), id()
	alice, bob := id(), id()
	_, err := e.store.GetHold(e.ctx, firm, matter)
	wantErr(t, err, warrant.ErrNotFound, "a matter never held")
	wantErr(t, e.store.ReleaseHold(e.ctx, firm, matter, warrant.HoldEvent{By: alice}), warrant.ErrNotFound, "releasing a hold never placed")

	placed, err := e.store.PutHold(e.ctx, warrant.Hold{FirmID: firm, MatterID: matter, By: alice, Reason: "Litigation reasonably anticipated."})
	if err != nil || !placed.PlacedAt.Equal(e.clock.Now()) || placed.By != alice {
		t.Fatalf("placed %+v, %v", placed, err)
	}
	got, err := e.store.GetHold(e.ctx, firm, matter)
	if err != nil || got != placed {
		t.Fatalf("hold %+v, %v; want %+v", got, err, placed)
	}
	_, err = e.store.GetHold(e.ctx, other, matter)
	wantErr(t, err, warrant.ErrNotFound, "another firm's matter")

	// Placed again, by another user: the hold in force is kept and said.
	e.clock.Advance(time.Minute)
	again, err := e.store.PutHold(e.ctx, warrant.Hold{FirmID: firm, MatterID: matter, By: bob, Reason: "Subpoena received."})
	wantErr(t, err, warrant.ErrMatterOnHold, "a second hold")
	if again != placed {
		t.Errorf("a second hold answered %+v, want the hold in force %+v", again, placed)
	}
	if got, _ := e.store.GetHold(e.ctx, firm, matter); got != placed {
		t.Errorf("a second hold changed the hold: %+v", got)
	}

	for name, h := range map[string]warrant.Hold{
		"no reason":              {FirmID: firm, MatterID: id(), By: alice, Reason: "  "},
		"a reason too long":      {FirmID: firm, MatterID: id(), By: alice, Reason: strings.Repeat("x", warrant.MaxHoldReason+1)},
		"a matter not a UUID":    {FirmID: firm, MatterID: "M-1", By: alice, Reason: "r"},
		"a firm not a UUID":      {FirmID: "F-1", MatterID: id(), By: alice, Reason: "r"},
		"nobody placing it":      {FirmID: firm, MatterID: id(), Reason: "r"},
		"a placer not a user id": {FirmID: firm, MatterID: id(), By: "alice smith", Reason: "r"},
	} {
		_, err := e.store.PutHold(e.ctx, h)
		wantInvalid(t, err, name)
		if _, err := e.store.GetHold(e.ctx, h.FirmID, h.MatterID); !errors.Is(err, warrant.ErrNotFound) {
			t.Errorf("%s: a refused hold was stored (%v)", name, err)
		}
	}
	if _, err := e.store.PutHold(e.ctx, warrant.Hold{FirmID: firm, MatterID: id(), By: alice, Reason: strings.Repeat("é", warrant.MaxHoldReason)}); err != nil {
		t.Errorf("a reason of %d characters: %v", warrant.MaxHoldReason, err)
	}

	wantErr(t, e.store.ReleaseHold(e.ctx, other, matter, warrant.HoldEvent{By: bob}), warrant.ErrNotFound, "releasing another firm's matter")
	wantInvalid(t, e.store.ReleaseHold(e.ctx, firm, matter, warrant.HoldEvent{By: "bob jones"}), "a releaser not a user id")
	e.clock.Advance(time.Minute)
	must(t, e.store.ReleaseHold(e.ctx, firm, matter, warrant.HoldEvent{By: bob}))
	_, err = e.store.GetHold(e.ctx, firm, matter)
	wantErr(t, err, warrant.ErrNotFound, "a released hold")
	wantErr(t, e.store.ReleaseHold(e.ctx, firm, matter, warrant.HoldEvent{By: bob}), warrant.ErrNotFound, "releasing it twice")
	e.clock.Advance(time.Minute)
	if _, err := e.store.PutHold(e.ctx, warrant.Hold{FirmID: firm, MatterID: matter, By: bob, Reason: "Subpoena received."}); err != nil {
		t.Fatalf("placed again after the release: %v", err)
	}

	hist, err := e.store.HoldHistory(e.ctx, firm, matter)
	must(t, err)
	var got3 []string
	for _, h := range hist {
		got3 = append(got3, h.Action+" by "+map[string]string{alice: "alice", bob: "bob"}[h.By]+": "+h.Reason)
	}
	if want := []string{"placed by alice: Litigation reasonably anticipated.", "released by bob: ", "placed by bob: Subpoena received."}; strings.Join(got3, "|") != strings.Join(want, "|") {
		t.Errorf("history %q, want %q", got3, want)
	}
	if len(hist) == 3 && !(hist[0].At.Before(hist[1].At) && hist[1].At.Before(hist[2].At)) {
		t.Errorf("history times %v %v %v", hist[0].At, hist[1].At, hist[2].At)
	}
}

// testDestroyContent: a finished run's content is destroyed in one
// transaction: its wrapped key is gone from the item (read raw), the run
// says when, the content.destroyed line is stored and the signed head is
// on it, and the ledger folds and verifies against it. Every refusal
// (destroyed already, not ended, no key of its own, a stale head, a
// missing run, a line that is not this run's destruction) writes nothing.
func testDestroyContent(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	r := e.finished(id())
	must(t, e.store.UpdateProjection(e.ctx, r.firm, r.id, 0, warrant.Projection{LastSeq: 2, Status: warrant.RunCompleted, State: []byte(`{"turns":0}`)}))
	before, err := e.store.GetRun(e.ctx, r.firm, r.id)
	must(t, err)
	l := e.destroyed(r)
	e.clock.Advance(time.Second)
	must(t, e.store.DestroyContent(e.ctx, r.firm, r.id, l))
	r.chain.Advance(l)

	got, err := e.store.GetRun(e.ctx, r.firm, r.id)
	must(t, err)
	at, _ := time.Parse(contracts.TimeLayout, l.CreatedAt)
	if len(got.DataKey) != 0 || e.hasDataKey(r) || !got.ContentDestroyedAt.Equal(at) {
		t.Errorf("after destruction: data key %q (stored: %v), destroyed at %v, want %v", got.DataKey, e.hasDataKey(r), got.ContentDestroyedAt, at)
	}
	if got.Head.Seq != l.Seq || got.Head.Hash != l.Hash {
		t.Errorf("head %+v, want the content.destroyed line %d %s", got.Head, l.Seq, l.Hash)
	}
	must(t, e.ring.VerifyHead(e.ctx, r.firm, r.id, got.Head.Seq, got.Head.Hash, got.Head.MAC, got.Head.KeyID))
	// Everything else of the run item is as it was.
	if got.Status != before.Status || got.MatterID != before.MatterID || got.Projection.LastSeq != before.Projection.LastSeq ||
		string(got.Projection.State) != string(before.Projection.State) || got.Lease != before.Lease || got.CorrelationID != before.CorrelationID ||
		!got.CreatedAt.Equal(before.CreatedAt) || !got.UpdatedAt.After(before.UpdatedAt) {
		t.Errorf("the run item changed beyond its key and head:\nbefore %+v\nafter  %+v", before, got)
	}
	ledger := e.ledger(r)
	if last := ledger[len(ledger)-1]; last.Seq != l.Seq || string(last.Raw) != string(l.Raw) {
		t.Fatalf("last line %d, want the content.destroyed", last.Seq)
	}
	folded, err := reducer.Fold(e.ctx, e.store, r.firm, r.id, reducer.FoldOptions{Keys: e.ring})
	if err != nil || folded.State.ContentDestroyed == nil || folded.State.ContentDestroyed.At != l.CreatedAt || folded.State.Status != warrant.RunCompleted {
		t.Fatalf("fold after destruction: %+v, %v", folded.State, err)
	}

	// The same line again (a lost answer): done. Another: destroyed.
	after := e.partition(r.firm, r.id)
	must(t, e.store.DestroyContent(e.ctx, r.firm, r.id, l))
	wantErr(t, e.store.DestroyContent(e.ctx, r.firm, r.id, e.destroyed(r)), warrant.ErrContentDestroyed, "a second destruction")
	e.unchanged(after, r.firm, r.id, "a destruction repeated")

	refuse := func(r *run, l contracts.Line, want error, what string) {
		t.Helper()
		before := e.partition(r.firm, r.id)
		err := e.store.DestroyContent(e.ctx, r.firm, r.id, l)
		if want == nil {
			wantInvalid(t, err, what)
		} else {
			wantErr(t, err, want, what)
		}
		e.unchanged(before, r.firm, r.id, what)
		if !e.hasDataKey(r) {
			t.Errorf("%s: the key is gone", what)
		}
	}
	running := e.newRun(id())
	refuse(running, e.destroyed(running), warrant.ErrRunNotInState, "a running run")
	h := e.newHeld(id())
	refuse(h.run, e.destroyed(h.run), warrant.ErrRunNotInState, "a held run")

	f2 := e.finished(id())
	old := *f2.chain
	// Another line first (counsel's reconciliation, in life): the head moved on.
	must(t, e.store.AppendEvents(e.ctx, f2.firm, f2.id, e.line(f2, delta("late"))))
	l2, err := old.Next(&contracts.ContentDestroyed{MatterID: f2.matter, Reason: contracts.DestroyedInstruction, RequestedBy: id(), ConfirmedBy: id(),
		BackupsUntil: contracts.FormatTime(time.Now().Add(warrant.BackupWindow + time.Hour))})
	must(t, err)
	refuse(f2, l2, warrant.ErrSeqTaken, "a line behind the head")

	f3 := e.finished(id())
	wrong := e.destroyed(f3)
	wrongMatter, err := f3.chain.Next(&contracts.ContentDestroyed{MatterID: id(), Reason: contracts.DestroyedRetention, RetentionDays: 30,
		RetentionSource: contracts.RetentionOfMatter, BackupsUntil: contracts.FormatTime(time.Now().Add(warrant.BackupWindow + time.Hour))})
	must(t, err)
	refuse(f3, wrongMatter, nil, "a line of another matter")
	early, err := f3.chain.Next(&contracts.ContentDestroyed{MatterID: f3.matter, Reason: contracts.DestroyedRetention, RetentionDays: 30,
		RetentionSource: contracts.RetentionOfMatter, BackupsUntil: contracts.FormatTime(time.Now().Add(24 * time.Hour))})
	must(t, err)
	refuse(f3, early, nil, "backups_until within the backups window")
	refuse(f3, e.next(f3, delta("not a destruction")), nil, "a line that is not content.destroyed")
	refuse(f3, e.destroyed(f2), nil, "another run's line")
	must(t, e.store.DestroyContent(e.ctx, f3.firm, f3.id, wrong))

	// A run with no key of its own: nothing to destroy.
	plain := &run{firm: id(), id: id(), matter: id(), user: id()}
	plain.chain = contracts.NewChain(plain.id, plain.firm)
	must(t, e.store.CreateRun(e.ctx, warrant.Run{FirmID: plain.firm, RunID: plain.id, MatterID: plain.matter, UserID: plain.user},
		e.line(plain, &contracts.RunStarted{AgentKey: "drafting", Mode: contracts.ModeInvoke, ModelID: "model-x", PromptVersion: "p1",
			SchemaVersion: contracts.SchemaVersion, CostCapUSD: "1.00", MaxTokens: 1024, MatterID: plain.matter, UserID: plain.user,
			History: []contracts.HistoryMessage{}})))
	must(t, e.store.FinishRun(e.ctx, plain.firm, plain.id, warrant.RunFailed, e.line(plain, &contracts.RunFailed{FailureKind: "internal", FailureStage: "agent"})))
	p := e.partition(plain.firm, plain.id)
	wantErr(t, e.store.DestroyContent(e.ctx, plain.firm, plain.id, e.destroyed(plain)), warrant.ErrContentNotSealed, "a run in the clear")
	e.unchanged(p, plain.firm, plain.id, "a run in the clear")

	ghost := &run{firm: r.firm, id: id(), matter: r.matter}
	ghost.chain = contracts.ChainAfter(ledgerLine(t, ledger[len(ledger)-1]))
	ghost.chain.RunID = ghost.id
	wantErr(t, e.store.DestroyContent(e.ctx, ghost.firm, ghost.id, e.destroyed(ghost)), warrant.ErrNotFound, "an unknown run")
}

// testDestroyUnderHold: no run of a held matter loses its key. A
// destruction under the hold is refused (ErrMatterOnHold) and writes
// nothing; released, the content is destroyed; a hold placed after the
// destruction is placed, and the run says its content was destroyed.
func testDestroyUnderHold(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	r := e.finished(id())
	counsel := id()
	_, err := e.store.PutHold(e.ctx, warrant.Hold{FirmID: r.firm, MatterID: r.matter, By: counsel, Reason: "Litigation hold."})
	must(t, err)
	before := e.partition(r.firm, r.id)
	wantErr(t, e.store.DestroyContent(e.ctx, r.firm, r.id, e.destroyed(r)), warrant.ErrMatterOnHold, "a destruction under hold")
	e.unchanged(before, r.firm, r.id, "a destruction under hold")
	if !e.hasDataKey(r) {
		t.Fatal("the held run lost its key")
	}
	// A hold on another matter of the firm, or on this matter in another
	// firm, does not hold this run.
	other := e.finished(r.firm)
	must(t, e.store.DestroyContent(e.ctx, other.firm, other.id, e.destroyed(other)))

	must(t, e.store.ReleaseHold(e.ctx, r.firm, r.matter, warrant.HoldEvent{By: counsel}))
	l := e.destroyed(r)
	must(t, e.store.DestroyContent(e.ctx, r.firm, r.id, l))
	if e.hasDataKey(r) {
		t.Fatal("the key survived its destruction")
	}
	if _, err := e.store.PutHold(e.ctx, warrant.Hold{FirmID: r.firm, MatterID: r.matter, By: counsel, Reason: "Litigation hold again."}); err != nil {
		t.Fatalf("a hold placed after the destruction: %v", err)
	}
	got, err := e.store.GetRun(e.ctx, r.firm, r.id)
	if err != nil || got.ContentDestroyedAt.IsZero() || len(got.DataKey) != 0 {
		t.Fatalf("the run under its new hold: destroyed at %v, key %q, %v", got.ContentDestroyedAt, got.DataKey, err)
	}
}

// testRaceHoldDestroy8: a hold placed while destructions are in flight
// either wins (the key stays, nothing of the destruction is written) or
// finds the content already destroyed (the destruction committed before
// the hold). Half the racers place holds, half destroy with the same line.
func testRaceHoldDestroy(t *testing.T, ep *dynamotest.Endpoint) {
	const n = 8
	e := newEnv(t, ep)
	for round := range 3 {
		r := e.finished(id())
		l := e.destroyed(r)
		errs := make([]error, n)
		race(n, func(i int) {
			if i%2 == 0 {
				_, errs[i] = e.store.PutHold(e.ctx, warrant.Hold{FirmID: r.firm, MatterID: r.matter, By: id(), Reason: "Litigation hold."})
				return
			}
			errs[i] = e.store.DestroyContent(e.ctx, r.firm, r.id, l)
		})
		holds, destroys := 0, 0
		for i, err := range errs {
			switch {
			case err == nil && i%2 == 0:
				holds++
			case err == nil:
				destroys++
			case !errors.Is(err, warrant.ErrMatterOnHold):
				t.Errorf("round %d racer %d: %v", round, i, err)
			}
		}
		_, herr := e.store.GetHold(e.ctx, r.firm, r.matter)
		items := e.ledger(r)
		lastIsDestroy := string(items[len(items)-1].Raw) == string(l.Raw)
		run, err := e.store.GetRun(e.ctx, r.firm, r.id)
		must(t, err)
		t.Logf("round %d: %d destructions answered done, the hold placed: %v", round, destroys, herr == nil)
		switch {
		case holds != 1 || herr != nil:
			t.Errorf("round %d: %d holds placed (%v); want one", round, holds, herr)
		case destroys == 0:
			// The hold won: the key, no record of a destruction.
			if !e.hasDataKey(r) || lastIsDestroy || !run.ContentDestroyedAt.IsZero() {
				t.Errorf("round %d: refused, yet key %v, line %v, destroyed at %v", round, e.hasDataKey(r), lastIsDestroy, run.ContentDestroyedAt)
			}
		default:
			// Destroyed first: no key, the record, the hold after it.
			if e.hasDataKey(r) || !lastIsDestroy || run.ContentDestroyedAt.IsZero() {
				t.Errorf("round %d: destroyed, yet key %v, line %v, destroyed at %v", round, e.hasDataKey(r), lastIsDestroy, run.ContentDestroyedAt)
			}
		}
	}
}

func ledgerLine(t *testing.T, it warrant.LedgerItem) contracts.Line {
	t.Helper()
	l, err := contracts.ParseEventLine(it.Raw)
	must(t, err)
	return l
}

// testDestroyCrash: a destruction is one write. A crash at it (the write
// never arrives, or arrives and its answer is lost, or is throttled past
// the SDK's retries) leaves either the key and no content.destroyed, or
// the line and no key, never one without the other; the same call made
// again finishes it, once.
func testDestroyCrash(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	t.Cleanup(ep.Faults.Revive)
	for _, mode := range []dynamotest.FaultMode{dynamotest.FaultFail, dynamotest.FaultLose, dynamotest.FaultTransient} {
		r := e.finished(id())
		l := e.destroyed(r)
		ep.Faults.Arm(1, mode)
		err := e.store.DestroyContent(e.ctx, r.firm, r.id, l)
		fired := ep.Faults.Fired()
		ep.Faults.Revive()
		if err == nil || !fired {
			t.Fatalf("%s: the crash did not happen (fired %v): %v", mode, fired, err)
		}
		items := e.ledger(r)
		recorded := string(items[len(items)-1].Raw) == string(l.Raw)
		if keyKept := e.hasDataKey(r); keyKept == recorded {
			t.Errorf("%s: key kept %v, destruction recorded %v: want exactly one", mode, keyKept, recorded)
		}
		if want := mode == dynamotest.FaultLose; recorded != want {
			t.Errorf("%s: destruction recorded %v, want %v", mode, recorded, want)
		}
		must(t, e.store.DestroyContent(e.ctx, r.firm, r.id, l))
		n := 0
		for _, it := range e.ledger(r) {
			if strings.Contains(string(it.Raw), `"type":"content.destroyed"`) {
				n++
			}
		}
		if e.hasDataKey(r) || n != 1 {
			t.Errorf("%s: after the retry: key kept %v, %d content.destroyed lines", mode, e.hasDataKey(r), n)
		}
	}
}
