package desk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/seed-f6d3920e/warrant/internal/browsertest"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// Issue 21, item 2: counsel edits a held call before approving it, in an
// editor the desk builds from the tool's input schema (GET /v1/tools); the
// desk shows the edited call's canonical JSON (RFC 8785) and its SHA-256,
// computed in the browser, beside the original, with the members added,
// removed or changed; "Approve edited call" sends exactly that call.

const (
	emailTool    = "send_client_email"
	demoMatter   = "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"
	clientAddr   = "gc@ridgeway-logistics.example"
	opposingAddr = "counsel@harbor-freight.example"
	firmAddr     = "records@warrant-law.example"
)

// emailBody is a long, multi-line body: the editor gives it a textarea.
const emailBody = "We have moved to compel the outstanding documents and will update you after the hearing.\n\n" +
	"The court set the hearing for the second week of next month; we expect a ruling shortly after it."

// catalogTool is a tool of the embedded catalog as GET /v1/tools lists it.
func catalogTool(t *testing.T, name string) agent.ToolSchema {
	t.Helper()
	c, err := catalog.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	tool, ok := c.Tools[name]
	if !ok {
		t.Fatalf("the catalog has no %s", name)
	}
	// As GET /v1/tools sends it (agent.Brain.ToolSchemas): the schema as
	// the catalog writes it, and the tool's title.
	return agent.ToolSchema{Name: tool.Name, Title: tool.Title, Description: tool.Description, InputSchema: tool.SchemaAsWritten,
		SchemaSHA256: tool.SchemaSHA256, MatterField: tool.MatterField}
}

// canonicalOf is the server's canonical form of v (contracts.CanonicalInput)
// and its hash.
func canonicalOf(t *testing.T, v any) (string, string) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	c, h, err := contracts.CanonicalInput(raw)
	if err != nil {
		t.Fatalf("canonical %s: %v", raw, err)
	}
	return string(c), h
}

// emailInput is the e-mail the scripted model asks for: to the client,
// copying opposing counsel.
func emailInput() map[string]any {
	return map[string]any{"matter_id": demoMatter, "to": clientAddr, "cc": []string{opposingAddr},
		"subject": "Discovery update", "body": emailBody}
}

// emailWarrant is a pending warrant on an input.
func emailWarrant(t *testing.T, id string, input map[string]any) handlers.WarrantView {
	t.Helper()
	canonical, hash := canonicalOf(t, input)
	w := pendingWarrant(id, canonical, hash, "E-mail "+clientAddr+", copying "+opposingAddr+" with the subject “Discovery update”.")
	w.ToolName, w.Reason = emailTool, "rule email.copy_outside_firm: a cc or bcc recipient is outside the firm"
	w.FiredRules = []handlers.FiredRuleView{{ID: "email.copy_outside_firm", Effect: "raise:high", Reason: "A copy outside the firm."}}
	return w
}

// asServer answers a decision as the approve function does: the edit
// canonicalized and hashed.
func asServer(t *testing.T, id string) func(map[string]json.RawMessage) (int, any) {
	return func(body map[string]json.RawMessage) (int, any) {
		v := map[string]any{"approval_request_id": id, "status": "approved"}
		if e, ok := body["edited_input"]; ok {
			c, h, err := contracts.CanonicalInput(e)
			if err != nil {
				return problem(failure.Wrap(failure.KindInvalidRequest, "field edited_input: not canonicalizable JSON", err))
			}
			v["edited_input"], v["edited_input_hash"] = json.RawMessage(c), h
		}
		return 200, v
	}
}

// problem is the API's problem+json for err, as the functions answer it.
func problem(err error) (int, any) {
	env := failure.Build(err, failure.StageApproval, "approve", failure.Identity{CorrelationID: "3f0e9a1c-5b2d-4c7e-8f6a-0b1c2d3e4f5a"})
	status, _, body := failure.ProblemFrom(env)
	return status, json.RawMessage(body)
}

func wsel(id string) string { return `li.warrant[data-approval-id="` + id + `"]` }

// editorState is what the editor shows.
type editorState struct {
	Canonical, Hash, Summary, Invalid string
	ApproveDisabled                   bool
	Diffs                             []diffShown
}

type diffShown struct {
	Member, Change, Tag, Was, Now string
}

const readEditor = `((li) => {
	const ed = li.querySelector('.editor');
	return JSON.stringify({
		Canonical: ed.querySelector('.edit-canonical').textContent,
		Hash: ed.querySelector('.edit-hash').textContent,
		Summary: ed.querySelector('.diff-summary').textContent,
		Invalid: ed.querySelector('.edit-invalid').hidden ? '' : ed.querySelector('.edit-invalid').textContent,
		ApproveDisabled: ed.querySelector('button.approve-edit').disabled,
		Diffs: [...ed.querySelectorAll('ul.diff > li')].map((d) => ({
			Member: d.dataset.member, Change: d.dataset.change, Tag: d.querySelector('.diff-tag').textContent,
			Was: d.querySelector('.diff-was .diff-value')?.textContent ?? '', Now: d.querySelector('.diff-now .diff-value')?.textContent ?? '',
		})),
	});
})`

