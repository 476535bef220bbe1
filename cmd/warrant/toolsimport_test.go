package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/auth"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/mcp"
	"github.com/seed-f6d3920e/warrant/pkg/tools"
	"github.com/seed-f6d3920e/warrant/pkg/tools/mcpserver"
)

// TestMain stops the moto_server a test started (Secrets Manager for the
// bearer token of TestToolsImportAuth).
func TestMain(m *testing.M) { dynamotest.Main(m) }

// annotatedServer serves the reference tools over MCP on loopback with
// their hints (readOnlyHint on the searches), behind wrap when it is set.
func annotatedServer(t *testing.T, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	s, err := mcpserver.New(tools.Reference(nil, nil), mcpserver.Options{Annotations: mcpserver.ReferenceAnnotations()})
	if err != nil {
		t.Fatal(err)
	}
	h := mcpserver.Handler(s)
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// remoteTools is what pkg/mcp lists on the server at url, by name: the
// schemas and pins the runtime checks calls against.
func remoteTools(t *testing.T, url string) map[string]mcp.RemoteTool {
	t.Helper()
	target, err := mcp.New(mcp.Config{Name: "reference", URL: url, Auth: mcp.Auth{Kind: mcp.AuthNone}})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := target.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]mcp.RemoteTool{}
	for _, rt := range list {
		out[rt.Name] = rt
	}
	return out
}

// importedDoc is a printed catalog fragment, generic enough to fill in.
type importedDoc struct {
	Servers map[string]map[string]any             `json:"servers"`
	Tools   map[string]map[string]json.RawMessage `json:"tools"`
}

func decodeImported(t *testing.T, stdout string) importedDoc {
	t.Helper()
	var d importedDoc
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatalf("the output is not a JSON document: %v\n%s", err, stdout)
	}
	return d
}

// userFields are the members of an imported entry the user decides, and a
// value for each that the catalog takes.
var userFields = map[string]string{
	"summary":      `"Call the tool."`,
	"matter_field": `"/matter_id"`,
	"class":        `"effect"`,
	"timeout":      `"20s"`,
}

