package handlers_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/notify"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// Issue 27 item 1: a run whose warranted action failed never reads as a
// done one. The firm's system refuses the signed filing (its 4xx answers
// are final: nothing was filed); the warrant is spent, the model moves on
// and the run ends completed. The run view says, from the ledger, that
// its one action failed (the system answered with an error), the
// run.completed notification carries it in words, and a declined one says
// declined the same way.
func TestFailedActionIsNotADoneOne(t *testing.T) {
	var refuse atomic.Bool
	s := newStack(t, stackOptions{system: catalog.TargetHTTPS, wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if refuse.Load() && strings.HasSuffix(r.URL.Path, "/"+bedrocktest.ToolFileCourtDocument) {
				w.WriteHeader(http.StatusUnprocessableEntity) // read, refused: final on this endpoint
				return
			}
			h.ServeHTTP(w, r)
		})
	}})
	h := s.startHeld(t)
	// Item 7: the held view (?wait) names the firm's system and the pin of
	// the tool's schema, as the approvals list does.
	if p := h.view.PendingApproval; p.ToolServer != "reference" || len(p.ToolSchemaSHA256) != 64 {
		t.Errorf("the held view's warrant: server %q, schema %q", p.ToolServer, p.ToolSchemaSHA256)
	}
	if resp := s.call(approveReq(t, h, "approve", h.hash)); resp.StatusCode != 200 {
		t.Fatalf("approve: %d %s", resp.StatusCode, resp.Body)
	}
	refuse.Store(true)
	v := decode[struct {
		Status         string           `json:"status"`
		Actions        []reducer.Action `json:"actions"`
		ActionsNotDone int              `json:"actions_not_done"`
	}](t, s.call(resumeReq(t, h)))
	if v.Status != "completed" || v.ActionsNotDone != 1 || len(v.Actions) != 1 {
		t.Fatalf("resume: %+v", v)
	}
	a := v.Actions[0]
	if a.ToolName != bedrocktest.ToolFileCourtDocument || a.Outcome != reducer.ActionFailed || a.Why != contracts.ToolErrToolFailed ||
		a.ApprovalID != h.approvalID || a.EffectRef == "" {
		t.Fatalf("the action: %+v", a)
	}
	s.deliver(s.records(fixFirm, h.runID, 0))
	var done *notify.Event
	for _, e := range s.notifications() {
		if e.Type == notify.RunCompleted && e.RunID == h.runID {
			done = &e
		}
	}
	want := "1 action not done: file_court_document failed (its system answered with an error; its warrant was used)"
	if done == nil || done.ActionsNotDone != 1 || done.Actions[reducer.ActionFailed] != 1 || done.Outcome != want {
		t.Fatalf("run.completed: %+v, want the outcome %q", done, want)
	}

	// Declined: the run completes, and its action says declined.
	refuse.Store(false)
	d := s.startHeld(t)
	if resp := s.call(approveReq(t, d, "deny", d.hash)); resp.StatusCode != 200 {
		t.Fatalf("decline: %d %s", resp.StatusCode, resp.Body)
	}
	s.call(resumeReq(t, d))
	dv := s.view(d.runID)
	if dv.Status != "completed" || dv.ActionsNotDone != 1 || len(dv.Actions) != 1 || dv.Actions[0].Outcome != reducer.ActionDeclined {
		t.Fatalf("declined run: %+v", dv)
	}
	// A filing that ran: one action, done.
	ok := s.completedFiling(t)
	if ov := s.view(ok.runID); ov.ActionsNotDone != 0 || len(ov.Actions) != 1 || ov.Actions[0].Outcome != reducer.ActionDone {
		t.Fatalf("a filed run: %+v", ov.Actions)
	}
}