// editorOf reads the editor of warrant id once its hash is computed.
func editorOf(t *testing.T, ctx context.Context, id string) editorState {
	t.Helper()
	if err := waitFor(ctx, `/^[0-9a-f]{64}$/.test(document.querySelector('`+wsel(id)+` .edit-hash')?.textContent ?? '')`); err != nil {
		t.Fatalf("the editor shows no hash: %v (%s)", err, evalIn[string](t, ctx, readEditor+`(document.querySelector('`+wsel(id)+`'))`))
	}
	var st editorState
	if err := json.Unmarshal([]byte(evalIn[string](t, ctx, readEditor+`(document.querySelector('`+wsel(id)+`'))`)), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// fieldControls are the editor's fields in order: "name kind" with kind
// the control (input, textarea, textarea.json, select, list:N rows of a
// list of text, rows:N rows of a list of objects, readonly), each control
// labelled.
const fieldControls = `((li) => [...li.querySelectorAll('.editor-fields > .field-row')].map((row) => {
	const name = row.querySelector('.field-name').textContent;
	if (row.tagName === 'FIELDSET' && row.querySelector('.object-rows')) return name + ' rows:' + row.querySelectorAll('.object-rows > li').length;
	if (row.tagName === 'FIELDSET') return name + ' list:' + row.querySelectorAll('.list-rows input').length;
	const c = row.querySelector('input, textarea, select');
	const labelled = c.labels.length === 1 && c.labels[0].textContent.includes(name);
	return name + ' ' + (c.readOnly ? 'readonly' : c.tagName.toLowerCase() + (c.classList.contains('json') ? '.json' : '')) + (labelled ? '' : ' UNLABELLED');
}))`

// setValue types v into the element sel as one input event (a
// programmatic edit; the keyboard test types key by key).
func setValue(t *testing.T, ctx context.Context, sel, v string) {
	t.Helper()
	b, _ := json.Marshal(v)
	evalIn[any](t, ctx, `(() => {
		const el = document.querySelector(`+jsQuote(sel)+`);
		el.value = `+string(b)+`;
		el.dispatchEvent(new Event('input', {bubbles: true}));
		return null;
	})()`)
}

func jsQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// openWarrant opens the warrant id's row, if it is closed (a click on its
// toggle, as counsel's).
func openWarrant(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	if err := waitFor(ctx, `!!document.querySelector('`+wsel(id)+` .warrant-toggle')`); err != nil {
		t.Fatalf("the warrant %s is not listed: %v", id, err)
	}
	if evalIn[string](t, ctx, `document.querySelector('`+wsel(id)+` .warrant-toggle').getAttribute('aria-expanded')`) != "true" {
		click(t, ctx, wsel(id)+" .warrant-toggle")
	}
}

func click(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
}

// openEditor opens the warrant id (its row, if closed) and its editor, and
// waits for its form.
func openEditor(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	openWarrant(t, ctx, id)
	if err := waitFor(ctx, `document.querySelector('`+wsel(id)+` .hash-check.ok') !== null && !document.querySelector('`+wsel(id)+` button.edit').disabled`); err != nil {
		t.Fatalf("the warrant's Edit button is not enabled: %v", err)
	}
	click(t, ctx, wsel(id)+" button.edit")
	if err := waitFor(ctx, `document.querySelectorAll('`+wsel(id)+` .editor-fields > .field-row').length > 0`); err != nil {
		t.Fatalf("the editor has no fields: %v", err)
	}
}

// The editor is built from the tool's schema, its fields in the order the
// catalog writes them (to, cc, bcc, subject, body, attachments), the matter
// read-only and last, the recipients (cc, bcc) as lists of rows, the long
// body as a textarea, the attachments (a list of objects) as rows, every
// control labelled. Untouched, it is the call as requested (same canonical bytes,
// same hash, no difference, nothing to approve as an edit). Counsel drops
// the cc, adds a bcc inside the firm and rewrites the body: the desk shows
// the edit's canonical JSON and SHA-256 exactly as the server computes them
// (contracts.CanonicalInput), and each member added, removed or changed in
// words; "Approve edited call" sends that call with the original hash and
// follows the run.
func TestDeskEditsACallFromItsSchema(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	const id = "5e0c4b1a-7d2f-4a3b-9c8d-1e2f3a4b5c6d"
	w := emailWarrant(t, id, emailInput())
	f := newFakeAPI(t, w)
	f.tools = []agent.ToolSchema{catalogTool(t, "file_court_document"), catalogTool(t, emailTool)}
	f.decide = asServer(t, id)
	ctx := openDesk(t, f)
	openEditor(t, ctx, id)

	got := evalIn[[]string](t, ctx, fieldControls+`(document.querySelector('`+wsel(id)+`'))`)
	// The subject's maxLength is 300: long text, a textarea.
	want := []string{"to input", "cc list:1", "bcc list:0", "subject textarea", "body textarea", "attachments rows:0", "matter_id readonly"}
	if !slices.Equal(got, want) {
		t.Fatalf("the editor's fields: %q, want %q", got, want)
	}
	if ex := evalIn[[]string](t, ctx, `[document.querySelector('`+wsel(id)+` button.edit').getAttribute('aria-expanded'),
		String(document.querySelector('`+wsel(id)+` .editor').hidden)]`); !slices.Equal(ex, []string{"true", "false"}) {
		t.Errorf("the Edit button's aria-expanded and the editor's hidden: %q", ex)
	}

	// Untouched: the call as requested.
	st := editorOf(t, ctx, id)
	if st.Canonical != w.ToolInputCanonical || st.Hash != w.ToolInputHash || len(st.Diffs) != 0 || !st.ApproveDisabled ||
		!strings.Contains(st.Summary, "No changes") {
		t.Fatalf("the untouched editor: %+v, want the original %s %s", st, w.ToolInputCanonical, w.ToolInputHash)
	}

	// Counsel drops the cc, adds a bcc and rewrites the body.
	ed := wsel(id) + " .editor"
	click(t, ctx, ed+" .remove-row") // the only row: cc's
	click(t, ctx, ed+` .field-row[data-member="bcc"] .add-row`)
	setValue(t, ctx, ed+` .field-row[data-member="bcc"] .list-rows input`, firmAddr)
	newBody := "We have moved to compel the outstanding discovery.\n\nThe hearing is set; we will report on the ruling."
	setValue(t, ctx, ed+` .field-row[data-member="body"] textarea`, newBody)

	edited := emailInput()
	delete(edited, "cc")
	edited["bcc"], edited["body"] = []string{firmAddr}, newBody
	wantCanonical, wantHash := canonicalOf(t, edited)
	if err := waitFor(ctx, `document.querySelector('`+ed+` .edit-hash').textContent === '`+wantHash+`'`); err != nil {
		t.Fatalf("the edit's hash: %+v, want %s", editorOf(t, ctx, id), wantHash)
	}
	st = editorOf(t, ctx, id)
	if st.Canonical != wantCanonical || st.Hash != wantHash || sha256Hex(st.Canonical) != st.Hash {
		t.Fatalf("the edit shown: %s %s, want %s %s", st.Canonical, st.Hash, wantCanonical, wantHash)
	}
	// In the editor's order, in words (no JSON: a list one item a line).
	wantDiffs := []diffShown{
		{Member: "cc", Change: "removed", Tag: "Removed", Was: opposingAddr},
		{Member: "bcc", Change: "added", Tag: "Added", Now: firmAddr},
		{Member: "body", Change: "changed", Tag: "Changed", Was: emailBody, Now: newBody},
	}
	if !slices.Equal(st.Diffs, wantDiffs) {
		t.Fatalf("the differences shown: %+v\nwant %+v", st.Diffs, wantDiffs)
	}
	if st.Summary != "3 changes: cc removed; bcc added; body changed." || st.ApproveDisabled || st.Invalid != "" {
		t.Fatalf("the editor: %+v", st)
	}
	// The original stays beside the edit, with its hash.
	if orig := evalIn[[]string](t, ctx, `[document.querySelector('`+ed+` .orig-canonical').textContent, document.querySelector('`+ed+` .orig-hash').textContent]`); !slices.Equal(orig, []string{w.ToolInputCanonical, w.ToolInputHash}) {
		t.Errorf("the original beside the edit: %q", orig)
	}

	// Approve the edit: exactly the call shown leaves, under the hash
	// counsel was shown for the original.
	click(t, ctx, ed+" button.approve-edit")
	if err := waitFor(ctx, `location.hash === '#/runs/run-`+id+`'`); err != nil {
		t.Fatalf("approving the edit: %v (sent %v)", err, f.posts())
	}
	ds := f.decisionBodies()
	if len(ds) != 1 {
		t.Fatalf("%d decisions sent", len(ds))
	}
	var decision, hash string
	json.Unmarshal(ds[0]["decision"], &decision)
	json.Unmarshal(ds[0]["tool_input_hash"], &hash)
	sentCanonical, sentHash, err := contracts.CanonicalInput(ds[0]["edited_input"])
	if err != nil || decision != "approve" || hash != w.ToolInputHash || sentHash != wantHash || string(sentCanonical) != wantCanonical {
		t.Fatalf("the decision sent: %s %s edited %s (%s, %v); want approve %s edited %s", decision, hash, sentCanonical, sentHash, err, w.ToolInputHash, wantHash)
	}
	if want := []string{"POST /v1/runs/run-" + id + "/approvals/" + id, "POST /v1/runs/run-" + id + "/resume"}; !slices.Equal(f.posts(), want) {
		t.Fatalf("posts %v, want %v", f.posts(), want)
	}
}

// The server's refusals of an edit are shown in words in the editor, and
// the focus moves to them: 422 (the risk policy denies the edited call,
// naming the rule) and 400 (the edit does not fit the tool's schema). The
// edit may then be corrected and approved; a 409 (the warrant decided
// elsewhere) locks the warrant.
func TestDeskShowsARefusedEditInWords(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	const id = "6f1d5c2b-8e3a-4b4c-8d9e-2f3a4b5c6d7e"
	w := emailWarrant(t, id, emailInput())
	f := newFakeAPI(t, w)
	f.tools = []agent.ToolSchema{catalogTool(t, emailTool)}
	var n atomic.Int32
	f.decide = func(body map[string]json.RawMessage) (int, any) {
		switch n.Add(1) {
		case 1:
			return problem(failure.New(failure.KindPolicyDenied, "the risk policy denies the edited call (fired rules: email.ssn_outside_firm)"))
		case 2:
			return problem(failure.New(failure.KindInvalidRequest, "field edited_input: does not match the tool's input schema"))
		default:
			return problem(failure.New(failure.KindConflict, "the warrant is not pending"))
		}
	}
	ctx := openDesk(t, f)
	openEditor(t, ctx, id)
	ed := wsel(id) + " .editor"
	setValue(t, ctx, ed+` .field-row[data-member="body"] textarea`, emailBody+" For the records request: SSN 123-45-6789.")
	if err := waitFor(ctx, `!document.querySelector('`+ed+` button.approve-edit').disabled`); err != nil {
		t.Fatalf("Approve edited call stays disabled: %+v", editorOf(t, ctx, id))
	}

	refusal := func(step, status, words string) {
		t.Helper()
		click(t, ctx, ed+" button.approve-edit")
		if err := waitFor(ctx, `document.querySelector('`+ed+` .editor-problems .problem') !== null`); err != nil {
			t.Fatalf("%s: no problem shown in the editor: %v", step, err)
		}
		got := evalIn[[]string](t, ctx, `(() => {
			const p = document.querySelector('`+ed+` .editor-problems .problem');
			return [p.textContent, p.getAttribute('role'), String(document.activeElement === p)];
		})()`)
		if !strings.HasPrefix(got[0], status) || !strings.Contains(got[0], words) || got[1] != "alert" || got[2] != "true" {
			t.Errorf("%s: the problem shown %q (role %s, focused %s), want %q… %q as a focused alert", step, got[0], got[1], got[2], status, words)
		}
	}
	refusal("422", "422 Denied by policy: ", "the risk policy denies the edited call (fired rules: email.ssn_outside_firm)")
	if evalIn[bool](t, ctx, `document.querySelector('`+ed+` button.approve-edit').disabled`) {
		t.Fatal("after a 422 the edit cannot be approved again: the policy's refusal is counsel's to correct")
	}
	refusal("400", "400 Invalid request: ", "field edited_input: does not match the tool's input schema")
	refusal("409", "409 ", "the warrant is not pending")
	if d := evalIn[[]bool](t, ctx, `[...document.querySelectorAll('`+wsel(id)+` button.approve, `+wsel(id)+` button.approve-edit, `+wsel(id)+` button.decline')].map((b) => b.disabled)`); !slices.Equal(d, []bool{true, true, true}) {
		t.Errorf("after a 409 Approve, Approve edited call and Decline disabled: %v", d)
	}
	if len(f.decisionBodies()) != 3 || slices.Contains(f.posts(), "POST /v1/runs/run-"+id+"/resume") {
		t.Errorf("sent %v", f.posts())
	}
}

// focusTrail presses Tab until the focused element matches sel (at most
// limit presses), and returns a short name of each element focused on the
// way; it fails when the focus stops moving (a trap).
func focusTrail(t *testing.T, ctx context.Context, sel string, limit int) []string {
	t.Helper()
	const name = `(() => { const e = document.activeElement; if (!e || e === document.body) return 'body';
		return e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className ? '.' + String(e.className).trim().split(/\s+/).join('.') : '') +
			(e.labels?.[0] ? '[' + e.labels[0].textContent + ']' : e.tagName === 'BUTTON' ? '[' + e.textContent + ']' : ''); })()`
	var trail []string
	for range limit {
		if evalIn[bool](t, ctx, `document.activeElement?.matches(`+jsQuote(sel)+`) ?? false`) {
			return trail
		}
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
			t.Fatal(err)
		}
		now := evalIn[string](t, ctx, name)
		if len(trail) > 0 && trail[len(trail)-1] == now {
			t.Fatalf("Tab did not move the focus from %s: %v", now, trail)
		}
		trail = append(trail, now)
	}
	t.Fatalf("Tab did not reach %s in %d presses: %v", sel, limit, trail)
	return nil
}

func press(t *testing.T, ctx context.Context, keys string, opts ...chromedp.KeyOption) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.KeyEvent(keys, opts...)); err != nil {
		t.Fatal(err)
	}
}