// filled is d with the user's fields of every tool set, but those of skip.
func filled(t *testing.T, d importedDoc, skip string) []byte {
	t.Helper()
	out := importedDoc{Servers: d.Servers, Tools: map[string]map[string]json.RawMessage{}}
	for name, entry := range d.Tools {
		e := map[string]json.RawMessage{}
		for k, v := range entry {
			e[k] = v
		}
		for field, v := range userFields {
			if field != skip {
				e[field] = json.RawMessage(v)
			}
		}
		out.Tools[name] = e
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Issue 25, item 9: `warrant tools import` prints a server's tool as a
// catalog entry: the server's schema, pinned as pkg/mcp pins it, and each
// field the user decides (summary, matter field, class, timeout) left in a
// form the catalog refuses, naming that field, so an imported entry never
// loads with a guessed class. Filled in, it loads, and tools check passes
// it against the same server. The server's hints are shown on stderr and
// decide nothing.
func TestToolsImport(t *testing.T) {
	url := annotatedServer(t, nil)
	remote := remoteTools(t, url)
	const pin = "f43fa9f717d00e552ae885c76c17bcb0cf3d666e546ad707546abad82d4774a8" // docs/examples/new-tool/catalog.json's
	if remote["draft_document"].SchemaSHA256 != pin {
		t.Fatalf("pkg/mcp pins draft_document as %s, the example catalog as %s", remote["draft_document"].SchemaSHA256, pin)
	}

	got := runCLI("", "tools", "import", "--server", url, "--name", "reference", "--tool", "draft_document", "--as", "save_research_memo")
	if got.code != 0 {
		t.Fatalf("exit %d\n%s%s", got.code, got.stdout, got.stderr)
	}
	d := decodeImported(t, got.stdout)
	if len(d.Tools) != 1 || d.Tools["save_research_memo"] == nil {
		t.Fatalf("want the one tool save_research_memo:\n%s", got.stdout)
	}
	var target struct{ Kind, Server, Tool, Schema_sha256 string }
	if err := json.Unmarshal(d.Tools["save_research_memo"]["target"], &target); err != nil {
		t.Fatal(err)
	}
	if target.Kind != "mcp" || target.Server != "reference" || target.Tool != "draft_document" || target.Schema_sha256 != pin {
		t.Fatalf("target %+v, want draft_document on reference pinned %s", target, pin)
	}
	if srv, _ := json.Marshal(d.Servers); string(srv) != `{"reference":{"auth":{"kind":"none"},"kind":"mcp","url":"`+url+`"}}` {
		t.Fatalf("servers %s", srv)
	}
	if _, err := catalog.Parse([]byte(got.stdout)); err == nil {
		t.Fatal("the catalog loads an imported entry whose class, summary, matter field and timeout nobody set")
	}
	for field := range userFields {
		_, err := catalog.Parse(filled(t, d, field))
		var ce *catalog.Error
		if !errors.As(err, &ce) || ce.Path != "tools.save_research_memo."+field {
			t.Errorf("with every field set but %s, the catalog says %v; want it to refuse %s", field, err, field)
		}
	}
	c, err := catalog.Parse(filled(t, d, ""))
	if err != nil {
		t.Fatalf("the filled entry does not load: %v", err)
	}
	if tool := c.Tools["save_research_memo"]; tool.SchemaSHA256 != pin || tool.Target.SchemaSHA256 != pin || tool.Description != remote["draft_document"].Description {
		t.Fatalf("loaded %+v", tool)
	}
	if !strings.Contains(got.stderr, "{{TO_SET}}") || !strings.Contains(got.stderr, "class") {
		t.Errorf("stderr does not say what is left to set:\n%s", got.stderr)
	}
	check := runCLI("", "tools", "check", "--catalog", writeTemp(t, "catalog.json", filled(t, d, "")), "--policy", examplePolicy)
	if check.code != 0 || !strings.Contains(check.stdout, "ok save_research_memo: draft_document, schema "+pin) {
		t.Fatalf("tools check on the filled entry: exit %d\n%s%s", check.code, check.stdout, check.stderr)
	}

	// Every tool of the server: each pinned as pkg/mcp pins it, none with a
	// class, whatever its hints say (the searches say readOnlyHint).
	all := runCLI("", "tools", "import", "--server", url)
	if all.code != 0 {
		t.Fatalf("exit %d\n%s%s", all.code, all.stdout, all.stderr)
	}
	d = decodeImported(t, all.stdout)
	if len(d.Tools) != len(remote) {
		t.Fatalf("%d tools printed, the server offers %d", len(d.Tools), len(remote))
	}
	for name, rt := range remote {
		entry := d.Tools[name]
		var target struct{ Schema_sha256 string }
		if entry == nil || json.Unmarshal(entry["target"], &target) != nil || target.Schema_sha256 != rt.SchemaSHA256 {
			t.Errorf("%s: %s, want pinned %s", name, entry["target"], rt.SchemaSHA256)
		}
		if c := string(entry["class"]); c == `"read"` || c == `"effect"` {
			t.Errorf("%s: class %s set from the server", name, c)
		}
	}
	if !strings.Contains(all.stderr, `"readOnlyHint":true`) || !strings.Contains(all.stderr, "not trusted") {
		t.Errorf("the server's hints are not shown as untrusted on stderr:\n%s", all.stderr)
	}
	if _, ok := d.Servers["localhost"]; ok || d.Servers["server"] == nil {
		t.Errorf("servers %v: want the default name server for 127.0.0.1", d.Servers)
	}
	if c, err := catalog.Parse(filled(t, d, "")); err != nil || len(c.Tools) != len(remote) {
		t.Fatalf("the filled catalog of every tool: %v", err)
	}
}

// Issue 25, item 9: each way tools import fails says what failed, with
// nothing on stdout: a tool the server lacks (naming those it has), a
// server that does not answer, a URL the catalog would refuse, flags that
// do not go together.
func TestToolsImportErrors(t *testing.T) {
	url := annotatedServer(t, nil)
	unknown := runCLI("", "tools", "import", "--server", url, "--tool", "draft_memo")
	check(t, unknown, 1, "", `offers no tool "draft_memo"`)
	for _, name := range []string{"draft_document", "file_court_document", "search_matter_documents"} {
		if !strings.Contains(unknown.stderr, name) {
			t.Errorf("the error does not name the server's tool %s: %s", name, unknown.stderr)
		}
	}
	check(t, runCLI("", "tools", "import", "--server", "http://127.0.0.1:9/mcp"), 1, "", "could not reach")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no server", nil, "--server"},
		{"plain http elsewhere", []string{"--server", "http://tools.example.com/mcp"}, "--server"},
		{"a query", []string{"--server", url + "?x=1"}, "--server"},
		{"as without tool", []string{"--server", url, "--as", "memo"}, "--as"},
		{"a bad name", []string{"--server", url, "--tool", "draft_document", "--as", "1memo"}, "--as"},
		{"a bad server name", []string{"--server", url, "--name", "my server"}, "--name"},
		{"none elsewhere", []string{"--server", "https://tools.example.com/mcp"}, "--auth"},
		{"bearer without secret", []string{"--server", url, "--auth", "bearer"}, "--secret"},
		{"a secret per firm", []string{"--server", url, "--auth", "bearer", "--secret", "tools/{firm_id}"}, "{firm_id}"},
		{"positional", []string{"--server", url, "draft_document"}, "tools import"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check(t, runCLI("", append([]string{"tools", "import"}, tc.args...)...), 2, "", tc.want)
		})
	}
}

