package catalog_test

import (
	"errors"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
)

const conflictsARN = "arn:aws:lambda:eu-west-2:123456789012:function:conflicts-check:live"

// lambdaDoc is mcpDoc's tool on a Lambda function instead.
func lambdaDoc(t *testing.T, edit func(m map[string]any)) []byte {
	return mcpDoc(t, func(m map[string]any) {
		m["servers"] = map[string]any{"conflicts": map[string]any{"kind": "lambda", "function": conflictsARN}}
		tool(m)["target"] = map[string]any{"kind": "lambda", "server": "conflicts"}
		if edit != nil {
			edit(m)
		}
	})
}

// httpsDoc is mcpDoc's tool on an HTTPS endpoint instead.
func httpsDoc(t *testing.T, edit func(m map[string]any)) []byte {
	return mcpDoc(t, func(m map[string]any) {
		m["servers"] = map[string]any{"efile": map[string]any{"kind": "https", "url": "https://efile.vendor.example/api/",
			"final_client_errors": true,
			"auth":                map[string]any{"kind": "bearer", "secret": "warrant/efile/{firm_id}"}}}
		tool(m)["target"] = map[string]any{"kind": "https", "server": "efile", "tool": "v2/search"}
		if edit != nil {
			edit(m)
		}
	})
}

