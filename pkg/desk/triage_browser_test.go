package desk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/seed-f6d3920e/warrant/internal/browsertest"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// Issue 27 items 3-6, 8 and 13: the desk for triage. The helpers and the
// warrants here are shared by the triage tests and the screenshots.

const (
	acmeMatter = "7d6c5b4a-3928-4f17-8e6d-5c4b3a291807"
	associate2 = "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d"
)

// sizes are the two the issue was tried at: a laptop and a phone.
var sizes = []struct {
	name string
	w, h int64
}{{"1280x900", 1280, 900}, {"390x844", 390, 844}}

// viewport sets the page's size, as a device of that size would.
func viewport(t *testing.T, ctx context.Context, w, h int64) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, h)); err != nil {
		t.Fatalf("viewport %dx%d: %v", w, h, err)
	}
}

// openDeskRefreshing signs counsel in to the desk of f with the list
// refreshing itself every ms milliseconds (window.__deskRefreshMs).
func openDeskRefreshing(t *testing.T, f *fakeAPI, ms int) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(browsertest.Browser(t), 3*time.Minute)
	t.Cleanup(cancel)
	src := fetchLog + "\nwindow.__deskRefreshMs = " + strconv.Itoa(ms) + ";"
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/desk"), chromedp.WaitVisible(chromedp.CSS("#dev-signin")),
		chromedp.Click(chromedp.CSS("#dev-signin-submit")), chromedp.WaitVisible(chromedp.CSS("#whoami"))); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	return ctx
}

// triageDesk is a morning's desk: five warrants on two matters, from two
// associates, the catalog's tools and the matters' names.
func triageDesk(t *testing.T) (*fakeAPI, []handlers.WarrantView) {
	t.Helper()
	now := time.Now()
	at := func(d time.Duration) string { return now.Add(d).UTC().Format(time.RFC3339) }

	email := emailWarrant(t, "a0c1e2d3-0000-4000-8000-000000000001", emailInput())
	email.RequestedByName, email.RequestedAt, email.ExpiresAt = "Avery Associate", at(-20*time.Minute), at(40*time.Minute)
	email.FiredRules = append(email.FiredRules, handlers.FiredRuleView{ID: "email.client_mail_recorded", Effect: "record",
		Reason: "E-mail to a client is recorded on the matter file."})

	filing := `{"court":"SF Superior Court","document_text":"Plaintiff Ridgeway Logistics moves to compel the production of the shipping manifests requested on 4 March.","document_title":"Motion to Compel Production","matter_id":"` + demoMatter + `"}`
	file := pendingWarrant("b0c1e2d3-0000-4000-8000-000000000002", filing, sha256Hex(filing),
		"File “Motion to Compel Production” with SF Superior Court.")
	file.RequestedBy, file.RequestedByName, file.RequestedAt, file.ExpiresAt = associate2, "Sam Second-Chair", at(-time.Hour), at(3*time.Hour+10*time.Minute)
	file.FiredRules = []handlers.FiredRuleView{{ID: "court.filing_requires_warrant", Effect: "raise:high", Reason: "A filing with a court cannot be taken back."}}
	file.Reason = "rule court.filing_requires_warrant: a filing with a court"

	in := emailInput()
	in["matter_id"], in["to"], in["subject"] = acmeMatter, "legal@acme-leasing.example", "Signed lease amendments"
	delete(in, "cc")
	in["body"] = "Attached are the two lease amendments as signed by the lessor. Please countersign and return them by Friday."
	in["attachments"] = []map[string]any{{"document_id": "DOC-4411", "name": "Amendment 1.pdf", "size_bytes": 182044},
		{"document_id": "DOC-4412", "name": "Amendment 2.pdf", "size_bytes": 190512}}
	attach := emailWarrant(t, "c0c1e2d3-0000-4000-8000-000000000003", in)
	attach.MatterID, attach.RiskTier, attach.RequestedByName = acmeMatter, "medium", "Avery Associate"
	attach.HumanSummary = "E-mail legal@acme-leasing.example with the subject “Signed lease amendments” and 2 attachment(s)."
	attach.Reason = "rule email.attachments_leave_firm: documents leave the firm"
	attach.FiredRules = []handlers.FiredRuleView{{ID: "email.attachments_leave_firm", Effect: "raise:medium", Reason: "Matter documents leave the firm."}}
	attach.RequestedAt, attach.ExpiresAt = at(-5*time.Minute), at(5*time.Hour)

	reply := `{"court":"Alameda Superior Court","document_text":"Defendant Acme Leasing replies in support of its demurrer.","document_title":"Reply in Support of Demurrer","matter_id":"` + acmeMatter + `"}`
	file2 := pendingWarrant("d0c1e2d3-0000-4000-8000-000000000004", reply, sha256Hex(reply),
		"File “Reply in Support of Demurrer” with Alameda Superior Court.")
	file2.MatterID, file2.RequestedByName, file2.RequestedAt, file2.ExpiresAt = acmeMatter, "Avery Associate", at(-2*time.Hour), at(22*time.Hour)
	file2.FiredRules = file.FiredRules

	update := emailInput()
	update["cc"], update["subject"] = []string{firmAddr}, "Hearing moved"
	update["body"] = "The hearing on the motion to compel has moved to the 14th. No action is needed from you."
	upd := emailWarrant(t, "e0c1e2d3-0000-4000-8000-000000000005", update)
	upd.RiskTier, upd.RequestedByName, upd.Reason = "medium", "Sam Second-Chair", "rule email.client_requires_warrant: e-mail to a client"
	upd.RequestedBy = associate2
	upd.HumanSummary = "E-mail " + clientAddr + ", copying " + firmAddr + " with the subject “Hearing moved”."
	upd.FiredRules = []handlers.FiredRuleView{{ID: "email.client_requires_warrant", Effect: "raise:medium", Reason: "E-mail to a client is signed by counsel."}}
	upd.RequestedAt, upd.ExpiresAt = at(-30*time.Minute), at(26*time.Hour)

	ws := []handlers.WarrantView{email, file, attach, file2, upd}
	f := newFakeAPI(t, ws...)
	f.tools = []agent.ToolSchema{catalogTool(t, "file_court_document"), catalogTool(t, emailTool)}
	f.matters = []handlers.MatterView{{MatterID: demoMatter, Name: "Ridgeway Logistics v. Harbor Freight Systems"}, {MatterID: acmeMatter, Name: "Acme Leasing (lease amendments)"}}
	f.decide = func(body map[string]json.RawMessage) (int, any) { return 200, map[string]any{"status": "decided"} }
	return f, ws
}

