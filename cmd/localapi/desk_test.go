package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/seed-f6d3920e/warrant/internal/browsertest"
	"github.com/seed-f6d3920e/warrant/internal/walkthrough"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// stack is localapi serving (no demo) on a free port, until the test ends.
type deskStack struct {
	t    *testing.T
	base string
	http *http.Client
	// stderr is localapi's progress output, where it prints each
	// notification the functions send ("event <type> <bus> <detail>").
	stderr *syncBuf
}

func startStack(t *testing.T) *deskStack {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr := freeAddr(t)
	var stderr syncBuf
	cmd := localapi(ctx, "-addr", addr, "-log-dir", t.TempDir())
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("localapi stderr:\n%s", stderr.String())
		}
	})
	s := &deskStack{t: t, base: "http://" + addr, http: &http.Client{Timeout: 30 * time.Second}, stderr: &stderr}
	deadline := time.Now().Add(3 * time.Minute) // the first start builds the functions
	for {
		resp, err := s.http.Get(s.base + "/desk")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("localapi did not serve /desk: %v\n%s", err, stderr.String())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// devNames are the dev identities' display names, sent as X-Dev-Name as the
// desk's sign-in sends them.
var devNames = map[string]string{walkthrough.Counsel: DevCounselName, walkthrough.Associate: DevAssociateName}

// api calls the local API as a dev identity.
func (s *deskStack) api(method, path, user, roles string, body any) (int, map[string]any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.base+path, rd)
	req.Header.Set(HeaderDevFirm, DevFirm)
	req.Header.Set(HeaderDevUser, user)
	req.Header.Set(HeaderDevRoles, roles)
	if name := devNames[user]; name != "" {
		req.Header.Set(HeaderDevName, name)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// heldRun has the associate start a run asking for a filing and follows it
// until the worker holds it on the filing's warrant.
func (s *deskStack) heldRun() (runID, approvalID string) {
	s.t.Helper()
	runID, p := s.heldOn("Please file the motion to compel discovery in this matter.")
	return runID, p["approval_request_id"].(string)
}

// heldOn has the associate start a run on the demo matter with message
// and follows it until the worker holds it; it returns the run and its
// pending warrant.
func (s *deskStack) heldOn(message string) (runID string, pending map[string]any) {
	s.t.Helper()
	st, m := s.api("POST", "/v1/runs", walkthrough.Associate, "associate", map[string]any{
		"agent_key": "matter_assistant", "matter_id": walkthrough.DemoMatter,
		"counsel_message": message})
	if st != 202 {
		s.t.Fatalf("start run: %d %v", st, m)
	}
	runID, _ = m["run_id"].(string)
	for range 10 {
		st, m = s.api("GET", "/v1/runs/"+runID+"?wait=20", walkthrough.Associate, "associate", nil)
		if st == 200 && m["status"] != "running" {
			break
		}
	}
	p, _ := m["pending_approval"].(map[string]any)
	if m["status"] != "held" || p == nil {
		s.t.Fatalf("the run is not held: %v", m)
	}
	return runID, p
}

// ledgerLine is a line of a run's ledger as GET /v1/runs/{id}/events
// answers it.
type ledgerLine struct {
	Seq     int64          `json:"seq"`
	Type    string         `json:"type"`
	Payload map[string]any `json:"payload"`
}

// ledger reads the whole of a run's ledger through the API, page by page.
func (s *deskStack) ledger(runID, user, roles string) []ledgerLine {
	s.t.Helper()
	var lines []ledgerLine
	after := ""
	for range 100 {
		req, _ := http.NewRequest("GET", s.base+"/v1/runs/"+runID+"/events"+after, nil)
		req.Header.Set(HeaderDevFirm, DevFirm)
		req.Header.Set(HeaderDevUser, user)
		req.Header.Set(HeaderDevRoles, roles)
		resp, err := s.http.Do(req)
		if err != nil {
			s.t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			s.t.Fatalf("events of %s: %d %s", runID, resp.StatusCode, body)
		}
		for _, l := range strings.Split(string(body), "\n") {
			if strings.TrimSpace(l) == "" {
				continue
			}
			var line ledgerLine
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				s.t.Fatalf("a ledger line: %v: %s", err, l)
			}
			lines = append(lines, line)
		}
		next := resp.Header.Get("X-Next-After-Seq")
		if next == "" {
			return lines
		}
		after = "?after_seq=" + next
	}
	s.t.Fatalf("the ledger of %s does not end", runID)
	return nil
}

// signIn opens the desk in the tab of ctx and signs in as the dev identity
// labelled label.
func signIn(ctx context.Context, base, label string) error {
	return chromedp.Do(ctx,
		chromedp.Navigate(base+"/desk"),
		chromedp.WaitVisible(chromedp.CSS("#dev-signin")),
		chromedp.SetValue(chromedp.CSS("#dev-identity"), map[string]string{"Counsel": "0", "Associate": "1"}[label]),
		evalVoid(`document.querySelector('#dev-identity').dispatchEvent(new Event('change', {bubbles: true}))`),
		chromedp.Click(chromedp.CSS("#dev-signin-submit")),
		chromedp.WaitVisible(chromedp.CSS("#whoami")))
}

// evalVoid evaluates expr for its effect.
func evalVoid(expr string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[any](expr)(ctx, t)
		return chromedp.Void{}, err
	}
}

