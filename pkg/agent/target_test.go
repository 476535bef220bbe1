package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// fakeTarget is a firm's system as a target: it records every call and
// answers with answer (n counts the calls of that tool, from 1).
type fakeTarget struct {
	mu     sync.Mutex
	calls  []agent.TargetCall
	answer func(c agent.TargetCall, n int) (agent.TargetResult, error)
}

func (f *fakeTarget) Call(_ context.Context, c agent.TargetCall) (agent.TargetResult, error) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	n := 0
	for _, prev := range f.calls {
		if prev.Tool == c.Tool {
			n++
		}
	}
	f.mu.Unlock()
	return f.answer(c, n)
}

func (f *fakeTarget) of(tool string) []agent.TargetCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []agent.TargetCall
	for _, c := range f.calls {
		if c.Tool == tool {
			out = append(out, c)
		}
	}
	return out
}

// dmsCatalog is a catalog of a firm's document system: a search (read) and
// a filing (effect), both carrying the matter at /matter.
func dmsCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	schema := func(field string) json.RawMessage {
		return json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"matter":{"type":"string"},"` +
			field + `":{"type":"string","minLength":1}},"required":["matter","` + field + `"]}`)
	}
	pin := func(s json.RawMessage) string { return mustHash(t, s) }
	doc, _ := json.Marshal(map[string]any{
		"servers": map[string]any{"dms": map[string]any{"kind": "mcp", "url": "http://127.0.0.1:9/mcp", "auth": map[string]any{"kind": "none"}}},
		"tools": map[string]any{
			"dms_search": map[string]any{"description": "Search the document system.", "input_schema": schema("query"),
				"summary": "Search for {{quote .query}}.", "matter_field": "/matter", "class": "read", "timeout": "5s",
				"target": map[string]any{"kind": "mcp", "server": "dms", "tool": "search", "schema_sha256": pin(schema("query"))}},
			"dms_file": map[string]any{"description": "File a document.", "input_schema": schema("title"),
				"summary": "File {{quote .title}}.", "matter_field": "/matter", "class": "effect", "timeout": "5s",
				"target": map[string]any{"kind": "mcp", "server": "dms", "tool": "file", "schema_sha256": pin(schema("title"))}},
		},
	})
	c, err := catalog.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// dmsBrain is the harness's brain over the document system's catalog,
// reached through target.
func (h *harness) dmsBrain(target agent.Target) *agent.Brain {
	h.t.Helper()
	return h.dmsBrainOn(h.store, target, `{"dms_search":{"tier":"low","reason":"reads","replayable":true},"dms_file":{"tier":"high","reason":"files with a court"}}`)
}

// dmsBrainOn is dmsBrain over store, under a policy whose tools member is
// tools (JSON).
func (h *harness) dmsBrainOn(store agent.Store, target agent.Target, tools string) *agent.Brain {
	h.t.Helper()
	return h.dmsBrainKeys(store, target, tools, h.dataKeys)
}

// dmsBrainKeys is dmsBrainOn with the data keys given (nil: none, as the
// sweeper runs).
func (h *harness) dmsBrainKeys(store agent.Store, target agent.Target, tools string, keys seal.Keyring) *agent.Brain {
	h.t.Helper()
	cat := dmsCatalog(h.t)
	policy, err := toolpolicy.LoadDocument([]byte(`{"version":"dms-1","default":{"tier":"prohibited","reason":"unlisted"},
		"tools":` + tools + `}`))
	if err != nil {
		h.t.Fatal(err)
	}
	var set []agent.Tool
	for _, name := range cat.Names() {
		set = append(set, agent.Tool{Tool: cat.Tools[name], System: target, Server: "dms"})
	}
	def := agent.Definition{Key: "dms_assistant", SystemPrompt: "You file.", PromptVersion: "dms/1", Tools: cat.Names()}
	brain, err := agent.New(store, h.model, policy, h.cfg.Prices, failure.NewLogger(h.logs),
		agent.Config{ModelID: testModel, Keys: keys, FirmBudget: h.cfg.DefaultFirmBudget(), Heads: h.keys, CatalogVersion: cat.Version, AgentsVersion: "agents-v"},
		set, def)
	if err != nil {
		h.t.Fatal(err)
	}
	return brain
}