// rowShown is what a warrant's row says, closed.
type rowShown struct {
	Matter, Requester, Expires, Deadline, DeadlineISO, Tier, Tool, Summary string
	Height, Top, Bottom                                                    float64
	Open                                                                   bool
}

const readRows = `JSON.stringify([...document.querySelectorAll('#warrants > li.warrant')].map((li) => {
	const r = li.getBoundingClientRect(), d = li.querySelector('.row-meta .deadline');
	return {
		Matter: li.querySelector('.row-meta .matter-value').innerText.trim(), Requester: li.querySelector('.row-meta .requester-value').innerText.trim(),
		Expires: li.querySelector('.row-meta .expires').textContent, Deadline: d.textContent, DeadlineISO: d.title,
		Tier: li.querySelector('.row-meta .tier').textContent, Tool: li.querySelector('.warrant-toggle .tool').textContent,
		Summary: li.querySelector('.warrant-toggle .summary').textContent,
		Height: r.height, Top: r.top + scrollY, Bottom: r.bottom + scrollY,
		Open: li.querySelector('.warrant-toggle').getAttribute('aria-expanded') === 'true',
	};
}))`

func rowsOf(t *testing.T, ctx context.Context) []rowShown {
	t.Helper()
	var rs []rowShown
	if err := json.Unmarshal([]byte(evalIn[string](t, ctx, readRows)), &rs); err != nil {
		t.Fatal(err)
	}
	return rs
}

// Items 3, 4 and 8: the list is one row a warrant (matter, requester, time
// left with the deadline in local time and the ISO time on hover, tier,
// the tool and its summary), closed until opened; on the phone the first
// screen shows warrants, not just the banner, bar and filters. Opened, a
// warrant shows its fields first, the exact bytes collapsed (and still
// checked), times in local time, the tool's title (the input schema's,
// else its name), and the fired rules' words before their effect, a
// record rule as information. No axe violation in either state, at
// 1280x900 and 390x844.
// isoTime is an ISO 8601 time's date-T-time join: the list shows the
// reader's local time in words, never that (a "T" alone is no sign of it:
// "Tue, Dec 8").
var isoTime = regexp.MustCompile(`[0-9]T[0-9]`)

