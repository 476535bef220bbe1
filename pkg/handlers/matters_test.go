package handlers_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

func putMatterReq(t *testing.T, matter string, body any) *event {
	e := fixture(t, "approve.json").roles("counsel")
	e.m["routeKey"] = handlers.PutMatterRoute
	e.obj("requestContext")["routeKey"] = handlers.PutMatterRoute
	e.obj("requestContext.http")["method"] = "PUT"
	path := "/v1/matters/" + matter
	e.m["rawPath"] = path
	e.obj("requestContext.http")["path"] = path
	e.m["pathParameters"] = map[string]any{"matter_id": matter}
	return e.bodyJSON(body)
}

func listMattersReq(t *testing.T) *event {
	return getRoute(t, handlers.ListMattersRoute, "/v1/matters", nil, nil).roles("counsel")
}

// TestMatterRegistry: counsel or a firm admin keep the firm's matters (a
// name and the client's domains); nobody else reads or writes them, another
// firm sees none of them, and a bad request writes nothing.
func TestMatterRegistry(t *testing.T) {
	s := newStack(t, stackOptions{})
	const matter = "7d6c5b4a-3928-4716-a5b4-c3d2e1f0a9b8"
	body := map[string]any{"name": "Ridgeway Logistics v. Harbor Freight", "client_domains": []string{"ridgeway-logistics.example"}}
	resp := s.post(putMatterReq(t, matter, body).set("headers.if-none-match", "*"))
	v := decode[handlers.MatterView](t, resp)
	if resp.StatusCode != 201 || v.MatterID != matter || v.Name != body["name"] || len(v.ClientDomains) != 1 || resp.Headers["Location"] != "/v1/matters/"+matter {
		t.Fatalf("put: %d %v %s", resp.StatusCode, resp.Headers, resp.Body)
	}
	// A firm admin may rename it, naming the version it replaces; the same
	// request again is the same answer.
	body["name"] = "Ridgeway v. Harbor Freight (appeal)"
	var first string
	for i := range 2 {
		resp := s.post(putMatterReq(t, matter, body).roles("firm_admin").set("headers.if-match", v.ETag))
		if resp.StatusCode != 200 || (i == 1 && resp.Body != first) {
			t.Fatalf("firm admin put %d: %d %s", i+1, resp.StatusCode, resp.Body)
		}
		first = resp.Body
	}
	resp = s.post(listMattersReq(t))
	list := decode[struct {
		Matters []handlers.MatterView `json:"matters"`
	}](t, resp)
	var found *handlers.MatterView
	for i, m := range list.Matters {
		if m.MatterID == matter {
			found = &list.Matters[i]
		}
	}
	if resp.StatusCode != 200 || found == nil || found.Name != body["name"] || found.UpdatedAt == "" {
		t.Fatalf("list: %d %s", resp.StatusCode, resp.Body)
	}
	if other := s.post(listMattersReq(t).claim("firm_id", otherFirm)); other.StatusCode != 200 || strings.Contains(other.Body, matter) {
		t.Fatalf("another firm's list: %d %s", other.StatusCode, other.Body)
	}

	before := s.scan()
	for _, c := range []struct {
		name   string
		req    *event
		status int
	}{
		{"an associate writes", putMatterReq(t, matter, body).roles("associate"), 403},
		{"an associate reads", listMattersReq(t).roles("associate"), 403},
		{"no name", putMatterReq(t, matter, map[string]any{"name": "", "client_domains": []string{}}), 400},
		{"a name with a bidi override", putMatterReq(t, matter, map[string]any{"name": "Ridgeway \u202e" + secret, "client_domains": []string{}}), 400},
		{"a name too long", putMatterReq(t, matter, map[string]any{"name": strings.Repeat("n", 201), "client_domains": []string{}}), 400},
		{"a domain in capitals", putMatterReq(t, matter, map[string]any{"name": "M", "client_domains": []string{"Ridgeway.example"}}), 400},
		{"a domain twice", putMatterReq(t, matter, map[string]any{"name": "M", "client_domains": []string{"a.example", "a.example"}}), 400},
		{"51 domains", putMatterReq(t, matter, map[string]any{"name": "M", "client_domains": make51()}), 400},
		{"an unknown field", putMatterReq(t, matter, map[string]any{"name": "M", "client_domains": []string{}, "firm_id": otherFirm}), 400},
		{"matter_id not a UUID", putMatterReq(t, secret, body), 400},
		{"missing claims", with2(putMatterReq(t, matter, body), func(e *event) { e.set("requestContext.authorizer.jwt.claims", nil) }), 401},
		{"list with a query", with2(listMattersReq(t), func(e *event) { e.query(map[string]string{"firm_id": otherFirm}) }), 400},
		{"list without claims", with2(listMattersReq(t), func(e *event) { e.set("requestContext.authorizer", nil) }), 401},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := s.post(c.req)
			s.wantProblem(c.name, resp, c.status)
			if strings.Contains(resp.Body, secret) {
				t.Errorf("the answer echoes the request: %s", resp.Body)
			}
		})
	}
	s.wantUnchanged("refused matter requests", before)
}

func with2(e *event, fn func(e *event)) *event { fn(e); return e }

func make51() []string {
	out := make([]string, 51)
	for i := range out {
		out[i] = "d" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".example"
	}
	return out
}

func listToolsReq(t *testing.T) *event {
	e := getRoute(t, handlers.ListToolsRoute, "/v1/tools", nil, nil)
	return e
}

// TestListTools: any user of the firm reads the tools' input schemas (the
// desk's editor is built from them); each schema hashes to its pin.
func TestListTools(t *testing.T) {
	s := newStack(t, stackOptions{})
	resp := s.post(listToolsReq(t).roles("associate"))
	v := decode[struct {
		Tools []struct {
			Name         string          `json:"name"`
			Title        string          `json:"title"`
			InputSchema  json.RawMessage `json:"input_schema"`
			SchemaSHA256 string          `json:"schema_sha256"`
			MatterField  string          `json:"matter_field"`
		} `json:"tools"`
	}](t, resp)
	if resp.StatusCode != 200 || len(v.Tools) < 4 {
		t.Fatalf("tools: %d %s", resp.StatusCode, resp.Body)
	}
	var names []string
	for _, tool := range v.Tools {
		names = append(names, tool.Name)
		if tool.Name == "send_client_email" {
			// Titled for people, and the schema as the catalog writes it:
			// the editor's fields in the catalog's order.
			if tool.Title != "E-mail the client" || !strings.Contains(string(tool.InputSchema), `"to":`) ||
				strings.Index(string(tool.InputSchema), `"to":`) > strings.Index(string(tool.InputSchema), `"body":`) {
				t.Errorf("send_client_email: title %q, schema %s", tool.Title, tool.InputSchema)
			}
		}
		if h, err := contracts.InputHash(tool.InputSchema); err != nil || h != tool.SchemaSHA256 {
			t.Errorf("%s: schema hashes to %s, pinned %s (%v)", tool.Name, h, tool.SchemaSHA256, err)
		}
	}
	if !slices.IsSorted(names) || !slices.Contains(names, "send_client_email") {
		t.Fatalf("tools %v", names)
	}
	s.wantProblem("tools with a query", s.post(with2(listToolsReq(t), func(e *event) { e.query(map[string]string{"x": "1"}) })), 400)
	s.wantProblem("tools without claims", s.post(with2(listToolsReq(t), func(e *event) { e.set("requestContext.authorizer", nil) })), 401)
}