func TestParseLambdaAndHTTPSTools(t *testing.T) {
	c, err := catalog.Parse(lambdaDoc(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	srv, tl := c.Servers["conflicts"], c.Tools["search_documents"]
	if srv.Kind != catalog.TargetLambda || srv.Function != conflictsARN || srv.URL != "" || srv.PerFirm() ||
		tl.Target.Kind != catalog.TargetLambda || tl.Target.Tool != "search_documents" || tl.Target.SchemaSHA256 != "" {
		t.Fatalf("server %+v tool target %+v", srv, tl.Target)
	}
	for _, fn := range []string{
		"arn:aws:lambda:us-east-1:123456789012:function:conflicts",
		"arn:aws:lambda:us-east-1:123456789012:function:conflicts:$LATEST",
		"arn:aws:lambda:us-east-1:123456789012:function:conflicts:7",
		"arn:aws-us-gov:lambda:us-gov-west-1:123456789012:function:conflicts",
	} {
		if _, err := catalog.Parse(lambdaDoc(t, func(m map[string]any) { server2(m, "conflicts")["function"] = fn })); err != nil {
			t.Errorf("%s: %v", fn, err)
		}
	}

	c, err = catalog.Parse(httpsDoc(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	srv, tl = c.Servers["efile"], c.Tools["search_documents"]
	if srv.Kind != catalog.TargetHTTPS || !srv.FinalClientErrors || !srv.PerFirm() || tl.Target.Tool != "v2/search" {
		t.Fatalf("server %+v tool target %+v", srv, tl.Target)
	}
	firm := srv.ForFirm("5f0c6d1e-2b3a-4c5d-8e9f-0a1b2c3d4e5f")
	if firm.Auth.Secret != "warrant/efile/5f0c6d1e-2b3a-4c5d-8e9f-0a1b2c3d4e5f" || firm.PerFirm() || !srv.PerFirm() {
		t.Fatalf("for a firm: %+v (the catalog's: %+v)", firm.Auth, srv.Auth)
	}
}

func TestParseRefusesLambdaAndHTTPS(t *testing.T) {
	for name, tc := range map[string]struct {
		doc  func(*testing.T, func(map[string]any)) []byte
		edit func(m map[string]any)
		path string
	}{
		"lambda wildcard": {lambdaDoc, func(m map[string]any) {
			server2(m, "conflicts")["function"] = "arn:aws:lambda:eu-west-2:123456789012:function:*"
		}, "servers.conflicts.function"},
		"lambda plain name":       {lambdaDoc, func(m map[string]any) { server2(m, "conflicts")["function"] = "conflicts-check" }, "servers.conflicts.function"},
		"lambda other service":    {lambdaDoc, func(m map[string]any) { server2(m, "conflicts")["function"] = "arn:aws:s3:::bucket" }, "servers.conflicts.function"},
		"lambda with a url":       {lambdaDoc, func(m map[string]any) { server2(m, "conflicts")["url"] = "https://x.example/" }, "servers.conflicts"},
		"lambda with auth":        {lambdaDoc, func(m map[string]any) { server2(m, "conflicts")["auth"] = map[string]any{"kind": "none"} }, "servers.conflicts"},
		"lambda pinned schema":    {lambdaDoc, func(m map[string]any) { tool(m)["target"].(map[string]any)["schema_sha256"] = "00" }, "tools.search_documents.target.schema_sha256"},
		"kind not its server's":   {lambdaDoc, func(m map[string]any) { tool(m)["target"].(map[string]any)["kind"] = "https" }, "tools.search_documents.target.kind"},
		"https no auth":           {httpsDoc, func(m map[string]any) { delete(server2(m, "efile"), "auth") }, "servers.efile.auth"},
		"https query":             {httpsDoc, func(m map[string]any) { server2(m, "efile")["url"] = "https://efile.vendor.example/api?k=1" }, "servers.efile.url"},
		"https function":          {httpsDoc, func(m map[string]any) { server2(m, "efile")["function"] = conflictsARN }, "servers.efile.function"},
		"mcp final client errors": {mcpDoc, func(m map[string]any) { server(m)["final_client_errors"] = true }, "servers.dms.final_client_errors"},
		"https dot-dot":           {httpsDoc, func(m map[string]any) { tool(m)["target"].(map[string]any)["tool"] = "v2/../admin" }, "tools.search_documents.target.tool"},
		"https absolute":          {httpsDoc, func(m map[string]any) { tool(m)["target"].(map[string]any)["tool"] = "/admin" }, "tools.search_documents.target.tool"},
		"https other host":        {httpsDoc, func(m map[string]any) { tool(m)["target"].(map[string]any)["tool"] = "//evil.example/x" }, "tools.search_documents.target.tool"},
		"https escaped slash":     {httpsDoc, func(m map[string]any) { tool(m)["target"].(map[string]any)["tool"] = "a%2F..%2Fb" }, "tools.search_documents.target.tool"},
		"https query in path":     {httpsDoc, func(m map[string]any) { tool(m)["target"].(map[string]any)["tool"] = "search?all=1" }, "tools.search_documents.target.tool"},
		"two firm placeholders": {httpsDoc, func(m map[string]any) {
			server2(m, "efile")["auth"] = map[string]any{"kind": "bearer", "secret": "{firm_id}/{firm_id}"}
		}, "servers.efile.auth.secret"},
		"other braces": {httpsDoc, func(m map[string]any) {
			server2(m, "efile")["auth"] = map[string]any{"kind": "bearer", "secret": "warrant/{firm}"}
		}, "servers.efile.auth.secret"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := catalog.Parse(tc.doc(t, tc.edit))
			var ce *catalog.Error
			if err == nil || !errors.As(err, &ce) || ce.Path != tc.path {
				t.Fatalf("error %v, want one at %s", err, tc.path)
			}
		})
	}
}

func server2(m map[string]any, name string) map[string]any {
	return m["servers"].(map[string]any)[name].(map[string]any)
}

// OnServer moves the reference tools onto an HTTPS endpoint or a Lambda
// function too: the same tools, unpinned (their schemas are the catalog's).
func TestOnServerHTTPSAndLambda(t *testing.T) {
	embedded, _ := catalog.Embedded()
	for _, srv := range []catalog.Server{
		{Name: "reference", Kind: catalog.TargetHTTPS, URL: "http://127.0.0.1:3001/https/", Auth: catalog.Auth{Kind: catalog.AuthNone}, FinalClientErrors: true},
		{Name: "reference", Kind: catalog.TargetLambda, Function: "arn:aws:lambda:us-east-1:000000000000:function:warrant-reference-tools"},
	} {
		doc, err := catalog.OnServer(srv)
		if err != nil {
			t.Fatalf("%s: %v", srv.Kind, err)
		}
		c, err := catalog.Parse(doc)
		if err != nil {
			t.Fatal(err)
		}
		got := c.Servers["reference"]
		if got.Kind != srv.Kind || got.URL != srv.URL || got.Function != srv.Function || got.FinalClientErrors != srv.FinalClientErrors {
			t.Fatalf("server %+v, want %+v", got, srv)
		}
		for name, e := range embedded.Tools {
			m := c.Tools[name]
			if m.Target.Kind != srv.Kind || m.Target.Tool != name || m.Target.SchemaSHA256 != "" || m.SchemaSHA256 != e.SchemaSHA256 || m.Class != e.Class {
				t.Errorf("%s on %s: %+v", name, srv.Kind, m.Target)
			}
		}
	}
}