func TestDeskListIsOneRowAWarrant(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	browsertest.AxeSource(t)
	f, ws := triageDesk(t)
	// The desk shows a tool by the catalog's title; a tool the catalog
	// gives no title is shown by its input schema's title.
	if f.tools[0].Title == "" || f.tools[1].Title == "" {
		t.Fatalf("the default catalog titles both tools: %q, %q", f.tools[0].Title, f.tools[1].Title)
	}
	fileTitle := f.tools[0].Title
	f.tools[1].Title = ""
	f.tools[1].InputSchema = withSchemaTitle(t, f.tools[1].InputSchema, "E-mail to the client")
	ctx := openDesk(t, f)
	for _, size := range sizes {
		viewport(t, ctx, size.w, size.h)
		evalIn[any](t, ctx, `(() => { location.hash = '#/runs/x'; location.hash = '#/'; return null; })()`)
		if err := waitFor(ctx, `document.querySelectorAll('#warrants > li.warrant .hash-check.ok').length === 5`); err != nil {
			t.Fatalf("%s: the list: %v", size.name, err)
		}
		rs := rowsOf(t, ctx)
		for i, r := range rs {
			w := ws[i] // the warrants are made soonest first
			wantTool := fileTitle
			if w.ToolName == emailTool {
				wantTool = "E-mail to the client"
			}
			if r.Open || r.Tier != w.RiskTier || r.Tool != wantTool || !strings.HasPrefix(r.Summary, "E-mail") && !strings.HasPrefix(r.Summary, "File") ||
				!strings.HasPrefix(r.Expires, "expires in ") || r.DeadlineISO != w.ExpiresAt || r.Deadline == "" || isoTime.MatchString(r.Deadline) ||
				!strings.Contains(r.Matter, "Ridgeway") && !strings.Contains(r.Matter, "Acme") || strings.Contains(r.Matter, w.MatterID) ||
				r.Requester != w.RequestedByName {
				t.Errorf("%s: row %d: %+v", size.name, i, r)
			}
		}
		first := rs[0]
		t.Logf("%s: rows %.0f, %.0f, %.0f, %.0f, %.0f px high; the first from %.0f to %.0f px of %d", size.name,
			rs[0].Height, rs[1].Height, rs[2].Height, rs[3].Height, rs[4].Height, first.Top, first.Bottom, size.h)
		maxRow := map[string]float64{"1280x900": 160, "390x844": 260}[size.name]
		for i, r := range rs {
			if r.Height > maxRow {
				t.Errorf("%s: row %d is %.0f px high, want at most %.0f", size.name, i, r.Height, maxRow)
			}
		}
		// Item 8: the first screen shows the first warrant whole, and the
		// banner, bar and filters above it take less than 40% of it.
		if first.Bottom > float64(size.h) || first.Top > 0.4*float64(size.h) {
			t.Errorf("%s: the first warrant is at %.0f-%.0f px of a %d px screen", size.name, first.Top, first.Bottom, size.h)
		}
		browsertest.CheckAxe(t, ctx, size.name+": the list")
		// j from the heading: the first warrant (the list was shown anew
		// several times: one move a key, however often).
		evalIn[any](t, ctx, `(() => { document.querySelector('h1').focus(); return null; })()`)
		press(t, ctx, "j")
		press(t, ctx, "j")
		if !activeIs(t, ctx, wsel(ws[1].ApprovalRequestID)+" .warrant-toggle") {
			t.Errorf("%s: j twice from the heading: the focus is on %s", size.name, evalIn[string](t, ctx, `document.activeElement?.outerHTML.slice(0, 100)`))
		}

		// A warrant opened: its fields first, then the rules, the
		// decision, the exact bytes (collapsed) and who asked when.
		id := ws[0].ApprovalRequestID
		openWarrant(t, ctx, id)
		got := evalIn[string](t, ctx, `(() => {
			const li = document.querySelector('`+wsel(id)+`');
			const order = [...li.querySelectorAll('.warrant-body > *')].map((e) => e.className.split(' ')[0] || e.tagName.toLowerCase());
			const req = li.querySelector('time.requested');
			return JSON.stringify({
				order, bytesOpen: li.querySelector('details.args-block').open,
				fields: [...li.querySelectorAll('dl.fields dt')].map((e) => e.textContent),
				cc: li.querySelector('dl.fields dd:nth-of-type(2)').textContent,
				requested: [req.textContent, req.title, req.dateTime],
				labels: [...li.querySelectorAll('.warrant-body .label')].map((e) => e.textContent),
				rules: [...li.querySelectorAll('.fired-rules li')].map((r) => [r.className, r.firstElementChild.className, r.querySelector('.rule-effect').textContent]),
				tool: li.querySelector('.tool-name')?.closest('.kv').hidden === false ? li.querySelector('.tool-name').textContent : '',
				hash: li.querySelector('.hash-check').className,
			});
		})()`)
		var wv struct {
			Order, Fields, Requested, Labels []string
			BytesOpen                        bool
			CC, Tool, Hash                   string
			Rules                            [][]string
		}
		if err := json.Unmarshal([]byte(got), &wv); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(wv.Order, []string{"kv", "fields", "rules-block", "decision", "args-block", "meta", "warrant-foot"}) || wv.BytesOpen ||
			!strings.Contains(wv.Hash, "ok") {
			t.Errorf("%s: the warrant's parts %v (exact bytes open %v, hash %s)", size.name, wv.Order, wv.BytesOpen, wv.Hash)
		}
		if !slices.Equal(wv.Fields, []string{"to", "cc", "subject", "body", "matter_id"}) || wv.CC != opposingAddr {
			t.Errorf("%s: the fields %v, cc %q", size.name, wv.Fields, wv.CC)
		}
		if wv.Requested[1] != ws[0].RequestedAt || wv.Requested[2] != ws[0].RequestedAt || wv.Requested[0] == ws[0].RequestedAt || strings.Contains(wv.Requested[0], "Z") {
			t.Errorf("%s: requested at %q, want the local time with the ISO time on hover", size.name, wv.Requested)
		}
		if slices.Contains(wv.Labels, "Expires") || !slices.Contains(wv.Labels, "Deadline") || wv.Tool != emailTool {
			t.Errorf("%s: labels %v, tool %q", size.name, wv.Labels, wv.Tool)
		}
		wantRules := [][]string{{"rule rule-raise", "rule-reason", "raised to high"}, {"rule rule-record", "rule-reason", "recorded only"}}
		if !slices.EqualFunc(wv.Rules, wantRules, slices.Equal) {
			t.Errorf("%s: the rules %q, want %q", size.name, wv.Rules, wantRules)
		}
		browsertest.CheckAxe(t, ctx, size.name+": a warrant open")
		evalIn[any](t, ctx, `(() => { document.querySelector('`+wsel(id)+` details.args-block').open = true; return null; })()`)
		browsertest.CheckAxe(t, ctx, size.name+": a warrant's exact bytes")
		click(t, ctx, wsel(id)+" .warrant-toggle")
	}
}