// poll waits (up to d) until expr is truthy in the page.
func poll(expr string, d time.Duration) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Poll[any](expr, chromedp.WithPollingTimeout(d))(ctx, t)
		return chromedp.Void{}, err
	}
}

func text(ctx context.Context, sel string) (string, error) {
	return chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
}

func warrantSel(approvalID string) string {
	return fmt.Sprintf(`li.warrant[data-approval-id=%q]`, approvalID)
}

// TestDeskInABrowser drives the counsel's desk in headless Chromium on the
// local stack: an associate's run is held on a court filing; counsel signs
// in, sees the full filing text and approves; the run completes with its
// chain verified by the server; a second tab's stale approval shows the
// 409 in words; an associate sees no Approve button, and a POST forged from
// the associate's page is refused 403. Screenshots of the desk and the run
// page are written to .localapi/ (docs/LOCAL.md).
func TestDeskInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the whole stack and a browser; skipped with -short")
	}
	browserCtx := browsertest.Browser(t)
	s := startStack(t)
	runID, approvalID := s.heldRun()
	w := warrantSel(approvalID)

	ctx, cancelT := context.WithTimeout(browserCtx, 4*time.Minute)
	defer cancelT()

	// Counsel signs in and sees the warrant with the whole filing text,
	// its hash checked in the browser.
	if err := signIn(ctx, s.base, "Counsel"); err != nil {
		t.Fatalf("counsel's sign-in: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(w+" pre.args")),
		poll(`document.querySelector('`+w+` .hash-check').textContent.includes('verified')`, 30*time.Second)); err != nil {
		t.Fatalf("counsel's desk: %v", err)
	}
	args, err := text(ctx, w+" pre.args")
	if err != nil {
		t.Fatal(err)
	}
	const filingText = "Plaintiff moves to compel Defendant to produce the documents requested in Plaintiff's First Set of Requests for Production."
	if !strings.Contains(args, filingText) || !strings.Contains(args, `"document_title":"Motion to Compel Discovery"`) {
		t.Fatalf("the desk does not show the exact filing: %q", args)
	}
	buttons, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('`+w+` button.approve').length`))
	if err != nil || buttons != 1 {
		t.Fatalf("approve buttons: %d, %v", buttons, err)
	}
	screenshot(t, ctx, "desk.png")

	// A second tab of the same browser loads the same warrant before
	// counsel decides it in the first. Its list does not refresh itself
	// (window.__deskRefreshMs: a day), so it still offers the warrant when
	// counsel approves it there too.
	stale, cancelStale := chromedp.NewContext(browserCtx)
	defer cancelStale()
	if _, err := chromedp.Call(stale, page.AddScriptToEvaluateOnNewDocument,
		page.AddScriptToEvaluateOnNewDocumentParams{Source: "window.__deskRefreshMs = 86400000;"}); err != nil {
		t.Fatal(err)
	}
	if err := signIn(stale, s.base, "Counsel"); err != nil {
		t.Fatalf("second tab: %v", err)
	}
	if err := chromedp.Do(stale, chromedp.WaitVisible(chromedp.CSS(w+" button.approve")),
		poll(`!document.querySelector('`+w+` button.approve').disabled`, 30*time.Second)); err != nil {
		t.Fatalf("second tab: %v", err)
	}

	// Approve: the desk resumes the run, which completes; the run page shows
	// the server's chain check and the ledger as a timeline.
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(w+" button.approve")),
		chromedp.WaitVisible(chromedp.CSS("#run-status")),
		poll(`document.querySelector('#run-status').textContent.includes('completed')`, 90*time.Second),
		poll(`document.querySelector('#chain').textContent.includes('chain verified')`, 30*time.Second),
		poll(`document.querySelectorAll('#timeline li.event[data-type="run.completed"]').length === 1`, 30*time.Second))
	if err != nil {
		t.Fatalf("approve and follow: %v", err)
	}
	chain, _ := text(ctx, "#chain")
	events, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#timeline li.event').length`))
	if err != nil || events < 8 || !strings.Contains(chain, "chain verified") {
		t.Fatalf("run page: chain %q, %d timeline events (%v)", chain, events, err)
	}
	// Issue 20: the run page shows the run's receipts once a checkpoint of
	// the firm log covers them (the sweeper signs one every few seconds
	// here; the page looks again until then): the filing's receipt names
	// the warrant counsel just signed, and the run ends with every line
	// covered.
	err = chromedp.Do(ctx,
		poll(`(document.querySelector('#receipts-status')?.textContent ?? '').includes('Verified against the firm log, checkpoint')`, 90*time.Second),
		poll(`(document.querySelector('#receipts-status')?.textContent ?? '').includes('run complete: every line covered')`, 90*time.Second))
	if err != nil {
		status, _ := text(ctx, "#receipts-status")
		problem, _ := text(ctx, "#receipts-problem")
		t.Fatalf("receipts: %v (status %q, alert %q)", err, status, problem)
	}
	receipt, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
		const li = [...document.querySelectorAll('#receipts li.receipt[data-kind="effect"]')]
			.find((li) => li.querySelector('.receipt-tool')?.textContent === 'file_court_document');
		if (!li) return [];
		return [li.querySelector('.receipt-tool').textContent, li.dataset.authority, li.querySelector('.authority').textContent,
			li.querySelector('.warrant-id').title, li.querySelector('.decided-by').title, li.querySelector('.decided-as').textContent,
			li.querySelector('.outcome').textContent, String(document.querySelector('#receipts-problem').hidden)];
	})()`))
	if want := []string{"file_court_document", "warrant", "warrant", approvalID, walkthrough.Counsel, "counsel", "success", "true"}; err != nil ||
		strings.Join(receipt, "|") != strings.Join(want, "|") {
		t.Fatalf("the filing's receipt on the run page: %q (%v), want %q", receipt, err, want)
	}
	screenshot(t, ctx, "run.png")
	if st, m := s.api("GET", "/v1/runs/"+runID+"?consistent=true", walkthrough.Associate, "associate", nil); st != 200 ||
		m["status"] != "completed" || m["final_text"] != bedrocktest.DemoFiledText {
		t.Fatalf("the run after the desk's approval: %d %v", st, m)
	}

	// The stale tab's approval is refused in words, never a silent success.
	if err := chromedp.Do(stale, chromedp.Click(chromedp.CSS(w+" button.approve")),
		chromedp.WaitVisible(chromedp.CSS(w+" .problem"))); err != nil {
		t.Fatalf("stale approval: %v", err)
	}
	if problem, _ := text(stale, w+" .problem"); !strings.Contains(problem, "409") {
		t.Fatalf("the stale approval shows %q, want the 409 in words", problem)
	}

	// An associate sees the firm's next warrant without any decision
	// control, and a decision forged from their page is 403.
	_, second := s.heldRun()
	w2 := warrantSel(second)
	associate, cancelA := chromedp.NewContext(browserCtx)
	defer cancelA()
	if err := signIn(associate, s.base, "Associate"); err != nil {
		t.Fatalf("associate's sign-in: %v", err)
	}
	if err := chromedp.Do(associate, chromedp.WaitReady(chromedp.CSS(w2+" pre.args"))); err != nil {
		t.Fatalf("associate's desk: %v", err)
	}
	controls, err := chromedp.Run(associate, chromedp.Evaluate[int](`document.querySelectorAll('button.approve, button.decline, textarea.note').length`))
	if err != nil || controls != 0 {
		t.Fatalf("associate: %d decision controls (%v)", controls, err)
	}
	forge := fmt.Sprintf(`fetch('/v1/runs/%s/approvals/%s', {method: 'POST', headers: {'Content-Type': 'application/json',
		'X-Dev-Firm': %q, 'X-Dev-User': %q, 'X-Dev-Roles': 'associate'},
		body: JSON.stringify({decision: 'approve', tool_input_hash: document.querySelector('%s .hash').textContent.trim()})}).then(r => r.status)`,
		runIDOf(t, s, second), second, DevFirm, walkthrough.Associate, w2)
	forged, err := chromedp.Run(associate, chromedp.Evaluate[int](forge, chromedp.EvalAwaitPromise))
	if err != nil || forged != 403 {
		t.Fatalf("a decision forged from the associate's page answered %d (%v), want 403", forged, err)
	}
}

// runIDOf finds the run a pending warrant belongs to.
func runIDOf(t *testing.T, s *deskStack, approvalID string) string {
	t.Helper()
	st, m := s.api("GET", "/v1/approvals", walkthrough.Counsel, "counsel", nil)
	list, _ := m["approvals"].([]any)
	for _, a := range list {
		if w, _ := a.(map[string]any); w["approval_request_id"] == approvalID {
			return w["run_id"].(string)
		}
	}
	t.Fatalf("approval %s not pending (%d %v)", approvalID, st, m)
	return ""
}

// screenshot writes the tab's page to .localapi/<name> (docs/LOCAL.md links
// them).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := filepath.Join(repo, ".localapi")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: .localapi/%s (%d bytes)", name, len(png))
}

// syncBuf is a bytes.Buffer the subprocess and the test share.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// setField sets the value of the element sel as typing would end (one
// input event).
func setField(sel, v string) chromedp.Action[chromedp.Void] {
	b, _ := json.Marshal(v)
	q, _ := json.Marshal(sel)
	return evalVoid(`(() => { const el = document.querySelector(` + string(q) + `); el.value = ` + string(b) + `;
		el.dispatchEvent(new Event('input', {bubbles: true})); })()`)
}

// TestDeskEditInABrowser: issue 21's edit and approve on the local stack.
// An associate's run is held on the demo's e-mail to the client, copying
// opposing counsel. Counsel (signed in as "Casey Counsel") sees the
// associate's name and the matter's, opens the editor the desk builds from
// the tool's schema (GET /v1/tools), replaces the cc with the firm's
// records address and rewrites the body; the first body (with an SSN) is
// refused by the risk policy, 422 in words; the second is shown with its
// canonical JSON and SHA-256 as the server computes them and the members
// changed; counsel approves it, the desk resumes the run and it completes.
// The run's ledger says the warrant covered exactly that edit
// (approval.decided's edited_input_sha256) and the e-mail sent was exactly
// it (tool.completed's executed_input_sha256). axe-core finds nothing on
// any page on the way.
func TestDeskEditInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the whole stack and a browser; skipped with -short")
	}
	browserCtx := browsertest.Browser(t)
	browsertest.AxeSource(t) // skips (or fails under CI) before the stack starts when axe-core cannot be had
	s := startStack(t)
	runID, pending := s.heldOn("Please e-mail the client an update on discovery.")
	approvalID, _ := pending["approval_request_id"].(string)
	input, _ := pending["tool_input"].(map[string]any)
	if pending["tool_name"] != walkthrough.EmailTool || input == nil || fmt.Sprint(input["cc"]) != "["+bedrocktest.DemoCopyAddress+"]" {
		t.Fatalf("the run is not held on the demo's e-mail: %v", pending)
	}
	w := warrantSel(approvalID)
	ed := w + " .editor"

	// The desk's icon, served by the runs function as an SVG image.
	resp, err := s.http.Get(s.base + "/desk/favicon.svg")
	if err != nil {
		t.Fatal(err)
	}
	icon, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" || !bytes.HasPrefix(icon, []byte("<svg ")) {
		t.Errorf("GET /desk/favicon.svg: %d %s %.40q", resp.StatusCode, resp.Header.Get("Content-Type"), icon)
	}

	ctx, cancelT := context.WithTimeout(browserCtx, 4*time.Minute)
	defer cancelT()
	if err := chromedp.Do(ctx, chromedp.Navigate(s.base+"/desk"), chromedp.WaitVisible(chromedp.CSS("#dev-signin"))); err != nil {
		t.Fatal(err)
	}
	browsertest.CheckAxe(t, ctx, "sign-in")
	if err := signIn(ctx, s.base, "Counsel"); err != nil {
		t.Fatalf("counsel's sign-in: %v", err)
	}
	if who, _ := text(ctx, "#whoami"); !strings.Contains(who, DevCounselName) {
		t.Errorf("whoami %q, want counsel's name", who)
	}
	if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(w+" pre.args")),
		poll(`document.querySelector('`+w+` .hash-check').textContent.includes('verified')`, 30*time.Second)); err != nil {
		t.Fatalf("counsel's desk: %v", err)
	}
	// The requester's name (their token's, recorded when the run started)
	// and the matter's (the registry's).
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[document.querySelector('`+w+` .requester').textContent,
		document.querySelector('`+w+` .matter-name')?.textContent ?? '',
		[...document.querySelectorAll('#filter-matter option')].map((o) => o.textContent).join('|')]`))
	if err != nil || shown[0] != DevAssociateName || shown[1] != "Ridgeway Logistics v. Harbor Freight Systems" || !strings.Contains(shown[2], shown[1]) {
		t.Errorf("requester, matter and matter filter shown: %q (%v)", shown, err)
	}
	browsertest.CheckAxe(t, ctx, "the desk with the e-mail's warrant")

	// The editor, from the tool's schema.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(w+" button.edit")),
		poll(`document.querySelectorAll('`+ed+` .editor-fields > .field-row').length > 0`, 30*time.Second)); err != nil {
		t.Fatalf("open the editor: %v", err)
	}
	fields, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('`+ed+` .editor-fields > .field-row')].map((r) =>
		r.dataset.member + ' ' + (r.tagName === 'FIELDSET' ? 'list' : r.querySelector('input, textarea, select').readOnly ? 'readonly' : r.querySelector('input, textarea, select').tagName.toLowerCase()))`))
	if want := "to input|cc list|bcc list|subject textarea|body textarea|attachments list|matter_id readonly"; err != nil || strings.Join(fields, "|") != want {
		t.Fatalf("the editor's fields: %q (%v), want %s", fields, err, want)
	}
	browsertest.CheckAxe(t, ctx, "the editor open")

	// The recipients: the cc to opposing counsel out, the firm's records in.
	const records = "records@" + DevFirmDomain
	cc := ed + ` .field-row[data-member="cc"]`
	ssnBody := deskString(input["body"]) + " For the records request: SSN 123-45-6789."
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(cc+" .remove-row")),
		chromedp.Click(chromedp.CSS(cc+" .add-row")),
		chromedp.SendKeys(chromedp.CSS(cc+" .list-rows input"), records),
		setField(ed+` .field-row[data-member="body"] textarea`, ssnBody),
		poll(`!document.querySelector('`+ed+` button.approve-edit').disabled`, 10*time.Second),
		chromedp.Click(chromedp.CSS(ed+" button.approve-edit")),
		poll(`document.querySelector('`+ed+` .problem') !== null`, 30*time.Second))
	if err != nil {
		t.Fatalf("the edit with an SSN: %v", err)
	}
	refusal, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[document.querySelector('`+ed+` .problem').textContent,
		String(document.activeElement === document.querySelector('`+ed+` .problem'))]`))
	if err != nil || !strings.HasPrefix(refusal[0], "422 ") || !strings.Contains(refusal[0], walkthrough.RuleSSNOutsideFirm) || refusal[1] != "true" {
		t.Fatalf("the policy's refusal shown: %q (%v), want the 422 naming %s, focused", refusal, err, walkthrough.RuleSSNOutsideFirm)
	}
	browsertest.CheckAxe(t, ctx, "the editor with the policy's 422")

	// The body without the SSN: the edit's canonical JSON and hash, as the
	// server computes them, and the members changed.
	newBody := "We have moved to compel the outstanding discovery; the hearing is set and we will report on the ruling."
	edited := map[string]any{"matter_id": input["matter_id"], "to": input["to"], "cc": []string{records}, "subject": input["subject"], "body": newBody}
	raw, _ := json.Marshal(edited)
	wantCanonical, wantHash, err := contracts.CanonicalInput(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, setField(ed+` .field-row[data-member="body"] textarea`, newBody),
		poll(`document.querySelector('`+ed+` .edit-hash').textContent === '`+wantHash+`'`, 10*time.Second)); err != nil {
		got, _ := text(ctx, ed+" .edit-canonical")
		t.Fatalf("the edit shown: %v: %s, want %s", err, got, wantCanonical)
	}
	view, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[document.querySelector('`+ed+` .edit-canonical').textContent,
		document.querySelector('`+ed+` .edit-hash').textContent,
		[...document.querySelectorAll('`+ed+` ul.diff > li')].map((d) => d.dataset.member + ' ' + d.querySelector('.diff-tag').textContent).join(', ')]`))
	if err != nil || view[0] != string(wantCanonical) || view[1] != wantHash || view[2] != "cc Changed, body Changed" {
		t.Fatalf("the edit shown: %q (%v), want %s %s and body, cc changed", view, err, wantCanonical, wantHash)
	}
	shownHash := view[1]

	// Approve the edit: the desk resumes the run, which sends the e-mail.
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(ed+" button.approve-edit")),
		poll(`(document.querySelector('#run-status')?.textContent ?? '').includes('completed')`, 90*time.Second),
		poll(`document.querySelectorAll('#timeline li.event[data-type="run.completed"]').length === 1`, 30*time.Second),
		poll(`(document.querySelector('#receipts-status')?.textContent ?? '').includes('run complete: every line covered')`, 90*time.Second))
	if err != nil {
		status, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector('#run-status') ?? document.querySelector('`+ed+`'))?.textContent ?? ''`))
		t.Fatalf("approve the edit and follow the run: %v (%q)", err, status)
	}
	if decided, _ := text(ctx, `#timeline li.event[data-type="approval.decided"]`); !strings.Contains(decided, "edited input "+shownHash[:12]) {
		t.Errorf("the run page's approval.decided: %q, want the edit's hash", decided)
	}
	browsertest.CheckAxe(t, ctx, "the run page")
	if st, m := s.api("GET", "/v1/runs/"+runID+"?consistent=true", walkthrough.Associate, "associate", nil); st != 200 ||
		m["status"] != "completed" || m["final_text"] != bedrocktest.DemoEmailedText {
		t.Fatalf("the run after the edit: %d %v", st, m)
	}

	// The ledger: the warrant covered exactly the edit shown, and the
	// e-mail sent was exactly it, once.
	var decisions, sent []ledgerLine
	for _, l := range s.ledger(runID, walkthrough.Counsel, "counsel") {
		switch {
		case l.Type == "approval.decided":
			decisions = append(decisions, l)
		case l.Type == "tool.completed" && l.Payload["tool_name"] == walkthrough.EmailTool:
			sent = append(sent, l)
		}
	}
	if len(decisions) != 1 || decisions[0].Payload["edited_input_sha256"] != shownHash || decisions[0].Payload["tool_input_hash"] != pending["tool_input_hash"] ||
		decisions[0].Payload["decided_by_name"] != DevCounselName {
		t.Fatalf("approval.decided: %+v, want one with edited_input_sha256 %s, decided by %s", decisions, shownHash, DevCounselName)
	}
	if len(sent) != 1 || sent[0].Payload["executed_input_sha256"] != shownHash || sent[0].Payload["status"] != "success" {
		t.Fatalf("tool.completed: %+v, want the e-mail sent once with executed_input_sha256 %s", sent, shownHash)
	}

	// The notifications the run sent (localapi prints each): its hold, the
	// decision and its end, none carrying the requested or the edited
	// input's text.
	var secrets []string
	var collect func(any)
	collect = func(v any) {
		switch x := v.(type) {
		case string:
			if len(x) > 3 && !uuidText.MatchString(x) {
				secrets = append(secrets, x)
			}
		case []any:
			for _, e := range x {
				collect(e)
			}
		case map[string]any:
			for _, e := range x {
				collect(e)
			}
		}
	}
	collect(pending["tool_input"])
	collect(decisions[0].Payload["edited_input"])
	var types []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		types = nil
		for _, line := range strings.Split(s.stderr.String(), "\n") {
			if !strings.HasPrefix(line, "event ") || !strings.Contains(line, `"run_id":"`+runID+`"`) {
				continue
			}
			types = append(types, strings.Fields(line)[1])
			for _, secret := range secrets {
				if strings.Contains(line, secret) {
					t.Errorf("a notification carries the input's %q: %s", secret, line)
				}
			}
		}
		if slices.Contains(types, "run.completed") || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if !slices.Equal(types, []string{"warrant.pending", "warrant.decided", "run.completed"}) {
		t.Errorf("the run's notifications: %v, want its hold, the decision and its end", types)
	}
}

