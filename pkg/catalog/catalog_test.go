package catalog_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/tools"
)

const matter = "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"

// The embedded catalog is Warrant's reference tools, as pkg/tools defines
// them: the same schemas (by hash), and summaries that read as theirs do,
// hostile text included.
func TestEmbeddedCatalogIsTheReferenceTools(t *testing.T) {
	c, err := catalog.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	ref := tools.Reference(nil, nil)
	if len(c.Tools) != len(ref) {
		t.Fatalf("%d tools, pkg/tools has %d", len(c.Tools), len(ref))
	}
	inputs := map[string][]map[string]any{
		"search_matter_documents": {{"matter_id": matter, "query": "motion"}},
		"get_matter_summary":      {{"matter_id": matter}},
		"draft_document":          {{"matter_id": matter, "title": "Reply \u202eevil\u202c brief", "body": "x"}},
		"send_client_email": {
			{"matter_id": matter, "to": "gc@client.example", "subject": "Update", "body": "b"},
			{"matter_id": matter, "to": "gc@client.example", "cc": []string{"a@b.example", "c\u200b@d.example"}, "bcc": []string{"x@y.example"},
				"subject": "Up\u2066date", "body": "b", "attachments": []map[string]any{{"document_id": "D-1", "name": "n", "size_bytes": 1}}},
		},
		"file_court_document":    {{"matter_id": matter, "court": "SF Superior\u202e", "document_title": "Motion", "document_text": "t"}},
		"delete_matter_document": {{"matter_id": matter, "document_id": "D-\u00ad17"}},
	}
	for _, rt := range ref {
		ct, ok := c.Tools[rt.Name]
		if !ok {
			t.Fatalf("the catalog lacks %s", rt.Name)
		}
		_, want, _ := contracts.CanonicalInput(rt.Schema)
		if ct.SchemaSHA256 != want || ct.Target.Kind != catalog.TargetBuiltin || ct.MatterField != "/matter_id" || ct.Description != rt.Description {
			t.Errorf("%s: %+v, want pkg/tools' schema %s", rt.Name, ct, want)
		}
		for _, in := range inputs[rt.Name] {
			raw, _ := json.Marshal(in)
			if got, want := ct.Summarize(raw), rt.Summarize(raw); got != want {
				t.Errorf("%s summary:\n got %q\nwant %q", rt.Name, got, want)
			}
		}
	}
	for name, class := range map[string]catalog.Class{"search_matter_documents": catalog.ClassRead, "file_court_document": catalog.ClassEffect} {
		if c.Tools[name].Class != class {
			t.Errorf("%s is %s, want %s", name, c.Tools[name].Class, class)
		}
	}
}

// mcpDoc is a catalog of one MCP tool, edit applied to its document.
func mcpDoc(t *testing.T, edit func(m map[string]any)) []byte {
	t.Helper()
	schema := map[string]any{"type": "object", "additionalProperties": false,
		"properties": map[string]any{"matter_id": map[string]any{"type": "string"}, "query": map[string]any{"type": "string"}},
		"required":   []string{"matter_id", "query"}}
	raw, _ := json.Marshal(schema)
	_, pin, err := contracts.CanonicalInput(raw)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{
		"servers": map[string]any{"dms": map[string]any{"kind": "mcp", "url": "https://dms.firm.example/mcp",
			"auth": map[string]any{"kind": "bearer", "secret": "arn:aws:secretsmanager:us-east-1:123456789012:secret:dms"}}},
		"tools": map[string]any{"search_documents": map[string]any{"description": "Search the firm's documents.", "input_schema": schema,
			"summary": "Search for {{quote .query}}.", "matter_field": "/matter_id", "class": "read", "timeout": "20s",
			"target": map[string]any{"kind": "mcp", "server": "dms", "tool": "search", "schema_sha256": pin}}},
	}
	if edit != nil {
		edit(m)
	}
	b, _ := json.Marshal(m)
	return b
}

func tool(m map[string]any) map[string]any {
	return m["tools"].(map[string]any)["search_documents"].(map[string]any)
}

func server(m map[string]any) map[string]any {
	return m["servers"].(map[string]any)["dms"].(map[string]any)
}