// withSchemaTitle is schema with a top-level title.
func withSchemaTitle(t *testing.T, schema json.RawMessage, title string) json.RawMessage {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(schema, &m); err != nil {
		t.Fatal(err)
	}
	m["title"] = title
	b, _ := json.Marshal(m)
	return b
}

// activeIs reports whether the focus is on sel.
func activeIs(t *testing.T, ctx context.Context, sel string) bool {
	t.Helper()
	return evalIn[bool](t, ctx, `document.activeElement?.matches(`+jsQuote(sel)+`) ?? false`)
}

// tabTo presses Tab until the focus is on sel and says how many presses it took.
func tabTo(t *testing.T, ctx context.Context, sel string, limit int) int {
	t.Helper()
	return len(focusTrail(t, ctx, sel, limit))
}

// Item 3: keyboard only (key events, no clicks, no script), counsel goes
// through three warrants: j to the first, Enter to open it, Tab to Approve,
// Enter; the desk moves on to the next warrant, which counsel opens and
// declines with a reason; j and k move between warrants; the third is
// approved, and, the last one waiting, the desk follows its run. At
// 1280x900 and 390x844, axe on the way.
func TestDeskKeyboardOnlyThroughThreeWarrants(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	browsertest.AxeSource(t)
	for _, size := range sizes {
		t.Run(size.name, func(t *testing.T) {
			f, all := triageDesk(t)
			ws := all[:3]
			f.approvals = ws
			ctx := openDesk(t, f)
			viewport(t, ctx, size.w, size.h)
			if err := waitFor(ctx, `document.querySelectorAll('#warrants .hash-check.ok').length === 3 && document.activeElement?.tagName === 'H1'`); err != nil {
				t.Fatalf("the desk: %v", err)
			}
			toggle := func(i int) string { return wsel(ws[i].ApprovalRequestID) + " .warrant-toggle" }
			var perWarrant []string

			// The first: j, Enter, read, Tab to Approve, Enter.
			press(t, ctx, "j")
			if !activeIs(t, ctx, toggle(0)) {
				t.Fatalf("j from the heading: the focus is on %s", evalIn[string](t, ctx, `document.activeElement?.outerHTML.slice(0, 120)`))
			}
			press(t, ctx, kb.Enter)
			if err := waitFor(ctx, `!document.querySelector('`+wsel(ws[0].ApprovalRequestID)+` .warrant-body').hidden`); err != nil {
				t.Fatal("Enter on the first warrant did not open it")
			}
			browsertest.CheckAxe(t, ctx, "a warrant opened with the keyboard")
			tabs := tabTo(t, ctx, wsel(ws[0].ApprovalRequestID)+" button.approve", 10)
			perWarrant = append(perWarrant, fmt.Sprintf("approve: j, Enter, %d Tab, Enter", tabs))
			press(t, ctx, kb.Enter)
			if err := waitFor(ctx, `document.activeElement?.matches('`+toggle(1)+`') && !document.querySelector('`+wsel(ws[0].ApprovalRequestID)+` .decided-note').hidden`); err != nil {
				t.Fatalf("after approving the first the focus is on %s", evalIn[string](t, ctx, `document.activeElement?.outerHTML.slice(0, 120)`))
			}
			if got := evalIn[string](t, ctx, `document.querySelector('`+wsel(ws[0].ApprovalRequestID)+` .decided-note').textContent`); !strings.HasPrefix(got, "Approved") {
				t.Errorf("the first says %q", got)
			}
			browsertest.CheckAxe(t, ctx, "a warrant approved, the next focused")

			// k goes back to the first (decided: it is skipped, so the focus
			// stays), j on to the third and k back to the second.
			press(t, ctx, "k")
			if !activeIs(t, ctx, toggle(1)) {
				t.Errorf("k from the second moved past the decided first to %s", evalIn[string](t, ctx, `document.activeElement?.outerHTML.slice(0, 80)`))
			}
			press(t, ctx, "j")
			press(t, ctx, "k")
			if !activeIs(t, ctx, toggle(1)) {
				t.Fatalf("j then k: the focus is on %s", evalIn[string](t, ctx, `document.activeElement?.outerHTML.slice(0, 80)`))
			}

			// The second: Enter, Tab to Decline, Enter, a reason, Tab to
			// "Decline this warrant", Enter.
			press(t, ctx, kb.Enter)
			tabs = tabTo(t, ctx, wsel(ws[1].ApprovalRequestID)+" button.decline", 10)
			press(t, ctx, kb.Enter)
			if !activeIs(t, ctx, wsel(ws[1].ApprovalRequestID)+" textarea.decline-reason") {
				t.Fatalf("Enter on Decline: the focus is on %s", evalIn[string](t, ctx, `document.activeElement?.outerHTML.slice(0, 120)`))
			}
			const why = "Hold the filing: the client asked for a call first."
			press(t, ctx, why)
			browsertest.CheckAxe(t, ctx, "the decline panel with a reason")
			more := tabTo(t, ctx, wsel(ws[1].ApprovalRequestID)+" button.confirm-decline", 5)
			perWarrant = append(perWarrant, fmt.Sprintf("decline: Enter, %d Tab, Enter, the reason, %d Tab, Enter", tabs, more))
			press(t, ctx, kb.Enter)
			if err := waitFor(ctx, `document.activeElement?.matches('`+toggle(2)+`')`); err != nil {
				t.Fatalf("after declining the second the focus is on %s", evalIn[string](t, ctx, `document.activeElement?.outerHTML.slice(0, 120)`))
			}
			if got := evalIn[string](t, ctx, `document.querySelector('`+wsel(ws[1].ApprovalRequestID)+` .decided-note').textContent`); !strings.HasPrefix(got, "Declined") || strings.Contains(got, "Resuming") {
				t.Errorf("the second says %q", got)
			}

			// The third, the last waiting: approved, the desk follows its run.
			press(t, ctx, kb.Enter)
			tabs = tabTo(t, ctx, wsel(ws[2].ApprovalRequestID)+" button.approve", 10)
			perWarrant = append(perWarrant, fmt.Sprintf("approve: Enter, %d Tab, Enter", tabs))
			press(t, ctx, kb.Enter)
			if err := waitFor(ctx, `location.hash === '#/runs/`+ws[2].RunID+`'`); err != nil {
				t.Fatalf("approving the last warrant: %v", err)
			}
			t.Logf("%s: %s", size.name, strings.Join(perWarrant, "; "))

			ds := f.decisionBodies()
			if len(ds) != 3 {
				t.Fatalf("%d decisions sent", len(ds))
			}
			want := []struct{ decision, note string }{{"approve", ""}, {"deny", why}, {"approve", ""}}
			for i, d := range ds {
				var decision, note, hash string
				json.Unmarshal(d["decision"], &decision)
				json.Unmarshal(d["note"], &note)
				json.Unmarshal(d["tool_input_hash"], &hash)
				if decision != want[i].decision || note != want[i].note || hash != ws[i].ToolInputHash {
					t.Errorf("decision %d: %s %q %s, want %s %q %s", i, decision, note, hash, want[i].decision, want[i].note, ws[i].ToolInputHash)
				}
			}
		})
	}
}