// Issue 25, item 9: a server's tool name the catalog cannot use as a name
// is made one (target.tool keeps the server's); a tool the catalog could
// not take whatever the user sets (here a name too long to call) is left
// out and named, the others still printed, and the exit status is 1.
func TestToolsImportLeavesOut(t *testing.T) {
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "odd", Version: "1"}, nil)
	long := strings.Repeat("x", 130)
	for _, name := range []string{"files.read", long} {
		s.AddTool(&mcpsdk.Tool{Name: name, Description: "A tool.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
				return nil, errors.New("not called")
			})
	}
	srv := httptest.NewServer(mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	got := runCLI("", "tools", "import", "--server", srv.URL)
	if got.code != 1 || !strings.Contains(got.stderr, "left out 1 tool(s)") || !strings.Contains(got.stderr, long) {
		t.Fatalf("exit %d, want 1 naming the tool left out\n%s%s", got.code, got.stdout, got.stderr)
	}
	d := decodeImported(t, got.stdout)
	if len(d.Tools) != 1 || !strings.Contains(string(d.Tools["files_read"]["target"]), `"tool": "files.read"`) {
		t.Fatalf("want files.read as files_read:\n%s", got.stdout)
	}
	if _, err := catalog.Parse(filled(t, d, "")); err != nil {
		t.Fatalf("the filled entry does not load: %v", err)
	}
}

// Issue 27, item 4: a tool's title for people comes over from the server
// (its title, else its annotations' title) when the catalog can take it,
// and is left out, said so, when it cannot.
func TestToolsImportTitles(t *testing.T) {
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "titled", Version: "1"}, nil)
	for _, tool := range []*mcpsdk.Tool{
		{Name: "archive_search", Title: "Search the archive"},
		{Name: "archive_read", Annotations: &mcpsdk.ToolAnnotations{Title: "Read from the archive"}},
		{Name: "archive_note", Title: "Note\nto file"},
	} {
		tool.Description, tool.InputSchema = "A tool.", json.RawMessage(`{"type":"object"}`)
		s.AddTool(tool, func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			return nil, errors.New("not called")
		})
	}
	srv := httptest.NewServer(mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	got := runCLI("", "tools", "import", "--server", srv.URL)
	if got.code != 0 || !strings.Contains(got.stderr, "archive_note: the server's title is not one the catalog takes") {
		t.Fatalf("exit %d\n%s%s", got.code, got.stdout, got.stderr)
	}
	d := decodeImported(t, got.stdout)
	for name, want := range map[string]string{"archive_search": `"Search the archive"`, "archive_read": `"Read from the archive"`, "archive_note": ""} {
		if g := string(d.Tools[name]["title"]); g != want {
			t.Errorf("%s: title %s, want %s", name, g, want)
		}
	}
	c, err := catalog.Parse(filled(t, d, ""))
	if err != nil {
		t.Fatalf("the filled entries do not load: %v", err)
	}
	if c.Tools["archive_search"].Title != "Search the archive" {
		t.Errorf("the catalog's title: %q", c.Tools["archive_search"].Title)
	}
}

