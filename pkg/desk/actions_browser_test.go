package desk_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/seed-f6d3920e/warrant/internal/browsertest"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// Issue 27 item 1: a completed run whose signed filing failed (its system
// unreachable) says so at the top of its page, in words from the ledger,
// above the model's final words claiming it was filed; a run whose one
// action ran says it was done. At 1280x900 and 390x844, with no axe
// violation.
func TestRunPageSaysAnActionFailed(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	browsertest.AxeSource(t)
	const failed, ok = "6e5d4c3b-2a19-4f8e-9d7c-6b5a4a392817", "7f6e5d4c-3b2a-4190-8e8d-7c6b5a4b3a28"
	fail := reducer.Action{ToolUseID: "tooluse_1", ToolName: "file_court_document", Seq: 12, Outcome: reducer.ActionFailed, Why: "unreachable",
		EffectRef: "1d2c3b4a-5e6f-4789-8abc-def012345678", ApprovalID: "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"}
	done := fail
	done.Outcome, done.Why, done.Edited = reducer.ActionDone, "", true
	f := newFakeAPI(t)
	f.runs = map[string]any{
		failed: handlers.RunView{RunID: failed, Status: "completed", AgentKey: "matter_assistant", CostUSD: "0.0123", CostCapUSD: "1.00",
			FinalText: "The motion to compel has been filed with the court.", ActionsNotDone: 1,
			ActionsSummary: reducer.OutcomeWords([]reducer.Action{fail}),
			Actions:        []handlers.ActionView{{Action: fail, Words: reducer.ActionWords(fail)}}},
		ok: handlers.RunView{RunID: ok, Status: "completed", AgentKey: "matter_assistant", CostUSD: "0.0123", CostCapUSD: "1.00",
			FinalText: "The motion to compel has been filed with the court.", ActionsSummary: reducer.OutcomeWords([]reducer.Action{done}),
			Actions: []handlers.ActionView{{Action: done}}},
	}
	f.events = map[string][]string{failed: {}, ok: {}}
	ctx := openDesk(t, f)
	for _, size := range []struct{ w, h int64 }{{1280, 900}, {390, 844}} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(size.w, size.h)); err != nil {
			t.Fatal(err)
		}
		evalIn[any](t, ctx, `(() => { location.hash = '#/runs/`+failed+`'; return null; })()`)
		if err := waitFor(ctx, `document.querySelector('#run-actions') && !document.querySelector('#run-actions').hidden && document.querySelector('#run-actions-heading').textContent !== ''`); err != nil {
			t.Fatalf("%dx%d: the run page does not say what became of its action: %v", size.w, size.h, err)
		}
		heading := evalIn[string](t, ctx, `document.querySelector('#run-actions-heading').textContent`)
		item := evalIn[string](t, ctx, `document.querySelector('#run-actions-list li').textContent`)
		want := "file_court_document failed (its system could not be reached; nothing was sent; its warrant was used)"
		if heading != "1 action not done" || item != want {
			t.Errorf("%dx%d: the run page says %q / %q, want %q / %q", size.w, size.h, heading, item, "1 action not done", want)
		}
		// It comes before the model's words, and is in view on arrival.
		if !evalIn[bool](t, ctx, `(() => { const a = document.querySelector('#run-actions'), f = document.querySelector('#run-final');
			return !!(a.compareDocumentPosition(f) & Node.DOCUMENT_POSITION_FOLLOWING) && a.getBoundingClientRect().top < window.innerHeight; })()`) {
			t.Errorf("%dx%d: the failed action is not above the final answer, in view", size.w, size.h)
		}
		browsertest.CheckAxe(t, ctx, "a run page with a failed action")

		evalIn[any](t, ctx, `(() => { location.hash = '#/runs/`+ok+`'; return null; })()`)
		if err := waitFor(ctx, `document.querySelector('#run-actions-heading') && document.querySelector('#run-actions-heading').textContent === 'The action done'`); err != nil {
			t.Fatalf("%dx%d: a run whose action ran: %v", size.w, size.h, err)
		}
		if got := evalIn[string](t, ctx, `document.querySelector('#run-actions-list li').textContent`); got != "file_court_document done, as edited by counsel" {
			t.Errorf("%dx%d: the done action reads %q", size.w, size.h, got)
		}
	}
}
