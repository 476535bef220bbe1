package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const exampleDir = "../../docs/examples/new-tool"

// exampleDoc is a document of docs/examples/new-tool, edited, written to a
// temporary file.
func exampleDoc(t *testing.T, name string, edit func(string) string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(exampleDir, name))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if edit != nil {
		if edited := edit(doc); edited != doc {
			doc = edited
		} else {
			t.Fatalf("the edit changes nothing in %s", name)
		}
	}
	return writeTemp(t, name, []byte(doc))
}

// Issue 27 item 10: warrant config check loads the catalog, the agents
// and the policy with the functions' loaders and checks them together;
// each fault is one line naming the document, the field and where it is.
func TestConfigCheck(t *testing.T) {
	ok := runCLI("", "config", "check", "--catalog", filepath.Join(exampleDir, "catalog.json"),
		"--agents", filepath.Join(exampleDir, "agents.json"), "--policy", filepath.Join(exampleDir, "policy.json"))
	if ok.code != 0 || !strings.HasPrefix(ok.stdout, "config check: ok: TOOL_CATALOG (file:") || strings.Count(ok.stdout, "\n") != 1 {
		t.Fatalf("the example's documents: exit %d\n%s%s", ok.code, ok.stdout, ok.stderr)
	}
	replace := func(old, new string) func(string) string {
		return func(s string) string { return strings.Replace(s, old, new, 1) }
	}
	for _, tc := range []struct {
		name                    string
		catalog, agents, policy func(string) string
		want                    []string // each a line of the report, in part
	}{
		{"a trailing comma in the catalog", replace(`4774a8"}`, `4774a8"},`), nil, nil,
			[]string{"TOOL_CATALOG (file:", "catalog.json): line 14, column 166: field tools.save_research_memo: a trailing comma before '}'"}},
		{"an unknown member of the agents", nil, replace(`"prompt_version"`, `"promt_version": "x", "prompt_version"`), nil,
			[]string{"AGENTS (file:", "field agents.research_clerk.promt_version: unknown field"}},
		{"a wrong type in the policy", nil, nil, replace(`"version": "new-tool-rehearsal-1"`, `"version": 1`),
			[]string{"TOOL_POLICY (file:", "policy.json): line 2, column 3: field version: wrong type: must be a string"}},
		{"an agent naming a tool the catalog lacks", nil, replace(`"tools": ["save_research_memo"]`, `"tools": ["save_research_memo", "send_fax"]`), nil,
			[]string{"AGENTS (file:", ": field agents.research_clerk.tools[1]: agent research_clerk names tool send_fax, which TOOL_CATALOG (file:"}},
		{"a tool without a policy entry", nil, nil, replace(`"save_research_memo"`, `"save_research_memos"`),
			[]string{"TOOL_CATALOG (file:", ": field tools.save_research_memo: tool save_research_memo has no entry in the tools of TOOL_POLICY (file:",
				"it takes the policy's default tier, prohibited, and every call of it is denied"}},
		{"an unpriced model", nil, replace(`"prompt_version"`, `"model_id": "acme.lawyer-9000", "prompt_version"`), nil,
			[]string{"AGENTS (file:", ": field agents.research_clerk.model_id: agent research_clerk's model has no price", `(model "acme.lawyer-9000")`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"config", "check",
				"--catalog", exampleDoc(t, "catalog.json", tc.catalog),
				"--agents", exampleDoc(t, "agents.json", tc.agents),
				"--policy", exampleDoc(t, "policy.json", tc.policy)}
			got := runCLI("", args...)
			if got.code != 1 || !strings.Contains(got.stderr, "the configuration has 1 fault(s)") || strings.Count(got.stdout, "\n") != 1 {
				t.Fatalf("exit %d, want 1 and one fault\n%s%s", got.code, got.stdout, got.stderr)
			}
			wantAll(t, got.stdout, tc.want)
		})
	}
	if got := runCLI("", "config", "check"); got.code != 2 || !strings.Contains(got.stderr, "at least one of --catalog FILE") {
		t.Fatalf("no document: exit %d\n%s", got.code, got.stderr)
	}
}

// wantAll fails unless s holds each of want, in order.
func wantAll(t *testing.T, s string, want []string) {
	t.Helper()
	rest := s
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("%s\nwant %q (after the parts before it)", s, w)
		}
		rest = rest[i+len(w):]
	}
}
