package desk_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// Issue 25 item 1: counsel signs a filing, and the worker refuses its call
// because the firm's server changed the tool since the catalog pinned it.
// The run page the desk follows to says so, in the run's failure and on its
// run.failed line: the tool changed, pinned X, now Y, the warrant that was
// signed and that nothing was sent.
func TestRunPageSaysTheToolChanged(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	const filing = `{"court":"SF Superior","document_text":"Plaintiff moves to compel.","document_title":"Motion","matter_id":"3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"}`
	const warrantID = "6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
	pinned, current := strings.Repeat("a1", 32), strings.Repeat("b2", 32)
	w := pendingWarrant(warrantID, filing, sha256Hex(filing), "File “Motion” with SF Superior.")
	f := newFakeAPI(t, w)
	change := &handlers.ToolChangeView{Tool: "file_court_document", Server: "dms", PinnedSchemaSHA256: pinned,
		CurrentSchemaSHA256: current, ApprovalRequestID: warrantID}
	f.runs = map[string]any{w.RunID: handlers.RunView{RunID: w.RunID, Status: "failed", AgentKey: "matter_assistant",
		Failure: &handlers.FailureView{Kind: string(failure.KindToolChanged), Stage: string(failure.StageResume),
			UserVisibleMessage: failure.UserMessage(failure.KindToolChanged), ToolChange: change}}}
	line, _ := json.Marshal(map[string]any{"seq": 9, "type": "run.failed", "created_at": "2026-12-03T10:00:09.000Z",
		"payload": contracts.RunFailed{FailureKind: string(failure.KindToolChanged), FailureStage: string(failure.StageResume), ToolChange: change}})
	f.events = map[string][]string{w.RunID: {string(line)}}

	ctx := openDesk(t, f)
	sel := `li.warrant[data-approval-id="` + warrantID + `"] button.approve`
	if err := waitFor(ctx, `!!document.querySelector('`+sel+`') && !document.querySelector('`+sel+`').disabled`); err != nil {
		t.Fatalf("the warrant is not signable: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, `location.hash === '#/runs/`+w.RunID+`' && !!document.querySelector('#run-tool-change') && `+
		`!!document.querySelector('#timeline li.event-run-failed .event-note')`); err != nil {
		t.Fatalf("the run page does not say the tool changed: %v", err)
	}
	said := "file_court_document on dms: the tool changed: pinned " + pinned + ", now " + current + ". Nothing was sent. Warrant " +
		warrantID + " was signed, and its call was refused: it will not run."
	if got := evalIn[string](t, ctx, `document.querySelector('#run-tool-change').textContent`); got != said {
		t.Errorf("the run's failure says %q, want %q", got, said)
	}
	if got := evalIn[string](t, ctx, `document.querySelector('#run-failure .failure-kind').textContent`); got != "tool_changed" {
		t.Errorf("the run's failure kind %q", got)
	}
	if got := evalIn[string](t, ctx, `document.querySelector('#timeline li.event-run-failed .event-note').textContent`); got != said {
		t.Errorf("the run.failed line says %q, want %q", got, said)
	}
}