// Item 6: Decline does not sit with Approve's or Edit's weight; it opens a
// panel that asks for a reason (required: "Decline this warrant" without
// one sends nothing and says why, and the words go once there is one),
// sends the reason as the decision's note, and the desk then says
// "Declined" and what happens next, never "Resuming the run…", and stays
// on the list. At 1280x900 and 390x844, axe on each state.
func TestDeskDeclineAsksForAReason(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	browsertest.AxeSource(t)
	for _, size := range sizes {
		t.Run(size.name, func(t *testing.T) {
			f, ws := triageDesk(t)
			ctx := openDesk(t, f)
			viewport(t, ctx, size.w, size.h)
			id := ws[1].ApprovalRequestID
			li := wsel(id)
			openWarrant(t, ctx, id)
			if err := waitFor(ctx, `!document.querySelector('`+li+` button.decline').disabled`); err != nil {
				t.Fatal("Decline stays disabled")
			}
			// Quieter than Edit: no border, no fill.
			style := evalIn[[]string](t, ctx, `[...document.querySelectorAll('`+li+` button.edit, `+li+` button.decline')].map((b) => {
				const s = getComputedStyle(b); return s.borderTopColor + '|' + s.backgroundColor; })`)
			if len(style) != 2 || style[0] == style[1] || !strings.HasPrefix(style[1], "rgba(0, 0, 0, 0)|rgba(0, 0, 0, 0)") {
				t.Errorf("Edit and Decline look %q: Decline should be quieter", style)
			}
			click(t, ctx, li+" button.decline")
			if !activeIs(t, ctx, li+" textarea.decline-reason") || evalIn[string](t, ctx, `document.querySelector('`+li+` button.decline').getAttribute('aria-expanded')`) != "true" {
				t.Fatal("Decline did not open the reason, focused")
			}
			browsertest.CheckAxe(t, ctx, size.name+": the decline panel")

			// Without a reason: nothing is sent, and the page says why.
			click(t, ctx, li+" button.confirm-decline")
			got := evalIn[[]string](t, ctx, `(() => { const r = document.querySelector('`+li+` textarea.decline-reason'), p = document.querySelector('`+li+` .decline-invalid');
				return [String(p.hidden), p.textContent, r.getAttribute('aria-invalid') ?? '', String(document.activeElement === r)]; })()`)
			if got[0] != "false" || !strings.Contains(got[1], "Give a reason") || got[2] != "true" || got[3] != "true" {
				t.Errorf("declining without a reason: %q", got)
			}
			if len(f.decisionBodies()) != 0 {
				t.Fatal("a decline without a reason was sent")
			}
			browsertest.CheckAxe(t, ctx, size.name+": a decline without a reason")
			const why = "Not yet: the partner wants to review the exhibits first."
			setValue(t, ctx, li+" textarea.decline-reason", why)
			if got := evalIn[[]string](t, ctx, `[String(document.querySelector('`+li+` .decline-invalid').hidden), document.querySelector('`+li+` textarea.decline-reason').getAttribute('aria-invalid') ?? '']`); !slices.Equal(got, []string{"true", ""}) {
				t.Errorf("with a reason the complaint stays: %q", got)
			}
			click(t, ctx, li+" button.confirm-decline")
			if err := waitFor(ctx, `!document.querySelector('`+li+` .decided-note').hidden && window.__fetches.includes('POST /v1/runs/`+ws[1].RunID+`/resume')`); err != nil {
				t.Fatalf("the decline: %v", err)
			}
			said := evalIn[string](t, ctx, `document.querySelector('`+li+` .decided-note').textContent`)
			if !strings.HasPrefix(said, "Declined") || !strings.Contains(said, "nothing was sent") || strings.Contains(said, "Resuming") {
				t.Errorf("after the decline the desk says %q", said)
			}
			if strings.HasPrefix(evalIn[string](t, ctx, `location.hash`), "#/runs") {
				t.Errorf("after a decline the desk went to %s", evalIn[string](t, ctx, `location.hash`))
			}
			ds := f.decisionBodies()
			var decision, note, hash string
			if len(ds) == 1 {
				json.Unmarshal(ds[0]["decision"], &decision)
				json.Unmarshal(ds[0]["note"], &note)
				json.Unmarshal(ds[0]["tool_input_hash"], &hash)
			}
			if len(ds) != 1 || decision != "deny" || note != why || hash != ws[1].ToolInputHash {
				t.Fatalf("sent %d decisions: %s %q %s", len(ds), decision, note, hash)
			}
			if c := evalIn[string](t, ctx, `document.querySelector('#warrant-count').textContent`); c != "4 pending warrants" {
				t.Errorf("after the decline the count says %q", c)
			}
			browsertest.CheckAxe(t, ctx, size.name+": a warrant declined")
		})
	}
}