var uuidText = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func deskString(v any) string {
	s, _ := v.(string)
	return s
}

// TestDeskDevNames: the local desk's dev identities carry display names,
// and X-Dev-Name (LOCAL ONLY, like the other X-Dev-* headers) becomes the
// "name" claim, in the authorizer's claims and in the bearer token, never
// a header the function sees; without it, or with a value that is not
// UTF-8, there is no name claim.
func TestDeskDevNames(t *testing.T) {
	names := map[string]string{}
	for _, id := range DevDeskConfig().Identities {
		names[id.Label] = id.Name + " " + id.UserID
	}
	if names["Counsel"] != DevCounselName+" "+walkthrough.Counsel || names["Associate"] != DevAssociateName+" "+walkthrough.Associate {
		t.Fatalf("the dev identities: %v", names)
	}
	route := &Route{Method: "GET", Path: "/v1/approvals", Function: "runs"}
	for _, tc := range []struct{ header, want string }{
		{DevCounselName, DevCounselName},
		{"  Avery Associate ", DevAssociateName},
		{"", ""},
		{"\xff\xfe", ""},
	} {
		req := httptest.NewRequest("GET", "http://127.0.0.1:3000/v1/approvals", nil)
		if tc.header != "" {
			req.Header.Set(HeaderDevName, tc.header)
		}
		ev := toEvent(req, route, nil, nil, "rid", time.Now(), "firm_id", "roles")
		claim, inClaims := ev.RequestContext.Authorizer.JWT.Claims["name"]
		token, inToken := tokenPayload(t, ev)["name"]
		if tc.want == "" {
			if inClaims || inToken {
				t.Errorf("X-Dev-Name %q: name claim %q, token name %v; want none", tc.header, claim, token)
			}
		} else if claim != tc.want || token != tc.want {
			t.Errorf("X-Dev-Name %q: name claim %q, token name %v; want %q", tc.header, claim, token, tc.want)
		}
		if _, ok := ev.Headers["x-dev-name"]; ok {
			t.Errorf("X-Dev-Name %q reached the function as a header", tc.header)
		}
	}
}
