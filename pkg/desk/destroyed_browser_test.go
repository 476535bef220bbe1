package desk_test

import (
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// Issue 26, item 7: the run page of a run whose content was destroyed says
// so, when and why and until when backups hold its key, where the final
// answer would be, rather than showing a blank.
func TestRunPageSaysTheContentWasDestroyed(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	const run = "5d4c3b2a-1908-4f7e-8d6c-5b4a39281706"
	f := newFakeAPI(t)
	f.runs = map[string]any{run: handlers.RunView{RunID: run, Status: "completed", AgentKey: "matter_assistant", CostUSD: "0.0123", CostCapUSD: "1.00",
		ContentDestroyed: &handlers.DestroyedView{At: "2027-01-05T10:00:00.000Z", Reason: "retention", BackupsUntil: "2027-02-09T10:00:01.000Z"}}}
	f.events = map[string][]string{run: {}}
	ctx := openDesk(t, f)
	evalIn[any](t, ctx, `(() => { location.hash = '#/runs/`+run+`'; return null; })()`)
	if err := waitFor(ctx, `!!document.querySelector('#run-content-destroyed')`); err != nil {
		t.Fatalf("the run page does not say the content was destroyed: %v", err)
	}
	want := "Content destroyed 2027-01-05T10:00:00.000Z (retention period passed); backups hold its key until 2027-02-09T10:00:01.000Z. The run's record, cost and decisions remain."
	if got := evalIn[string](t, ctx, `document.querySelector('#run-content-destroyed').textContent`); got != want {
		t.Errorf("the run page says %q, want %q", got, want)
	}
}
