package desk_test

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/seed-f6d3920e/warrant/internal/browsertest"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/desk"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// fakeAPI serves the desk with the local sign-in and answers the API calls
// of its warrant list with the views a test gives it, the runs API's own
// WarrantView, as the runs function would. It records every request, so a
// test sees what left the page.
type fakeAPI struct {
	t         *testing.T
	mu        sync.Mutex
	approvals []handlers.WarrantView
	requests  []string // "METHOD /path"
	// receipts answers GET /v1/runs/{run}/receipts the n-th time (from 1)
	// it is asked for run (nil: 404, as a stack without evidence).
	receipts     func(run string, n int) any
	receiptCalls map[string]int
	// tools answers GET /v1/tools (nil: 404, as a stack without the route);
	// matters answers GET /v1/matters (nil: 403, as for a user who keeps no
	// registry).
	tools   []agent.ToolSchema
	matters []handlers.MatterView
	// decide answers a decision, given its body (nil: 200, approved).
	decide    func(body map[string]json.RawMessage) (int, any)
	decisions []map[string]json.RawMessage // the decisions' bodies, in order
	// pageSize > 0 pages GET /v1/approvals as the runs API does: that many
	// a page, next when more follow, each input once (no tool_input);
	// nexts are the next parameters the list was asked with ("" for none).
	pageSize int
	nexts    []string
	// runs answers GET /v1/runs/{run} and events GET .../events (NDJSON
	// lines) for the runs they name (else: completed, and no lines).
	runs   map[string]any
	events map[string][]string
	srv    *httptest.Server
}

const (
	deskFirm      = "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b"
	deskCounsel   = "c0c0c0c0-1111-4222-8333-444455556666"
	deskAssociate = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
)

func newFakeAPI(t *testing.T, approvals ...handlers.WarrantView) *fakeAPI {
	f := &fakeAPI{t: t, approvals: approvals, receiptCalls: map[string]int{}}
	cfg := desk.Config{Auth: "dev", FirmID: deskFirm, Identities: []desk.Identity{{Label: "Counsel", UserID: deskCounsel, Roles: "counsel"},
		{Label: "Associate", UserID: deskAssociate, Name: "Avery Associate", Roles: "associate"}}}
	serve := func(w http.ResponseWriter, r desk.Response) {
		for k, v := range r.Headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(r.Status)
		w.Write([]byte(r.Body))
	}
	answer := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /desk", func(w http.ResponseWriter, r *http.Request) { serve(w, desk.Serve("index.html", cfg)) })
	mux.HandleFunc("GET /desk/{name}", func(w http.ResponseWriter, r *http.Request) { serve(w, desk.Serve(r.PathValue("name"), cfg)) })
	mux.HandleFunc("GET /v1/approvals", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		size, next := f.pageSize, r.URL.Query().Get("next")
		f.nexts = append(f.nexts, next)
		f.mu.Unlock()
		if size == 0 {
			answer(w, 200, map[string]any{"approvals": f.approvals})
			return
		}
		start, err := strconv.Atoi(cmp.Or(next, "0"))
		if err != nil || start < 0 || start > len(f.approvals) {
			answer(w, 400, map[string]any{"title": "Bad Request", "status": 400, "detail": "query parameter next must be the next of a page of this list, as given"})
			return
		}
		end := min(start+size, len(f.approvals))
		page := slices.Clone(f.approvals[start:end])
		for i := range page {
			page[i].ToolInput = nil
		}
		body := map[string]any{"approvals": page}
		if end < len(f.approvals) {
			body["next"] = strconv.Itoa(end)
		}
		answer(w, 200, body)
	})
	mux.HandleFunc("POST /v1/runs/{run}/approvals/{id}", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			answer(w, 400, map[string]any{"title": "Bad Request", "status": 400, "detail": "body: " + err.Error()})
			return
		}
		f.mu.Lock()
		f.decisions = append(f.decisions, body)
		decide := f.decide
		f.mu.Unlock()
		if decide != nil {
			status, v := decide(body)
			if status >= 400 {
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(status)
				json.NewEncoder(w).Encode(v)
				return
			}
			answer(w, status, v)
			return
		}
		answer(w, 200, map[string]any{"approval_request_id": r.PathValue("id"), "status": "approved"})
	})
	mux.HandleFunc("GET /v1/tools", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		tools := f.tools
		f.mu.Unlock()
		if tools == nil {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(404)
			w.Write([]byte(`{"title":"Not Found","status":404,"detail":"no route for GET /v1/tools"}`))
			return
		}
		answer(w, 200, map[string]any{"tools": tools})
	})
	mux.HandleFunc("GET /v1/matters", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		matters := f.matters
		f.mu.Unlock()
		if matters == nil {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(403)
			w.Write([]byte(`{"title":"Forbidden","status":403,"detail":"only counsel or a firm admin may read or keep the matter registry"}`))
			return
		}
		answer(w, 200, map[string]any{"matters": matters})
	})
	mux.HandleFunc("POST /v1/runs/{run}/resume", func(w http.ResponseWriter, r *http.Request) {
		answer(w, 202, map[string]any{"run_id": r.PathValue("run"), "status": "running"})
	})
	mux.HandleFunc("GET /v1/runs/{run}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		run, ok := f.runs[r.PathValue("run")]
		f.mu.Unlock()
		if ok {
			answer(w, 200, run)
			return
		}
		answer(w, 200, map[string]any{"run_id": r.PathValue("run"), "status": "completed"})
	})
	mux.HandleFunc("GET /v1/runs/{run}/events", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		lines := f.events[r.PathValue("run")]
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(200) // without lines, an empty ledger: this API follows no run
		for _, l := range lines {
			io.WriteString(w, l+"\n")
		}
	})
	mux.HandleFunc("GET /v1/runs/{run}/receipts", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.receiptCalls[r.PathValue("run")]++
		n, receipts := f.receiptCalls[r.PathValue("run")], f.receipts
		f.mu.Unlock()
		if receipts == nil {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(404)
			w.Write([]byte(`{"title":"Not Found","status":404,"detail":"evidence is not configured"}`))
			return
		}
		answer(w, 200, receipts(r.PathValue("run"), n))
	})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// decisionBodies are the bodies of the decisions the API received.