func TestParseMCPTool(t *testing.T) {
	c, err := catalog.Parse(mcpDoc(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	tl := c.Tools["search_documents"]
	if tl.Target.Server != "dms" || tl.Target.Tool != "search" || tl.Target.SchemaSHA256 != tl.SchemaSHA256 || tl.Class != catalog.ClassRead ||
		tl.Timeout.String() != "20s" || c.Servers["dms"].Auth.Kind != catalog.AuthBearer {
		t.Fatalf("tool %+v server %+v", tl, c.Servers["dms"])
	}
	if got := tl.Summarize(json.RawMessage(`{"matter_id":"m","query":"bail\u202e"}`)); got != "Search for “bail\\u202E”." {
		t.Fatalf("summary %q", got)
	}
	if got := tl.Summarize(json.RawMessage(`{"matter_id":"m"}`)); got != "Call search_documents (see its arguments)." {
		t.Fatalf("a summary of an input without the member it names: %q", got)
	}
	// The version is the document's canonical form: another spacing or key
	// order is the same catalog; another timeout is another.
	var m map[string]any
	_ = json.Unmarshal(mcpDoc(t, nil), &m)
	spaced, _ := json.MarshalIndent(m, "", "    ")
	if c2, err := catalog.Parse(spaced); err != nil || c2.Version != c.Version {
		t.Fatalf("the same catalog laid out otherwise: %v, version %s vs %s", err, c2.Version, c.Version)
	}
	if c3, _ := catalog.Parse(mcpDoc(t, func(m map[string]any) { tool(m)["timeout"] = "21s" })); c3.Version == c.Version {
		t.Fatal("another catalog has the same version")
	}
}

// Every way a catalog can be wrong is refused whole, naming the place.
func TestParseRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(m map[string]any)
		path string
	}{
		"unknown member":              {func(m map[string]any) { tool(m)["readOnly"] = true }, ""},
		"no tools":                    {func(m map[string]any) { m["tools"] = map[string]any{} }, "tools"},
		"class":                       {func(m map[string]any) { tool(m)["class"] = "write" }, "tools.search_documents.class"},
		"timeout over 5m":             {func(m map[string]any) { tool(m)["timeout"] = "6m" }, "tools.search_documents.timeout"},
		"pin of another schema":       {func(m map[string]any) { tool(m)["target"].(map[string]any)["schema_sha256"] = strings.Repeat("0", 64) }, "tools.search_documents.target.schema_sha256"},
		"no pin":                      {func(m map[string]any) { delete(tool(m)["target"].(map[string]any), "schema_sha256") }, "tools.search_documents.target.schema_sha256"},
		"unknown server":              {func(m map[string]any) { tool(m)["target"].(map[string]any)["server"] = "nas" }, "tools.search_documents.target.server"},
		"target kind":                 {func(m map[string]any) { tool(m)["target"].(map[string]any)["kind"] = "lambda" }, "tools.search_documents.target.kind"},
		"matter field not a pointer":  {func(m map[string]any) { tool(m)["matter_field"] = "matter_id" }, "tools.search_documents.matter_field"},
		"schema not an object schema": {func(m map[string]any) { tool(m)["input_schema"] = map[string]any{"type": "string"} }, "tools.search_documents.input_schema"},
		"schema that does not compile": {func(m map[string]any) {
			tool(m)["input_schema"] = map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": 7}}}
		}, "tools.search_documents.input_schema"},
		"summary not a template":    {func(m map[string]any) { tool(m)["summary"] = "Search {{.query" }, "tools.search_documents.summary"},
		"no summary":                {func(m map[string]any) { tool(m)["summary"] = "" }, "tools.search_documents.summary"},
		"tool name":                 {func(m map[string]any) { m["tools"] = map[string]any{"search documents": tool(m)} }, "tools"},
		"plain http off loopback":   {func(m map[string]any) { server(m)["url"] = "http://dms.firm.example/mcp" }, "servers.dms.url"},
		"credentials in the url":    {func(m map[string]any) { server(m)["url"] = "https://u:p@dms.firm.example/mcp" }, "servers.dms.url"},
		"no auth off loopback":      {func(m map[string]any) { server(m)["auth"] = map[string]any{"kind": "none"} }, "servers.dms.auth.kind"},
		"bearer without its secret": {func(m map[string]any) { server(m)["auth"] = map[string]any{"kind": "bearer"} }, "servers.dms.auth"},
		"client credentials, http": {func(m map[string]any) {
			server(m)["auth"] = map[string]any{"kind": "oauth_client_credentials", "token_url": "http://idp.example/token", "client_id": "c", "client_secret": "s"}
		}, "servers.dms.auth.token_url"},
		"client credentials, no id": {func(m map[string]any) {
			server(m)["auth"] = map[string]any{"kind": "oauth_client_credentials", "token_url": "https://idp.example/token", "client_secret": "s"}
		}, "servers.dms.auth"},
		"server kind":                 {func(m map[string]any) { server(m)["kind"] = "sse" }, "servers.dms.kind"},
		"builtin with a server":       {func(m map[string]any) { tool(m)["target"] = map[string]any{"kind": "builtin", "server": "dms"} }, "tools.search_documents.target"},
		"description over 4000 bytes": {func(m map[string]any) { tool(m)["description"] = strings.Repeat("d", 4001) }, "tools.search_documents.description"},
		"title over 80 characters":    {func(m map[string]any) { tool(m)["title"] = strings.Repeat("é", 81) }, "tools.search_documents.title"},
		"title on two lines":          {func(m map[string]any) { tool(m)["title"] = "Search\ndocuments" }, "tools.search_documents.title"},
		"title padded":                {func(m map[string]any) { tool(m)["title"] = " Search" }, "tools.search_documents.title"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := catalog.Parse(mcpDoc(t, tc.edit))
			var ce *catalog.Error
			switch {
			case err == nil:
				t.Fatal("loaded")
			case tc.path == "":
				return // a strict-decoding error, named by pkg/contracts
			case !errors.As(err, &ce) || ce.Path != tc.path:
				t.Fatalf("error %v, want one at %s", err, tc.path)
			}
		})
	}
	if _, err := catalog.Parse([]byte(`{"tools":{}} trailing`)); err == nil {
		t.Fatal("trailing data loaded")
	}
}

