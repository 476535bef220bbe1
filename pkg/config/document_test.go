package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/config"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

const secret = "ghp_plantedTOKENvalue0123456789"

// Every way a document stops being JSON is named where it happens, with
// the object or array it happens in, in words that quote nothing of it.
func TestSyntaxFaults(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"empty", "  \n", `TOOL_CATALOG (file:c.json): line 2, column 1: the document is empty`},
		{"trailing comma in an object", "{\n  \"tools\": {\"a\": \"" + secret + "\",}\n}",
			`TOOL_CATALOG (file:c.json): line 2, column 51: field tools: a trailing comma before '}'`},
		{"trailing comma in an array", `{"a": [1, 2,]}`, `line 1, column 12: field a: a trailing comma before ']'`},
		{"missing comma", "{\"a\": 1\n \"b\": 2}", `line 2, column 2: expected ',' or '}' after a member (a comma missing?)`},
		{"missing colon", `{"a" 1}`, `line 1, column 6: field a: expected ':' after the member's name`},
		{"single quotes", `{'a': 1}`, `line 1, column 2: a member's name in single quotes`},
		{"unquoted name", `{a: 1}`, `line 1, column 2: expected a member's name in double quotes`},
		{"bad literal", `{"a": tru}`, `line 1, column 7: field a: a misspelled true, false or null`},
		{"bare word", `{"a": ` + secret + `}`, `line 1, column 7: field a: an unexpected character where a value should start`},
		{"bad number", `{"a": 01}`, `line 1, column 7: field a: a number with a leading zero`},
		{"ends early", "{\"a\": {\"b\": 1}", `line 1, column 15: the document ends before every object`},
		{"string never closed", "{\"a\": \"" + secret + "\n}", `line 1, column 7: field a: a string that is never closed on its line`},
		{"bad escape", `{"a": "x\q"}`, `line 1, column 9: field a: an invalid escape in a string`},
		{"more after", `{"a": 1} {}`, `line 1, column 10: more follows the document's end`},
		{"a free-form name is not named", `{"tools": {"my tool ` + secret + `": {"x": 1,}}}`, `field $.tools[0]: a trailing comma before '}'`},
		{"invalid UTF-8", "{\"a\": \"\xff\"}", `line 1, column 8: not valid UTF-8`},
		{"columns count characters", "{\"é\": [1,]}", `line 1, column 9: field $[0]: a trailing comma before ']'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := config.Document{Variable: config.DocCatalog, Source: "file:c.json", Data: []byte(tc.doc)}
			_, err := doc.Catalog()
			if err == nil {
				t.Fatal("loaded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got  %s\nwant %s", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("quotes the document: %s", err)
			}
		})
	}
}

// A fault the strict decoder or a loader names by its path is found in the
// document: a duplicate key at its second occurrence, a member named by
// position ("$"-rooted) where its name is free text.
func TestFieldFaultsLocated(t *testing.T) {
	for _, tc := range []struct {
		name, variable, doc, want string
	}{
		{"duplicate key", config.DocAgents, "{\"agents\": {\n  \"a\": {},\n  \"a\": {}\n}}", `line 3, column 3: field agents.a: duplicate key`},
		{"unknown member by position", config.DocCatalog, "{\"tools\": {},\n \"a b\": 1}", `line 2, column 2: field $[1]: unknown field`},
		{"missing member", config.DocPolicy, "{\"version\": \"v\", \"tools\": {}}", `field default: required field is missing`},
		{"a reason quoting the document", config.DocPolicy,
			`{"version": "v", "default": {"tier": "` + secret + `", "reason": "r"}, "tools": {}}`,
			`line 1, column 30: field default.tier: the value is not accepted here (warrant config check prints why)`},
		{"a schema that does not compile", config.DocCatalog,
			`{"tools": {"t": {"description": "d", "input_schema": {"type": "object", "pattern": "(` + secret + `"}, "summary": "s", "class": "read", "target": {"kind": "builtin"}}}}`,
			`line 1, column 38: field tools.t.input_schema: is not a JSON Schema this service can apply`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := config.Document{Variable: tc.variable, Source: "ssm:/warrant/x", Data: []byte(tc.doc)}
			var err error
			switch tc.variable {
			case config.DocCatalog:
				_, err = doc.Catalog()
			case config.DocAgents:
				_, err = doc.Agents(nil)
			case config.DocPolicy:
				_, err = doc.Policy()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "config_invalid: "+tc.variable+" (ssm:/warrant/x): ") {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("quotes the document: %s", err)
			}
		})
	}
}

// The cross-checks name each fault in the document that has it: an agent's
// tool the catalog lacks, an agent's model without a price, a catalog tool
// the policy has no entry for.
func TestCrossChecks(t *testing.T) {
	catDoc := config.Document{Variable: config.DocCatalog, Source: "file:catalog.json", Data: catalog.EmbeddedDocument()}
	cat, err := catDoc.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	agentsDoc := config.Document{Variable: config.DocAgents, Source: "file:agents.json", Data: []byte(`{"agents": {
  "clerk": {"system_prompt": "p", "prompt_version": "v", "tools": ["draft_document", "send_fax"]},
  "counsel": {"system_prompt": "p", "prompt_version": "v", "model_id": "acme.no-price", "tools": ["draft_document"]}}}`)}
	agents, err := agentsDoc.Agents(nil)
	if err != nil {
		t.Fatal(err)
	}
	prices, err := pricing.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range config.CheckAgents(agentsDoc, agents, catDoc, cat, prices, "") {
		got = append(got, f.Error())
	}
	want := []string{
		"AGENTS (file:agents.json): line 2, column 86: field agents.clerk.tools[1]: agent clerk names tool send_fax, which TOOL_CATALOG (file:catalog.json) does not have",
		"AGENTS (file:agents.json): line 3, column 60: field agents.counsel.model_id: agent counsel's model has no price in the price table (PRICING_FILE, else the embedded table), so its runs could not be capped",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	polDoc := config.Document{Variable: config.DocPolicy, Source: "file:policy.json", Data: []byte(`{"version": "v",
 "default": {"tier": "high", "reason": "unlisted"},
 "tools": {"draft_document": {"tier": "low", "reason": "r"}}}`)}
	pol, err := polDoc.Policy()
	if err != nil {
		t.Fatal(err)
	}
	faults := config.CheckPolicy(catDoc, cat, polDoc, pol)
	if len(faults) != len(cat.Tools)-1 {
		t.Fatalf("%d faults for %d unlisted tools", len(faults), len(cat.Tools)-1)
	}
	if f := faults[0].Error(); !strings.HasPrefix(f, "TOOL_CATALOG (file:catalog.json): line ") ||
		!strings.HasSuffix(f, ": field tools.delete_matter_document: tool delete_matter_document has no entry in the tools of TOOL_POLICY (file:policy.json): it takes the policy's default tier, high, and every call of it waits for counsel's warrant") {
		t.Errorf("fault %s", f)
	}
	embedded, _ := toolpolicy.Embedded()
	if faults := config.CheckPolicy(catDoc, cat, config.Document{Variable: config.DocPolicy}, embedded); len(faults) != 0 {
		t.Errorf("the embedded catalog and policy disagree: %v", faults)
	}
}

// Local, for the operator's terminal, gives the loader's own words, which
// Error, for AWS, leaves out when they quote the document.
func TestLocalGivesTheLoadersWords(t *testing.T) {
	doc := config.Document{Variable: config.DocPolicy, Source: "file:p.json",
		Data: []byte(`{"version": "v", "default": {"tier": "` + secret + `", "reason": "r"}, "tools": {}}`)}
	_, err := doc.Policy()
	var de *config.DocumentError
	if !errors.As(err, &de) {
		t.Fatalf("%v", err)
	}
	if want := `TOOL_POLICY (file:p.json): line 1, column 30: field default.tier: unknown tier "` + secret + `"`; de.Local() != want {
		t.Errorf("Local() %s\nwant    %s", de.Local(), want)
	}
	if strings.Contains(de.Error(), secret) {
		t.Errorf("Error() quotes the document: %s", de.Error())
	}
}