// Keyboard only (key events, no clicks, no script setting values): counsel
// tabs to Edit, opens the editor (the focus goes to its first editable
// field), closes it with Escape (the focus goes back to Edit), opens it
// again, removes the cc with its Remove button, rewrites the subject,
// tabs to "Approve edited call" and presses Enter. The call sent is the
// edit the keys made; Tab moves on past the editor's last button (no trap).
func TestDeskKeyboardOnlyEditAndApprove(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	const id = "7a2e6d3c-9f4b-4c5d-8e0f-3a4b5c6d7e8f"
	w := emailWarrant(t, id, emailInput())
	f := newFakeAPI(t, w)
	f.tools = []agent.ToolSchema{catalogTool(t, emailTool)}
	f.decide = asServer(t, id)
	ctx := openDesk(t, f)
	if err := waitFor(ctx, `document.querySelector('`+wsel(id)+` .hash-check.ok') !== null && document.activeElement?.tagName === 'H1'`); err != nil {
		t.Fatalf("the desk: %v", err)
	}
	ed := wsel(id) + " .editor"

	trail := focusTrail(t, ctx, wsel(id)+" button.edit", 40)
	t.Logf("Tab to Edit: %s", strings.Join(trail, " → "))
	press(t, ctx, kb.Enter)
	if err := waitFor(ctx, `document.activeElement?.closest('.editor') !== null && document.activeElement.matches('.editor-fields input:not([readonly]), .editor-fields textarea, .editor-fields select')`); err != nil {
		t.Fatalf("Enter on Edit: the focus is not on the editor's first field (%s)", evalIn[string](t, ctx, `document.activeElement?.outerHTML ?? ''`))
	}
	press(t, ctx, kb.Escape)
	if got := evalIn[[]string](t, ctx, `[String(document.querySelector('`+ed+`').hidden), String(document.activeElement === document.querySelector('`+wsel(id)+` button.edit')),
		document.querySelector('`+wsel(id)+` button.edit').getAttribute('aria-expanded')]`); !slices.Equal(got, []string{"true", "true", "false"}) {
		t.Fatalf("Escape: editor hidden, focus on Edit, aria-expanded: %q", got)
	}
	press(t, ctx, kb.Enter)
	if err := waitFor(ctx, `!document.querySelector('`+ed+`').hidden && document.activeElement?.closest('.editor') !== null`); err != nil {
		t.Fatal("Enter on Edit again: the editor did not open")
	}

	// The cc's Remove button: the focus then goes to the cc's "Add" button.
	focusTrail(t, ctx, ed+" .remove-row", 30)
	press(t, ctx, kb.Enter)
	if err := waitFor(ctx, `document.activeElement?.matches('.add-row') && document.querySelectorAll('`+ed+` .remove-row').length === 0`); err != nil {
		t.Fatalf("Enter on Remove: %s", evalIn[string](t, ctx, `document.activeElement?.outerHTML ?? ''`))
	}
	// The subject: select it all and type a new one.
	focusTrail(t, ctx, ed+" .field-row textarea:not(.json)", 10)
	if label := evalIn[string](t, ctx, `document.activeElement.labels[0].textContent`); !strings.HasPrefix(label, "subject") {
		t.Fatalf("after cc the focus is on %q, want subject", label)
	}
	press(t, ctx, "a", chromedp.KeyModifiers(chromedp.ModifierCtrl))
	press(t, ctx, "Discovery: motion to compel")

	edited := emailInput()
	delete(edited, "cc")
	edited["subject"] = "Discovery: motion to compel"
	wantCanonical, wantHash := canonicalOf(t, edited)
	if err := waitFor(ctx, `document.querySelector('`+ed+` .edit-hash').textContent === '`+wantHash+`'`); err != nil {
		t.Fatalf("the edit typed: %+v, want %s", editorOf(t, ctx, id), wantCanonical)
	}
	trail = focusTrail(t, ctx, ed+" button.approve-edit", 40)
	t.Logf("Tab to Approve edited call: %s", strings.Join(trail, " → "))
	// No trap: Tab leaves the editor past its last button, Shift+Tab comes back.
	press(t, ctx, kb.Tab)
	press(t, ctx, kb.Tab)
	if evalIn[bool](t, ctx, `document.activeElement?.closest('.editor') !== null && !document.activeElement.matches('.problem')`) {
		t.Errorf("two Tabs past Approve edited call the focus is still in the editor: %s", evalIn[string](t, ctx, `document.activeElement.outerHTML`))
	}
	press(t, ctx, kb.Tab, chromedp.KeyModifiers(chromedp.ModifierShift))
	press(t, ctx, kb.Tab, chromedp.KeyModifiers(chromedp.ModifierShift))
	if !evalIn[bool](t, ctx, `document.activeElement?.matches('button.approve-edit') ?? false`) {
		t.Fatalf("Shift+Tab did not come back to Approve edited call: %s", evalIn[string](t, ctx, `document.activeElement?.outerHTML ?? ''`))
	}
	press(t, ctx, kb.Enter)
	if err := waitFor(ctx, `location.hash === '#/runs/run-`+id+`'`); err != nil {
		t.Fatalf("Enter on Approve edited call: %v (sent %v)", err, f.posts())
	}
	ds := f.decisionBodies()
	if len(ds) != 1 {
		t.Fatalf("%d decisions sent", len(ds))
	}
	c, h, err := contracts.CanonicalInput(ds[0]["edited_input"])
	if err != nil || string(c) != wantCanonical || h != wantHash {
		t.Fatalf("sent %s (%v), want %s", c, err, wantCanonical)
	}
}