func (f *fakeAPI) decisionBodies() []map[string]json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.decisions)
}

// posts are the POST requests the API received.
func (f *fakeAPI) posts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.requests {
		if strings.HasPrefix(r, "POST ") {
			out = append(out, r)
		}
	}
	return out
}

// pendingWarrant is a warrant view as the runs API shows a pending one.
func pendingWarrant(id, canonical, hash, summary string) handlers.WarrantView {
	in := json.RawMessage(canonical)
	if !json.Valid(in) {
		in = json.RawMessage(`{}`)
	}
	return handlers.WarrantView{ApprovalRequestID: id, RunID: "run-" + id, ToolName: "file_court_document",
		ToolInput: in, ToolInputCanonical: canonical, HumanSummary: summary, Reason: "rule court.filing_requires_warrant: a filing",
		RiskTier: "high", ToolInputHash: hash, ExpiresAt: time.Now().Add(time.Hour).UTC().Format(time.RFC3339), Status: "pending",
		RequestedBy: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", RequestedAt: time.Now().UTC().Format(time.RFC3339),
		MatterID: "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99", PolicyVersion: "test"}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// fetchLog records, in the page, every fetch the desk starts, as it starts
// it (installed before the desk's script runs). The desk calls fetch in the
// same task as the click that decides, so right after a click the log says
// whether a request left.
const fetchLog = `window.__fetches = [];
const fetchOrig = window.fetch;
window.fetch = function (input, init) {
  window.__fetches.push(((init && init.method) || 'GET') + ' ' + (typeof input === 'string' ? input : input.url));
  return fetchOrig.apply(this, arguments);
};`

// openDesk signs counsel in to the desk of f in a new headless browser.
func openDesk(t *testing.T, f *fakeAPI) context.Context {
	t.Helper()
	return openDeskAs(t, f, "Counsel")
}

// openDeskAs signs the identity labelled label in to the desk of f in a
// new headless browser.
func openDeskAs(t *testing.T, f *fakeAPI, label string) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(browsertest.Browser(t), 2*time.Minute)
	t.Cleanup(cancel)
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: fetchLog}); err != nil {
		t.Fatalf("install the fetch log: %v", err)
	}
	err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/desk"),
		chromedp.WaitVisible(chromedp.CSS("#dev-signin")))
	if err != nil {
		t.Fatalf("sign in: %v", err)
	}
	if label != "Counsel" {
		evalIn[any](t, ctx, `(() => {
			const s = document.querySelector('#dev-identity');
			s.value = [...s.options].find((o) => o.textContent.startsWith(`+jsQuote(label+" (")+`)).value;
			s.dispatchEvent(new Event('change', {bubbles: true}));
			return null;
		})()`)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#dev-signin-submit")), chromedp.WaitVisible(chromedp.CSS("#whoami"))); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	return ctx
}

