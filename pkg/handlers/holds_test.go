package handlers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"

	"github.com/seed-f6d3920e/warrant"
)

// Two counsel and a firm admin of the fixture firm (the fixtures' users
// are counsel c0c0… on approve.json and the requester 9a8b… on the runs).
const (
	counselA  = "c0c0c0c0-1111-4222-8333-444455556666"
	counselB  = "b0b0b0b0-2222-4333-8444-555566667777"
	firmAdmin = "a0a0a0a0-3333-4444-8555-666677778888"
)

// matterReq is approve.json (or, for GET, get-run.json) aimed at one of
// the matter routes, as counsel counselA.
func matterReq(t *testing.T, route, matter string, body any) *event {
	method, path, _ := strings.Cut(route, " ")
	path = strings.ReplaceAll(path, "{matter_id}", matter)
	var e *event
	if method == "GET" {
		e = getRoute(t, route, path, map[string]string{"matter_id": matter}, nil).claim("sub", counselA).roles("counsel")
	} else {
		e = fixture(t, "approve.json").roles("counsel")
		e.m["routeKey"] = route
		e.obj("requestContext")["routeKey"] = route
		e.obj("requestContext.http")["method"] = method
		e.m["rawPath"] = path
		e.obj("requestContext.http")["path"] = path
		e.m["pathParameters"] = map[string]any{"matter_id": matter}
	}
	if body != nil {
		e.bodyJSON(body)
	} else if method != "GET" {
		e.body("")
	}
	return e
}

func holdStatus(t *testing.T, s *stack, matter string) handlers.HoldStatus {
	t.Helper()
	resp := s.post(matterReq(t, handlers.GetHoldRoute, matter, nil))
	if resp.StatusCode != 200 {
		t.Fatalf("get hold: %d %s", resp.StatusCode, resp.Body)
	}
	return decode[handlers.HoldStatus](t, resp)
}

// wantProblem checks a refusal's status and that its detail says why.
func wantProblem(t *testing.T, s *stack, what string, e *event, status int, says string) {
	t.Helper()
	before := s.scan()
	resp := s.post(e)
	if resp.StatusCode != status || !strings.Contains(resp.Body, says) {
		t.Errorf("%s: %d %s, want %d saying %q", what, resp.StatusCode, resp.Body, status, says)
	}
	s.wantUnchanged(what, before)
}