// The list: soonest expiry first; a warrant within an hour of its expiry
// stands out (the words "expires in N min", a badge, a class); filters by
// matter (by name, as GET /v1/matters names them; by id otherwise) and by
// tier, saying how many are shown; the requester by display name, else by
// id. Without the registry (403) the matter filter offers ids.
func TestDeskListFiltersSortsAndFlagsExpiry(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	const (
		m1 = "11111111-1111-4111-8111-111111111111"
		m2 = "22222222-2222-4222-8222-222222222222"
		m3 = "33333333-3333-4333-8333-333333333333"
	)
	mk := func(id, matter, tier string, left time.Duration, name string) handlers.WarrantView {
		canonical := `{"matter_id":"` + matter + `","title":"` + id + `"}`
		w := pendingWarrant(id, canonical, sha256Hex(canonical), "File "+id+".")
		w.MatterID, w.RiskTier, w.RequestedByName = matter, tier, name
		w.ExpiresAt = time.Now().Add(left).UTC().Format(time.RFC3339)
		return w
	}
	ws := []handlers.WarrantView{
		mk("a0000000-0000-4000-8000-00000000000a", m1, "high", 2*time.Hour+59*time.Minute+30*time.Second, "Avery Associate"),
		mk("b0000000-0000-4000-8000-00000000000b", m2, "medium", 42*time.Minute+30*time.Second, ""),
		mk("c0000000-0000-4000-8000-00000000000c", m1, "medium", 2*time.Hour+5*time.Minute+30*time.Second, "Avery Associate"),
		mk("d0000000-0000-4000-8000-00000000000d", m3, "prohibited", 10*time.Minute+30*time.Second, "Sam Second-Chair"),
	}
	matters := []handlers.MatterView{{MatterID: m1, Name: "Ridgeway Logistics v. Harbor Freight"}, {MatterID: m2, Name: "Acme Leasing"}}

	type row struct {
		ID, Expires, Badge, Requester, RequesterID, MatterName string
		Expiring, Hidden                                       bool
	}
	rows := func(ctx context.Context) []row {
		var out []row
		raw := evalIn[string](t, ctx, `JSON.stringify([...document.querySelectorAll('#warrants > li.warrant')].map((li) => ({
			ID: li.dataset.approvalId, Expires: li.querySelector('.expires').textContent,
			Badge: li.querySelector('.expiry-badge').hidden ? '' : li.querySelector('.expiry-badge').textContent,
			Requester: li.querySelector('.requester').textContent, RequesterID: li.querySelector('.requester-id')?.textContent ?? '',
			MatterName: li.querySelector('.matter-name')?.textContent ?? '',
			Expiring: li.classList.contains('expiring'), Hidden: li.hidden,
		})))`)
		if err := json.Unmarshal([]byte(raw), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	options := func(ctx context.Context, sel string) []string {
		return evalIn[[]string](t, ctx, `[...document.querySelectorAll('`+sel+` option')].map((o) => o.value + '=' + o.textContent)`)
	}
	choose := func(ctx context.Context, sel, value string) {
		evalIn[any](t, ctx, `(() => { const s = document.querySelector('`+sel+`'); s.value = '`+value+`'; s.dispatchEvent(new Event('change', {bubbles: true})); return null; })()`)
	}
	visible := func(ctx context.Context) []string {
		var ids []string
		for _, r := range rows(ctx) {
			if !r.Hidden {
				ids = append(ids, r.ID[:1])
			}
		}
		return ids
	}

	f := newFakeAPI(t, ws...)
	f.matters = matters
	ctx := openDesk(t, f)
	if err := waitFor(ctx, `document.querySelectorAll('#warrants > li.warrant').length === 4`); err != nil {
		t.Fatalf("the list: %v", err)
	}
	rs := rows(ctx)
	var order []string
	for _, r := range rs {
		order = append(order, r.ID[:1])
	}
	if !slices.Equal(order, []string{"d", "b", "c", "a"}) {
		t.Fatalf("the order %v, want soonest expiry first: d b c a", order)
	}
	const badge = "⚠ Expires within the hour"
	want := []row{
		{ID: ws[3].ApprovalRequestID, Expires: "expires in 10 min", Badge: badge, Requester: "Sam Second-Chair", RequesterID: ws[3].RequestedBy, Expiring: true},
		{ID: ws[1].ApprovalRequestID, Expires: "expires in 42 min", Badge: badge, Requester: ws[1].RequestedBy, MatterName: "Acme Leasing", Expiring: true},
		{ID: ws[2].ApprovalRequestID, Expires: "expires in 2 h 5 min", Requester: "Avery Associate", RequesterID: ws[2].RequestedBy, MatterName: "Ridgeway Logistics v. Harbor Freight"},
		{ID: ws[0].ApprovalRequestID, Expires: "expires in 2 h 59 min", Requester: "Avery Associate", RequesterID: ws[0].RequestedBy, MatterName: "Ridgeway Logistics v. Harbor Freight"},
	}
	if !slices.Equal(rs, want) {
		t.Fatalf("the rows:\n%+v\nwant\n%+v", rs, want)
	}
	if got := options(ctx, "#filter-matter"); !slices.Equal(got, []string{"=All matters", m2 + "=Acme Leasing (" + m2 + ")",
		m1 + "=Ridgeway Logistics v. Harbor Freight (" + m1 + ")", m3 + "=" + m3}) {
		t.Errorf("the matter filter offers %q", got)
	}
	if got := options(ctx, "#filter-tier"); !slices.Equal(got, []string{"=All tiers", "low=low", "medium=medium", "high=high", "prohibited=prohibited"}) {
		t.Errorf("the tier filter offers %q", got)
	}
	count := func() string { return evalIn[string](t, ctx, `document.querySelector('#warrant-count').textContent`) }
	if c := count(); c != "4 pending warrants" {
		t.Errorf("count %q", c)
	}
	choose(ctx, "#filter-matter", m1)
	if v, c := visible(ctx), count(); !slices.Equal(v, []string{"c", "a"}) || c != "Showing 2 of 4 pending warrants" {
		t.Errorf("matter %s: shown %v, %q", m1, v, c)
	}
	choose(ctx, "#filter-tier", "medium")
	if v, c := visible(ctx), count(); !slices.Equal(v, []string{"c"}) || c != "Showing 1 of 4 pending warrants" {
		t.Errorf("matter %s, medium: shown %v, %q", m1, v, c)
	}
	choose(ctx, "#filter-tier", "low")
	if v := visible(ctx); len(v) != 0 || evalIn[bool](t, ctx, `document.querySelector('#no-match').hidden`) {
		t.Errorf("matter %s, low: shown %v and no 'no match' note", m1, v)
	}
	// The filters hold across a refresh.
	choose(ctx, "#filter-tier", "")
	click(t, ctx, "#refresh")
	if err := waitFor(ctx, `!document.querySelector('#refresh').disabled && document.querySelector('#filter-matter').value === '`+m1+`'`); err != nil {
		t.Fatalf("after a refresh: %v", err)
	}
	if v := visible(ctx); !slices.Equal(v, []string{"c", "a"}) {
		t.Errorf("after a refresh the matter filter shows %v", v)
	}

	// A user the registry does not answer (403): matters by id.
	f2 := newFakeAPI(t, ws...)
	ctx2 := openDesk(t, f2)
	if err := waitFor(ctx2, `document.querySelectorAll('#warrants > li.warrant').length === 4`); err != nil {
		t.Fatalf("the list: %v", err)
	}
	if got := options(ctx2, "#filter-matter"); !slices.Equal(got, []string{"=All matters", m1 + "=" + m1, m2 + "=" + m2, m3 + "=" + m3}) {
		t.Errorf("without the registry the matter filter offers %q", got)
	}
	if err := chromedp.Do(ctx2, chromedp.WaitVisible(chromedp.CSS("#warrants"))); err != nil || evalIn[bool](t, ctx2, `!document.querySelector('#error').hidden`) {
		t.Errorf("the registry's 403 is shown as an error: %s", evalIn[string](t, ctx2, `document.querySelector('#error').textContent`))
	}
}

// Markup in anything the API or the catalog says is shown as text, never
// made into elements: the summary, the fields, the requester's name, a
// matter's name, the reason and rules, the tool's description and
// schema, the editor's fields and the differences.
func TestDeskShowsMarkupAsText(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	const (
		id = "8b3f7e4d-0a5c-4d6e-9f1a-4b5c6d7e8f90"
		x  = `<img src=x onerror="window.__pwned=1"><b>bold</b><script>window.__pwned=2</script>`
	)
	in := emailInput()
	in["subject"] = "Re: " + x
	in["body"] = emailBody + "\n" + x
	in["x-note"] = map[string]any{"<i>k</i>": x}
	w := emailWarrant(t, id, in)
	w.HumanSummary, w.Reason, w.RequestedByName = "E-mail "+x, "because "+x, "Mallory "+x
	w.FiredRules = []handlers.FiredRuleView{{ID: "rule" + x, Effect: "raise:high", Reason: x}}
	tool := catalogTool(t, emailTool)
	var schema map[string]any
	json.Unmarshal(tool.InputSchema, &schema)
	props := maps.Clone(schema["properties"].(map[string]any))
	subject := maps.Clone(props["subject"].(map[string]any))
	subject["description"] = "The subject " + x
	props["subject"] = subject
	schema["properties"] = props
	delete(schema, "additionalProperties")
	tool.InputSchema, _ = json.Marshal(schema)
	tool.Description = x
	f := newFakeAPI(t, w)
	f.tools = []agent.ToolSchema{tool}
	f.matters = []handlers.MatterView{{MatterID: demoMatter, Name: "Matter " + x}}
	ctx := openDesk(t, f)
	openEditor(t, ctx, id)
	ed := wsel(id) + " .editor"
	setValue(t, ctx, ed+` .field-row[data-member="body"] textarea`, "New "+x)
	if err := waitFor(ctx, `document.querySelectorAll('`+ed+` ul.diff > li').length === 1`); err != nil {
		t.Fatalf("the difference: %+v", editorOf(t, ctx, id))
	}
	got := evalIn[[]string](t, ctx, `(() => {
		const app = document.querySelector('#app');
		return [String(app.querySelectorAll('img, b, i, script, iframe, object, embed, svg').length), String(window.__pwned ?? ''),
			app.querySelector('.summary').textContent, app.querySelector('.requester').textContent, app.querySelector('.matter-name').textContent,
			app.querySelector('.reason').textContent, app.querySelector('.rule-reason').textContent,
			[...app.querySelectorAll('.editor .hint')].find((e) => e.textContent.startsWith('The subject'))?.textContent ?? '',
			app.querySelector('.editor .diff-now').textContent,
			[...document.querySelectorAll('#filter-matter option')].map((o) => o.textContent).join('|'),
			[...app.querySelectorAll('.editor .field-name')].map((e) => e.textContent).join('|'),
			[...app.querySelectorAll('.editor textarea.json')].map((e) => e.value).join('|'),
			[...app.querySelectorAll('dl.fields dt')].map((e) => e.textContent).join('|')];
	})()`)
	want := []string{"0", "", "E-mail " + x, "Mallory " + x, "Matter " + x, "because " + x, x, "The subject " + x + " Text, at most 300 characters."}
	if !slices.Equal(got[:len(want)], want) {
		t.Fatalf("shown %q\nwant %q", got[:len(want)], want)
	}
	if !strings.Contains(got[8], "New "+x) {
		t.Errorf("the difference shows %q", got[8])
	}
	if !strings.Contains(got[9], "Matter "+x) || !strings.Contains(got[10], "x-note") || !strings.Contains(got[11], `"<i>k</i>"`) ||
		!strings.Contains(got[12], "x-note") {
		t.Errorf("matter options %q, editor fields %q, JSON %q, fields %q", got[9], got[10], got[11], got[12])
	}
}

// axe-core finds nothing on any page or state of the desk: the sign-in
// form, the list (a warrant expiring within the hour among them), a
// warrant's details, the editor open with differences, the editor with a
// schema it could not read, a page-level error, a refusal in the editor,
// the associate's view, and a run page with its receipts.
func TestDeskHasNoAccessibilityViolations(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	browsertest.AxeSource(t) // skips (or fails under CI) before anything starts when axe-core cannot be had
	const id = "9c4a8f5e-1b6d-4e7f-8a2b-5c6d7e8f9a0b"
	w := emailWarrant(t, id, emailInput())
	soon := pendingWarrant("0d5b9a6f-2c7e-4f8a-9b3c-6d7e8f9a0b1c", `{"matter_id":"`+demoMatter+`","title":"Motion"}`,
		sha256Hex(`{"matter_id":"`+demoMatter+`","title":"Motion"}`), "File “Motion”.")
	soon.ExpiresAt = time.Now().Add(20 * time.Minute).UTC().Format(time.RFC3339)
	f := newFakeAPI(t, w, soon)
	f.tools = []agent.ToolSchema{catalogTool(t, emailTool)}
	f.matters = []handlers.MatterView{{MatterID: demoMatter, Name: "Ridgeway Logistics v. Harbor Freight Systems"}}
	f.decide = func(map[string]json.RawMessage) (int, any) {
		return problem(failure.New(failure.KindPolicyDenied, "the risk policy denies the edited call (fired rules: email.ssn_outside_firm)"))
	}
	f.answerReceipts(func(string, int) any { return receiptsView(true, 3, true, "", filingReceipts()) })

	// The sign-in form, before anyone signs in.
	ctx, cancel := context.WithTimeout(browsertest.Browser(t), 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/desk"), chromedp.WaitVisible(chromedp.CSS("#dev-signin"))); err != nil {
		t.Fatal(err)
	}
	browsertest.CheckAxe(t, ctx, "sign-in")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#dev-signin-submit")), chromedp.WaitVisible(chromedp.CSS("#whoami"))); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, `document.querySelectorAll('.hash-check.ok').length === 2 && document.querySelector('.expiry-badge:not([hidden])') !== null`); err != nil {
		t.Fatalf("the list: %v", err)
	}
	browsertest.CheckAxe(t, ctx, "the list (a warrant expiring within the hour)")
	evalIn[any](t, ctx, `(() => { for (const b of document.querySelectorAll('.warrant-toggle[aria-expanded="false"]')) b.click();
		for (const d of document.querySelectorAll('details')) d.open = true; return null; })()`)
	browsertest.CheckAxe(t, ctx, "the warrants open, their exact bytes shown")

	openEditor(t, ctx, id)
	ed := wsel(id) + " .editor"
	click(t, ctx, ed+" .remove-row")
	click(t, ctx, ed+` .field-row[data-member="bcc"] .add-row`) // a bcc row: a list with an input in it
	setValue(t, ctx, ed+` .field-row[data-member="body"] textarea`, emailBody+" SSN 123-45-6789.")
	setValue(t, ctx, ed+` .field-row[data-member="bcc"] .list-rows input`, "records at warrant-law")
	if err := waitFor(ctx, `!document.querySelector('`+ed+` .edit-invalid').hidden`); err != nil {
		t.Fatal("an address that is not one is not reported")
	}
	browsertest.CheckAxe(t, ctx, "the editor with an address that is not one")
	setValue(t, ctx, ed+` .field-row[data-member="bcc"] .list-rows input`, firmAddr)
	if err := waitFor(ctx, `!document.querySelector('`+ed+` button.approve-edit').disabled`); err != nil {
		t.Fatalf("the edit: %+v", editorOf(t, ctx, id))
	}
	browsertest.CheckAxe(t, ctx, "the editor open, with differences")
	click(t, ctx, ed+" button.approve-edit")
	if err := waitFor(ctx, `document.querySelector('`+ed+` .problem') !== null`); err != nil {
		t.Fatal("the 422 is not shown")
	}
	browsertest.CheckAxe(t, ctx, "the editor with a 422 shown")

	// A page-level error: the list cannot be loaded.
	evalIn[any](t, ctx, `(() => { window.__realFetch = window.__realFetch || window.fetch;
		window.fetch = (u, init) => String(u).includes('/v1/approvals') ? Promise.reject(new TypeError('Failed to fetch')) : window.__realFetch(u, init);
		document.querySelector('#refresh').click(); return null; })()`)
	if err := waitFor(ctx, `!document.querySelector('#error').hidden`); err != nil {
		t.Fatal("the page-level error is not shown")
	}
	browsertest.CheckAxe(t, ctx, "a page-level error")
	evalIn[any](t, ctx, `(() => { window.fetch = window.__realFetch; return null; })()`)

	// A run page with its receipts.
	evalIn[any](t, ctx, `(() => { location.hash = '#/runs/`+receiptRun+`'; return null; })()`)
	if err := waitFor(ctx, `document.querySelectorAll('#receipts li.receipt').length === 3 && document.querySelector('#run-status').textContent !== ''`); err != nil {
		t.Fatalf("the run page: %v", err)
	}
	browsertest.CheckAxe(t, ctx, "a run page with receipts")

	// The associate's view (no decision controls), and the editor built
	// without a schema (the catalog unreachable).
	f.mu.Lock()
	f.tools = nil
	f.mu.Unlock()
	actx := openDeskAs(t, f, "Associate")
	if err := waitFor(actx, `document.querySelectorAll('.not-counsel').length === 2`); err != nil {
		t.Fatalf("the associate's desk: %v", err)
	}
	browsertest.CheckAxe(t, actx, "the associate's desk")
	cctx := openDesk(t, f)
	openEditor(t, cctx, id)
	if got := evalIn[string](t, cctx, `document.querySelector('`+ed+` .schema-note').textContent`); !strings.Contains(got, "the tool catalog could not be read (404 Not Found") {
		t.Errorf("the editor without a catalog says %q", got)
	}
	if got := evalIn[[]string](t, cctx, fieldControls+`(document.querySelector('`+wsel(id)+`'))`); !slices.Equal(got, []string{"to input", "cc list:1", "subject input", "body textarea", "matter_id readonly"}) {
		t.Errorf("the editor built from the call's values: %q", got)
	}
	browsertest.CheckAxe(t, cctx, "the editor built without a schema")
}

// Numbers, booleans and a choice get their own controls, and what counsel
// types is written as the server writes it (1e2 is 100, 2.50 is 2.5);
// what is not a number is refused in the editor, which then offers
// nothing to approve.
func TestDeskEditsNumbersBooleansAndChoices(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	const id = "1e6c0b7a-3d8f-4a9b-8c1d-7e8f9a0b1c2d"
	schema := `{"type":"object","additionalProperties":false,"required":["matter_id","days"],"properties":{` +
		`"matter_id":{"type":"string","format":"uuid"},"days":{"type":"integer","minimum":1},"fee":{"type":"number"},` +
		`"urgent":{"type":"boolean"},"kind":{"type":"string","enum":["motion","brief","letter"]}}}`
	tool := agent.ToolSchema{Name: "set_deadline", Description: "Set a deadline.", InputSchema: json.RawMessage(schema),
		SchemaSHA256: sha256Hex(schema), MatterField: "/matter_id"}
	in := map[string]any{"matter_id": demoMatter, "days": 14, "fee": 12.5, "urgent": false, "kind": "motion"}
	canonical, hash := canonicalOf(t, in)
	w := pendingWarrant(id, canonical, hash, "Set a deadline.")
	w.ToolName = "set_deadline"
	f := newFakeAPI(t, w)
	f.tools = []agent.ToolSchema{tool}
	ctx := openDesk(t, f)
	openEditor(t, ctx, id)
	if got := evalIn[[]string](t, ctx, fieldControls+`(document.querySelector('`+wsel(id)+`'))`); !slices.Equal(got,
		[]string{"days input", "fee input", "urgent select", "kind select", "matter_id readonly"}) { // the schema's own order
		t.Fatalf("the editor's fields: %q", got)
	}
	ed := wsel(id) + " .editor"
	row := func(m string) string { return ed + ` .field-row[data-member="` + m + `"] ` }
	setValue(t, ctx, row("days")+"input", "21")
	setValue(t, ctx, row("fee")+"input", "1e2")
	evalIn[any](t, ctx, `(() => {
		const u = document.querySelector('`+row("urgent")+`select'); u.value = 'true'; u.dispatchEvent(new Event('change', {bubbles: true}));
		const k = document.querySelector('`+row("kind")+`select'); k.selectedIndex = [...k.options].findIndex((o) => o.textContent === 'letter');
		k.dispatchEvent(new Event('change', {bubbles: true}));
		return null; })()`)
	want := map[string]any{"matter_id": demoMatter, "days": 21, "fee": 100, "urgent": true, "kind": "letter"}
	wantCanonical, wantHash := canonicalOf(t, want)
	if err := waitFor(ctx, `document.querySelector('`+ed+` .edit-hash').textContent === '`+wantHash+`'`); err != nil {
		t.Fatalf("the edit: %+v, want %s", editorOf(t, ctx, id), wantCanonical)
	}
	if st := editorOf(t, ctx, id); st.Canonical != wantCanonical || len(st.Diffs) != 4 || st.ApproveDisabled {
		t.Fatalf("the edit: %+v, want %s with 4 members changed", st, wantCanonical)
	}
	setValue(t, ctx, row("fee")+"input", "2.50")
	_, h2 := canonicalOf(t, map[string]any{"matter_id": demoMatter, "days": 21, "fee": 2.5, "urgent": true, "kind": "letter"})
	if err := waitFor(ctx, `document.querySelector('`+ed+` .edit-hash').textContent === '`+h2+`'`); err != nil {
		t.Fatalf("fee 2.50: %+v", editorOf(t, ctx, id))
	}
	setValue(t, ctx, row("days")+"input", "3 weeks")
	if err := waitFor(ctx, `!document.querySelector('`+ed+` .edit-invalid').hidden`); err != nil {
		t.Fatal("a days that is not a number is not refused")
	}
	got := evalIn[[]string](t, ctx, `[document.querySelector('`+ed+` .edit-invalid').textContent, String(document.querySelector('`+ed+` button.approve-edit').disabled),
		document.querySelector('`+row("days")+`input').getAttribute('aria-invalid') ?? '']`)
	if !strings.Contains(got[0], "days: is not a number") || got[1] != "true" || got[2] != "true" {
		t.Fatalf("a days that is not a number: %q", got)
	}
	if len(f.decisionBodies()) != 0 {
		t.Fatal("a decision was sent")
	}
}

// The editor lays the fields out in the order the catalog writes them
// (GET /v1/tools sends the schema as written; its pin is of the canonical
// form, the same in any order): a catalog that puts the body before the
// recipients gets its own order, not the desk's guess.
func TestDeskEditorKeepsTheCatalogsOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	const id = "6f1d5c2b-8e3a-4b4c-8d9e-2f3a4b5c6d7e"
	tool := catalogTool(t, emailTool)
	var schema map[string]json.RawMessage
	if err := json.Unmarshal(tool.InputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	var props map[string]json.RawMessage
	if err := json.Unmarshal(schema["properties"], &props); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("{")
	for i, k := range []string{"body", "subject", "attachments", "bcc", "cc", "to", "matter_id"} {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q:%s", k, props[k])
	}
	b.WriteString("}")
	schema["properties"] = json.RawMessage(b.String())
	var rest []string
	for k, v := range schema {
		rest = append(rest, fmt.Sprintf("%q:%s", k, v))
	}
	tool.InputSchema = json.RawMessage("{" + strings.Join(rest, ",") + "}")
	if _, h, err := contracts.CanonicalInput(tool.InputSchema); err != nil || h != tool.SchemaSHA256 {
		t.Fatalf("the reordered schema is not the pinned one: %v", err)
	}
	f := newFakeAPI(t, emailWarrant(t, id, emailInput()))
	f.tools = []agent.ToolSchema{tool}
	ctx := openDesk(t, f)
	openEditor(t, ctx, id)
	got := evalIn[[]string](t, ctx, fieldControls+`(document.querySelector('`+wsel(id)+`'))`)
	want := []string{"body textarea", "subject textarea", "attachments rows:0", "bcc list:0", "cc list:1", "to input", "matter_id readonly"}
	if !slices.Equal(got, want) {
		t.Fatalf("the editor's fields: %q, want the catalog's order %q", got, want)
	}
}
