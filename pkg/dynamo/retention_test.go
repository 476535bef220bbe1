package dynamo_test

import (
	"slices"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"

	"github.com/seed-f6d3920e/warrant"
)

// dueOf is which of the firm's runs RetentionDue lists at now (the index
// is the table's: other tests' runs are in it too).
func (e *env) dueOf(firm string, now time.Time) []string {
	e.t.Helper()
	refs, err := e.store.RetentionDue(e.ctx, now, 0)
	must(e.t, err)
	var out []string
	for _, r := range refs {
		if r.FirmID == firm {
			out = append(out, r.RunID)
		}
	}
	slices.Sort(out)
	return out
}

// testRetentionIndex: a run enters the retention index when it ends, due
// at its end (ended_at); RetainUntil moves its next look, or takes it out
// with a zero time; its destruction takes it out; a run not ended is
// never in it. A matter's runs are listed by RunsOfMatter, its firm's
// only.
func testRetentionIndex(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm, matter := id(), id()
	a, b := e.newRunOf(firm, matter), e.newRunOf(firm, matter)
	c := e.newRunOf(firm, id())
	running := e.newRunOf(firm, matter)
	e.newRunOf(id(), matter) // another firm's, same matter id
	start := e.clock.Now()
	if got := e.dueOf(firm, start.Add(time.Hour)); len(got) != 0 {
		t.Fatalf("runs not ended are due: %v", got)
	}
	for _, r := range []*run{a, b, c} {
		must(t, e.store.FinishRun(e.ctx, r.firm, r.id, warrant.RunCompleted, e.line(r, &contracts.RunCompleted{StopReason: "end_turn", FinalText: "Done."})))
	}
	got, err := e.store.GetRun(e.ctx, firm, a.id)
	must(t, err)
	if !got.EndedAt.Equal(start.Truncate(time.Millisecond)) && got.EndedAt.IsZero() {
		t.Errorf("ended_at %v", got.EndedAt)
	}
	want := []string{a.id, b.id, c.id}
	slices.Sort(want)
	if got := e.dueOf(firm, start.Add(time.Second)); !slices.Equal(got, want) {
		t.Fatalf("due after they ended: %v, want %v", got, want)
	}
	if got := e.dueOf(firm, start.Add(-time.Second)); len(got) != 0 {
		t.Errorf("due before they ended: %v", got)
	}

	later := start.Add(30 * 24 * time.Hour)
	must(t, e.store.RetainUntil(e.ctx, firm, a.id, later))
	must(t, e.store.RetainUntil(e.ctx, firm, b.id, time.Time{}))
	if got := e.dueOf(firm, start.Add(time.Hour)); !slices.Equal(got, []string{c.id}) {
		t.Errorf("after moving a and taking b out: due %v, want only %s", got, c.id)
	}
	if got := e.dueOf(firm, later.Add(time.Second)); !slices.Contains(got, a.id) || slices.Contains(got, b.id) {
		t.Errorf("at a's next look: due %v, want a (and never b)", got)
	}
	must(t, e.store.RetainUntil(e.ctx, firm, b.id, later)) // out already: left out
	if got := e.dueOf(firm, later.Add(time.Second)); slices.Contains(got, b.id) {
		t.Errorf("a run taken out came back: %v", got)
	}
	must(t, e.store.DestroyContent(e.ctx, firm, c.id, e.destroyed(c)))
	// Due once more (the pass that catches up a lost stream record of the
	// destruction), then out for good.
	if got := e.dueOf(firm, later.Add(time.Second)); !slices.Contains(got, c.id) {
		t.Errorf("a run just destroyed is not due for its last look: %v", got)
	}
	must(t, e.store.RetainUntil(e.ctx, firm, c.id, time.Time{}))
	if got := e.dueOf(firm, later.Add(time.Second)); slices.Contains(got, c.id) {
		t.Errorf("a destroyed run taken out is still due: %v", got)
	}
	wantErr(t, e.store.RetainUntil(e.ctx, firm, running.id, later), warrant.ErrRunNotInState, "a running run")
	wantErr(t, e.store.RetainUntil(e.ctx, firm, id(), later), warrant.ErrNotFound, "an unknown run")

	runs, err := e.store.RunsOfMatter(e.ctx, firm, matter)
	must(t, err)
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.RunID)
	}
	slices.Sort(ids)
	want = []string{a.id, b.id, running.id}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("runs of the matter: %v, want %v (its firm's, not c's matter, not the other firm's)", ids, want)
	}
}