// Issue 26, items 4 and 5, through the API: a legal hold is placed and
// lifted with who, when and why; while it is in place the matter's runs
// keep their content (a destruction on instruction is refused, a
// retention sweep passes them by). Destruction on instruction takes two
// people: one requests, another counsel confirms; the run then shows its
// content destroyed, its evidence verifies, and a second destruction
// finds nothing left. Every refusal names its reason and writes nothing.
func TestLegalHoldAndDestructionOnInstruction(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.completedFiling(t)
	s.settle(h.runID)
	if st := holdStatus(t, s, fixMatter); st.OnHold || len(st.History) != 0 || st.Destruction != nil {
		t.Fatalf("a matter never held: %+v", st)
	}

	reason := map[string]any{"reason": "Litigation reasonably anticipated (letter of 1 December)."}
	wantProblem(t, s, "a hold without a reason", matterReq(t, handlers.PutHoldRoute, fixMatter, map[string]any{}), 400, "field reason")
	wantProblem(t, s, "a hold with an unknown member", matterReq(t, handlers.PutHoldRoute, fixMatter, map[string]any{"reason": "x", "until": "never"}), 400, "until")
	wantProblem(t, s, "a hold by an associate", matterReq(t, handlers.PutHoldRoute, fixMatter, reason).roles("associate"), 403, "counsel or a firm admin")
	wantProblem(t, s, "a hold on another firm's matter", matterReq(t, handlers.PutHoldRoute, fixMatter, reason).claim("firm_id", otherFirm), 404, "no record and no runs")
	wantProblem(t, s, "a hold on an unknown matter", matterReq(t, handlers.PutHoldRoute, "11111111-2222-4333-8444-555555555555", reason), 404, "no record and no runs")
	wantProblem(t, s, "a hold on a malformed matter id", matterReq(t, handlers.PutHoldRoute, "not-a-matter", reason), 400, "matter_id")

	resp := s.post(matterReq(t, handlers.PutHoldRoute, fixMatter, reason).claim("name", "Avery Counsel"))
	st := decode[handlers.HoldStatus](t, resp)
	if resp.StatusCode != 201 || !st.OnHold || st.Hold.PlacedBy != counselA || st.Hold.Reason != reason["reason"] || len(st.History) != 1 || st.History[0].Action != "placed" {
		t.Fatalf("place: %d %s", resp.StatusCode, resp.Body)
	}
	if again := s.post(matterReq(t, handlers.PutHoldRoute, fixMatter, reason)); again.StatusCode != 200 {
		t.Fatalf("the same hold again (a retry): %d %s", again.StatusCode, again.Body)
	}
	wantProblem(t, s, "a second hold by another counsel", matterReq(t, handlers.PutHoldRoute, fixMatter, map[string]any{"reason": "Subpoena."}).claim("sub", counselB),
		409, "already on hold since")
	destroyReq := map[string]any{"reason": "Client's instruction of 1 December 2026 to destroy the matter's records."}
	wantProblem(t, s, "destroy under hold", matterReq(t, handlers.DestroyRoute, fixMatter, destroyReq), 409, "is on hold since")

	// The firm's retention passes while the hold is in place: kept. (The
	// run, kept when it ended, is looked at again a week on.)
	days := 1
	fs, err := s.store.GetFirmSettings(context.Background(), fixFirm)
	if err != nil {
		t.Fatal(err)
	}
	fs.RetentionDays = &days
	if err := s.store.PutFirmSettings(context.Background(), fs); err != nil {
		t.Fatal(err)
	}
	s.clock.Advance(8 * 24 * time.Hour)
	if rep := s.sweep(); rep.RetentionHeld != 1 || rep.ContentDestroyed != 0 || rep.RetentionErrors != 0 {
		t.Fatalf("a retention sweep under hold: %+v", rep)
	}
	if v := s.view(h.runID); v.ContentDestroyed != nil || v.FinalText == "" {
		t.Fatalf("a held matter's run lost its content: %+v", v)
	}
	// Back to keeping everything, so that what follows is the instruction's.
	fs.RetentionDays = nil
	if err := s.store.PutFirmSettings(context.Background(), fs); err != nil {
		t.Fatal(err)
	}

	resp = s.post(matterReq(t, handlers.DeleteHoldRoute, fixMatter, map[string]any{"reason": "Matter settled; no litigation pending."}).claim("sub", counselB))
	st = decode[handlers.HoldStatus](t, resp)
	if resp.StatusCode != 200 || st.OnHold || len(st.History) != 2 || st.History[1].Action != "released" || st.History[1].By != counselB {
		t.Fatalf("release: %d %s", resp.StatusCode, resp.Body)
	}
	wantProblem(t, s, "releasing a hold twice", matterReq(t, handlers.DeleteHoldRoute, fixMatter, nil), 409, "is not on hold")

	// Two people: a request, then another counsel's confirmation.
	wantProblem(t, s, "a request without a reason", matterReq(t, handlers.DestroyRoute, fixMatter, map[string]any{}), 400, "field reason")
	resp = s.post(matterReq(t, handlers.DestroyRoute, fixMatter, destroyReq).claim("sub", firmAdmin).roles("firm_admin"))
	o := decode[handlers.DestructionView](t, resp)
	if resp.StatusCode != 202 || o.Status != "requested" || o.RequestedBy != firmAdmin || o.Runs != 1 {
		t.Fatalf("request: %d %s", resp.StatusCode, resp.Body)
	}
	wantProblem(t, s, "the requester confirming", matterReq(t, handlers.DestroyRoute, fixMatter, map[string]any{}).claim("sub", firmAdmin).roles("firm_admin", "counsel"), 403, "another counsel")
	wantProblem(t, s, "a firm admin confirming", matterReq(t, handlers.DestroyRoute, fixMatter, map[string]any{}).claim("sub", counselB).roles("firm_admin"), 403, "only counsel confirm")
	if v := s.view(h.runID); v.ContentDestroyed != nil {
		t.Fatal("destroyed on a request alone")
	}
	resp = s.post(matterReq(t, handlers.DestroyRoute, fixMatter, map[string]any{}).claim("sub", counselB))
	o = decode[handlers.DestructionView](t, resp)
	if resp.StatusCode != 200 || o.Status != "done" || len(o.Destroyed) != 1 || o.Destroyed[0] != h.runID || o.ConfirmedBy != counselB {
		t.Fatalf("confirm: %d %s", resp.StatusCode, resp.Body)
	}
	v := s.view(h.runID)
	if v.ContentDestroyed == nil || v.ContentDestroyed.Reason != "instruction" || v.FinalText != "" || v.Status != "completed" {
		t.Fatalf("after the instruction: %+v", v)
	}
	wantProblem(t, s, "a second destruction", matterReq(t, handlers.DestroyRoute, fixMatter, destroyReq).claim("sub", counselB), 409, "nothing left to destroy")
	if st := holdStatus(t, s, fixMatter); st.Destruction == nil || st.Destruction.Status != "done" || st.Destruction.DoneAt == "" {
		t.Fatalf("the order after: %+v", st.Destruction)
	}
	// A hold placed after the destruction is placed; the run says its
	// content was destroyed.
	if resp := s.post(matterReq(t, handlers.PutHoldRoute, fixMatter, reason)); resp.StatusCode != 201 {
		t.Fatalf("a hold after the destruction: %d %s", resp.StatusCode, resp.Body)
	}

	// The destruction is a receipt: the run's evidence verifies, its last
	// receipt the destruction on instruction, naming who asked and who
	// confirmed.
	s.settle(h.runID)
	rep, err := evidence.Verify(s.bundle(h.runID, nil), s.trusted())
	if err != nil {
		t.Fatalf("the destroyed run's evidence: %v", err)
	}
	last := rep.Receipts[len(rep.Receipts)-1]
	if !rep.Complete || last.Kind != evidence.KindDestruction || last.Outcome != "instruction" {
		t.Fatalf("report %+v, last receipt %+v", rep, last)
	}
}