// Issue 25, item 9: credentials are given as tools check takes them (a
// Secrets Manager secret read with the usual AWS configuration), and the
// printed server entry names them; a server that refuses them, a secret
// that cannot be read and no credentials at all are each an auth failure
// in words, exit 1.
func TestToolsImportAuth(t *testing.T) {
	ep := dynamotest.Moto(t)
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_SECRETS_MANAGER": ep.URL, "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test",
		"AWS_SECRET_ACCESS_KEY": "test", "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_PROFILE": "",
	} {
		t.Setenv(k, v)
	}
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sm := secretsmanager.NewFromConfig(cfg)
	token, clientSecret := "tok-"+uuid.NewString(), "cs-"+uuid.NewString()
	good, wrong, client := "tools/good-"+uuid.NewString(), "tools/wrong-"+uuid.NewString(), "tools/client-"+uuid.NewString()
	for name, value := range map[string]string{good: token, wrong: "tok-not-it", client: clientSecret} {
		if _, err := sm.CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(value)}); err != nil {
			t.Fatal(err)
		}
	}
	url := annotatedServer(t, auth.RequireBearerToken(func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		if tok != token {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}, nil))

	// An OAuth token endpoint that gives the server's token to the client
	// warrant-test with the secret client holds.
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, basic := r.BasicAuth()
		if !basic {
			id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
		}
		if r.PostFormValue("grant_type") != "client_credentials" || id != "warrant-test" || secret != clientSecret {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":"invalid_client"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(idp.Close)
	oauth := []string{"--auth", "oauth_client_credentials", "--token-url", idp.URL + "/token", "--client-id", "warrant-test", "--scope", "tools.list"}
	got := runCLI("", append([]string{"tools", "import", "--server", url, "--tool", "get_matter_summary", "--client-secret", client}, oauth...)...)
	if got.code != 0 {
		t.Fatalf("oauth: exit %d\n%s%s", got.code, got.stdout, got.stderr)
	}
	if a, _ := json.Marshal(decodeImported(t, got.stdout).Servers["server"]["auth"]); string(a) != `{"client_id":"warrant-test","client_secret":"`+client+`","kind":"oauth_client_credentials","scopes":["tools.list"],"token_url":"`+idp.URL+`/token"}` {
		t.Fatalf("the oauth server entry's auth is %s", a)
	}

	ok := runCLI("", "tools", "import", "--server", url, "--tool", "get_matter_summary", "--auth", "bearer", "--secret", good)
	if ok.code != 0 {
		t.Fatalf("exit %d\n%s%s", ok.code, ok.stdout, ok.stderr)
	}
	d := decodeImported(t, ok.stdout)
	if a, _ := json.Marshal(d.Servers["server"]["auth"]); string(a) != `{"kind":"bearer","secret":"`+good+`"}` {
		t.Fatalf("the server entry's auth is %s", a)
	}
	if strings.Contains(ok.stdout+ok.stderr+got.stdout+got.stderr, token) || strings.Contains(got.stdout+got.stderr, clientSecret) {
		t.Fatal("the token was printed")
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"refused", []string{"--auth", "bearer", "--secret", wrong}, "the server refused the credentials (HTTP 401)"},
		{"none", nil, "the server asks for credentials (HTTP 401)"},
		{"client refused", append([]string{"--client-secret", wrong}, oauth...), "the token endpoint " + idp.URL + "/token refused the client credentials (HTTP 401)"},
		{"no such secret", []string{"--auth", "bearer", "--secret", "tools/absent-" + uuid.NewString()}, "could not read secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI("", append([]string{"tools", "import", "--server", url}, tc.args...)...)
			check(t, got, 1, "", "auth failed: "+tc.want)
			if strings.Contains(got.stderr, "tok-not-it") || strings.Contains(got.stderr, clientSecret) {
				t.Fatal("a token or a client secret was printed")
			}
		})
	}
}
