package desk_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// Issue 20: the run page shows the run's receipts (GET
// /v1/runs/{id}/receipts) and what the server's check of them against the
// firm log found. These tests answer that route with the API's own
// handlers.ReceiptsView.

const (
	receiptRun     = "5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a"
	receiptWarrant = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"
	receiptKey     = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

var receiptInput = strings.Repeat("9f", 32)

// filingReceipts are a run's receipts as the server issues them: a court
// filing counsel warranted, a note the policy allowed, and the run's end.
func filingReceipts() []evidence.Receipt {
	base := evidence.Receipt{Schema: evidence.ReceiptSchema, FirmID: deskFirm, RunID: receiptRun, KeyID: receiptKey,
		IssuedAt: "2026-12-03T10:00:09Z", PolicySHA256: strings.Repeat("ab", 32), LineSHA256: strings.Repeat("cd", 32)}
	filing, note, end := base, base, base
	filing.Kind, filing.Seq, filing.Outcome, filing.ToolName = evidence.KindEffect, 12, "success", "file_court_document"
	filing.EffectRef, filing.InputSHA256, filing.ExecutedAt = "eff-1", receiptInput, "2026-12-03T10:00:07Z"
	filing.Authority, filing.WarrantID, filing.DecidedBy, filing.DecidedAs, filing.ApprovedAt =
		evidence.AuthorityWarrant, receiptWarrant, deskCounsel, "counsel", "2026-12-03T10:00:05Z"
	filing.RiskTier, filing.MatchedPolicy, filing.PolicyVersion = "high", "tools.file_court_document", "2026-12-03.2"
	note.Kind, note.Seq, note.Outcome, note.ToolName = evidence.KindEffect, 9, "success", "add_matter_note"
	note.EffectRef, note.InputSHA256, note.ExecutedAt = "eff-0", strings.Repeat("1e", 32), "2026-12-03T10:00:02Z"
	note.Authority, note.RiskTier, note.MatchedPolicy = evidence.AuthorityPolicy, "medium", "tools.add_matter_note"
	end.Kind, end.Seq, end.Outcome, end.StartedAt, end.EndedAt = evidence.KindRun, 15, "completed", "2026-12-03T10:00:00Z", "2026-12-03T10:00:08Z"
	return []evidence.Receipt{filing, end, note} // not in seq order: the page sorts them
}

// openRun signs counsel in to the desk of f and opens the run page of run.
// From then on the page records, in window.__receiptStates, each state the
// receipts section shows in turn: its status line, or "ALERT " and the
// alert's text while the alert is shown.
func openRun(t *testing.T, f *fakeAPI, run string) context.Context {
	t.Helper()
	ctx := openDesk(t, f)
	evalIn[any](t, ctx, `(() => {
		window.__receiptStates = [];
		const note = () => {
			const status = document.querySelector('#receipts-status');
			const alert = document.querySelector('#receipts-problem');
			if (!status || !alert) return;
			const v = alert.hidden ? status.textContent : 'ALERT ' + alert.textContent;
			if (v && window.__receiptStates.at(-1) !== v) window.__receiptStates.push(v);
		};
		new MutationObserver(note).observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true});
		location.hash = '#/runs/`+run+`';
		return null;
	})()`)
	return ctx
}

func receiptsView(verified bool, checkpoint int64, complete bool, problem string, rs []evidence.Receipt) handlers.ReceiptsView {
	return handlers.ReceiptsView{RunID: receiptRun, Receipts: rs, Verified: verified, Checkpoint: checkpoint, Complete: complete, Problem: problem}
}

// A verified run's receipts: the status line says against which checkpoint
// and that the run is complete; one card a receipt, in seq order, with its
// kind, seq, tool, outcome, authority (for a warrant: the warrant, who
// decided it, as what and when; for the policy: the tier and the rule),
// when it ran, the input's hash and the key, long values cut short with
// all of them in the title. The section is a labelled region with a
// heading and a list, its status line a role=status, no alert shown.
func TestRunPageShowsVerifiedReceipts(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	f := newFakeAPI(t)
	f.answerReceipts(func(string, int) any { return receiptsView(true, 3, true, "", filingReceipts()) })
	ctx := openRun(t, f, receiptRun)
	if err := waitFor(ctx, `document.querySelectorAll('#receipts li.receipt').length === 3`); err != nil {
		t.Fatalf("the run page shows no receipts: %v (states %v)", err, evalIn[[]string](t, ctx, `window.__receiptStates`))
	}
	status := evalIn[string](t, ctx, `document.querySelector('#receipts-status').textContent`)
	if status != "Verified against the firm log, checkpoint 3 — run complete: every line covered" {
		t.Errorf("status line %q", status)
	}
	a11y := evalIn[[]string](t, ctx, `(() => {
		const s = document.querySelector('#receipts-status'), list = document.querySelector('#receipts');
		const region = list.closest('section'), heading = document.getElementById(region.getAttribute('aria-labelledby'));
		return [s.getAttribute('role'), String(s.hidden), String(document.querySelector('#receipts-problem').hidden),
			heading.tagName + ' ' + heading.textContent, list.tagName, document.getElementById(list.getAttribute('aria-labelledby')).textContent,
			[...list.querySelectorAll(':scope > li > h3.receipt-heading')].length + ' h3'];
	})()`)
	if want := []string{"status", "false", "true", "H2 Receipts", "OL", "Receipts", "3 h3"}; !slices.Equal(a11y, want) {
		t.Errorf("the section's structure: %q, want %q", a11y, want)
	}

	type card struct {
		Kind, Seq, Heading string
		Fields             map[string]string // label -> text
		Titles             map[string]string // class -> title
	}
	raw := evalIn[string](t, ctx, `JSON.stringify([...document.querySelectorAll('#receipts li.receipt')].map((li) => ({
		Kind: li.dataset.kind, Seq: li.dataset.seq, Heading: li.querySelector('h3').textContent,
		Fields: Object.fromEntries([...li.querySelectorAll('.receipt-fields > .kv')].map((kv) =>
			[kv.querySelector('.label').textContent, kv.textContent.slice(kv.querySelector('.label').textContent.length).trim()])),
		Titles: Object.fromEntries([...li.querySelectorAll('[title]')].map((e) => [e.className, e.title])),
	})))`)
	var cards []card
	if err := json.Unmarshal([]byte(raw), &cards); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, c := range cards {
		order = append(order, c.Kind+" "+c.Seq)
	}
	if !slices.Equal(order, []string{"effect 9", "effect 12", "run 15"}) {
		t.Fatalf("receipts shown %v, want the two effects and the run's end in seq order", order)
	}
	note, filing, end := cards[0], cards[1], cards[2]
	wantFields := map[string]string{"Outcome": "success", "Authority": "warrant", "Warrant": "a1b2c3d4…", "Decided by": "c0c0c0c0…",
		"Decided as": "counsel", "Approved at": "2026-12-03T10:00:05Z", "Executed at": "2026-12-03T10:00:07Z",
		"Input SHA-256": "9f9f9f9f9f9f…", "Key": "sha256:0123456789ab…"}
	if filing.Heading != "effect #12 file_court_document" || !maps.Equal(filing.Fields, wantFields) {
		t.Errorf("the warranted filing: %q %q, want %q", filing.Heading, filing.Fields, wantFields)
	}
	wantTitles := map[string]string{"warrant-id": receiptWarrant, "decided-by": deskCounsel, "input-sha256": receiptInput, "key-id": receiptKey}
	if !maps.Equal(filing.Titles, wantTitles) {
		t.Errorf("the filing's full values (titles): %q, want %q", filing.Titles, wantTitles)
	}
	wantFields = map[string]string{"Outcome": "success", "Authority": "policy", "Risk tier": "medium", "Matched policy": "tools.add_matter_note",
		"Executed at": "2026-12-03T10:00:02Z", "Input SHA-256": "1e1e1e1e1e1e…", "Key": "sha256:0123456789ab…"}
	if note.Heading != "effect #9 add_matter_note" || !maps.Equal(note.Fields, wantFields) {
		t.Errorf("the policy-allowed note: %q %q, want %q", note.Heading, note.Fields, wantFields)
	}
	wantFields = map[string]string{"Outcome": "completed", "Started at": "2026-12-03T10:00:00Z", "Ended at": "2026-12-03T10:00:08Z", "Key": "sha256:0123456789ab…"}
	if end.Heading != "run #15" || !maps.Equal(end.Fields, wantFields) {
		t.Errorf("the run's end: %q %q, want %q", end.Heading, end.Fields, wantFields)
	}
	if states := evalIn[[]string](t, ctx, `window.__receiptStates`); slices.ContainsFunc(states, func(s string) bool { return strings.HasPrefix(s, "ALERT") }) {
		t.Errorf("a verified run showed an alert: %q", states)
	}
}

// answerReceipts sets how the API answers GET /v1/runs/{run}/receipts.
func (f *fakeAPI) answerReceipts(fn func(run string, n int) any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.receipts = fn
}

// receiptLooks is how many times the page asked for run's receipts.
func (f *fakeAPI) receiptLooks(run string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.receiptCalls[run]
}

// No checkpoint covers the run yet: the page says it awaits the next one
// and looks again until one does, then shows the receipts verified, with
// no alert on the way (the server says "not yet" as no problem with
// checkpoint 0, before the firm's first checkpoint too). A verified answer whose run's end is not yet covered is looked at again
// too, until the run is complete.
func TestRunPageAwaitsTheNextCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	all := filingReceipts()
	f := newFakeAPI(t)
	f.answerReceipts(func(_ string, n int) any {
		switch n {
		case 1:
			return receiptsView(false, 0, false, "", []evidence.Receipt{})
		case 2:
			return receiptsView(true, 1, false, "", all[:1]) // the filing, not yet the run's end
		default:
			return receiptsView(true, 2, true, "", all)
		}
	})
	ctx := openRun(t, f, receiptRun)
	if err := waitFor(ctx, `document.querySelector('#receipts-status')?.textContent.startsWith('Verified against the firm log, checkpoint 2')`); err != nil {
		t.Fatalf("the page did not look again until the receipts were verified: %v (states %q, %d looks)",
			err, evalIn[[]string](t, ctx, `window.__receiptStates`), f.receiptLooks(receiptRun))
	}
	states := evalIn[[]string](t, ctx, `window.__receiptStates`)
	want := []string{
		"Awaiting the next checkpoint of the firm log; checking again…",
		"Verified against the firm log, checkpoint 1 — the run’s end awaits the next checkpoint; checking again…",
		"Verified against the firm log, checkpoint 2 — run complete: every line covered",
	}
	if !slices.Equal(states, want) {
		t.Errorf("the receipts section showed %q, want %q", states, want)
	}
	if n := evalIn[int](t, ctx, `document.querySelectorAll('#receipts li.receipt').length`); n != 3 {
		t.Errorf("%d receipts shown, want 3", n)
	}
	// Complete: the page stops looking.
	time.Sleep(2500 * time.Millisecond)
	if calls := f.receiptLooks(receiptRun); calls != 3 {
		t.Errorf("the page asked for the receipts %d times, want 3 (no more once complete)", calls)
	}
}