// testDestructionOrders: a matter's destruction is requested by one user
// and confirmed by another before it expires; the requester cannot
// confirm, a second request waits, a hold refuses both, and a confirmed
// order is listed for the sweeper until it is done. Refusals write
// nothing.
func testDestructionOrders(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm, matter := id(), id()
	alice, bob, carol := id(), id(), id()
	listed := func() bool {
		t.Helper()
		os, err := e.store.DestructionOrders(e.ctx, 0)
		must(t, err)
		return slices.ContainsFunc(os, func(o warrant.DestructionOrder) bool { return o.FirmID == firm && o.MatterID == matter })
	}
	req := warrant.DestructionOrder{FirmID: firm, MatterID: matter, RequestedBy: alice, RequestedByName: "Alice", Reason: "Client instruction of 1 December."}
	_, err := e.store.RequestDestruction(e.ctx, warrant.DestructionOrder{FirmID: firm, MatterID: matter, RequestedBy: alice})
	wantInvalid(t, err, "a request without a reason")
	_, err = e.store.ConfirmDestruction(e.ctx, firm, matter, bob, "Bob")
	wantErr(t, err, warrant.ErrNoOrder, "a confirmation with no request")

	o, err := e.store.RequestDestruction(e.ctx, req)
	must(t, err)
	if o.Status != warrant.OrderRequested || !o.ExpiresAt.Equal(o.RequestedAt.Add(warrant.DestructionRequestTTL)) {
		t.Errorf("requested: %+v", o)
	}
	_, err = e.store.RequestDestruction(e.ctx, warrant.DestructionOrder{FirmID: firm, MatterID: matter, RequestedBy: bob, Reason: "Again."})
	wantErr(t, err, warrant.ErrDestructionPending, "a second request while one waits")
	if cur, _ := e.store.GetDestructionOrder(e.ctx, firm, matter); cur.RequestedBy != alice {
		t.Errorf("the second request replaced the first: %+v", cur)
	}
	_, err = e.store.ConfirmDestruction(e.ctx, firm, matter, alice, "Alice")
	wantErr(t, err, warrant.ErrSelfConfirm, "the requester confirming")
	if listed() {
		t.Fatal("an unconfirmed order is listed for the sweeper")
	}

	// A hold placed after the request: the confirmation is refused.
	_, err = e.store.PutHold(e.ctx, warrant.Hold{FirmID: firm, MatterID: matter, By: carol, Reason: "Subpoena."})
	must(t, err)
	_, err = e.store.ConfirmDestruction(e.ctx, firm, matter, bob, "Bob")
	wantErr(t, err, warrant.ErrMatterOnHold, "a confirmation under hold")
	if cur, _ := e.store.GetDestructionOrder(e.ctx, firm, matter); cur.Status != warrant.OrderRequested {
		t.Errorf("a refused confirmation wrote: %+v", cur)
	}
	must(t, e.store.ReleaseHold(e.ctx, firm, matter, warrant.HoldEvent{By: carol}))

	c, err := e.store.ConfirmDestruction(e.ctx, firm, matter, bob, "Bob")
	must(t, err)
	if c.Status != warrant.OrderConfirmed || c.ConfirmedBy != bob || c.RequestedBy != alice || c.Reason != req.Reason {
		t.Errorf("confirmed: %+v", c)
	}
	again, err := e.store.ConfirmDestruction(e.ctx, firm, matter, bob, "Bob")
	must(t, err)
	if !again.ConfirmedAt.Equal(c.ConfirmedAt) {
		t.Errorf("a repeated confirmation moved it: %+v", again)
	}
	_, err = e.store.ConfirmDestruction(e.ctx, firm, matter, carol, "Carol")
	wantErr(t, err, warrant.ErrDestructionPending, "a third user confirming")
	_, err = e.store.RequestDestruction(e.ctx, warrant.DestructionOrder{FirmID: firm, MatterID: matter, RequestedBy: carol, Reason: "Again."})
	wantErr(t, err, warrant.ErrDestructionPending, "a request while one is carried out")
	if !listed() {
		t.Fatal("a confirmed order is not listed for the sweeper")
	}
	must(t, e.store.FinishDestruction(e.ctx, c))
	must(t, e.store.FinishDestruction(e.ctx, c)) // again: left as it is
	if listed() {
		t.Error("a done order is still listed")
	}
	if cur, _ := e.store.GetDestructionOrder(e.ctx, firm, matter); cur.Status != warrant.OrderDone || cur.DoneAt.IsZero() {
		t.Errorf("done: %+v", cur)
	}

	// A new request after it is done; one left too long expires.
	_, err = e.store.RequestDestruction(e.ctx, warrant.DestructionOrder{FirmID: firm, MatterID: matter, RequestedBy: carol, Reason: "New runs."})
	must(t, err)
	e.clock.Advance(warrant.DestructionRequestTTL + time.Minute)
	_, err = e.store.ConfirmDestruction(e.ctx, firm, matter, bob, "Bob")
	wantErr(t, err, warrant.ErrNoOrder, "confirming an expired request")
	_, err = e.store.RequestDestruction(e.ctx, warrant.DestructionOrder{FirmID: firm, MatterID: matter, RequestedBy: bob, Reason: "Once more."})
	must(t, err)

	// A hold refuses a request; another firm's matter has no order.
	held := id()
	_, err = e.store.PutHold(e.ctx, warrant.Hold{FirmID: firm, MatterID: held, By: carol, Reason: "Hold."})
	must(t, err)
	_, err = e.store.RequestDestruction(e.ctx, warrant.DestructionOrder{FirmID: firm, MatterID: held, RequestedBy: alice, Reason: "Now."})
	wantErr(t, err, warrant.ErrMatterOnHold, "a request under hold")
	if _, err := e.store.GetDestructionOrder(e.ctx, firm, held); err == nil {
		t.Error("a refused request wrote an order")
	}
	_, err = e.store.ConfirmDestruction(e.ctx, id(), matter, carol, "Carol")
	wantErr(t, err, warrant.ErrNoOrder, "another firm's matter")
}