// Item 5: the editor lists the members in the order an e-mail is read,
// the attachments as rows (document, name, size), never a JSON box; the
// focus lands on the field the warrant's reason names (cc: "a cc or bcc
// recipient is outside the firm"); the changes are in words ("1 change: cc
// removed"); an address that is not one is named, field and row, before
// anything is sent, and the words go once it is fixed; the server's 400
// names the fields the edit changed, and goes once the edit changes. At
// 1280x900 and 390x844, axe on each state.
func TestDeskEditorForPeople(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	browsertest.AxeSource(t)
	for _, size := range sizes {
		t.Run(size.name, func(t *testing.T) {
			f, ws := triageDesk(t)
			var refused atomic.Bool
			f.decide = func(body map[string]json.RawMessage) (int, any) {
				if !refused.Swap(true) {
					return problem(failure.New(failure.KindInvalidRequest, "field edited_input: does not match the tool's input schema"))
				}
				return asServer(t, ws[0].ApprovalRequestID)(body)
			}
			ctx := openDesk(t, f)
			viewport(t, ctx, size.w, size.h)

			// The attachments, as rows.
			attach := ws[2].ApprovalRequestID
			openEditor(t, ctx, attach)
			if got := evalIn[[]string](t, ctx, fieldControls+`(document.querySelector('`+wsel(attach)+`'))`); !slices.Equal(got,
				[]string{"to input", "cc list:0", "bcc list:0", "subject textarea", "body textarea", "attachments rows:2", "matter_id readonly"}) {
				t.Errorf("the editor's fields: %q", got)
			}
			cells := evalIn[[]string](t, ctx, `[...document.querySelectorAll('`+wsel(attach)+` .object-rows > li:first-child input')].map((i) => i.labels[0].textContent + '=' + i.value)`)
			if !slices.Equal(cells, []string{"Document=DOC-4411", "Name=Amendment 1.pdf", "Size (bytes)=182044"}) {
				t.Errorf("the first attachment's row: %q", cells)
			}
			if n := evalIn[int](t, ctx, `document.querySelectorAll('`+wsel(attach)+` .editor textarea.json').length`); n != 0 {
				t.Errorf("%d JSON boxes in the editor", n)
			}
			click(t, ctx, wsel(attach)+` .object-rows > li:nth-child(2) .remove-row`)
			if err := waitFor(ctx, `document.querySelector('`+wsel(attach)+` .diff-summary').textContent === '1 change: attachments changed (1 removed).'`); err != nil {
				t.Errorf("removing an attachment: %q", evalIn[string](t, ctx, `document.querySelector('`+wsel(attach)+` .diff-summary').textContent`))
			}
			browsertest.CheckAxe(t, ctx, size.name+": the editor with attachments as rows")
			click(t, ctx, wsel(attach)+" .warrant-toggle")

			// The e-mail copying opposing counsel: the focus on cc.
			id := ws[0].ApprovalRequestID
			ed := wsel(id) + " .editor"
			openEditor(t, ctx, id)
			if err := waitFor(ctx, `document.activeElement?.matches('`+ed+` .field-row[data-member="cc"] input')`); err != nil {
				t.Fatalf("the focus is on %s, want cc's first row", evalIn[string](t, ctx, `document.activeElement?.outerHTML.slice(0, 120)`))
			}
			// A bad address: named, field and row; nothing to approve.
			setValue(t, ctx, ed+` .field-row[data-member="cc"] input`, "counsel at harbor-freight")
			if err := waitFor(ctx, `!document.querySelector('`+ed+` .edit-invalid').hidden`); err != nil {
				t.Fatal("a bad address is not named")
			}
			got := evalIn[[]string](t, ctx, `[document.querySelector('`+ed+` .edit-invalid').textContent, document.querySelector('`+ed+` .field-row[data-member="cc"] input').getAttribute('aria-invalid') ?? '',
				String(document.querySelector('`+ed+` button.approve-edit').disabled)]`)
			if !strings.Contains(got[0], "cc, item 1: “counsel at harbor-freight” is not an e-mail address") || got[1] != "true" || got[2] != "true" {
				t.Errorf("a bad address: %q", got)
			}
			browsertest.CheckAxe(t, ctx, size.name+": the editor naming a bad address")
			setValue(t, ctx, ed+` .field-row[data-member="cc"] input`, "counsel@harbor-freight.example")
			if err := waitFor(ctx, `document.querySelector('`+ed+` .edit-invalid').hidden && !document.querySelector('`+ed+` .field-row[data-member="cc"] input').hasAttribute('aria-invalid')`); err != nil {
				t.Errorf("the address fixed, the words stay: %q", evalIn[string](t, ctx, `document.querySelector('`+ed+` .edit-invalid').textContent`))
			}
			// cc removed: the changes in words.
			click(t, ctx, ed+` .field-row[data-member="cc"] .remove-row`)
			if err := waitFor(ctx, `document.querySelector('`+ed+` .diff-summary').textContent === '1 change: cc removed.' && !document.querySelector('`+ed+` button.approve-edit').disabled`); err != nil {
				t.Fatalf("cc removed: %+v", editorOf(t, ctx, id))
			}
			st := editorOf(t, ctx, id)
			if !slices.Equal(st.Diffs, []diffShown{{Member: "cc", Change: "removed", Tag: "Removed", Was: opposingAddr}}) {
				t.Errorf("the changes: %+v", st.Diffs)
			}
			// The server refuses it (400): the fields the edit changed are
			// named; once the edit changes, the refusal goes.
			click(t, ctx, ed+" button.approve-edit")
			if err := waitFor(ctx, `!!document.querySelector('`+ed+` .editor-problems .problem')`); err != nil {
				t.Fatal("the 400 is not shown")
			}
			if p := evalIn[string](t, ctx, `document.querySelector('`+ed+` .editor-problems .problem').textContent`); !strings.Contains(p, "400") || !strings.Contains(p, "The fields this edit changes: cc (removed).") {
				t.Errorf("the refusal says %q", p)
			}
			browsertest.CheckAxe(t, ctx, size.name+": the editor with the server's refusal")
			click(t, ctx, ed+` .field-row[data-member="bcc"] .add-row`)
			if err := waitFor(ctx, `!document.querySelector('`+ed+` .editor-problems .problem')`); err != nil {
				t.Error("the refusal stays once the edit changed")
			}
			setValue(t, ctx, ed+` .field-row[data-member="bcc"] .list-rows input`, firmAddr)
			if err := waitFor(ctx, `document.querySelector('`+ed+` .diff-summary').textContent === '2 changes: cc removed; bcc added.' && !document.querySelector('`+ed+` button.approve-edit').disabled`); err != nil {
				t.Fatalf("cc removed, bcc added: %+v", editorOf(t, ctx, id))
			}
			click(t, ctx, ed+" button.approve-edit")
			if err := waitFor(ctx, `!document.querySelector('`+wsel(id)+` .decided-note').hidden`); err != nil {
				t.Fatalf("the edit approved: %v (%v)", err, f.posts())
			}
			browsertest.CheckAxe(t, ctx, size.name+": an edit approved")
		})
	}
}