// Evidence that fails a check is an alert naming the problem (the receipts
// that still carry a good signature are listed, marked unverified), and the
// page does not keep asking.
func TestRunPageAlertsOnAFailedEvidenceCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	const problem = "firm log: log entry 7 records a receipt for seq 12 (effect) that the bundle does not carry: a receipt was dropped or altered"
	f := newFakeAPI(t)
	f.answerReceipts(func(string, int) any { return receiptsView(false, 2, false, problem, filingReceipts()[1:]) })
	ctx := openRun(t, f, receiptRun)
	if err := waitFor(ctx, `document.querySelector('#receipts-problem')?.hidden === false`); err != nil {
		t.Fatalf("no alert: %v (states %q)", err, evalIn[[]string](t, ctx, `window.__receiptStates`))
	}
	got := evalIn[[]string](t, ctx, `(() => {
		const a = document.querySelector('#receipts-problem'), s = document.querySelector('#receipts-status');
		return [a.getAttribute('role'), a.textContent, String(s.hidden || s.textContent === ''),
			String(document.querySelector('#receipts').classList.contains('unverified')),
			[...document.querySelectorAll('#receipts li.receipt')].map((li) => li.dataset.kind + ' ' + li.dataset.seq).join(', ')];
	})()`)
	want := []string{"alert", "Evidence check failed: " + problem, "true", "true", "effect 9, run 15"}
	if !slices.Equal(got, want) {
		t.Errorf("failed check shown as %q, want %q", got, want)
	}
	time.Sleep(2500 * time.Millisecond) // longer than the first wait before looking again
	if calls := f.receiptLooks(receiptRun); calls != 1 {
		t.Errorf("the page asked for failed evidence %d times, want once", calls)
	}
	if states := evalIn[[]string](t, ctx, `window.__receiptStates`); slices.ContainsFunc(states, func(s string) bool { return strings.Contains(s, "Verified") }) {
		t.Errorf("failed evidence was shown as verified: %q", states)
	}
}

