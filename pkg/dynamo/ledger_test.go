package dynamo_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"

	"github.com/seed-f6d3920e/warrant"
)

func testCreateAndGetRun(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	r := e.newRun(id())
	got, err := e.store.GetRun(e.ctx, r.firm, r.id)
	must(t, err)
	if got.Status != warrant.RunRunning || got.FirmID != r.firm || got.RunID != r.id || got.MatterID != r.matter ||
		got.UserID != r.user || got.AgentKey != "drafting" || got.ModelID != "model-x" || got.PromptVersion != "p1" ||
		got.CorrelationID != "corr-1" || got.CostCapUSD != "1.00" || got.HeldOn != "" || string(got.DataKey) != "wrapped-data-key" || !got.CreatedAt.Equal(e.clock.Now()) {
		t.Errorf("GetRun = %+v", got)
	}
	if l := e.ledger(r); len(l) != 1 || l[0].Seq != 1 {
		t.Fatalf("ledger = %v", l)
	}

	// A second create of the same run id, even with another status asked
	// for, is ErrRunExists and writes nothing.
	before := e.partition(r.firm, r.id)
	again := contracts.NewChain(r.id, r.firm)
	first, err := again.Append(&contracts.RunStarted{AgentKey: "other", Mode: contracts.ModeInvoke, ModelID: "m",
		PromptVersion: "p", SchemaVersion: "1", CostCapUSD: "2.00", MaxTokens: 1, MatterID: r.matter, UserID: r.user,
		History: []contracts.HistoryMessage{}})
	must(t, err)
	err = e.store.CreateRun(e.ctx, warrant.Run{FirmID: r.firm, RunID: r.id, Status: warrant.RunCompleted}, first)
	wantErr(t, err, warrant.ErrRunExists, "duplicate CreateRun")
	e.unchanged(before, r.firm, r.id, "duplicate CreateRun")

	_, err = e.store.GetRun(e.ctx, r.firm, id())
	wantErr(t, err, warrant.ErrNotFound, "GetRun of an unknown run")
	_, err = e.store.GetRun(e.ctx, r.firm, "not-a-uuid")
	wantErr(t, err, warrant.ErrNotFound, "GetRun of a malformed id")
}

func testAppendAndReadLedger(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	r := e.newRun(id())
	one := e.line(r, delta("a"))
	must(t, e.store.AppendEvents(e.ctx, r.firm, r.id, one))
	batch := []contracts.Line{e.line(r, delta("b")), e.line(r, delta("c")), e.line(r, delta("d"))}
	must(t, e.store.AppendEvents(e.ctx, r.firm, r.id, batch...))
	must(t, e.store.AppendEvents(e.ctx, r.firm, r.id)) // nothing to do

	// Other item kinds in the partition must not leak into the ledger.
	_, err := e.store.RecordOutbound(e.ctx, warrant.Outbound{FirmID: r.firm, RunID: r.id, EffectRef: id(), Kind: "email"})
	must(t, err)

	all := e.ledger(r)
	if len(all) != 5 {
		t.Fatalf("ledger has %d lines, want 5", len(all))
	}
	for i, it := range all {
		if it.Seq != int64(i+1) {
			t.Errorf("line %d has seq %d", i, it.Seq)
		}
	}
	// The exact bytes come back, and they verify as a chain.
	if !bytes.Equal(all[1].Raw, one.Raw) || !bytes.Equal(all[4].Raw, batch[2].Raw) {
		t.Error("stored bytes differ from the appended lines")
	}
	var prev contracts.Line
	for _, it := range all {
		l, err := contracts.ParseEventLine(it.Raw)
		must(t, err)
		must(t, contracts.CheckLink(prev.Seq, prev.Hash, prev.RunID, prev.FirmID, l))
		prev = l
	}

	page, more, err := e.store.ReadLedger(e.ctx, r.firm, r.id, 1, 2)
	must(t, err)
	if len(page) != 2 || page[0].Seq != 2 || page[1].Seq != 3 || !more {
		t.Errorf("ReadLedger(after 1, limit 2) = %v more=%v", page, more)
	}
	page, more, err = e.store.ReadLedger(e.ctx, r.firm, r.id, 3, 2)
	must(t, err)
	if len(page) != 2 || page[0].Seq != 4 || more {
		t.Errorf("ReadLedger(after 3, limit 2) = %v more=%v", page, more)
	}
	page, more, err = e.store.ReadLedger(e.ctx, r.firm, r.id, 5, 0)
	must(t, err)
	if len(page) != 0 || more {
		t.Errorf("ReadLedger(after 5) = %v more=%v", page, more)
	}

	last, err := e.store.LastLine(e.ctx, r.firm, r.id)
	must(t, err)
	if last.Seq != 5 || !bytes.Equal(last.Raw, batch[2].Raw) {
		t.Errorf("LastLine = %d", last.Seq)
	}
	_, err = e.store.LastLine(e.ctx, r.firm, id())
	wantErr(t, err, warrant.ErrNotFound, "LastLine of an unknown run")
}