// Issue 26, item 3: retention is read when it falls due (the matter's,
// else the firm's; absent: kept), counted from the run's end; a run
// waits for its due date (looked at again at least weekly, so a retention
// set later reaches it) and its content is destroyed once it passes, the
// line naming the retention and whose it was.
func TestRetentionSweep(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.completedFiling(t)
	s.settle(h.runID)
	if rep := s.sweep(); rep.RetentionWaiting != 0 || rep.ContentDestroyed != 0 {
		// The settle's sweep looked at it already (kept: no retention).
		t.Fatalf("a second sweep at once: %+v", rep)
	}
	wantProblem(t, s, "a matter's retention of 0 days",
		putMatterReq(t, fixMatter, map[string]any{"name": "Ridgeway", "client_domains": []string{}, "retention_days": 0}).set("headers.if-none-match", "*"),
		400, "field retention_days")
	wantProblem(t, s, "a matter's retention over 100 years",
		putMatterReq(t, fixMatter, map[string]any{"name": "Ridgeway", "client_domains": []string{}, "retention_days": warrant.MaxRetentionDays + 1}).set("headers.if-none-match", "*"),
		400, "field retention_days")
	resp := s.post(putMatterReq(t, fixMatter, map[string]any{"name": "Ridgeway", "client_domains": []string{}, "retention_days": 30}).set("headers.if-none-match", "*"))
	m := decode[handlers.MatterView](t, resp)
	if resp.StatusCode != 201 || m.RetentionDays == nil || *m.RetentionDays != 30 {
		t.Fatalf("a matter's retention: %d %s", resp.StatusCode, resp.Body)
	}
	setRetention := func(days int) {
		t.Helper()
		resp := s.post(putMatterReq(t, fixMatter, map[string]any{"name": "Ridgeway", "client_domains": []string{}, "retention_days": days}).set("headers.if-match", m.ETag))
		if m = decode[handlers.MatterView](t, resp); resp.StatusCode != 200 {
			t.Fatalf("retention %d: %d %s", days, resp.StatusCode, resp.Body)
		}
	}
	// A week on, the run is looked at again: due in 30 days from its end.
	s.clock.Advance(8 * 24 * time.Hour)
	if rep := s.sweep(); rep.RetentionWaiting != 1 || rep.ContentDestroyed != 0 {
		t.Fatalf("8 days after the run ended: %+v", rep)
	}
	// A firm retention of 5 days does not override the matter's 30.
	s.setFirmRetention(t, 5)
	s.clock.Advance(8 * 24 * time.Hour)
	if rep := s.sweep(); rep.ContentDestroyed != 0 {
		t.Fatalf("16 days after the run ended, under the matter's 30: %+v", rep)
	}
	// Lengthened to 60 before the 30 passed: honoured when it would have.
	setRetention(60)
	s.clock.Advance(15 * 24 * time.Hour)
	if rep := s.sweep(); rep.ContentDestroyed != 0 || rep.RetentionWaiting != 1 {
		t.Fatalf("31 days after the run ended, under a retention lengthened to 60: %+v", rep)
	}
	if v := s.view(h.runID); v.ContentDestroyed != nil {
		t.Fatal("destroyed before the lengthened retention passed")
	}
	// Shortened back to 30: it reaches the run within a week.
	setRetention(30)
	s.clock.Advance(7 * 24 * time.Hour)
	if rep := s.sweep(); rep.ContentDestroyed != 1 || rep.RetentionErrors != 0 {
		t.Fatalf("a week after the retention was shortened back to 30: %+v", rep)
	}
	v := s.view(h.runID)
	if v.ContentDestroyed == nil || v.ContentDestroyed.Reason != "retention" || v.FinalText != "" {
		t.Fatalf("after its retention: %+v", v)
	}
	events := s.call(getRoute(t, "GET /v1/runs/{run_id}/events", "/v1/runs/"+h.runID+"/events", map[string]string{"run_id": h.runID}, nil))
	if !strings.Contains(events.Body, `"retention_days":30`) || !strings.Contains(events.Body, `"retention_source":"matter"`) {
		t.Fatalf("the content.destroyed line does not name the matter's retention: %.2000s", events.Body)
	}
	if rep := s.sweep(); rep.ContentDestroyed != 0 || rep.RetentionWaiting != 0 || rep.RetentionErrors != 0 {
		t.Fatalf("a sweep after the destruction: %+v", rep)
	}
}