// Every string of the receipts view is text: markup in a receipt's fields
// or in the problem is shown as written, and builds no element.
func TestRunPageShowsReceiptMarkupAsText(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	const tool = `<img src="x" class="pwned">file_court_document`
	const decidedAs = `<b class="pwned">counsel</b>`
	const problem = `receipt: receipt 1: <script class="pwned">window.__pwned = 1</script><i class="pwned">bad</i>`
	rs := filingReceipts()
	rs[0].ToolName, rs[0].DecidedAs, rs[0].Outcome = tool, decidedAs, `<u class="pwned">success</u>`
	f := newFakeAPI(t)
	f.answerReceipts(func(string, int) any { return receiptsView(false, 2, false, problem, rs) })
	ctx := openRun(t, f, receiptRun)
	if err := waitFor(ctx, `document.querySelectorAll('#receipts li.receipt').length === 3 && document.querySelector('#receipts-problem').hidden === false`); err != nil {
		t.Fatalf("the receipts are not shown: %v", err)
	}
	got := evalIn[[]string](t, ctx, `(() => {
		const li = document.querySelector('#receipts li.receipt[data-seq="12"]');
		return [li.querySelector('.receipt-tool').textContent, li.querySelector('.decided-as').textContent,
			li.querySelector('.outcome').textContent, document.querySelector('#receipts-problem').textContent,
			String(document.querySelectorAll('.pwned, #receipts img, #receipts b, #receipts u, #receipts-problem script, #receipts-problem i').length),
			String(window.__pwned)];
	})()`)
	want := []string{tool, decidedAs, `<u class="pwned">success</u>`, "Evidence check failed: " + problem, "0", "undefined"}
	if !slices.Equal(got, want) {
		t.Errorf("markup shown as %q, want %q", got, want)
	}
}
