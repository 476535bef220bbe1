// Package walkthrough is the local stack's scripted scenario, run by
// cmd/demo and by `localapi -demo`. It talks to the local HTTP API only, as a
// client would (with the local dev identity headers), and checks each answer.
// Three runs, one after the other:
//
//   - The filing: a run accepted (202) and followed (?wait) until the worker
//     holds it on a court filing, counsel signing the warrant, the resume
//     that files exactly once, a replay and another firm refused, the stream
//     projection catching up, and the exported ledger verified in this
//     process (reducer.Verify, VerifySigned with the ledger key: what the
//     operator CLI's `warrant ledger verify` runs) and audited
//     (reducer.Audit).
//   - Counsel's edit, on DemoMatter (the local stack seeds its client's and
//     the firm's e-mail domains): an e-mail to the client that copies someone
//     outside the firm is held (fired rule email.copy_outside_firm); counsel's
//     edit that puts an SSN in the body is refused (422 policy_denied naming
//     email.ssn_outside_firm); counsel approves an edit without the cc; the
//     resume sends exactly the edit, and the exported ledger verifies, its
//     tool.completed carries the edit's hash as executed_input_sha256 and
//     the audit traces the e-mail to the warrant.
//   - The matter wall, on DemoMatter: asked about another matter, the model
//     searches it; the policy denies the call (rule matter.wall: tool.requested
//     with action deny, tool.completed denied), nothing is held or asked of
//     counsel, and the run completes.
//
// The texts and addresses it expects are the scripted model's
// (bedrocktest.DemoScript).
package walkthrough

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/anchor"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// Dev identities of the walkthrough. The firm and associate are the local
// gateway's defaults; counsel is a second user of the same firm.
const (
	Firm      = "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b"
	Associate = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
	Counsel   = "c0c0c0c0-1111-4222-8333-444455556666"
	OtherFirm = "1d2e3f40-5a6b-4c7d-8e9f-a0b1c2d3e4f5"

	FilingTool = "file_court_document"
	EmailTool  = "send_client_email"
	SearchTool = "search_matter_documents"
	// DemoMatter is the matter the local stack seeds a record for (its
	// client's e-mail domain), for the policy's e-mail rules.
	DemoMatter = "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"

	// Rules of the risk policy (pkg/toolpolicy/hitl_risk_policy.json) the
	// walkthrough expects to fire.
	RuleCopyOutsideFirm = "email.copy_outside_firm"
	RuleSSNOutsideFirm  = "email.ssn_outside_firm"
	RuleMatterWall      = "matter.wall"
	// RuleUntrustedDestination is the provenance rule (pkg/provenance): a
	// destination found only in what a tool returned.
	RuleUntrustedDestination = "provenance.untrusted_destination"
)

// What the associate asks in the walkthrough's runs: privileged content,
// which no raw read of the table may find.
const (
	msgFiling = "Please file the motion to compel discovery in this matter."
	msgEmail  = "Please e-mail the client an update on discovery."
	msgWall   = "What does the other matter say about discovery?"
	msgStatus = "Where does this matter stand?"
	msgInject = "Please send the client the status from the latest correspondence."
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
	// RawItems, when set, reads every item of a run's partition in the
	// table as stored (each item's attribute values as text), as an
	// operator or a backup would: the walk checks the run's content is in
	// none of them (issue 26). The local stack sets it.
	RawItems func(ctx context.Context, firm, run string) ([]string, error)
	// RawTable, when set, reads every item of the table as stored: the
	// walk ends with a scan that finds none of its runs' privileged
	// content (the messages, the model's words, the tool inputs) in it.
	RawTable func(ctx context.Context) ([]string, error)
	// RetentionDay is how long a day of a retention lasts on the stack
	// (the local stack's -retention-day): when set, the walk ends with a
	// retention of one day passing over two matters, one of them on legal
	// hold (issue 26). Zero: that step is left out (a day is a day).
	RetentionDay time.Duration
	// KMS, when set, is the client a "kms:" LedgerKey is verified with (an
	// operator's credentials): the deploy rehearsal's key is in KMS.
	KMS func() anchor.KMSClient
	// LeftOut names steps (StepRetention) this stack cannot walk, each with
	// the reason, which the walk prints where the step would be.
	LeftOut map[string]string
	// TSACerts, when set, are the stack's time-stamping authority's (the
	// local stack's TSA on loopback): a run's evidence must then carry a
	// checkpoint timestamp from it (issue 30 item 3).
	TSACerts []*x509.Certificate
	// Witnesses, when set, are the stack's witnesses' keys (the local
	// stack's witness on loopback): a run's evidence must then carry each
	// one's cosignature of its checkpoint (issue 30 item 4).
	Witnesses []evidence.WitnessKey
}

// Steps a stack may leave out (Config.LeftOut).
const (
	StepRetention = "retention and legal hold"
)

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
	extra  map[string]string // callWith's headers
	// held is the checkpoint of the walk's first verified evidence, kept
	// as a verifier keeps one: the walk's last step checks the firm log
	// extends it.
	held *evidence.Signed
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
	for k, v := range w.extra {
		req.Header.Set(k, v)
	}
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
		// tool.requested: the risk policy's decision.
		Action        string     `json:"action"`
		PolicyVersion string     `json:"policy_version"`
		FiredRules    firedRules `json:"fired_rules"`
		// tool.completed of an edited call, approval.decided of an edit.
		ExecutedInputSHA256 string     `json:"executed_input_sha256"`
		EditedInputSHA256   string     `json:"edited_input_sha256"`
		EditedRiskTier      string     `json:"edited_risk_tier"`
		EditedFiredRules    firedRules `json:"edited_fired_rules"`
		// tool.requested: where each declared destination was found.
		Provenance []struct {
			Pointer string `json:"pointer"`
			Origins []struct {
				Source string `json:"source"`
				Seq    int64  `json:"seq"`
				Tool   string `json:"tool"`
			} `json:"origins"`
		} `json:"provenance"`
	} `json:"payload"`
}

