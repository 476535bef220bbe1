// Package walkthrough is the local stack's scripted scenario, run by
// cmd/demo and by `localapi -demo`. It talks to the local HTTP API only, as a
// client would (with the local dev identity headers), and checks each answer:
// a run accepted (202) and followed (?wait) until the worker holds it on a
// court filing, counsel signing the warrant, the resume that
// files exactly once, a replay and another firm refused, the stream
// projection catching up, and the exported ledger verified in this process
// by reducer.Verify, what the operator CLI's `warrant ledger verify` runs.
package walkthrough

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/anchor"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// Dev identities of the walkthrough. The firm and associate are the local
// gateway's defaults; counsel is a second user of the same firm.
const (
	Firm      = "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b"
	Associate = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
	Counsel   = "c0c0c0c0-1111-4222-8333-444455556666"
	OtherFirm = "1d2e3f40-5a6b-4c7d-8e9f-a0b1c2d3e4f5"

	FilingTool = "file_court_document"
	// DemoMatter is the matter the local stack seeds a record for (its
	// client's e-mail domain), for the policy's e-mail rules.
	DemoMatter = "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"
)

// Config of a walkthrough.
type Config struct {
	BaseURL string    // default http://127.0.0.1:3000
	LogDir  string    // where the ledger export is written; default a temp dir
	Out     io.Writer // the step lines; default os.Stdout
	// ProjectionWait bounds the wait for the stream projection; default 20 s.
	ProjectionWait time.Duration
	// RunWait bounds the wait for the worker to take a run as far as it
	// goes (held, completed); default 60 s.
	RunWait time.Duration
	// Poll, when set, follows a run by plain GETs this far apart instead of
	// long polls (?wait=20): for a client whose every call is bounded
	// shorter than a long poll.
	Poll   time.Duration
	Client *http.Client
	// LedgerKey is the stack's LEDGER_KEY (hmac:<hex> locally): with it the
	// export ends with the run's signed head and its MAC is verified too.
	LedgerKey string
}

// StepError is a failed expectation.
type StepError struct {
	Step, Want, Got string
}

func (e *StepError) Error() string {
	return fmt.Sprintf("%s: expected %s, got %s", e.Step, e.Want, e.Got)
}

type walk struct {
	Config
	checks int
	start  time.Time
}

// Run walks the scenario; the error names the first failed expectation.
func Run(ctx context.Context, c Config) error {
	if c.BaseURL == "" {
		c.BaseURL = "http://127.0.0.1:3000"
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.Out == nil {
		c.Out = os.Stdout
	}
	if c.ProjectionWait <= 0 {
		c.ProjectionWait = 20 * time.Second
	}
	if c.RunWait <= 0 {
		c.RunWait = 60 * time.Second
	}
	if c.Client == nil {
		c.Client = &http.Client{Timeout: 120 * time.Second}
	}
	if c.LogDir == "" {
		d, err := os.MkdirTemp("", "warrant-demo-")
		if err != nil {
			return err
		}
		c.LogDir = d
	}
	w := &walk{Config: c, start: time.Now()}
	err := w.run(ctx)
	if err != nil {
		fmt.Fprintf(c.Out, "✗ %v\n", err)
		return err
	}
	fmt.Fprintf(c.Out, "demo: all %d checks passed in %.1fs\n", w.checks, time.Since(w.start).Seconds())
	return nil
}

func (w *walk) ok(format string, args ...any) {
	w.checks++
	fmt.Fprintf(w.Out, "✓ "+format+"\n", args...)
}

func (w *walk) note(format string, args ...any) {
	fmt.Fprintf(w.Out, "    "+format+"\n", args...)
}

type who struct{ firm, user, roles string }

var (
	associate = who{Firm, Associate, "associate"}
	counsel   = who{Firm, Counsel, "counsel"}
	outsider  = who{OtherFirm, Counsel, "counsel"}
)

type answer struct {
	status  int
	header  http.Header
	body    []byte
	json    map[string]any
	problem string // kind: detail, for problem+json answers
}

func (w *walk) call(ctx context.Context, as who, method, path string, body any) (*answer, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, w.BaseURL+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("X-Dev-Firm", as.firm)
	req.Header.Set("X-Dev-User", as.user)
	req.Header.Set("X-Dev-Roles", as.roles)
	resp, err := w.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w (is the local API up? make run)", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	a := &answer{status: resp.StatusCode, header: resp.Header, body: b}
	ct := resp.Header.Get("Content-Type")
	if strings.Contains(ct, "json") && !strings.Contains(ct, "ndjson") {
		_ = json.Unmarshal(b, &a.json)
	}
	if strings.HasPrefix(ct, "application/problem+json") && a.json != nil {
		a.problem = fmt.Sprintf("%v: %v", a.json["kind"], a.json["detail"])
	}
	return a, nil
}

func (a *answer) describe() string {
	if a.problem != "" {
		return fmt.Sprintf("%d (%s)", a.status, a.problem)
	}
	s := strings.TrimSpace(string(a.body))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return fmt.Sprintf("%d %s", a.status, s)
}

func str(m map[string]any, k string) string {
	if m == nil {
		return ""
	}
	s, _ := m[k].(string)
	return s
}

func num(m map[string]any, k string) int64 {
	if m == nil {
		return 0
	}
	f, _ := m[k].(float64)
	return int64(f)
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8] + "…"
	}
	return id
}