// testRetentionSettings: a firm's and a matter's retention round-trip
// (with a matter of no client domains, which minidyn once read back as a
// string), a retention out of range is refused and writes nothing, and the
// matter's history shows the retention before and after.
func testRetentionSettings(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm, matter, user := id(), id(), id()
	days := 30
	m, err := e.store.PutMatter(e.ctx, warrant.Matter{FirmID: firm, MatterID: matter, Title: "Ridgeway", ClientDomains: []string{}, RetentionDays: &days, UpdatedBy: user}, 0)
	must(t, err)
	got, err := e.store.GetMatter(e.ctx, firm, matter)
	must(t, err)
	if got.RetentionDays == nil || *got.RetentionDays != 30 || len(got.ClientDomains) != 0 {
		t.Errorf("matter read back: %+v", got)
	}
	for _, bad := range []int{0, -1, warrant.MaxRetentionDays + 1} {
		_, err := e.store.PutMatter(e.ctx, warrant.Matter{FirmID: firm, MatterID: matter, Title: "Ridgeway", RetentionDays: &bad, UpdatedBy: user}, m.Version)
		wantInvalid(t, err, "a matter's retention out of range")
		wantInvalid(t, e.store.PutFirmSettings(e.ctx, warrant.FirmSettings{FirmID: firm, RetentionDays: &bad}), "a firm's retention out of range")
	}
	_, err = e.store.PutMatter(e.ctx, warrant.Matter{FirmID: firm, MatterID: matter, Title: "Ridgeway", UpdatedBy: user}, m.Version)
	must(t, err)
	vs, _, err := e.store.MatterVersions(e.ctx, firm, matter, 0, 10)
	must(t, err)
	if len(vs) != 2 || vs[1].Before == nil || vs[1].Before.RetentionDays == nil || *vs[1].Before.RetentionDays != 30 || vs[1].After.RetentionDays != nil {
		t.Errorf("history: %+v", vs)
	}
	fs, err := e.store.GetFirmSettings(e.ctx, firm)
	must(t, err)
	if fs.RetentionDays != nil {
		t.Errorf("a firm with no settings has a retention: %v", *fs.RetentionDays)
	}
	fs.RetentionDays = &days
	must(t, e.store.PutFirmSettings(e.ctx, fs))
	fs, err = e.store.GetFirmSettings(e.ctx, firm)
	must(t, err)
	if fs.RetentionDays == nil || *fs.RetentionDays != 30 {
		t.Errorf("firm settings read back: %+v", fs)
	}
}