// firedRules are the risk-policy rules a ledger line says fired.
type firedRules []struct {
	ID string `json:"id"`
}

// ids lists the rules' ids.
func (rs firedRules) ids() []string {
	ids := make([]string, 0, len(rs))
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	return ids
}

func (w *walk) run(ctx context.Context) error {
	fmt.Fprintf(w.Out, "demo: %s as firm %s (associate %s, counsel %s)\n", w.BaseURL, short(Firm), short(Associate), short(Counsel))
	if err := w.filing(ctx); err != nil {
		return err
	}
	if err := w.email(ctx); err != nil {
		return err
	}
	if err := w.injection(ctx); err != nil {
		return err
	}
	if err := w.wall(ctx); err != nil {
		return err
	}
	if err := w.retention(ctx); err != nil {
		return err
	}
	if err := w.logSince(ctx); err != nil {
		return err
	}
	return w.scanAtRest(ctx)
}

// scanAtRest reads the whole table as stored (Config.RawTable), as an
// operator or a backup would, and finds none of the walk's privileged
// content: what the associate asked, what the model answered, what the
// tools were sent.
func (w *walk) scanAtRest(ctx context.Context) error {
	if w.RawTable == nil {
		return nil
	}
	items, err := w.RawTable(ctx)
	if err != nil {
		return &StepError{"raw scan of the table", "its items", err.Error()}
	}
	secrets := []string{msgFiling, msgEmail, msgWall, msgStatus, msgInject, bedrocktest.DemoInjectedAddress,
		bedrocktest.DemoFiledText, bedrocktest.DemoEmailedText, bedrocktest.DemoWalledText, bedrocktest.DemoSummaryText,
		"Motion to Compel Discovery", "Plaintiff moves to compel Defendant", "We have moved to compel the outstanding documents",
		bedrocktest.DemoClientAddress, bedrocktest.DemoCopyAddress}
	for _, it := range items {
		for _, s := range secrets {
			if strings.Contains(it, s) {
				return &StepError{"raw scan of the table", "none of the demo's privileged content in the clear", fmt.Sprintf("%q in an item", s)}
			}
		}
	}
	w.ok("a raw scan of the table's %d items finds none of the demo's %d privileged strings (messages, the model's words, filings, e-mails and addresses)",
		len(items), len(secrets))
	return nil
}