// searchThenFile scripts a model that searches (naming no matter), then
// files (naming the matter the test gives), then answers "Done.".
func searchThenFile(fileMatter func(h *harness) string) func(h *harness) bedrocktest.Script {
	return func(h *harness) bedrocktest.Script {
		file := map[string]any{"title": "Motion"}
		if m := fileMatter(h); m != "" {
			file["matter"] = m
		}
		fileRaw, _ := json.Marshal(file)
		return bedrocktest.Script{Rules: []bedrocktest.Rule{
			{Name: "done", When: bedrocktest.AfterToolResultFrom("dms_file", ""), Reply: bedrocktest.Reply{Text: "Done."}},
			{Name: "file", When: bedrocktest.AfterToolResultFrom("dms_search", ""), Reply: bedrocktest.Reply{
				ToolUses: []bedrocktest.ToolUse{{Name: "dms_file", Input: fileRaw}}}},
			{Name: "search", Times: 1, When: bedrocktest.Always, Reply: bedrocktest.Reply{
				ToolUses: []bedrocktest.ToolUse{{Name: "dms_search", Input: json.RawMessage(`{"query":"deposition"}`)}}}},
		}}
	}
}

func (h *harness) startWith(brain *agent.Brain, text string) agent.Result {
	h.t.Helper()
	inv := h.invoke(uuid.NewString(), text)
	inv.AgentKey = "dms_assistant"
	res, err := brain.Run(context.Background(), inv, agent.StartOptions{CostCapUSD: "1.00"})
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

// Issue 18: a catalog tool runs on its system through its target. The run
// records the catalog's and the agents' versions; the matter comes from the
// run (filled where the model left it out); a held effect, once counsel
// signs, is sent exactly once with its effect_ref and the run's ids, and the
// input that reaches the system is the one counsel signed.
func TestCatalogToolsRunThroughTheirTarget(t *testing.T) {
	h := newHarness(t, searchThenFile(func(*harness) string { return "" }), options{})
	target := &fakeTarget{answer: func(c agent.TargetCall, _ int) (agent.TargetResult, error) {
		return agent.TargetResult{Content: json.RawMessage(`{"ok":true,"tool":"` + c.Tool + `"}`)}, nil
	}}
	brain := h.dmsBrain(target)
	res := h.startWith(brain, "File the motion.")
	p := res.State.PendingApproval
	if res.State.Status != warrant.RunHeld || p == nil || p.ToolName != "dms_file" || p.HumanSummary != "File “Motion”." {
		t.Fatalf("not held on the filing: %+v", res.State)
	}
	// Counsel is shown which system serves the tool and the schema the
	// catalog pinned: on the ledger's run.blocked and the warrant.
	pin := dmsCatalog(t).Tools["dms_file"].SchemaSHA256
	w, err := h.store.GetWarrant(context.Background(), h.firm, res.State.RunID, p.ApprovalRequestID)
	if p.ToolServer != "dms" || p.ToolSchemaSHA256 != pin || err != nil || w.ToolServer != "dms" || w.ToolSchemaSHA256 != pin {
		t.Fatalf("run.blocked names server %q pin %q; the warrant %q %q (%v)", p.ToolServer, p.ToolSchemaSHA256, w.ToolServer, w.ToolSchemaSHA256, err)
	}
	started := h.ledger(res.State.RunID)[0].Event.(*contracts.RunStarted)
	if started.CatalogVersion != dmsCatalog(t).Version || started.AgentsVersion != "agents-v" {
		t.Fatalf("run.started records catalog %q agents %q", started.CatalogVersion, started.AgentsVersion)
	}
	search := target.of("search")
	if len(search) != 1 || string(search[0].Input) != `{"matter":"`+h.matter+`","query":"deposition"}` ||
		search[0].RunID != res.State.RunID || search[0].FirmID != h.firm || search[0].MatterID != h.matter || search[0].EffectRef == "" {
		t.Fatalf("the search reached its system as %+v", search)
	}
	var signed json.RawMessage
	json.Unmarshal(p.ToolInput, &signed)
	if string(p.ToolInput) != `{"matter":"`+h.matter+`","title":"Motion"}` {
		t.Fatalf("counsel is asked to sign %s", p.ToolInput)
	}
	h.decide(res, warrant.DecisionApproved)
	done, err := brain.Resume(context.Background(), agent.ResumeRequest{FirmID: h.firm, RunID: res.State.RunID, ApprovalID: p.ApprovalRequestID, UserID: h.user})
	if err != nil || done.State.Status != warrant.RunCompleted {
		t.Fatalf("resume: %+v %v", done.State, err)
	}
	files := target.of("file")
	if len(files) != 1 || string(files[0].Input) != string(p.ToolInput) || files[0].SchemaSHA256 != dmsCatalog(t).Tools["dms_file"].SchemaSHA256 {
		t.Fatalf("the filing reached its system as %+v", files)
	}
	var ref string
	for _, tc := range h.completions(res.State.RunID) {
		if tc.ToolName == "dms_file" {
			ref = tc.EffectRef
		}
	}
	if ref == "" || files[0].EffectRef != ref {
		t.Fatalf("effect_ref %q sent, %q recorded", files[0].EffectRef, ref)
	}
}

// A call naming another matter than the run's at the tool's matter field
// is denied (the matter wall), never sent.
func TestCatalogToolNamingAnotherMatterIsDenied(t *testing.T) {
	h := newHarness(t, searchThenFile(func(*harness) string { return uuid.NewString() }), options{})
	target := &fakeTarget{answer: func(agent.TargetCall, int) (agent.TargetResult, error) {
		return agent.TargetResult{Content: json.RawMessage(`{}`)}, nil
	}}
	res := h.startWith(h.dmsBrain(target), "File the motion.")
	if res.State.Status != warrant.RunCompleted || len(target.of("file")) != 0 {
		t.Fatalf("run %+v, %d filings sent", res.State, len(target.of("file")))
	}
	tcs := h.completions(res.State.RunID)
	if last := tcs[len(tcs)-1]; last.ToolName != "dms_file" || last.Status != contracts.ToolDenied || resultMessage(last) != agent.ReasonOtherMatter {
		t.Fatalf("the filing's answer: %+v", last)
	}
}

// How far a call got decides what happens: a read whose system could not
// be reached is tried again; a tool's own error (isError) is a tool error
// the model sees without its text; an effect whose answer was lost after it
// was sent ends effect_outcome_unknown, flagged, never sent again; an
// oversized result reaches the model cut, with the whole result's hash in
// the ledger.
func TestTargetOutcomes(t *testing.T) {
	const secret = "ORA-00942 table FILINGS_PROD does not exist at db-prod-7"
	for _, tc := range []struct {
		name   string
		search func(n int) (agent.TargetResult, error)
		file   func(n int) (agent.TargetResult, error)
		check  func(t *testing.T, h *harness, res agent.Result, target *fakeTarget)
	}{
		{"read retried after its system was unreachable", func(n int) (agent.TargetResult, error) {
			if n == 1 {
				return agent.TargetResult{}, warrant.ErrTargetUnreachable
			}
			return agent.TargetResult{Content: json.RawMessage(`{"hits":[]}`)}, nil
		}, nil, func(t *testing.T, h *harness, res agent.Result, target *fakeTarget) {
			if n := len(target.of("search")); n != 2 || completionOf(h, res, "dms_search").Status != contracts.ToolSuccess {
				t.Fatalf("%d searches, answer %+v", n, completionOf(h, res, "dms_search"))
			}
		}},
		{"isError is a sanitized tool error", func(int) (agent.TargetResult, error) {
			return agent.TargetResult{Content: json.RawMessage(`[{"type":"text","text":"` + secret + `"}]`), IsError: true}, nil
		}, nil, func(t *testing.T, h *harness, res agent.Result, target *fakeTarget) {
			c := completionOf(h, res, "dms_search")
			if c.Status != contracts.ToolError || strings.Contains(string(c.Result), "ORA-") || strings.Contains(h.logs.String(), "ORA-") ||
				!strings.HasPrefix(resultMessage(c), "tool failed (ref ") {
				t.Fatalf("answer %+v", c)
			}
		}},
		{"an effect's answer lost after it was sent", nil, func(int) (agent.TargetResult, error) {
			return agent.TargetResult{}, errors.Join(warrant.ErrTargetOutcomeUnknown, errors.New(secret))
		}, func(t *testing.T, h *harness, res agent.Result, target *fakeTarget) {
			c := completionOf(h, res, "dms_file")
			if res.State.FailureKind != string(failure.KindEffectOutcomeUnknown) || c.Status != contracts.ToolUnknown || len(target.of("file")) != 1 ||
				strings.Contains(h.logs.String(), "ORA-") {
				t.Fatalf("run %+v, answer %+v, %d sent", res.State, c, len(target.of("file")))
			}
			claim, err := h.store.LatestEffect(context.Background(), h.firm, res.State.RunID, "dms_file", c.InputSHA256)
			if err != nil || claim == nil || !claim.NeedsReconciliation {
				t.Fatalf("claim %+v %v", claim, err)
			}
		}},
		{"an oversized result is cut, hashed", func(int) (agent.TargetResult, error) {
			big, _ := json.Marshal(map[string]string{"text": strings.Repeat("é", agent.MaxToolResultBytes)})
			return agent.TargetResult{Content: big}, nil
		}, nil, func(t *testing.T, h *harness, res agent.Result, target *fakeTarget) {
			c := completionOf(h, res, "dms_search")
			var cut struct {
				Truncated    bool   `json:"truncated"`
				ResultSHA256 string `json:"result_sha256"`
			}
			if c.ResultSHA256 == "" || c.ResultBytes <= agent.MaxToolResultBytes || len(c.Result) > agent.MaxToolResultBytes ||
				json.Unmarshal(c.Result, &cut) != nil || !cut.Truncated || cut.ResultSHA256 != c.ResultSHA256 {
				t.Fatalf("answer: %d bytes, sha %q of %d", len(c.Result), c.ResultSHA256, c.ResultBytes)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, searchThenFile(func(*harness) string { return "" }), options{})
			ok := func(int) (agent.TargetResult, error) {
				return agent.TargetResult{Content: json.RawMessage(`{"ok":true}`)}, nil
			}
			search, file := tc.search, tc.file
			if search == nil {
				search = ok
			}
			if file == nil {
				file = ok
			}
			target := &fakeTarget{answer: func(c agent.TargetCall, n int) (agent.TargetResult, error) {
				if c.Tool == "search" {
					return search(n)
				}
				return file(n)
			}}
			brain := h.dmsBrain(target)
			res := h.startWith(brain, "File the motion.")
			if tc.file != nil {
				h.decide(res, warrant.DecisionApproved)
				var err error
				res, err = brain.Resume(context.Background(), agent.ResumeRequest{FirmID: h.firm, RunID: res.State.RunID,
					ApprovalID: res.State.PendingApproval.ApprovalRequestID, UserID: h.user})
				if err != nil {
					t.Fatal(err)
				}
			}
			tc.check(t, h, res, target)
		})
	}
}

func completionOf(h *harness, res agent.Result, tool string) *contracts.ToolCompleted {
	var out *contracts.ToolCompleted
	for _, c := range h.completions(res.State.RunID) {
		if c.ToolName == tool {
			out = c
		}
	}
	if out == nil {
		h.t.Fatalf("no tool.completed of %s", tool)
	}
	return out
}

// Issue 31, item 1: a target's error that is neither "unreachable" nor
// "outcome unknown" (here a plain errors.New) is read as unknown, the safe
// reading agent.Target documents: the effect's call is recorded unknown,
// the run ends effect_outcome_unknown, its claim stays held (taken, never
// completed or failed) and flagged, and the system saw the call once.
//
// Checked: with outcomeUnknown returning errors.Is(err,
// warrant.ErrTargetOutcomeUnknown) instead of !errors.Is(err,
// warrant.ErrTargetUnreachable), this test fails with "run {...
// Status:completed ... FailureKind: ...}, answer status error: want failed
// effect_outcome_unknown, unknown" (the boom read as "did not run": the
// claim failed, the model told, the run completed); without it, it passes.
func TestUnclassifiedTargetErrorIsOutcomeUnknown(t *testing.T) {
	h := newHarness(t, searchThenFile(func(*harness) string { return "" }), options{})
	target := &fakeTarget{answer: func(c agent.TargetCall, _ int) (agent.TargetResult, error) {
		if c.Tool == "file" {
			return agent.TargetResult{}, errors.New("boom")
		}
		return agent.TargetResult{Content: json.RawMessage(`{"ok":true}`)}, nil
	}}
	brain := h.dmsBrain(target)
	res := h.startWith(brain, "File the motion.")
	if res.State.PendingApproval == nil || res.State.PendingApproval.ToolName != "dms_file" {
		t.Fatalf("not held on the filing: %+v", res.State)
	}
	h.decide(res, warrant.DecisionApproved)
	res, err := brain.Resume(context.Background(), agent.ResumeRequest{FirmID: h.firm, RunID: res.State.RunID,
		ApprovalID: res.State.PendingApproval.ApprovalRequestID, UserID: h.user})
	if err != nil {
		t.Fatal(err)
	}
	c := completionOf(h, res, "dms_file")
	if res.State.Status != warrant.RunFailed || res.State.FailureKind != string(failure.KindEffectOutcomeUnknown) || c.Status != contracts.ToolUnknown {
		t.Fatalf("run %+v, answer status %s: want failed effect_outcome_unknown, unknown", res.State, c.Status)
	}
	if n := len(target.of("file")); n != 1 {
		t.Fatalf("the system saw %d filings, want 1", n)
	}
	claim, err := h.store.LatestEffect(context.Background(), h.firm, res.State.RunID, "dms_file", c.InputSHA256)
	if err != nil || claim == nil || claim.State != warrant.ClaimClaimed || !claim.Taken() || !claim.NeedsReconciliation || claim.EffectRef != c.EffectRef {
		t.Fatalf("claim %+v %v: want it still held (taken, open), flagged, under the answer's effect_ref", claim, err)
	}
}
