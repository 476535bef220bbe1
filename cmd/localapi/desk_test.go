package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seed-f6d3920e/warrant/internal/browsertest"
	"github.com/seed-f6d3920e/warrant/internal/walkthrough"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
)

// stack is localapi serving (no demo) on a free port, until the test ends.
type deskStack struct {
	t    *testing.T
	base string
	http *http.Client
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
	s := &deskStack{t: t, base: "http://" + addr, http: &http.Client{Timeout: 30 * time.Second}}
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
	st, m := s.api("POST", "/v1/runs", walkthrough.Associate, "associate", map[string]any{
		"agent_key": "matter_assistant", "matter_id": walkthrough.DemoMatter,
		"counsel_message": "Please file the motion to compel discovery in this matter."})
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
	return runID, p["approval_request_id"].(string)
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
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(w+" pre.args")),
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
	// counsel decides it in the first.
	stale, cancelStale := chromedp.NewContext(browserCtx)
	defer cancelStale()
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
	if err := chromedp.Do(associate, chromedp.WaitVisible(chromedp.CSS(w2+" pre.args"))); err != nil {
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