func evalIn[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

func waitFor(ctx context.Context, expr string) error {
	_, err := chromedp.Run(ctx, chromedp.Poll[any](expr, chromedp.WithPollingTimeout(30*time.Second)))
	return err
}

// A warrant whose shown hash is not the SHA-256 of its shown canonical
// text (the hash, or the text, changed after the call was hashed: a
// tampered table, a broken proxy) is not signable: the desk says so,
// Approve and Decline stay disabled, and no click (not even one on a
// button whose disabled state was removed) sends anything. Beside it, a
// warrant whose hash matches is approved, so the test sees a decision
// leave when one may.
func TestDeskRefusesAWarrantWhoseHashDoesNotMatch(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	const filing = `{"court":"SF Superior","document_text":"Plaintiff moves to compel.","document_title":"Motion","matter_id":"3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"}`
	edited := strings.Replace(filing, "moves to compel.", "moves to compel, and withdraws its claims.", 1)
	f := newFakeAPI(t,
		pendingWarrant("good", filing, sha256Hex(filing), "File “Motion” with SF Superior."),
		pendingWarrant("other-hash", filing, sha256Hex(filing+" "), "File “Motion” with SF Superior."),
		pendingWarrant("other-text", edited, sha256Hex(filing), "File “Motion” with SF Superior."),
		pendingWarrant("no-hash", filing, "", "File “Motion” with SF Superior."))
	ctx := openDesk(t, f)
	w := func(id string) string { return `document.querySelector('li.warrant[data-approval-id="` + id + `"]')` }
	if err := waitFor(ctx, `document.querySelectorAll('li.warrant').length === 4 && `+
		`[...document.querySelectorAll('.hash-check')].every((e) => !e.classList.contains('pending'))`); err != nil {
		t.Fatalf("the desk did not check the hashes: %v", err)
	}
	if got := evalIn[string](t, ctx, w("good")+`.querySelector('.hash-check').textContent`); !strings.Contains(got, "verified") {
		t.Fatalf("the matching warrant says %q", got)
	}
	if evalIn[bool](t, ctx, w("good")+`.querySelector('button.approve').disabled`) {
		t.Fatal("the matching warrant's Approve is disabled")
	}
	for _, id := range []string{"other-hash", "other-text", "no-hash"} {
		check := evalIn[string](t, ctx, w(id)+`.querySelector('.hash-check').className + ' | ' + `+w(id)+`.querySelector('.hash-check').textContent`)
		if !strings.Contains(check, "bad") || !strings.Contains(check, "HASH MISMATCH") || !strings.Contains(check, "do not approve") {
			t.Errorf("%s: the hash check shows %q, want the mismatch in words", id, check)
		}
		disabled := evalIn[[]bool](t, ctx, `[...`+w(id)+`.querySelectorAll('button.approve, button.decline')].map((b) => b.disabled)`)
		if !slices.Equal(disabled, []bool{true, true}) {
			t.Errorf("%s: Approve and Decline disabled: %v, want both", id, disabled)
		}
		// Clicked as they are, then with the disabled state removed (the
		// handler itself refuses an unverified hash): nothing is fetched.
		sent := evalIn[[]string](t, ctx, `(() => {
			const li = `+w(id)+`, before = window.__fetches.length;
			for (const b of li.querySelectorAll('button.approve, button.decline')) b.click();
			for (const b of li.querySelectorAll('button.approve, button.decline')) { b.disabled = false; b.click(); }
			return window.__fetches.slice(before);
		})()`)
		if len(sent) != 0 {
			t.Errorf("%s: clicking its buttons sent %v", id, sent)
		}
	}
	if posts := f.posts(); len(posts) != 0 {
		t.Fatalf("the API received %v before counsel approved the matching warrant", posts)
	}

	// The matching warrant is approved: its decision and its resume leave,
	// and nothing else does.
	openWarrant(t, ctx, "good")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`li.warrant[data-approval-id="good"] button.approve`))); err != nil {
		t.Fatal(err)
	}
	// Other warrants wait (unsignable as they are): the desk stays on the
	// list once the resume is answered, and says what was decided.
	if err := waitFor(ctx, `window.__fetches.includes('POST /v1/runs/run-good/resume') && !document.querySelector('li.warrant[data-approval-id="good"] .decided-note').hidden`); err != nil {
		t.Fatalf("approving the matching warrant: %v (the page fetched %v)", err, evalIn[[]string](t, ctx, `window.__fetches`))
	}
	want := []string{"POST /v1/runs/run-good/approvals/good", "POST /v1/runs/run-good/resume"}
	if sent := evalIn[[]string](t, ctx, `window.__fetches.filter((r) => r.startsWith('POST '))`); !slices.Equal(sent, want) {
		t.Fatalf("the page sent %v, want %v", sent, want)
	}
	if posts := f.posts(); !slices.Equal(posts, want) {
		t.Fatalf("the API received %v, want %v", posts, want)
	}
}