// Item 13: the list refreshes itself (here every 200 ms: the desk reads
// window.__deskRefreshMs; by default every 30 s while the tab is visible):
// a warrant that arrives shows, one that went goes, without a click; a
// warrant counsel has open stays open, with its editor, the text typed in
// it and the focus where they were; an open warrant that is no longer
// pending stays, saying so, its buttons disabled. At 1280x900 and
// 390x844, axe on each state.
func TestDeskListRefreshesItself(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	browsertest.AxeSource(t)
	for _, size := range sizes {
		t.Run(size.name, func(t *testing.T) {
			f, ws := triageDesk(t)
			f.approvals = ws[:2]
			ctx := openDeskRefreshing(t, f, 200)
			viewport(t, ctx, size.w, size.h)
			if err := waitFor(ctx, `document.querySelectorAll('#warrants .hash-check.ok').length === 2`); err != nil {
				t.Fatal(err)
			}
			id := ws[0].ApprovalRequestID
			ed := wsel(id) + " .editor"
			openEditor(t, ctx, id)
			subject := ed + ` .field-row[data-member="subject"] textarea`
			evalIn[any](t, ctx, `(() => { document.querySelector('`+subject+`').focus(); return null; })()`)
			press(t, ctx, "a", chromedp.KeyModifiers(chromedp.ModifierCtrl))
			press(t, ctx, "Discovery: next steps")

			// One arrives, one goes.
			f.mu.Lock()
			f.approvals = []handlers.WarrantView{ws[0], ws[2]}
			f.mu.Unlock()
			if err := waitFor(ctx, `!!document.querySelector('`+wsel(ws[2].ApprovalRequestID)+`') && !document.querySelector('`+wsel(ws[1].ApprovalRequestID)+`')`); err != nil {
				t.Fatalf("the list did not refresh itself: %v", err)
			}
			got := evalIn[[]string](t, ctx, `[String(document.querySelector('`+ed+`').hidden), String(document.querySelector('`+wsel(id)+` .warrant-body').hidden),
				String(document.activeElement === document.querySelector('`+subject+`')), document.querySelector('`+subject+`').value,
				document.querySelector('#warrant-count').textContent, String(document.querySelector('#refresh').disabled)]`)
			if !slices.Equal(got, []string{"false", "false", "true", "Discovery: next steps", "2 pending warrants", "false"}) {
				t.Errorf("after a refresh: editor hidden, warrant hidden, focus kept, subject, count, Refresh disabled: %q", got)
			}
			browsertest.CheckAxe(t, ctx, size.name+": the list refreshed, a warrant open with its editor")

			// The open one is decided elsewhere: it stays, saying so.
			f.mu.Lock()
			f.approvals = []handlers.WarrantView{ws[2]}
			f.mu.Unlock()
			if err := waitFor(ctx, `document.querySelector('`+wsel(id)+`').classList.contains('gone')`); err != nil {
				t.Fatalf("an open warrant no longer pending: %v", err)
			}
			got = evalIn[[]string](t, ctx, `[document.querySelector('`+wsel(id)+` .decided-note').textContent,
				[...document.querySelectorAll('`+wsel(id)+` button.approve, `+wsel(id)+` button.decline, `+wsel(id)+` button.approve-edit')].map((b) => String(b.disabled)).join(','),
				document.querySelector('#warrant-count').textContent]`)
			if !strings.Contains(got[0], "no longer pending") || got[1] != "true,true,true" || got[2] != "1 pending warrant" {
				t.Errorf("an open warrant no longer pending: %q", got)
			}
			browsertest.CheckAxe(t, ctx, size.name+": an open warrant no longer pending")
		})
	}
}

