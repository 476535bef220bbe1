package desk_test

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/seed-f6d3920e/warrant/pkg/handlers"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// TestScreenshots takes the desk's pictures in docs/screenshots: the list,
// a warrant open, the editor with a change (the whole editor), and a run
// page whose filing failed, at 1280x900 and 390x844, each a screen as the
// reader sees it.
// `make screenshots` runs it with DESK_SCREENSHOTS=docs/screenshots; in
// `go test` (and `make test`) it takes them into a temporary directory
// (some ten seconds) and checks each is a picture of its size, so the
// target cannot rot. The pictures show the clock's times, in
// America/New_York: taken twice, they differ there.
func TestScreenshots(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	dir := os.Getenv("DESK_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, ws := triageDesk(t)
	const failed = "6e5d4c3b-2a19-4f8e-9d7c-6b5a4a392817"
	fail := reducer.Action{ToolUseID: "tooluse_1", ToolName: "file_court_document", Seq: 12, Outcome: reducer.ActionFailed, Why: "unreachable",
		EffectRef: "1d2c3b4a-5e6f-4789-8abc-def012345678", ApprovalID: ws[1].ApprovalRequestID}
	f.runs = map[string]any{failed: handlers.RunView{RunID: failed, Status: "completed", AgentKey: "matter_assistant", MatterID: demoMatter,
		ModelID: "scripted", CostUSD: "0.0123", CostCapUSD: "1.00", FinalText: "The motion to compel has been filed with the court.",
		ActionsNotDone: 1, ActionsSummary: reducer.OutcomeWords([]reducer.Action{fail}),
		Actions: []handlers.ActionView{{Action: fail, Words: reducer.ActionWords(fail)}}}}
	f.events = map[string][]string{failed: {}}
	f.answerReceipts(func(string, int) any { return receiptsView(true, 3, true, "", filingReceipts()) })
	ctx := openDesk(t, f)
	if _, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "America/New_York"}); err != nil {
		t.Fatal(err)
	}
	// shot takes the screen (sel ""), or the element sel whole, w wide and
	// (the screen) h high.
	shot := func(name, sel string, w, h int64) {
		t.Helper()
		take := chromedp.CaptureScreenshot()
		if sel != "" {
			take = chromedp.Screenshot(chromedp.CSS(sel))
		}
		buf, err := chromedp.Run(ctx, take)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		img, err := png.Decode(bytes.NewReader(buf))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b := img.Bounds(); int64(b.Dx()) > w || (sel == "" && (int64(b.Dx()) != w || int64(b.Dy()) != h)) {
			t.Errorf("%s: a picture of %dx%d, want %dx%d", name, b.Dx(), b.Dy(), w, h)
		}
		path := filepath.Join(dir, name+".png")
		if err := os.WriteFile(path, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s (%d bytes)", path, len(buf))
	}
	email, attach := ws[0].ApprovalRequestID, ws[2].ApprovalRequestID
	for _, size := range sizes {
		viewport(t, ctx, size.w, size.h)
		suffix := "-" + size.name
		evalIn[any](t, ctx, `(() => { location.hash = '#/'; return null; })()`)
		if err := waitFor(ctx, `document.querySelectorAll('#warrants > li.warrant .hash-check.ok').length === 5`); err != nil {
			t.Fatalf("the list: %v", err)
		}
		evalIn[any](t, ctx, `(() => { scrollTo(0, 0); return null; })()`)
		shot("desk-list"+suffix, "", size.w, size.h)

		click(t, ctx, wsel(email)+" .warrant-toggle")
		evalIn[any](t, ctx, `(() => { document.querySelector('`+wsel(email)+`').scrollIntoView({block: 'start'}); return null; })()`)
		shot("desk-warrant"+suffix, "", size.w, size.h)
		click(t, ctx, wsel(email)+" .warrant-toggle")

		// The editor of the e-mail with attachments: the second one
		// removed, a copy to the firm's records added.
		openEditor(t, ctx, attach)
		ed := wsel(attach) + " .editor"
		click(t, ctx, ed+` .field-row[data-member="attachments"] .object-row:nth-child(2) .remove-row`)
		click(t, ctx, ed+` .field-row[data-member="bcc"] .add-row`)
		setValue(t, ctx, ed+` .field-row[data-member="bcc"] .list-rows input`, firmAddr)
		if err := waitFor(ctx, `!document.querySelector('`+ed+` button.approve-edit').disabled`); err != nil {
			t.Fatalf("the edit: %v", err)
		}
		shot("desk-editor"+suffix, ed, size.w, size.h)
		click(t, ctx, wsel(attach)+" .warrant-toggle")

		evalIn[any](t, ctx, `(() => { location.hash = '#/runs/`+failed+`'; return null; })()`)
		if err := waitFor(ctx, `!!document.querySelector('#run-actions:not([hidden]) #run-actions-list li')`); err != nil {
			t.Fatalf("the run page: %v", err)
		}
		evalIn[any](t, ctx, `(() => { scrollTo(0, 0); return null; })()`)
		shot("run-failed-action"+suffix, "", size.w, size.h)
	}
}

// TestMakeScreenshots: `make screenshots` runs TestScreenshots into
// docs/screenshots, so the pictures there are the ones this test takes.
func TestMakeScreenshots(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	_, recipe, ok := strings.Cut(string(b), "\nscreenshots:\n")
	recipe, _, _ = strings.Cut(recipe, "\n\n")
	want := "\tDESK_SCREENSHOTS=$(CURDIR)/docs/screenshots $(GO) test -count=1 -run '^TestScreenshots$$' ./pkg/desk/"
	if !ok || strings.TrimRight(recipe, "\n") != want {
		t.Fatalf("the Makefile's screenshots target:\n%s\nwant\n%s", recipe, want)
	}
	for _, size := range sizes {
		for _, name := range []string{"desk-list", "desk-warrant", "desk-editor", "run-failed-action"} {
			if _, err := os.Stat(filepath.Join("..", "..", "docs", "screenshots", name+"-"+size.name+".png")); err != nil {
				t.Errorf("make screenshots has not been run: %v", err)
			}
		}
	}
}