// The hold and destruction routes refuse a malformed matter id (400), a
// token that is not the authorizer's (401), a caller who is neither
// counsel nor a firm admin (403) and a matter of no record and no runs in
// the caller's firm (404), each naming why and writing nothing.
func TestHoldRoutesRefuse(t *testing.T) {
	s := newStack(t, stackOptions{})
	unknown := "11111111-2222-4333-8444-555555555555"
	bodies := map[string]any{handlers.PutHoldRoute: map[string]any{"reason": "Hold."}, handlers.DeleteHoldRoute: map[string]any{},
		handlers.DestroyRoute: map[string]any{"reason": "Instruction."}, handlers.GetHoldRoute: nil}
	for _, route := range []string{handlers.GetHoldRoute, handlers.PutHoldRoute, handlers.DeleteHoldRoute, handlers.DestroyRoute} {
		body := bodies[route]
		wantProblem(t, s, route+": a malformed matter id", matterReq(t, route, "Not-A-Matter", body), 400, "matter_id")
		wantProblem(t, s, route+": another user's token", matterReq(t, route, fixMatter, body).tokenMember("sub", fixUser), 401, "")
		wantProblem(t, s, route+": an associate", matterReq(t, route, fixMatter, body).roles("associate"), 403, "counsel or a firm admin")
		wantProblem(t, s, route+": an unknown matter", matterReq(t, route, unknown, body), 404, "no record and no runs")
	}
}