// Item 13: a warrant's countdown and its buttons agree: the moment it
// reads "expired", Approve, Edit and Decline are disabled and it says it
// expired (a watcher in the page looks every few milliseconds for a moment
// they disagree); in its last minute the badge says so, not "within the
// hour". At 1280x900 and 390x844, axe on each state.
func TestDeskExpiredWarrantCannotBeApproved(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	browsertest.AxeSource(t)
	for _, size := range sizes {
		t.Run(size.name, func(t *testing.T) {
			f, ws := triageDesk(t)
			f.approvals = ws[2:3]
			ctx := openDesk(t, f)
			viewport(t, ctx, size.w, size.h)
			if err := waitFor(ctx, `!!document.querySelector('#warrants .hash-check.ok')`); err != nil {
				t.Fatal(err)
			}
			// A warrant with seconds left arrives once the desk is up.
			w := ws[1]
			w.ExpiresAt = time.Now().Add(5 * time.Second).UTC().Format(time.RFC3339)
			f.mu.Lock()
			f.approvals = []handlers.WarrantView{w, ws[2]}
			f.mu.Unlock()
			click(t, ctx, "#refresh")
			li := wsel(w.ApprovalRequestID)
			openWarrant(t, ctx, w.ApprovalRequestID)
			if err := waitFor(ctx, `!document.querySelector('`+li+` button.approve').disabled`); err != nil {
				t.Fatalf("the warrant is not signable before it expires: %v", err)
			}
			got := evalIn[[]string](t, ctx, `[document.querySelector('`+li+` .expires').textContent, document.querySelector('`+li+` .expiry-badge').textContent]`)
			if got[0] != "expires in less than 1 min" || got[1] != "⚠ Expires in less than a minute" {
				t.Errorf("in its last seconds the warrant says %q", got)
			}
			browsertest.CheckAxe(t, ctx, size.name+": a warrant in its last minute")
			evalIn[any](t, ctx, `(() => {
				window.__disagree = [];
				const li = document.querySelector('`+li+`');
				const look = () => {
					const expired = li.querySelector('.expires').textContent === 'expired';
					const open = [...li.querySelectorAll('button.approve, button.decline, button.edit')].some((b) => !b.disabled);
					if (expired && open) window.__disagree.push(Date.now());
				};
				new MutationObserver(look).observe(li, {subtree: true, childList: true, characterData: true, attributes: true});
				window.__watch = setInterval(look, 5);
				return null; })()`)
			if err := waitFor(ctx, `document.querySelector('`+li+` .expires').textContent === 'expired'`); err != nil {
				t.Fatalf("the warrant never reads expired: %v", err)
			}
			got = evalIn[[]string](t, ctx, `[String(window.__disagree.length),
				[...document.querySelectorAll('`+li+` button.approve, `+li+` button.edit, `+li+` button.decline')].map((b) => String(b.disabled)).join(','),
				document.querySelector('`+li+` .decided-note').textContent, document.querySelector('#warrant-count').textContent]`)
			if got[0] != "0" || got[1] != "true,true,true" || !strings.Contains(got[2], "expired") {
				t.Errorf("expired: %s moments the countdown and the buttons disagreed; disabled %s; it says %q", got[0], got[1], got[2])
			}
			sent := evalIn[[]string](t, ctx, `(() => { const before = window.__fetches.length;
				for (const b of document.querySelectorAll('`+li+` button.approve')) { b.disabled = false; b.click(); }
				return window.__fetches.slice(before); })()`)
			if len(sent) != 0 || len(f.decisionBodies()) != 0 {
				t.Errorf("an expired warrant's Approve sent %v", sent)
			}
			browsertest.CheckAxe(t, ctx, size.name+": an expired warrant")
		})
	}
}