func testAppendSeqTaken(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	r := e.newRun(id())
	atOne := *r.chain
	l2 := e.line(r, delta("mine"))
	must(t, e.store.AppendEvents(e.ctx, r.firm, r.id, l2))

	// Writing the very same bytes again (a retry whose answer was lost)
	// is not a conflict.
	must(t, e.store.AppendEvents(e.ctx, r.firm, r.id, l2))

	// Another writer at seq 2: ErrSeqTaken, the stored line stays.
	l2b, err := atOne.Append(delta("theirs"))
	must(t, err)
	before := e.partition(r.firm, r.id)
	err = e.store.AppendEvents(e.ctx, r.firm, r.id, l2b)
	var st *dynamo.SeqTakenError
	if !errors.As(err, &st) || st.Seq != 2 || !errors.Is(err, warrant.ErrSeqTaken) {
		t.Fatalf("AppendEvents on a taken seq = %v", err)
	}
	e.unchanged(before, r.firm, r.id, "single put on a taken seq")

	// A batch whose first line hits a taken seq writes none of its lines
	// (its second seq was free).
	atTwo := *r.chain
	l3 := e.line(r, delta("three"))
	must(t, e.store.AppendEvents(e.ctx, r.firm, r.id, l3))
	x3, err := atTwo.Append(delta("three-other"))
	must(t, err)
	x4, err := atTwo.Append(delta("four-other"))
	must(t, err)
	before = e.partition(r.firm, r.id)
	err = e.store.AppendEvents(e.ctx, r.firm, r.id, x3, x4)
	if !errors.As(err, &st) || st.Seq != 3 {
		t.Fatalf("batch on a taken seq = %v", err)
	}
	e.unchanged(before, r.firm, r.id, "batch on a taken seq")

	l4 := e.line(r, delta("four"))
	must(t, e.store.AppendEvents(e.ctx, r.firm, r.id, l4))
	got := e.ledger(r)
	if len(got) != 4 || !bytes.Equal(got[1].Raw, l2.Raw) || !bytes.Equal(got[2].Raw, l3.Raw) || !bytes.Equal(got[3].Raw, l4.Raw) {
		t.Errorf("ledger after conflicts has %d lines or other bytes", len(got))
	}
}

func testAppendManyChunks(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	r := e.newRun(id())
	lines := make([]contracts.Line, 130) // two transactions: 100 + 30
	for i := range lines {
		lines[i] = e.line(r, delta("x"))
	}
	ep.Counter.Reset()
	must(t, e.store.AppendEvents(e.ctx, r.firm, r.id, lines...))
	if n := ep.Counter.ByOp()["TransactWriteItems"]; n != 2 {
		t.Errorf("130 lines took %d transactions, want 2", n)
	}
	got, more, err := e.store.ReadLedger(e.ctx, r.firm, r.id, 0, 0)
	must(t, err)
	if len(got) != 131 || more || got[130].Seq != 131 {
		t.Fatalf("ledger has %d lines", len(got))
	}
	page, more, err := e.store.ReadLedger(e.ctx, r.firm, r.id, 100, 31)
	must(t, err)
	if len(page) != 31 || more || page[0].Seq != 101 {
		t.Errorf("ReadLedger(after 100, limit 31) = %d lines more=%v", len(page), more)
	}
}