// retention: two closed matters keep their runs' content one day (the
// stack's short day); one of them is put on legal hold. When the day has
// passed, the sweeper has destroyed the content of the other's run (its
// data key gone, a content.destroyed line naming the retention, a receipt
// in the firm log whose evidence verifies offline) and left the held
// matter's run whole.
func (w *walk) retention(ctx context.Context) error {
	if why, ok := w.LeftOut[StepRetention]; ok {
		fmt.Fprintf(w.Out, "demo: %s: left out on this stack: %s\n", StepRetention, why)
		return nil
	}
	if w.RetentionDay <= 0 {
		return nil
	}
	fmt.Fprintf(w.Out, "demo: retention and legal hold (a retention day lasts %s on this stack)\n", w.RetentionDay)
	closed, held := uuid.NewString(), uuid.NewString()
	for _, m := range []struct{ id, name string }{{closed, "Ridgeway lease review (closed)"}, {held, "Harbor Freight supply dispute (closed)"}} {
		step := "retention of matter " + short(m.id)
		a, err := w.callWith(ctx, counsel, "PUT", "/v1/matters/"+m.id, map[string]any{"name": m.name, "client_domains": []string{}, "retention_days": 1},
			map[string]string{"If-None-Match": "*"})
		if err != nil {
			return err
		}
		if err := w.expect(step, a, 201); err != nil {
			return err
		}
	}
	w.ok("matters %s and %s keep their runs' content 1 day after each run ends (retention_days 1)", short(closed), short(held))
	reason := "Litigation reasonably anticipated: preservation letter received."
	a, err := w.call(ctx, counsel, "PUT", "/v1/matters/"+held+"/hold", map[string]any{"reason": reason})
	if err != nil {
		return err
	}
	if err := w.expect("place a legal hold", a, 201); err != nil {
		return err
	}
	w.ok("PUT /v1/matters/%s/hold: on hold since %s, placed by counsel %s", short(held), str(a.json["hold"].(map[string]any), "placed_at"), short(Counsel))

	// The held matter's run first: it falls due no later than the other's,
	// so the pass that destroys the other's content has passed it by.
	var runs [2]string
	for i, m := range []string{held, closed} {
		runID, err := w.startRun(ctx, "start a run of matter "+short(m), m, msgStatus)
		if err != nil {
			return err
		}
		a, err := w.follow(ctx, "follow run "+short(runID), runID)
		if err != nil {
			return err
		}
		if str(a.json, "status") != "completed" || str(a.json, "final_text") != bedrocktest.DemoSummaryText {
			return &StepError{"follow run " + short(runID), "completed with the matter's summary", a.describe()}
		}
		runs[i] = runID
	}
	heldRun, closedRun := runs[0], runs[1]

	t0 := time.Now()
	deadline := t0.Add(w.RunWait + 20*w.RetentionDay)
	var destroyed map[string]any
	for destroyed == nil {
		a, err := w.call(ctx, associate, "GET", "/v1/runs/"+closedRun+"?consistent=true", nil)
		if err != nil {
			return err
		}
		if err := w.expect("follow the closed matter's run", a, 200); err != nil {
			return err
		}
		destroyed, _ = a.json["content_destroyed"].(map[string]any)
		if destroyed != nil {
			if str(a.json, "status") != "completed" || str(a.json, "final_text") != "" || str(destroyed, "reason") != contracts.DestroyedRetention {
				return &StepError{"the closed matter's run", "completed, its content destroyed under its retention, no final text", a.describe()}
			}
			break
		}
		if time.Now().After(deadline) {
			return &StepError{"the closed matter's run", "its content destroyed once its retention passed", a.describe()}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	w.ok("run %s: content destroyed at %s under the matter's retention, %.1fs after it ended; state, cost and hashes stay; unrecoverable from backups after %s",
		short(closedRun), str(destroyed, "at"), time.Since(t0).Seconds(), str(destroyed, "backups_until"))
	if w.RawItems != nil {
		items, err := w.RawItems(ctx, Firm, closedRun)
		if err != nil {
			return err
		}
		for _, it := range items {
			if strings.Contains(it, bedrocktest.DemoSummaryText) {
				return &StepError{"a raw read of run " + short(closedRun), "none of its content", "the summary in the clear"}
			}
		}
	}

	a, err = w.call(ctx, associate, "GET", "/v1/runs/"+heldRun+"?consistent=true", nil)
	if err != nil {
		return err
	}
	if err := w.expect("the held matter's run", a, 200); err != nil {
		return err
	}
	if a.json["content_destroyed"] != nil || str(a.json, "final_text") != bedrocktest.DemoSummaryText {
		return &StepError{"the held matter's run", "its content whole (the matter is on hold)", a.describe()}
	}
	w.ok("run %s of the held matter: past its retention too, its content kept (%q)", short(heldRun), str(a.json, "final_text"))

	// The destruction is a receipt in the firm log: the run's evidence
	// verifies offline, its last receipt the destruction.
	return w.evidence(ctx, closedRun, evidence.KindDestruction)
}

// callWith is call with extra request headers.
func (w *walk) callWith(ctx context.Context, as who, method, path string, body any, headers map[string]string) (*answer, error) {
	w.extra = headers
	defer func() { w.extra = nil }()
	return w.call(ctx, as, method, path, body)
}

// filing: a motion held on a court-filing warrant, signed by counsel, filed
// once on resume; a replay and another firm refused; the projection and the
// exported ledger checked.
func (w *walk) filing(ctx context.Context) error {
	// 1. An associate asks the matter assistant to file a motion.
	runID, err := w.startRun(ctx, "start run", uuid.NewString(), msgFiling)
	if err != nil {
		return err
	}

	// The worker runs the model until the filing holds the run on a warrant.
	t0 := time.Now()
	a, err := w.follow(ctx, "follow the run", runID)
	if err != nil {
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
	lines, _, err := w.ledger(ctx, runID)
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
	x, err := w.export(ctx, "ledger verify", runID, last)
	if err != nil {
		return err
	}
	w.ok("ledger exported to %s and verified: %s", x.file, x)

	// 11. Every executed effect traced to its warrant (warrant ledger audit).
	effects, err := audit(x.file)
	if err != nil {
		return &StepError{"ledger audit", "every executed effect with provenance", err.Error()}
	}
	if len(effects) != 2 || effects[1].ToolName != FilingTool || effects[1].ApprovalID != approvalID || effects[1].EffectRef != ref {
		return &StepError{"ledger audit", "the search and the filing, the filing under warrant " + short(approvalID), fmt.Sprintf("%+v", effects)}
	}
	f := effects[1]
	w.ok("audit: the filing traces to warrant %s (asked at seq %d, approved at seq %d by %s as %s, released at seq %d)",
		short(f.ApprovalID), f.BlockedSeq, f.DecidedSeq, short(f.DecidedBy), f.DecidedAs, f.ReleasedSeq)

	// 11a. The run's content is sealed where it is stored: a raw read of
	// its items finds none of it.
	if err := w.sealedAtRest(ctx, runID, pending); err != nil {
		return err
	}

	// 12. The run's evidence, checked as an outsider would: the published
	// public key only (warrant evidence verify).
	return w.evidence(ctx, runID, "")
}

// evidence waits for the sweeper's checkpoint to cover the run's receipts,
// fetches the bundle and verifies it offline with the key GET /v1/keys
// publishes.
// evidence fetches the run's evidence bundle until it verifies offline,
// complete (every receipt under a checkpoint), with a last receipt of
// kind last ("": any).
func (w *walk) evidence(ctx context.Context, runID, last string) error {
	const step = "evidence"
	keys, err := w.publicKeys(ctx, step)
	if err != nil {
		return err
	}
	t0 := time.Now()
	// A liveness bound, not a measure: the receipts wait on stream-reduce
	// and the sweeper's next checkpoint, which on a loaded machine against
	// moto take a good deal longer than a run does.
	deadline := t0.Add(3 * w.RunWait)
	for {
		a, err := w.call(ctx, associate, http.MethodGet, "/v1/runs/"+runID+"/evidence", nil)
		if err != nil {
			return err
		}
		if err := w.expect(step, a, http.StatusOK); err != nil {
			return err
		}
		var b evidence.Bundle
		if err := contracts.DecodeStrict(a.body, &b); err != nil {
			return &StepError{step, "an evidence bundle", err.Error()}
		}
		rep, verr := evidence.VerifyWith(b, keys, evidence.Options{TSACerts: w.TSACerts, Witnesses: w.Witnesses})
		if verr == nil && rep.Complete && (last == "" || (len(rep.Receipts) > 0 && rep.Receipts[len(rep.Receipts)-1].Kind == last)) {
			what := ""
			if last != "" {
				what = ", the last a " + last + " receipt"
			}
			w.ok("evidence: %d receipts signed by %s%s, verified offline against firm log checkpoint %d (%d entries)%s in %.1fs",
				len(rep.Receipts), keys.IDs()[0][:19]+"…", what, rep.Checkpoint, rep.LogSize, w.attested(rep.Timestamp), time.Since(t0).Seconds())
			if w.held == nil {
				c := *b.Checkpoint
				w.held = &c
			}
			return nil
		}
		if time.Now().After(deadline) {
			got := rep.Pending
			if verr != nil {
				got = verr.Error()
			}
			return &StepError{step, "the run's receipts under a checkpoint, verified", got}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// attested says what vouched for a verified checkpoint beyond the firm's
// key: the TSA's timestamp (ts), the witnesses' cosignatures.
func (w *walk) attested(ts evidence.TimestampReport) string {
	out := ""
	if ts.Checked {
		out = ", timestamped " + ts.At + " by the TSA"
	}
	for _, k := range w.Witnesses {
		out += ", cosigned by witness " + k.Name
	}
	return out
}

// logSince checks, as a verifier who kept the walk's first checkpoint
// would, that the firm log's latest checkpoint extends it: the log from
// the entry after it (GET /v1/evidence/log?from=), every run it records by
// its bundle, the latest checkpoint timestamped and cosigned as the stack's
// TSA and witnesses require, all verified offline.
func (w *walk) logSince(ctx context.Context) error {
	const step = "the firm log since the first checkpoint"
	if w.held == nil {
		return nil
	}
	keys, err := w.publicKeys(ctx, step)
	if err != nil {
		return err
	}
	held, err := evidence.OpenHeld(keys, *w.held)
	if err != nil {
		return &StepError{step, "the kept checkpoint, verified", err.Error()}
	}
	opts := evidence.Options{Since: &held, TSACerts: w.TSACerts, Witnesses: w.Witnesses}
	deadline := time.Now().Add(3 * w.RunWait)
	for {
		rep, verr := w.verifyLogSince(ctx, keys, held, opts)
		if verr == nil {
			w.ok("firm log: checkpoint %d (%d entries, %d runs since) extends checkpoint %d (%d entries) kept at the first run, entry by entry and checkpoint by checkpoint%s; every run's bundle verified",
				rep.Checkpoint, rep.LogSize, len(rep.Runs), held.Checkpoint.Number, held.Checkpoint.Size, w.attested(rep.Timestamp))
			return nil
		}
		var se *StepError
		if errors.As(verr, &se) || time.Now().After(deadline) {
			return &StepError{step, "the latest checkpoint extending the kept one, its log and runs verified", verr.Error()}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// verifyLogSince fetches and verifies the log since held once (a
// *StepError: an answer that was not what it should be; another error: not
// verified yet).
func (w *walk) verifyLogSince(ctx context.Context, keys evidence.KeySet, held evidence.Held, opts evidence.Options) (evidence.LogReport, error) {
	const step = "the firm log since the first checkpoint"
	a, err := w.call(ctx, associate, http.MethodGet, fmt.Sprintf("/v1/evidence/log?from=%d", held.Checkpoint.Size+1), nil)
	if err != nil {
		return evidence.LogReport{}, &StepError{step, "an answer", err.Error()}
	}
	if err := w.expect(step, a, http.StatusOK); err != nil {
		return evidence.LogReport{}, err
	}
	var l evidence.LogBundle
	if err := contracts.DecodeStrict(a.body, &l); err != nil {
		return evidence.LogReport{}, &StepError{step, "a firm log", err.Error()}
	}
	runs := map[string]bool{}
	for _, line := range l.Log.Entries {
		if e, err := evidence.ParseEntry(line); err == nil {
			runs[e.RunID] = true
		}
	}
	var bundles []evidence.Bundle
	for run := range runs {
		a, err := w.call(ctx, associate, http.MethodGet, "/v1/runs/"+run+"/evidence", nil)
		if err != nil {
			return evidence.LogReport{}, &StepError{step, "an answer", err.Error()}
		}
		if err := w.expect(step, a, http.StatusOK); err != nil {
			return evidence.LogReport{}, err
		}
		var b evidence.Bundle
		if err := contracts.DecodeStrict(a.body, &b); err != nil {
			return evidence.LogReport{}, &StepError{step, "an evidence bundle", err.Error()}
		}
		bundles = append(bundles, b)
	}
	rep, err := evidence.VerifyLogWith(l, keys, bundles, opts)
	if err == nil && (rep.Extends == nil || !rep.Extends.Linked || rep.Checkpoint <= held.Checkpoint.Number) {
		err = fmt.Errorf("checkpoint %d, extends %+v", rep.Checkpoint, rep.Extends)
	}
	return rep, err
}

// publicKeys are the keys GET /v1/keys publishes.
func (w *walk) publicKeys(ctx context.Context, step string) (evidence.KeySet, error) {
	a, err := w.call(ctx, associate, http.MethodGet, "/v1/keys", nil)
	if err != nil {
		return nil, err
	}
	if err := w.expect(step, a, http.StatusOK); err != nil {
		return nil, err
	}
	var keyList struct {
		Keys []struct {
			PEM string `json:"public_key_pem"`
		} `json:"keys"`
	}
	var pems []byte
	if json.Unmarshal(a.body, &keyList) == nil {
		for _, k := range keyList.Keys {
			pems = append(pems, k.PEM...)
		}
	}
	keys, err := evidence.ParsePEM(pems)
	if err != nil {
		return nil, &StepError{step, "the public keys (GET /v1/keys)", err.Error()}
	}
	return keys, nil
}

// email: the assistant e-mails the demo matter's client and copies someone
// outside the firm; the policy holds it, counsel's edit that the policy
// denies is refused, counsel approves an edit without the copy, and the
// resume sends exactly the edited e-mail.
func (w *walk) email(ctx context.Context) error {
	fmt.Fprintf(w.Out, "demo: counsel edits an e-mail to the client before it goes out (matter %s)\n", short(DemoMatter))

	// 12. An associate asks for an e-mail to the client; the model copies
	// opposing counsel.
	runID, err := w.startRun(ctx, "start the e-mail run", DemoMatter, msgEmail)
	if err != nil {
		return err
	}
	t0 := time.Now()
	a, err := w.follow(ctx, "follow the e-mail run", runID)
	if err != nil {
		return err
	}
	pending, _ := a.json["pending_approval"].(map[string]any)
	if str(a.json, "status") != "held" || pending == nil {
		return &StepError{"follow the e-mail run", "status held with a pending_approval", a.describe()}
	}
	if t := str(pending, "tool_name"); t != EmailTool {
		return &StepError{"follow the e-mail run", "held on " + EmailTool, "held on " + t}
	}
	rules := firedIDs(pending["fired_rules"])
	if !slices.Contains(rules, RuleCopyOutsideFirm) || str(pending, "policy_version") == "" {
		return &StepError{"e-mail warrant", "fired rule " + RuleCopyOutsideFirm + " under a policy version",
			fmt.Sprintf("fired %v under policy %q", rules, str(pending, "policy_version"))}
	}
	input, _ := pending["tool_input"].(map[string]any)
	if input == nil || str(input, "matter_id") != DemoMatter {
		return &StepError{"e-mail warrant", "the e-mail's input for matter " + DemoMatter, a.describe()}
	}
	approvalID, hash := str(pending, "approval_request_id"), str(pending, "tool_input_hash")
	w.ok("run %s held on %s (warrant %s) after %.1fs: the cc is outside the firm", short(runID), EmailTool, short(approvalID), time.Since(t0).Seconds())
	w.note("to       %s, cc %s", str(input, "to"), strings.Join(strs(input["cc"]), ", "))
	w.note("policy   %s fired %s", str(pending, "policy_version"), strings.Join(rules, ", "))
	w.note("hash     %s", hash)

	// 13. Counsel's edit that the policy denies is refused; nothing is
	// recorded.
	approvePath := "/v1/runs/" + runID + "/approvals/" + approvalID
	withSSN := maps.Clone(input)
	withSSN["body"] = str(input, "body") + " For the records request: SSN 123-45-6789."
	a, err = w.call(ctx, counsel, "POST", approvePath, map[string]any{"decision": "approve", "tool_input_hash": hash, "edited_input": withSSN})
	if err != nil {
		return err
	}
	if err := w.expect("counsel's edit with an SSN", a, 422); err != nil {
		return err
	}
	if k, d := str(a.json, "kind"), str(a.json, "detail"); k != "policy_denied" || !strings.Contains(d, RuleSSNOutsideFirm) {
		return &StepError{"counsel's edit with an SSN", "422 policy_denied naming " + RuleSSNOutsideFirm, a.describe()}
	}
	w.ok("counsel's edit with an SSN in the body refused (422 policy_denied: %s)", str(a.json, "detail"))

	// 14. Counsel approves an edit: no cc, the body reworded.
	edited := map[string]any{"matter_id": input["matter_id"], "to": input["to"], "subject": input["subject"],
		"body": "We have moved to compel the outstanding discovery; the hearing is set and we will report on the ruling."}
	a, err = w.call(ctx, counsel, "POST", approvePath, map[string]any{"decision": "approve", "tool_input_hash": hash, "edited_input": edited,
		"note": "Not to opposing counsel; send it to the client only."})
	if err != nil {
		return err
	}
	if err := w.expect("counsel approves the edit", a, 200); err != nil {
		return err
	}
	editedHash := str(a.json, "edited_input_hash")
	editedInput, _ := a.json["edited_input"].(map[string]any)
	if str(a.json, "status") != "approved" || len(editedHash) != 64 || editedHash == hash || editedInput == nil || editedInput["cc"] != nil {
		return &StepError{"counsel approves the edit", "an approved warrant on the edit (no cc) with its own edited_input_hash", a.describe()}
	}
	w.ok("counsel %s approved the e-mail without the cc (edited hash %s, requested %s)", short(Counsel), short(editedHash), short(hash))

	// 15. Resume: the worker sends the edited e-mail, the run completes.
	a, err = w.call(ctx, associate, "POST", "/v1/runs/"+runID+"/resume", map[string]any{"approval_request_id": approvalID})
	if err != nil {
		return err
	}
	if err := w.expect("resume the e-mail run", a, 202); err != nil {
		return err
	}
	t0 = time.Now()
	if a, err = w.follow(ctx, "follow the resumed e-mail run", runID); err != nil {
		return err
	}
	if str(a.json, "status") != "completed" || str(a.json, "final_text") != bedrocktest.DemoEmailedText {
		return &StepError{"follow the resumed e-mail run", fmt.Sprintf("status completed with %q", bedrocktest.DemoEmailedText), a.describe()}
	}
	w.ok("resumed (202): the worker sent the edited e-mail and the run completed in %.1fs — %q", time.Since(t0).Seconds(), str(a.json, "final_text"))

	// 16. The ledger says the edit ran, once, and nothing else was sent.
	x, err := w.export(ctx, "e-mail ledger verify", runID, 0)
	if err != nil {
		return err
	}
	var sent, decided int
	var decision ledgerLine
	for _, l := range x.lines {
		switch {
		case l.Type == "tool.completed" && l.Payload.ToolName == EmailTool:
			sent++
			if l.Payload.Status != "success" || l.Payload.ExecutedInputSHA256 != editedHash {
				return &StepError{"e-mail ledger", "the e-mail sent with executed_input_sha256 " + editedHash,
					fmt.Sprintf("status %s, executed_input_sha256 %q (seq %d)", l.Payload.Status, l.Payload.ExecutedInputSHA256, l.Seq)}
			}
		case l.Type == "approval.decided":
			decided++
			decision = l
			if l.Payload.EditedInputSHA256 != editedHash {
				return &StepError{"e-mail ledger", "approval.decided with edited_input_sha256 " + editedHash,
					fmt.Sprintf("%q (seq %d)", l.Payload.EditedInputSHA256, l.Seq)}
			}
		}
	}
	if sent != 1 || decided != 1 {
		return &StepError{"e-mail ledger", "one approval.decided and one e-mail sent", fmt.Sprintf("%d decided, %d sent", decided, sent)}
	}
	w.ok("ledger exported to %s and verified: %s", x.file, x)
	w.note("edit     decided at seq %d: risk %s, fired %s", decision.Seq, decision.Payload.EditedRiskTier, strings.Join(decision.Payload.EditedFiredRules.ids(), ", "))
	effects, err := audit(x.file)
	if err != nil {
		return &StepError{"e-mail ledger audit", "every executed effect with provenance", err.Error()}
	}
	if len(effects) != 1 || effects[0].ToolName != EmailTool || effects[0].ApprovalID != approvalID || effects[0].ExecutedInputSHA256 != editedHash {
		return &StepError{"e-mail ledger audit", "the e-mail under warrant " + short(approvalID) + " with the edited input", fmt.Sprintf("%+v", effects)}
	}
	f := effects[0]
	w.ok("audit: the e-mail traces to warrant %s (asked at seq %d, approved as edited at seq %d by %s, ran input %s, not the requested %s)",
		short(f.ApprovalID), f.BlockedSeq, f.DecidedSeq, short(f.DecidedBy), short(f.ExecutedInputSHA256), short(f.InputSHA256))
	return nil
}

// injection: a document in the matter's file asks whoever reads it to
// blind-copy an outside address, and the model does. The e-mail is held:
// the bcc appears only in what the search returned, and the warrant says
// so (provenance.untrusted_destination, naming the step and the field).
// Counsel declines; nothing is sent, and the ledger records where the
// address came from.
func (w *walk) injection(ctx context.Context) error {
	fmt.Fprintf(w.Out, "demo: a document asks for an extra recipient; the policy holds the e-mail and says why (matter %s)\n", short(DemoMatter))

	// 16a. The associate asks for a status from the correspondence; the
	// model reads the file, where a document asks for a bcc.
	runID, err := w.startRun(ctx, "start the correspondence run", DemoMatter, msgInject)
	if err != nil {
		return err
	}
	t0 := time.Now()
	a, err := w.follow(ctx, "follow the correspondence run", runID)
	if err != nil {
		return err
	}
	pending, _ := a.json["pending_approval"].(map[string]any)
	if str(a.json, "status") != "held" || pending == nil || str(pending, "tool_name") != EmailTool {
		return &StepError{"follow the correspondence run", "status held on " + EmailTool, a.describe()}
	}
	input, _ := pending["tool_input"].(map[string]any)
	bcc := strs(input["bcc"])
	var why map[string]any
	rules, _ := pending["fired_rules"].([]any)
	for _, r := range rules {
		if m, _ := r.(map[string]any); str(m, "id") == RuleUntrustedDestination {
			why = m
		}
	}
	if why == nil || str(why, "pointer") != "/bcc/0" || len(bcc) != 1 || bcc[0] != bedrocktest.DemoInjectedAddress ||
		!strings.Contains(str(why, "reason"), SearchTool) || strings.Contains(str(why, "reason"), bedrocktest.DemoInjectedAddress) {
		return &StepError{"correspondence warrant", "fired " + RuleUntrustedDestination + " at /bcc/0 naming " + SearchTool + " (never the address)",
			fmt.Sprintf("fired %v; bcc %v", firedIDs(pending["fired_rules"]), bcc)}
	}
	approvalID, hash := str(pending, "approval_request_id"), str(pending, "tool_input_hash")
	w.ok("run %s held on %s after %.1fs: the bcc came only from a document the search returned", short(runID), EmailTool, time.Since(t0).Seconds())
	w.note("why      %s: %s", bcc[0], str(why, "reason"))

	// 16b. Counsel declines; the run goes on without the e-mail.
	a, err = w.call(ctx, counsel, "POST", "/v1/runs/"+runID+"/approvals/"+approvalID, map[string]any{"decision": "deny", "tool_input_hash": hash,
		"note": "The bcc was asked for by a document in the file, not by us."})
	if err != nil {
		return err
	}
	if err := w.expect("counsel declines the e-mail", a, 200); err != nil {
		return err
	}
	a, err = w.call(ctx, associate, "POST", "/v1/runs/"+runID+"/resume", map[string]any{"approval_request_id": approvalID})
	if err != nil {
		return err
	}
	if err := w.expect("resume the correspondence run", a, 202); err != nil {
		return err
	}
	if a, err = w.follow(ctx, "follow the declined correspondence run", runID); err != nil {
		return err
	}
	if str(a.json, "status") != "completed" || str(a.json, "final_text") != bedrocktest.DemoInjectedDeclinedText {
		return &StepError{"follow the declined correspondence run", fmt.Sprintf("status completed with %q", bedrocktest.DemoInjectedDeclinedText), a.describe()}
	}
	w.ok("counsel declined (200); the run completed without the e-mail — %q", str(a.json, "final_text"))

	// 16c. The ledger records where the bcc came from: the search's result.
	lines, _, err := w.ledger(ctx, runID)
	if err != nil {
		return err
	}
	var searched int64
	for _, l := range lines {
		switch {
		case l.Type == "tool.completed" && l.Payload.ToolName == SearchTool:
			searched = l.Seq
		case l.Type == "tool.completed" && l.Payload.ToolName == EmailTool && l.Payload.Status == "success":
			return &StepError{"correspondence ledger", "no e-mail sent", fmt.Sprintf("%s sent at seq %d", EmailTool, l.Seq)}
		case l.Type == "tool.requested" && l.Payload.ToolName == EmailTool:
			for _, p := range l.Payload.Provenance {
				if p.Pointer != "/bcc/0" {
					continue
				}
				if len(p.Origins) != 1 || p.Origins[0].Source != "tool_result" || p.Origins[0].Tool != SearchTool || p.Origins[0].Seq != searched || searched == 0 {
					return &StepError{"correspondence ledger", fmt.Sprintf("/bcc/0 traced to the result of %s at seq %d", SearchTool, searched),
						fmt.Sprintf("%+v", p.Origins)}
				}
				w.ok("tool.requested at seq %d records /bcc/0 as found only in the result of %s at seq %d (the record names no address)", l.Seq, SearchTool, searched)
				return nil
			}
			return &StepError{"correspondence ledger", "tool.requested recording the provenance of /bcc/0", fmt.Sprintf("%+v", l.Payload.Provenance)}
		}
	}
	return &StepError{"correspondence ledger", "a tool.requested of " + EmailTool, "none"}
}

// wall: asked about another matter, the assistant searches it; the matter
// wall denies the call outright (no warrant) and the run completes.
func (w *walk) wall(ctx context.Context) error {
	fmt.Fprintf(w.Out, "demo: the matter wall keeps a run inside its own matter (matter %s)\n", short(DemoMatter))

	// 17. An associate asks about the other matter.
	runID, err := w.startRun(ctx, "start the walled run", DemoMatter, msgWall)
	if err != nil {
		return err
	}
	t0 := time.Now()
	a, err := w.follow(ctx, "follow the walled run", runID)
	if err != nil {
		return err
	}
	if str(a.json, "status") != "completed" || str(a.json, "final_text") != bedrocktest.DemoWalledText || a.json["pending_approval"] != nil {
		return &StepError{"follow the walled run", fmt.Sprintf("status completed with %q and no warrant", bedrocktest.DemoWalledText), a.describe()}
	}
	w.ok("run %s completed in %.1fs without a hold — %q", short(runID), time.Since(t0).Seconds(), str(a.json, "final_text"))

	// 18. The ledger: the search denied by matter.wall, never run, and no
	// warrant asked for.
	lines, _, err := w.ledger(ctx, runID)
	if err != nil {
		return err
	}
	var requested *ledgerLine
	denied := 0
	for i, l := range lines {
		switch {
		case l.Type == "tool.requested" && l.Payload.ToolName == SearchTool:
			requested = &lines[i]
		case l.Type == "tool.completed" && l.Payload.ToolName == SearchTool && l.Payload.Status == "denied":
			denied++
		case l.Type == "tool.completed", l.Type == "run.blocked", l.Type == "approval.decided":
			return &StepError{"walled ledger", "nothing run and no warrant", fmt.Sprintf("%s (seq %d, %s %s)", l.Type, l.Seq, l.Payload.ToolName, l.Payload.Status)}
		}
	}
	if requested == nil || requested.Payload.Action != "deny" || !slices.Contains(requested.Payload.FiredRules.ids(), RuleMatterWall) || denied != 1 {
		var got string
		if requested != nil {
			got = fmt.Sprintf("action %q, fired %v; ", requested.Payload.Action, requested.Payload.FiredRules.ids())
		}
		return &StepError{"walled ledger", SearchTool + " requested with action deny by " + RuleMatterWall + " and completed denied",
			fmt.Sprintf("%s%d denied completions", got, denied)}
	}
	w.ok("%s of matter %s denied by %s at seq %d (policy %s): never ran, no warrant asked for",
		SearchTool, short(bedrocktest.DemoOtherMatter), RuleMatterWall, requested.Seq, requested.Payload.PolicyVersion)

	// Counsel has nothing to sign for it.
	a, err = w.call(ctx, counsel, "GET", "/v1/approvals", nil)
	if err != nil {
		return err
	}
	if err := w.expect("list pending warrants", a, 200); err != nil {
		return err
	}
	list, _ := a.json["approvals"].([]any)
	for _, v := range list {
		if m, _ := v.(map[string]any); str(m, "run_id") == runID {
			return &StepError{"list pending warrants", "no warrant for run " + runID, a.describe()}
		}
	}
	w.ok("GET /v1/approvals: no warrant for run %s (%d pending in the firm)", short(runID), len(list))
	return nil
}

// startRun has the associate start a run of the matter assistant (202).
func (w *walk) startRun(ctx context.Context, step, matter, message string) (string, error) {
	a, err := w.call(ctx, associate, "POST", "/v1/runs", map[string]any{
		"agent_key": "matter_assistant", "matter_id": matter, "counsel_message": message,
	})
	if err != nil {
		return "", err
	}
	if err := w.expect(step, a, 202); err != nil {
		return "", err
	}
	runID := str(a.json, "run_id")
	if runID == "" || a.header.Get("Location") == "" {
		return "", &StepError{step, "202 with the run_id and a Location", a.describe()}
	}
	w.ok("run %s accepted (202 %s): the worker takes it from the queue", short(runID), str(a.json, "status"))
	return runID, nil
}

// exported is a run's ledger export, verified.
type exported struct {
	file   string
	lines  []ledgerLine
	state  reducer.RunState
	signed *contracts.HeadLine
}

func (x *exported) String() string {
	what := "hash chain intact"
	if x.signed != nil {
		what += fmt.Sprintf(", signed head at seq %d verified with %s", x.signed.Seq, x.signed.KeyID)
	}
	return fmt.Sprintf("%d lines, %s (head %s)", len(x.lines), what, short(x.state.HeadHash))
}

// export writes the run's ledger, with its signed head, to LogDir and
// verifies the file as the operator CLI would (warrant ledger verify
// --key): the run completed through seq last (0: the export's last line).
func (w *walk) export(ctx context.Context, step, runID string, last int64) (*exported, error) {
	lines, raw, err := w.ledger(ctx, runID)
	if err != nil {
		return nil, err
	}
	if last == 0 {
		last = lines[len(lines)-1].Seq
	}
	x := &exported{file: filepath.Join(w.LogDir, "ledger-"+runID+".ndjson"), lines: lines}
	if err := os.WriteFile(x.file, raw, 0o644); err != nil {
		return nil, err
	}
	if x.state, x.signed, err = verify(ctx, x.file, w.LedgerKey, w.KMS); err != nil {
		return nil, &StepError{step, "the export to verify (as warrant ledger verify --key)", err.Error()}
	}
	if x.state.Status != warrant.RunCompleted || x.state.LastSeq != last {
		return nil, &StepError{step, fmt.Sprintf("status completed through seq %d", last),
			fmt.Sprintf("status %s through seq %d", x.state.Status, x.state.LastSeq)}
	}
	return x, nil
}

// firedIDs lists the ids of a view's fired_rules.
func firedIDs(v any) []string {
	rules, _ := v.([]any)
	ids := make([]string, 0, len(rules))
	for _, r := range rules {
		m, _ := r.(map[string]any)
		ids = append(ids, str(m, "id"))
	}
	return ids
}

// strs is a JSON array's strings.
func strs(v any) []string {
	a, _ := v.([]any)
	out := make([]string, 0, len(a))
	for _, e := range a {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
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
// provenance and decides every recorded decision again from the record, as
// `warrant ledger audit FILE` does (the walkthrough runs on the embedded
// policy).
func audit(file string) ([]reducer.Provenance, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var lines []contracts.Line
	if _, err := contracts.ReadExport(bytes.NewReader(b), func(l contracts.Line) error { lines = append(lines, l); return nil }); err != nil {
		return nil, err
	}
	effects, err := reducer.Audit(lines)
	if err != nil {
		return effects, err
	}
	p, err := toolpolicy.Embedded()
	if err != nil {
		return effects, err
	}
	_, err = reducer.Rederive(lines, p)
	return effects, err
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
func verify(ctx context.Context, file, key string, newKMS func() anchor.KMSClient) (reducer.RunState, *contracts.HeadLine, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return reducer.RunState{}, nil, err
	}
	if key == "" {
		st, err := reducer.Verify(bytes.NewReader(b))
		return st, nil, err
	}
	k, err := anchor.Parse(key, newKMS)
	if err != nil {
		return reducer.RunState{}, nil, err
	}
	return reducer.VerifySigned(ctx, bytes.NewReader(b), anchor.NewKeyring(k))
}

// sealedAtRest reads the run's items as stored (Config.RawItems) and
// checks that none holds its content in the clear: counsel's message, the
// filing's text and title as the model drafted them (the warrant's
// tool_input, as the API showed it opened). ids and hashes are not content
// and stay in the clear.
func (w *walk) sealedAtRest(ctx context.Context, runID string, pending map[string]any) error {
	if w.RawItems == nil {
		return nil
	}
	items, err := w.RawItems(ctx, Firm, runID)
	if err != nil {
		return &StepError{"raw read of the run's items", "the items", err.Error()}
	}
	secrets := []string{msgFiling}
	input, _ := pending["tool_input"].(map[string]any)
	for _, k := range []string{"document_title", "document_text"} {
		if s := str(input, k); s != "" {
			secrets = append(secrets, s)
		}
	}
	if len(secrets) < 3 {
		return &StepError{"raw read of the run's items", "the filing's title and text shown opened by the API", fmt.Sprintf("%v", input)}
	}
	for _, it := range items {
		for _, s := range secrets {
			if strings.Contains(it, s) {
				return &StepError{"raw read of the run's items", "no content in the clear", fmt.Sprintf("%q in an item", s)}
			}
		}
	}
	w.ok("a raw read of the run's %d items in the table holds none of its content (counsel's message, the filing's title and text): sealed under the run's data key", len(items))
	return nil
}