// A loopback server may go without auth (the local stack's reference
// server); a client-credentials server names its grant.
func TestParseServers(t *testing.T) {
	for _, auth := range []map[string]any{
		{"kind": "none"},
		{"kind": "oauth_client_credentials", "token_url": "https://idp.firm.example/oauth2/token", "client_id": "warrant",
			"client_secret": "arn:aws:secretsmanager:us-east-1:123456789012:secret:dms-client", "scopes": []string{"documents.read"}},
	} {
		doc := mcpDoc(t, func(m map[string]any) {
			server(m)["url"], server(m)["auth"] = "http://127.0.0.1:8931/mcp", auth
		})
		c, err := catalog.Parse(doc)
		if err != nil {
			t.Fatalf("%v: %v", auth["kind"], err)
		}
		if c.Servers["dms"].Auth.Kind != auth["kind"] {
			t.Fatalf("auth %+v", c.Servers["dms"].Auth)
		}
	}
}

func ExampleTool_Summarize() {
	c, _ := catalog.Embedded()
	fmt.Println(c.Tools["file_court_document"].Summarize(json.RawMessage(
		`{"matter_id":"` + matter + `","court":"Superior Court","document_title":"Motion to Compel","document_text":"…"}`)))
	// Output: File “Motion to Compel” with Superior Court.
}

// OnServer moves the reference tools onto an MCP server, each pinned to the
// schema its builtin had: the same tools, reached another way.
func TestOnServer(t *testing.T) {
	doc, err := catalog.OnServer(catalog.Server{Name: "reference", Kind: catalog.TargetMCP, URL: "http://127.0.0.1:3001/mcp", Auth: catalog.Auth{Kind: catalog.AuthNone}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	embedded, _ := catalog.Embedded()
	for name, e := range embedded.Tools {
		m := c.Tools[name]
		if m.Target.Kind != catalog.TargetMCP || m.Target.Server != "reference" || m.Target.Tool != name || m.Target.SchemaSHA256 != e.SchemaSHA256 ||
			m.Summary != e.Summary || m.Class != e.Class || m.MatterField != e.MatterField {
			t.Errorf("%s on the server: %+v, builtin %+v", name, m, e)
		}
	}
	if c.Servers["reference"].URL != "http://127.0.0.1:3001/mcp" {
		t.Fatalf("servers %+v", c.Servers)
	}
}

// A tool's title is for people; its schema is kept as written too (the
// desk's editor lays the fields out in the document's order), while the pin
// and the schema the model and the checks use are the canonical form.
func TestTitleAndSchemaAsWritten(t *testing.T) {
	c, err := catalog.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	email := c.Tools["send_client_email"]
	if email.Title != "E-mail the client" {
		t.Errorf("title %q", email.Title)
	}
	var written struct {
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(email.SchemaAsWritten, &written); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(written.Properties))
	var order []string
	if _, err := dec.Token(); err != nil { // {
		t.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"matter_id", "to", "cc", "bcc", "subject", "body", "attachments"}; !slices.Equal(order, want) {
		t.Errorf("members as written %v, want %v", order, want)
	}
	canon, hash, err := contracts.CanonicalInput(email.SchemaAsWritten)
	if err != nil || !bytes.Equal(canon, email.InputSchema) || hash != email.SchemaSHA256 {
		t.Errorf("the schema as written is not the pinned schema in another order (%v)", err)
	}
}
