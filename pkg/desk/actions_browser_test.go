package desk_test

import (
	"strings"
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

// Issue 27 item 7: the run page names the matter and who signed what went
// out, and as what (from the ledger's approval.decided), and shows the
// final answer once: the timeline's run.completed does not repeat it.
func TestRunPageSaysWhoSignedWhatWentOut(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	const run, approval = "8a7f6e5d-4c3b-4a29-8f8e-9d8c7b6a5c4b", "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"
	const final = "The update has been e-mailed to the client."
	sent := reducer.Action{ToolUseID: "tooluse_1", ToolName: "send_client_email", Seq: 9, Outcome: reducer.ActionDone,
		EffectRef: "1d2c3b4a-5e6f-4789-8abc-def012345678", ApprovalID: approval, Edited: true}
	f := newFakeAPI(t)
	f.matters = []handlers.MatterView{{MatterID: demoMatter, Name: "Ridgeway Logistics v. Harbor Freight Systems"}}
	f.runs = map[string]any{run: handlers.RunView{RunID: run, Status: "completed", AgentKey: "matter_assistant", MatterID: demoMatter,
		CostUSD: "0.0123", CostCapUSD: "1.00", FinalText: final, ActionsSummary: reducer.OutcomeWords([]reducer.Action{sent}),
		Actions: []handlers.ActionView{{Action: sent}}}}
	f.events = map[string][]string{run: {
		`{"seq":5,"type":"run.blocked","created_at":"2026-12-06T09:59:00.000Z","payload":{"approval":{"approval_request_id":"` + approval +
			`","tool_use_id":"tooluse_1","tool_name":"send_client_email","tool_input":{"body":"Update.","cc":["counsel@harbor-freight.example"],"subject":"Discovery update","to":"gc@ridgeway-logistics.example"},` +
			`"tool_input_hash":"` + strings.Repeat("a", 64) + `","risk_tier":"high","reason":"a cc outside the firm","human_summary":"E-mail the client","expires_at":"2026-12-07T09:59:00.000Z"}}}`,
		`{"seq":7,"type":"approval.decided","created_at":"2026-12-06T10:00:00.000Z","payload":{"approval_request_id":"` + approval +
			`","decision":"approved","decided_by":"c0c0c0c0-1111-4222-8333-444455556666","decided_by_name":"Casey Counsel","decided_as":"counsel","tool_input_hash":"` +
			strings.Repeat("a", 64) + `","edited_input_sha256":"` + strings.Repeat("b", 64) + `",` +
			`"edited_input":{"body":"Update.","subject":"Discovery update","to":"gc@ridgeway-logistics.example"}}}`,
		`{"seq":10,"type":"model.usage","created_at":"2026-12-06T10:00:04.000Z","payload":{"turn":2,"model_id":"scripted","cost_usd":"0.001","usage":{"input_tokens":900,"output_tokens":120}}}`,
		`{"seq":12,"type":"run.completed","created_at":"2026-12-06T10:00:05.000Z","payload":{"stop_reason":"end_turn","final_text":"` + final + `"}}`,
	}}
	ctx := openDesk(t, f)
	evalIn[any](t, ctx, `(() => { location.hash = '#/runs/`+run+`'; return null; })()`)
	want := "send_client_email done, as edited by Casey Counsel (counsel): cc removed"
	if err := waitFor(ctx, `document.querySelector('#run-actions-list li') && document.querySelector('#run-actions-list li').textContent === `+jsQuote(want)); err != nil {
		t.Fatalf("the action does not say who signed it: %v (%q)", err, evalIn[string](t, ctx, `(document.querySelector('#run-actions-list li') || {}).textContent || ''`))
	}
	if err := waitFor(ctx, `document.querySelector('.run-details').textContent.includes('Ridgeway Logistics v. Harbor Freight Systems')`); err != nil {
		t.Errorf("the run page does not name the matter: %v", err)
	}
	if n := evalIn[int](t, ctx, `[...document.querySelectorAll('main, body')].slice(-1)[0].innerText.split(`+jsQuote(final)+`).length - 1`); n != 1 {
		t.Errorf("the final answer is shown %d times, want once", n)
	}
	if got := evalIn[string](t, ctx, `(document.querySelector('li.event[data-type="approval.decided"]') || {}).textContent || ''`); !strings.Contains(got, "by Casey Counsel as counsel") {
		t.Errorf("the ledger's decision reads %q", got)
	}
	// The model's engineering lines are folded, one click away.
	usage := `document.querySelector('li.event[data-type="model.usage"]')`
	if err := waitFor(ctx, `!!`+usage); err != nil {
		t.Fatalf("no model.usage line: %v", err)
	}
	if shown := evalIn[bool](t, ctx, usage+`.offsetParent !== null`); shown {
		t.Error("the model's usage line is shown unfolded")
	}
	browsertest.CheckAxe(t, ctx, "a run page naming who signed what went out")
	click(t, ctx, "#show-engineering")
	if shown := evalIn[bool](t, ctx, usage+`.offsetParent !== null`); !shown {
		t.Error("the usage line is not shown once asked for")
	}
}