func (w *walk) expect(step string, a *answer, status int) error {
	if a.status != status {
		return &StepError{Step: step, Want: strconv.Itoa(status), Got: a.describe()}
	}
	return nil
}

// ledgerLine is what the walkthrough reads of a ledger line.
type ledgerLine struct {
	Seq     int64  `json:"seq"`
	Type    string `json:"type"`
	Hash    string `json:"hash"`
	Payload struct {
		ToolName  string `json:"tool_name"`
		Status    string `json:"status"`
		EffectRef string `json:"effect_ref"`
	} `json:"payload"`
}

func (w *walk) run(ctx context.Context) error {
	fmt.Fprintf(w.Out, "demo: %s as firm %s (associate %s, counsel %s)\n", w.BaseURL, short(Firm), short(Associate), short(Counsel))

	// 1. An associate asks the matter assistant to file a motion.
	matter := uuid.NewString()
	a, err := w.call(ctx, associate, "POST", "/v1/runs", map[string]any{
		"agent_key": "matter_assistant", "matter_id": matter,
		"counsel_message": "Please file the motion to compel discovery in this matter.",
	})
	if err != nil {
		return err
	}
	if err := w.expect("start run", a, 202); err != nil {
		return err
	}
	runID := str(a.json, "run_id")
	if runID == "" || a.header.Get("Location") == "" {
		return &StepError{"start run", "202 with the run_id and a Location", a.describe()}
	}
	w.ok("run %s accepted (202 %s): the worker takes it from the queue", short(runID), str(a.json, "status"))

	// The worker runs the model until the filing holds the run on a warrant.
	t0 := time.Now()
	if a, err = w.follow(ctx, "follow the run", runID); err != nil {
		return err
	}
	run := a.json
	pending, _ := run["pending_approval"].(map[string]any)
	if str(run, "status") != "held" || pending == nil {
		return &StepError{"follow the run", "status held with a pending_approval", a.describe()}
	}
	if t := str(pending, "tool_name"); t != FilingTool {
		return &StepError{"start run", "held on " + FilingTool, "held on " + t}
	}
	approvalID, hash := str(pending, "approval_request_id"), str(pending, "tool_input_hash")
	w.ok("run %s held on %s (warrant %s) after %.1fs", short(runID), FilingTool, short(approvalID), time.Since(t0).Seconds())
	w.note("tool     %s (risk %s)", str(pending, "tool_name"), str(pending, "risk_tier"))
	w.note("summary  %s", str(pending, "human_summary"))
	w.note("reason   %s", str(pending, "reason"))
	w.note("hash     %s", hash)
	w.note("expires  %s", str(pending, "expires_at"))

	approvePath := "/v1/runs/" + runID + "/approvals/" + approvalID
	// 2. Only counsel signs.
	a, err = w.call(ctx, associate, "POST", approvePath, map[string]any{"decision": "approve", "tool_input_hash": hash})
	if err != nil {
		return err
	}
	if err := w.expect("associate approves", a, 403); err != nil {
		return err
	}
	w.ok("an associate cannot sign the warrant (403)")

	// 3. Counsel signs, bound to the hash shown.
	a, err = w.call(ctx, counsel, "POST", approvePath, map[string]any{"decision": "approve", "tool_input_hash": hash,
		"note": "Reviewed the motion; file it."})
	if err != nil {
		return err
	}
	if err := w.expect("counsel approves", a, 200); err != nil {
		return err
	}
	if s := str(a.json, "status"); s != "approved" {
		return &StepError{"counsel approves", "warrant status approved", s}
	}
	w.ok("counsel %s signed the warrant bound to hash %s", short(Counsel), short(hash))

	// 4. Resume under the warrant: the filing executes, the run completes.
	resumePath := "/v1/runs/" + runID + "/resume"
	resumeBody := map[string]any{"approval_request_id": approvalID}
	a, err = w.call(ctx, associate, "POST", resumePath, resumeBody)
	if err != nil {
		return err
	}
	if err := w.expect("resume", a, 202); err != nil {
		return err
	}
	t0 = time.Now()
	if a, err = w.follow(ctx, "follow the resumed run", runID); err != nil {
		return err
	}
	done := a.json
	if s := str(done, "status"); s != "completed" {
		return &StepError{"follow the resumed run", "status completed", a.describe()}
	}
	w.ok("resumed (202): the worker filed and the run completed in %.1fs — %q", time.Since(t0).Seconds(), str(done, "final_text"))

	// 5. The filing happened exactly once, with its effect_ref.
	lines, raw, err := w.ledger(ctx, runID)
	if err != nil {
		return err
	}
	filings, ref := filingsOf(lines)
	if filings != 1 || ref == "" {
		return &StepError{"filing", "exactly one successful " + FilingTool + " with an effect_ref", fmt.Sprintf("%d (effect_ref %q)", filings, ref)}
	}
	w.ok("filing executed once (effect_ref %s)", ref)

	// 6. What it cost.
	w.ok("cost $%s of the $%s cap; %d input + %d output tokens",
		str(done, "cost_usd"), str(done, "cost_cap_usd"), num(done, "input_tokens"), num(done, "output_tokens"))

	// 7. A replayed resume is refused and files nothing.
	a, err = w.call(ctx, associate, "POST", resumePath, resumeBody)
	if err != nil {
		return err
	}
	if err := w.expect("replayed resume", a, 409); err != nil {
		return err
	}
	if lines, _, err = w.ledger(ctx, runID); err != nil {
		return err
	}
	if n, _ := filingsOf(lines); n != 1 {
		return &StepError{"replayed resume", "still one filing", strconv.Itoa(n)}
	}
	w.ok("replayed resume refused (409: %s); still one filing", str(a.json, "detail"))

	// 8. Another firm cannot even see the run.
	a, err = w.call(ctx, outsider, "POST", resumePath, resumeBody)
	if err != nil {
		return err
	}
	if err := w.expect("another firm's resume", a, 404); err != nil {
		return err
	}
	w.ok("another firm's resume → 404 (runs are firm-scoped)")

	// 9. The stream projection catches up with the ledger.
	last := lines[len(lines)-1].Seq
	t0 = time.Now()
	var projected int64
	for {
		a, err = w.call(ctx, associate, "GET", "/v1/runs/"+runID, nil)
		if err != nil {
			return err
		}
		if err := w.expect("get run", a, 200); err != nil {
			return err
		}
		projected = num(a.json, "projected_through_seq")
		if projected >= last && str(a.json, "status") == "completed" {
			break
		}
		if time.Since(t0) > w.ProjectionWait {
			return &StepError{"stream projection", fmt.Sprintf("projected_through_seq %d within %s", last, w.ProjectionWait),
				fmt.Sprintf("%d (status %s)", projected, str(a.json, "status"))}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	w.ok("stream-reduce projected the ledger through seq %d (GET /v1/runs/{id}: completed, %.1fs)", projected, time.Since(t0).Seconds())

	// The server's own check: the ledger folded and held to its signed head.
	a, err = w.call(ctx, associate, "GET", "/v1/runs/"+runID+"?consistent=true", nil)
	if err != nil {
		return err
	}
	if err := w.expect("consistent run view", a, 200); err != nil {
		return err
	}
	ledgerCheck, _ := a.json["ledger"].(map[string]any)
	if v, _ := ledgerCheck["verified"].(bool); !v || num(ledgerCheck, "head_seq") != last {
		return &StepError{"consistent run view", fmt.Sprintf("ledger verified through its signed head at seq %d", last), a.describe()}
	}
	w.ok("the server verified the ledger against its signed head (seq %d, key %s)", last, str(ledgerCheck, "key_id"))

	// 10. Export the ledger with its signed head and verify the file as the
	// operator CLI would (warrant ledger verify --key).
	_, raw, err = w.ledger(ctx, runID)
	if err != nil {
		return err
	}
	file := filepath.Join(w.LogDir, "ledger-"+runID+".ndjson")
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		return err
	}
	state, signed, err := verify(ctx, file, w.LedgerKey)
	if err != nil {
		return &StepError{"ledger verify", "the export to verify (as warrant ledger verify --key)", err.Error()}
	}
	if state.Status != warrant.RunCompleted || state.LastSeq != last {
		return &StepError{"ledger verify", fmt.Sprintf("status completed through seq %d", last),
			fmt.Sprintf("status %s through seq %d", state.Status, state.LastSeq)}
	}
	what := "hash chain intact"
	if signed != nil {
		what += fmt.Sprintf(", signed head at seq %d verified with %s", signed.Seq, signed.KeyID)
	}
	w.ok("ledger exported to %s and verified: %d lines, %s (head %s)", file, len(lines), what, short(state.HeadHash))

	// 11. Every executed effect traced to its warrant (warrant ledger audit).
	effects, err := audit(file)
	if err != nil {
		return &StepError{"ledger audit", "every executed effect with provenance", err.Error()}
	}
	if len(effects) != 2 || effects[1].ToolName != FilingTool || effects[1].ApprovalID != approvalID || effects[1].EffectRef != ref {
		return &StepError{"ledger audit", "the search and the filing, the filing under warrant " + short(approvalID), fmt.Sprintf("%+v", effects)}
	}
	f := effects[1]
	w.ok("audit: the filing traces to warrant %s (asked at seq %d, approved at seq %d by %s as %s, released at seq %d)",
		short(f.ApprovalID), f.BlockedSeq, f.DecidedSeq, short(f.DecidedBy), f.DecidedAs, f.ReleasedSeq)
	return nil
}

// follow long-polls GET /v1/runs/{id}?wait=20 (or, with Poll, polls it), as
// a client does after a 202, until the run is no longer running; at most
// RunWait in all.
func (w *walk) follow(ctx context.Context, step, runID string) (*answer, error) {
	t0 := time.Now()
	path := "/v1/runs/" + runID + "?wait=20"
	if w.Poll > 0 {
		path = "/v1/runs/" + runID + "?consistent=true"
	}
	for {
		if w.Poll > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(w.Poll):
			}
		}
		a, err := w.call(ctx, associate, "GET", path, nil)
		if err != nil {
			return nil, err
		}
		if err := w.expect(step, a, 200); err != nil {
			return nil, err
		}
		if str(a.json, "status") != "running" {
			return a, nil
		}
		if time.Since(t0) > w.RunWait {
			return nil, &StepError{step, fmt.Sprintf("the run to stop running within %s", w.RunWait), a.describe()}
		}
	}
}