func testRejectsForeignLines(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	a, b := e.newRun(id()), e.newRun(id())
	foreign := e.line(b, delta("b's line"))
	before := e.partition(a.firm, a.id)
	if err := e.store.AppendEvents(e.ctx, a.firm, a.id, foreign); err == nil {
		t.Error("a line of run b was stored under run a")
	}
	tampered := e.next(a, delta("x"))
	tampered.Raw = bytes.Replace(tampered.Raw, []byte(`"x"`), []byte(`"y"`), 1)
	if err := e.store.AppendEvents(e.ctx, a.firm, a.id, tampered); err == nil {
		t.Error("a line whose hash does not match was stored")
	}
	e.unchanged(before, a.firm, a.id, "rejected lines")
}

func testFinishRun(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	r := e.newRun(id())
	stale := *r.chain
	done := e.line(r, &contracts.RunCompleted{StopReason: "end_turn", FinalText: "Done."})
	must(t, e.store.FinishRun(e.ctx, r.firm, r.id, warrant.RunCompleted, done))
	got, err := e.store.GetRun(e.ctx, r.firm, r.id)
	must(t, err)
	if got.Status != warrant.RunCompleted {
		t.Errorf("status = %s", got.Status)
	}

	// Finishing again: ErrRunNotInState, and the line is not stored.
	before := e.partition(r.firm, r.id)
	again := e.next(r, &contracts.RunFailed{FailureKind: "internal", FailureStage: "agent"})
	wantErr(t, e.store.FinishRun(e.ctx, r.firm, r.id, warrant.RunFailed, again), warrant.ErrRunNotInState, "second FinishRun")
	e.unchanged(before, r.firm, r.id, "second FinishRun")

	wantErr(t, e.store.FinishRun(e.ctx, r.firm, id(), warrant.RunFailed), warrant.ErrNotFound, "FinishRun of an unknown run")

	// A running run whose final line's seq is taken stays running.
	r2 := e.newRun(id())
	stale = *r2.chain
	must(t, e.store.AppendEvents(e.ctx, r2.firm, r2.id, e.line(r2, delta("a"))))
	late, err := stale.Append(&contracts.RunCompleted{StopReason: "end_turn"})
	must(t, err)
	before = e.partition(r2.firm, r2.id)
	err = e.store.FinishRun(e.ctx, r2.firm, r2.id, warrant.RunCompleted, late)
	wantErr(t, err, warrant.ErrSeqTaken, "FinishRun with a taken seq")
	e.unchanged(before, r2.firm, r2.id, "FinishRun with a taken seq")
}

func testUpdateProjection(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	r := e.newRun(id())
	p := warrant.Projection{LastSeq: 1, Status: "running", State: []byte(`{"turns":0}`)}
	must(t, e.store.UpdateProjection(e.ctx, r.firm, r.id, 0, p))
	got, err := e.store.GetRun(e.ctx, r.firm, r.id)
	must(t, err)
	if got.Projection.LastSeq != 1 || got.Projection.Status != "running" || string(got.Projection.State) != `{"turns":0}` ||
		got.Projection.UpdatedAt.IsZero() {
		t.Errorf("projection = %+v", got.Projection)
	}

	// A writer that read no projection, or an older one, loses.
	before := e.partition(r.firm, r.id)
	wantErr(t, e.store.UpdateProjection(e.ctx, r.firm, r.id, 0, warrant.Projection{LastSeq: 3}), warrant.ErrProjectionConflict, "stale prev 0")
	wantErr(t, e.store.UpdateProjection(e.ctx, r.firm, r.id, 2, warrant.Projection{LastSeq: 3}), warrant.ErrProjectionConflict, "wrong prev")
	e.unchanged(before, r.firm, r.id, "conflicting projections")

	must(t, e.store.UpdateProjection(e.ctx, r.firm, r.id, 1, warrant.Projection{LastSeq: 4, Status: "halted", Halted: "unknown event"}))
	got, err = e.store.GetRun(e.ctx, r.firm, r.id)
	must(t, err)
	if got.Projection.LastSeq != 4 || got.Projection.Halted != "unknown event" || got.Projection.State != nil {
		t.Errorf("projection = %+v", got.Projection)
	}
	wantErr(t, e.store.UpdateProjection(e.ctx, r.firm, id(), 0, warrant.Projection{LastSeq: 1}), warrant.ErrNotFound, "unknown run")
}