// shown is what the desk shows of a text: the labels of the characters it
// made visible (span.ctl, "⟨U+XXXX⟩") and the rest of its text.
type shown struct {
	Labels []string `json:"labels"`
	Text   string   `json:"text"`
}

// Every character of the one table (contracts.InvisibleRanges, which the
// desk's script is generated from) is shown as ⟨U+XXXX⟩ wherever the desk
// puts untrusted text: the canonical arguments, the summary and the
// fields. Each range's first and last code point is tried, raw, in a
// summary the server did not escape (the desk does not rely on it), and no
// invisible character is left in what the desk shows as text.
func TestDeskShowsEveryInvisibleCharacter(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	var text strings.Builder
	var want []string
	for _, rg := range contracts.InvisibleRanges() {
		for _, r := range slices.Compact([]rune{rg[0], rg[1]}) {
			text.WriteString("a")
			text.WriteRune(r)
			want = append(want, fmt.Sprintf("⟨U+%04X⟩", r))
		}
	}
	text.WriteString("z")
	input, err := json.Marshal(map[string]string{"t": text.String()})
	if err != nil {
		t.Fatal(err)
	}
	canonical := `{"t":"` + text.String() + `"}` // the raw characters, not JSON's escapes
	f := newFakeAPI(t, pendingWarrant("inv", canonical, sha256Hex(canonical), "File "+text.String()+"."))
	f.approvals[0].ToolInput = input
	ctx := openDesk(t, f)
	if err := waitFor(ctx, `document.querySelector('li.warrant[data-approval-id="inv"] .hash-check.ok') !== null`); err != nil {
		t.Fatalf("the desk did not show the warrant with its hash verified: %v", err)
	}
	t.Logf("%d code points, the first and last of %d ranges", len(want), len(contracts.InvisibleRanges()))
	for _, sel := range []string{"pre.args", ".summary", "dl.fields dd"} {
		raw := evalIn[string](t, ctx, `(() => {
			const el = document.querySelector('li.warrant[data-approval-id="inv"] `+sel+`');
			const labels = [...el.querySelectorAll('span.ctl')].map((s) => s.textContent);
			const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
			let text = '';
			while (walk.nextNode()) if (!walk.currentNode.parentElement.closest('span.ctl')) text += walk.currentNode.data;
			return JSON.stringify({labels, text});
		})()`)
		var got shown
		if err := json.Unmarshal([]byte(raw), &got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Labels, want) {
			missing := slices.DeleteFunc(slices.Clone(want), func(l string) bool { return slices.Contains(got.Labels, l) })
			t.Errorf("%s: %d characters made visible, want %d; not made visible: %v", sel, len(got.Labels), len(want), missing)
		}
		for _, r := range got.Text {
			if contracts.Invisible(r) {
				t.Errorf("%s: U+%04X is shown as itself", sel, r)
			}
		}
	}
}

