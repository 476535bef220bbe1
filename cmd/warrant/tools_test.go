package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/tools"
	"github.com/seed-f6d3920e/warrant/pkg/tools/mcpserver"
)

// referenceServer serves the reference tools over MCP on loopback.
func referenceServer(t *testing.T) string {
	t.Helper()
	s, err := mcpserver.New(tools.Reference(nil, nil), mcpserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mcpserver.Handler(s))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// exampleCatalog is docs/examples/new-tool/catalog.json aimed at url, with
// edit applied to its text.
func exampleCatalog(t *testing.T, url string, edit func(string) string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "new-tool", "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.ReplaceAll(string(b), "http://127.0.0.1:3001/mcp", url)
	if edit != nil {
		doc = edit(doc)
	}
	return writeTemp(t, "catalog.json", []byte(doc))
}

const examplePolicy = "../../docs/examples/new-tool/policy.json"

// Issue 18: warrant tools check passes the example catalog against the
// reference MCP server and its policy, and names each problem otherwise:
// a schema the server changed (with the server's current hash), a tool the
// server does not offer, a tool the policy does not list, a server that
// cannot be reached.
func TestToolsCheck(t *testing.T) {
	url := referenceServer(t)
	ok := runCLI("", "tools", "check", "--catalog", exampleCatalog(t, url, nil), "--policy", examplePolicy)
	if ok.code != 0 || !strings.Contains(ok.stdout, "ok save_research_memo: draft_document, schema f43fa9f7") || !strings.Contains(ok.stdout, "check: ok") {
		t.Fatalf("the example catalog: exit %d\n%s%s", ok.code, ok.stdout, ok.stderr)
	}
	const pin = "f43fa9f717d00e552ae885c76c17bcb0cf3d666e546ad707546abad82d4774a8"
	for _, tc := range []struct {
		name, catalog, policy, want string
	}{
		{"drift", exampleCatalog(t, url, func(s string) string {
			s = strings.Replace(s, `"maxLength": 300}`, `"maxLength": 200}`, 1)
			return strings.Replace(s, pin, mustSchemaHash(t, s), 1)
		}), examplePolicy, "has another schema: pinned "},
		{"not offered", exampleCatalog(t, url, func(s string) string {
			return strings.Replace(s, `"tool": "draft_document"`, `"tool": "draft_memo"`, 1)
		}),
			examplePolicy, "the server offers no tool draft_memo"},
		{"not in the policy", exampleCatalog(t, url, nil), "", "save_research_memo: the policy does not list it"},
		{"server down", exampleCatalog(t, "http://127.0.0.1:9/mcp", nil), examplePolicy, "not reached"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"tools", "check", "--catalog", tc.catalog}
			if tc.policy != "" {
				args = append(args, "--policy", tc.policy)
			}
			got := runCLI("", args...)
			if got.code != 1 || !strings.Contains(got.stdout, tc.want) || !strings.Contains(got.stdout, "problem(s)") {
				t.Fatalf("exit %d, want 1 and %q\n%s%s", got.code, tc.want, got.stdout, got.stderr)
			}
			if tc.name == "drift" && !strings.Contains(got.stdout, "the server's is "+pin) {
				t.Fatalf("the server's current hash is not printed:\n%s", got.stdout)
			}
		})
	}
	check(t, runCLI("", "tools", "check"), 2, "", "--catalog")
}

// mustSchemaHash is the pin of the save_research_memo schema in a catalog's
// text.
func mustSchemaHash(t *testing.T, catalogText string) string {
	t.Helper()
	i := strings.Index(catalogText, `"input_schema": `)
	j := strings.Index(catalogText[i:], `,
      "summary"`)
	got := runCLI(catalogText[i+len(`"input_schema": `):i+j], "hash")
	if got.code != 0 {
		t.Fatal(got.stderr)
	}
	return strings.TrimSpace(got.stdout)
}

// Issue 19: an https server is reached (its origin, no call sent) and a
// lambda server is named; neither has a tool list to compare, so the
// catalog's own schemas stand. A server that cannot be reached is a
// problem.
func TestToolsCheckHTTPSAndLambda(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls++ }))
	t.Cleanup(srv.Close)
	example := func(name, from, to string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "new-tool", name))
		if err != nil {
			t.Fatal(err)
		}
		return writeTemp(t, name, []byte(strings.ReplaceAll(string(b), from, to)))
	}
	https := runCLI("", "tools", "check", "--catalog", example("catalog-https.json", "http://127.0.0.1:3001", srv.URL), "--policy", examplePolicy)
	if https.code != 0 || !strings.Contains(https.stdout, "ok reached") || !strings.Contains(https.stdout, "check: ok") || calls != 0 {
		t.Fatalf("https: exit %d, %d request(s) reached the endpoint\n%s%s", https.code, calls, https.stdout, https.stderr)
	}
	down := runCLI("", "tools", "check", "--catalog", example("catalog-https.json", "http://127.0.0.1:3001", "http://127.0.0.1:9"), "--policy", examplePolicy)
	if down.code != 1 || !strings.Contains(down.stdout, "PROBLEM not reached") {
		t.Fatalf("https down: exit %d\n%s%s", down.code, down.stdout, down.stderr)
	}
	lambda := runCLI("", "tools", "check", "--catalog", "../../docs/examples/new-tool/catalog-lambda.json", "--policy", examplePolicy)
	if lambda.code != 0 || !strings.Contains(lambda.stdout, "ToolFunctionArns must list this ARN") || !strings.Contains(lambda.stdout, "ok save_research_memo: high (effect)") {
		t.Fatalf("lambda: exit %d\n%s%s", lambda.code, lambda.stdout, lambda.stderr)
	}
}