// audit traces every executed effect of the exported file to its
// provenance, as `warrant ledger audit FILE` does.
func audit(file string) ([]reducer.Provenance, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var lines []contracts.Line
	if _, err := contracts.ReadExport(bytes.NewReader(b), func(l contracts.Line) error { lines = append(lines, l); return nil }); err != nil {
		return nil, err
	}
	return reducer.Audit(lines)
}

func filingsOf(lines []ledgerLine) (n int, ref string) {
	for _, l := range lines {
		if l.Type == "tool.completed" && l.Payload.ToolName == FilingTool && l.Payload.Status == "success" {
			n++
			ref = l.Payload.EffectRef
		}
	}
	return n, ref
}

// ledger reads the whole ledger, page by page.
func (w *walk) ledger(ctx context.Context, runID string) ([]ledgerLine, []byte, error) {
	var all []byte
	var lines []ledgerLine
	after := "0"
	for {
		a, err := w.call(ctx, associate, "GET", "/v1/runs/"+runID+"/events?head=true&after_seq="+after, nil)
		if err != nil {
			return nil, nil, err
		}
		if err := w.expect("read ledger", a, 200); err != nil {
			return nil, nil, err
		}
		for _, l := range bytes.Split(bytes.TrimSpace(a.body), []byte("\n")) {
			if len(l) == 0 {
				continue
			}
			all = append(append(all, l...), '\n')
			if bytes.HasPrefix(l, []byte(`{"ledger_head":`)) {
				continue // the signed head that ends the export
			}
			var ll ledgerLine
			if err := json.Unmarshal(l, &ll); err != nil {
				return nil, nil, &StepError{"read ledger", "NDJSON lines", string(l)}
			}
			lines = append(lines, ll)
		}
		next := a.header.Get("X-Next-After-Seq")
		if next == "" {
			break
		}
		after = next
	}
	if len(lines) == 0 {
		return nil, nil, &StepError{"read ledger", "ledger lines", "none"}
	}
	return lines, all, nil
}

// verify reads the exported file back and folds it as `warrant ledger verify
// [--key KEY] FILE` does: every line parsed, chain-checked and applied, and,
// with the ledger key, the signed head's MAC checked and the ledger held to
// it.
func verify(ctx context.Context, file, key string) (reducer.RunState, *contracts.HeadLine, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return reducer.RunState{}, nil, err
	}
	if key == "" {
		st, err := reducer.Verify(bytes.NewReader(b))
		return st, nil, err
	}
	k, err := anchor.Parse(key, nil)
	if err != nil {
		return reducer.RunState{}, nil, err
	}
	return reducer.VerifySigned(ctx, bytes.NewReader(b), anchor.NewKeyring(k))
}