// Issue 18: for a tool the firm connected (a catalog tool), the desk shows
// the system that runs the call and the schema the catalog pinned it to,
// with the server's name made visible as any text is; a builtin tool's
// warrant shows neither.
func TestDeskShowsAnExternalToolsServerAndPin(t *testing.T) {
	canonical := `{"matter":"3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99","title":"Motion"}`
	ext := pendingWarrant("a1b2c3d4-0000-4000-8000-000000000001", canonical, sha256Hex(canonical), "File “Motion”.")
	ext.ToolName, ext.ToolServer, ext.ToolSchemaSHA256 = "dms_file", "imanage\u202e", strings.Repeat("ab", 32)
	builtin := pendingWarrant("a1b2c3d4-0000-4000-8000-000000000002", canonical, sha256Hex(canonical), "File.")
	ctx := openDesk(t, newFakeAPI(t, ext, builtin))
	if err := waitFor(ctx, `document.querySelectorAll('li.warrant').length === 2`); err != nil {
		t.Fatalf("the warrants are not listed: %v", err)
	}
	got := evalIn[[]string](t, ctx, `[...document.querySelectorAll('li.warrant')].map(li =>
		[li.querySelector('.tool-server')?.textContent ?? '', li.querySelector('.tool-schema')?.textContent ?? ''].join('|'))`)
	want := []string{"imanage⟨U+202E⟩|" + strings.Repeat("ab", 32), "|"} // sorted
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("server and pin shown: %q, want %q", got, want)
	}
}

// TestDeskFollowsThePendingListsPages: the desk reads the pending list page
// by page, sending each page's next back until a page has none, and shows
// every warrant, its fields read from the canonical text (the list carries
// no tool_input).
func TestDeskFollowsThePendingListsPages(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	var ws []handlers.WarrantView
	for i := range 5 {
		canonical := fmt.Sprintf(`{"court":"Superior Court","document_title":"Motion %d"}`, i)
		ws = append(ws, pendingWarrant(fmt.Sprintf("a1b2c3d4-0000-4000-8000-00000000000%d", i), canonical, sha256Hex(canonical), "File."))
	}
	f := newFakeAPI(t, ws...)
	f.pageSize = 2
	ctx := openDesk(t, f)
	if err := waitFor(ctx, `document.querySelectorAll('li.warrant .hash-check.ok').length === 5`); err != nil {
		t.Fatalf("the desk did not show the five warrants of three pages: %v", err)
	}
	got := evalIn[[]string](t, ctx, `[...document.querySelectorAll('li.warrant dl.fields')].map(dl => dl.textContent)`)
	slices.Sort(got)
	for i, g := range got {
		if want := fmt.Sprintf("courtSuperior Courtdocument_titleMotion %d", i); g != want {
			t.Errorf("warrant %d's fields read %q, want %q", i, g, want)
		}
	}
	f.mu.Lock()
	nexts := slices.Clone(f.nexts)
	f.mu.Unlock()
	if want := []string{"", "2", "4"}; !slices.Equal(nexts, want) {
		t.Errorf("the list was asked for with next %q, want %q", nexts, want)
	}
}
