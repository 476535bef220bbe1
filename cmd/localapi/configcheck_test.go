package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 27 item 9: a catalog or agents document the functions would
// refuse stops the stack before anything is built or started, with the
// fault's place (document, field, line and column) and exit 1, where it
// once said it was ready and answered 500.
func TestRefusesABrokenConfiguration(t *testing.T) {
	example := func(t *testing.T, name string, edit func(string) string) string {
		b, err := os.ReadFile(filepath.Join(repo, "docs", "examples", "new-tool", name))
		if err != nil {
			t.Fatal(err)
		}
		edited := edit(string(b))
		if edited == string(b) {
			t.Fatalf("the edit changes nothing in %s", name)
		}
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	keep := func(s string) string { return s + "\n" }
	for _, tc := range []struct {
		name            string
		catalog, agents func(string) string
		want            func(catalog, agents string) string
	}{
		{"a trailing comma in the catalog", func(s string) string { return strings.Replace(s, `4774a8"}`, `4774a8"},`, 1) }, keep,
			func(catalog, _ string) string {
				return "TOOL_CATALOG (file:" + catalog + "): line 14, column 166: field tools.save_research_memo: a trailing comma before '}'"
			}},
		{"an agent naming a tool the catalog lacks", keep,
			func(s string) string {
				return strings.Replace(s, `["save_research_memo"]`, `["save_research_memo", "send_fax"]`, 1)
			},
			func(catalog, agents string) string {
				return "AGENTS (file:" + agents + "): line 6, column 39: field agents.research_clerk.tools[1]: agent research_clerk names tool send_fax, which TOOL_CATALOG (file:" + catalog + ") does not have"
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			catalog, agents := example(t, "catalog.json", tc.catalog), example(t, "agents.json", tc.agents)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var stdout, stderr bytes.Buffer
			cmd := localapi(ctx, "-addr", freeAddr(t), "-log-dir", t.TempDir())
			cmd.Env = append(cmd.Env, "TOOL_CATALOG=file:"+catalog, "AGENTS=file:"+agents, "TOOL_POLICY=")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("localapi with a broken configuration: %v, want exit 1\n%s", err, stderr.String())
			}
			out := stderr.String()
			want := "localapi: the functions' configuration does not load; nothing was started:\n  " + tc.want(catalog, agents) + "\n"
			if !strings.HasSuffix(out, want) {
				t.Fatalf("stderr:\n%s\nwant it to end with:\n%s", out, want)
			}
			for _, started := range []string{"\nbuild: ", "\nlambda ", "\napi: ", "ready"} {
				if strings.Contains("\n"+out, started) {
					t.Errorf("%q: the stack went on to start:\n%s", started, out)
				}
			}
		})
	}
}

// Issue 27 item 10: the "Try it" lines start a run of one of the stack's
// agents (AGENTS), and name them all.
func TestTryItUsesTheAgents(t *testing.T) {
	agents, err := checkConfiguration(StackConfig{ModelID: DefaultModelID,
		ToolCatalog: "file:" + filepath.Join(repo, "docs", "examples", "new-tool", "catalog.json"),
		Agents:      "file:" + filepath.Join(repo, "docs", "examples", "new-tool", "agents.json")})
	if err != nil || len(agents) != 1 || agents[0] != "research_clerk" {
		t.Fatalf("agents %v, %v", agents, err)
	}
	lines := curlExamples("http://127.0.0.1:3000", agents)
	if !strings.Contains(lines, `-d '{"agent_key":"research_clerk",`) || !strings.Contains(lines, "# this stack's agents (AGENTS): research_clerk") ||
		strings.Contains(lines, "matter_assistant") {
		t.Errorf("Try it with the research clerk:\n%s", lines)
	}
	agents, err = checkConfiguration(StackConfig{ModelID: DefaultModelID})
	if err != nil || len(agents) != 1 || agents[0] != "matter_assistant" {
		t.Fatalf("without AGENTS: %v, %v", agents, err)
	}
	if lines := curlExamples("http://127.0.0.1:3000", []string{"conflicts_clerk", "matter_assistant"}); !strings.Contains(lines, `"agent_key":"matter_assistant"`) ||
		!strings.Contains(lines, "# this stack's agents (AGENTS): conflicts_clerk, matter_assistant") {
		t.Errorf("Try it with two agents:\n%s", lines)
	}
}
