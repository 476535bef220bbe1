package wire_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/internal/wire"
	"github.com/seed-f6d3920e/warrant/pkg/config"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// planted is a secret-looking value the broken documents hold: no fault
// logged or answered may carry it.
const planted = "sk-live-7Q2plantedVALUE"

const goodCatalog = `{
  "tools": {
    "get_matter_summary": {
      "description": "Summarize the matter. ` + planted + `",
      "input_schema": {"type": "object"},
      "summary": "Summarize the matter.",
      "class": "read",
      "target": {"kind": "builtin"}
    }
  }
}
`

const goodAgents = `{
  "agents": {
    "intake_clerk": {
      "system_prompt": "You take intake. ` + planted + `",
      "prompt_version": "v1",
      "tools": ["get_matter_summary"]
    }
  }
}
`

const goodPolicy = `{
  "version": "firm-1",
  "default": {"tier": "prohibited", "reason": "unlisted"},
  "tools": {
    "get_matter_summary": {"tier": "low", "reason": "reads"}
  }
}
`

// stackModel has a price in the embedded table.
const stackModel = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

func writeDoc(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Issue 27 item 9: a catalog, agents or policy document that does not load
// is named: the document and its source, the field, its line and column,
// and why, never a value of the document.
func TestDocumentFaultsNamed(t *testing.T) {
	ctx := context.Background()
	load := map[string]func(spec string) error{
		config.DocCatalog: func(spec string) error { _, err := wire.LoadCatalog(ctx, spec, nil); return err },
		config.DocAgents:  func(spec string) error { _, err := wire.LoadAgents(ctx, spec, nil); return err },
		config.DocPolicy:  func(spec string) error { _, err := wire.LoadPolicy(ctx, spec, nil); return err },
	}
	for _, tc := range []struct {
		name, doc, body string
		want            []string // in the message, in order
	}{
		{"catalog: a trailing comma", config.DocCatalog,
			strings.Replace(goodCatalog, `"target": {"kind": "builtin"}`, `"target": {"kind": "builtin"},`, 1),
			[]string{"line 8, column 36", "field tools.get_matter_summary", "a trailing comma before '}'"}},
		{"catalog: an unknown member", config.DocCatalog,
			strings.Replace(goodCatalog, `"class": "read",`, `"class": "read",`+"\n      "+`"colour": "`+planted+`",`, 1),
			[]string{"line 8, column 7", "field tools.get_matter_summary.colour", "unknown field"}},
		{"catalog: a wrong type", config.DocCatalog,
			strings.Replace(goodCatalog, `"class": "read",`, `"class": "read",`+"\n      "+`"timeout": 30,`, 1),
			[]string{"line 8, column 7", "field tools.get_matter_summary.timeout", "wrong type: must be a string"}},
		{"catalog: a value out of its list", config.DocCatalog,
			strings.Replace(goodCatalog, `"class": "read"`, `"class": "`+planted+`"`, 1),
			[]string{"line 7, column 7", "field tools.get_matter_summary.class", `must be "read" or "effect"`}},
		{"catalog: the document ends early", config.DocCatalog, strings.TrimSuffix(goodCatalog, "}\n"),
			[]string{"line 11, column 1", "the document ends before every object, array and string in it is closed"}},
		{"agents: a trailing comma", config.DocAgents,
			strings.Replace(goodAgents, `["get_matter_summary"]`, `["get_matter_summary",]`, 1),
			[]string{"line 6, column 37", "field agents.intake_clerk.tools", "a trailing comma before ']'"}},
		{"agents: an unknown member", config.DocAgents,
			strings.Replace(goodAgents, `"prompt_version": "v1",`, `"prompt_version": "v1", "modle_id": "`+planted+`",`, 1),
			[]string{"line 5, column 31", "field agents.intake_clerk.modle_id", "unknown field"}},
		{"agents: a wrong type", config.DocAgents,
			strings.Replace(goodAgents, `["get_matter_summary"]`, `"get_matter_summary"`, 1),
			[]string{"line 6, column 7", "field agents.intake_clerk.tools", "wrong type: must be an array"}},
		{"policy: a trailing comma", config.DocPolicy,
			strings.Replace(goodPolicy, `"reason": "reads"}`, `"reason": "reads"},`, 1),
			[]string{"line 5, column 61", "field tools", "a trailing comma before '}'"}},
		{"policy: a value quoted by the loader", config.DocPolicy,
			strings.Replace(goodPolicy, `"tier": "low"`, `"tier": "`+planted+`"`, 1),
			[]string{"line 5, column 28", "field tools.get_matter_summary.tier", "not accepted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeDoc(t, "doc.json", tc.body)
			err := load[tc.doc]("file:" + path)
			if k, _, _ := failure.Classify(err); k != failure.KindConfigInvalid {
				t.Fatalf("%v: want config_invalid", err)
			}
			msg := failure.Build(err, failure.StageConfig, "test", failure.Identity{}).UserVisibleMessage
			wantAll(t, msg, append([]string{tc.doc + " (file:" + path + ")"}, tc.want...))
			if strings.Contains(msg, planted) {
				t.Errorf("the message quotes the document: %s", msg)
			}
		})
	}
}

// wantAll fails unless msg holds each of want, in order.
func wantAll(t *testing.T, msg string, want []string) {
	t.Helper()
	rest := msg
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("%q\nwant %q (after the parts before it)", msg, w)
		}
		rest = rest[i+len(w):]
	}
}

// functionEnv is what the invoke function is started with, documents
// added.
func functionEnv(docs map[string]string) func(string) (string, bool) {
	env := map[string]string{"TABLE_NAME": "warrant-test", "MODEL_ID": stackModel,
		"LEDGER_KEY":   "hmac:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		"QUEUE_URL":    "http://127.0.0.1:9/000000000000/WorkerQueue",
		"TOOL_CATALOG": "", "AGENTS": "", "TOOL_POLICY": ""}
	for k, v := range docs {
		env[k] = v
	}
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// envelopes are the failure envelopes of a function's log.
func envelopes(t *testing.T, log string) []failure.Envelope {
	t.Helper()
	var out []failure.Envelope
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `"failure_kind"`) {
			continue
		}
		var env failure.Envelope
		if err := json.Unmarshal([]byte(line), &env); err != nil {
			t.Fatalf("a log line is not an envelope: %v\n%s", err, line)
		}
		out = append(out, env)
	}
	return out
}

func apiRequest(method, path, body string, claims map[string]string) events.APIGatewayV2HTTPRequest {
	req := events.APIGatewayV2HTTPRequest{RawPath: path, Body: body,
		Headers:        map[string]string{"content-type": "application/json"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path}}}
	if claims != nil {
		payload, _ := json.Marshal(claims)
		req.Headers["authorization"] = "Bearer e30." + base64.RawURLEncoding.EncodeToString(payload) + ".c2ln"
		req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims}}
	}
	return req
}

// problemOf reads a problem+json answer.
func problemOf(t *testing.T, resp events.APIGatewayV2HTTPResponse) failure.Problem {
	t.Helper()
	if resp.Headers["Content-Type"] != "application/problem+json" {
		t.Fatalf("answer %d %v, not a problem: %s", resp.StatusCode, resp.Headers, resp.Body)
	}
	var p failure.Problem
	if err := json.Unmarshal([]byte(resp.Body), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// Issue 27 item 9 on AWS: invoke started with a catalog that does not load
// logs one config_invalid envelope naming the document, the field and the
// position, and answers every request with that problem (not API Gateway's
// bare 500), never a value of the document; once the document is put
// right, the next request is served (the retry is 0 here).
func TestBootAnswersTheConfigurationFault(t *testing.T) {
	path := writeDoc(t, "catalog.json", strings.Replace(goodCatalog, `"target": {"kind": "builtin"}`, `"target": {"kind": "builtin"},`, 1))
	agentsPath := writeDoc(t, "agents.json", goodAgents)
	var logs bytes.Buffer
	h, err := wire.Boot(context.Background(), config.Invoke,
		functionEnv(map[string]string{"TOOL_CATALOG": "file:" + path, "AGENTS": "file:" + agentsPath}), &logs, 0)
	if err != nil {
		t.Fatalf("invoke gets no handler: %v", err)
	}
	fault := []string{"TOOL_CATALOG (file:" + path + ")", "line 8, column 36", "field tools.get_matter_summary", "a trailing comma"}
	envs := envelopes(t, logs.String())
	if len(envs) != 1 || envs[0].FailureKind != failure.KindConfigInvalid || envs[0].FailureStage != failure.StageConfig {
		t.Fatalf("want one config_invalid envelope at start, logged:\n%s", logs.String())
	}
	wantAll(t, envs[0].UserVisibleMessage, fault)
	if strings.Contains(logs.String(), `"msg":"ready"`) {
		t.Errorf("a function whose catalog does not load says it is ready:\n%s", logs.String())
	}
	handle, ok := h.(wire.APIHandler)
	if !ok {
		t.Fatalf("the handler is a %T", h)
	}
	for range 2 {
		resp, err := handle(context.Background(), apiRequest("POST", "/v1/runs", `{}`, nil))
		if err != nil || resp.StatusCode != 500 {
			t.Fatalf("answer %d, %v: %s", resp.StatusCode, err, resp.Body)
		}
		p := problemOf(t, resp)
		if p.Kind != failure.KindConfigInvalid {
			t.Fatalf("problem %+v", p)
		}
		wantAll(t, p.Detail, fault)
	}
	if strings.Contains(logs.String(), planted) {
		t.Errorf("the log quotes the document:\n%s", logs.String())
	}
	if err := os.WriteFile(path, []byte(goodCatalog), 0o600); err != nil {
		t.Fatal(err)
	}
	resp, _ := handle(context.Background(), apiRequest("POST", "/v1/runs", `{}`, nil))
	if p := problemOf(t, resp); resp.StatusCode != 401 || p.Kind != failure.KindUnauthenticated {
		t.Fatalf("with the catalog put right, a request without a JWT is answered %d %s, want 401", resp.StatusCode, resp.Body)
	}
}

// The worker, which API Gateway does not call, gets the error (Main exits
// and Lambda starts it again on its next message), its envelope logged.
func TestBootWorkerExits(t *testing.T) {
	path := writeDoc(t, "agents.json", strings.Replace(goodAgents, `["get_matter_summary"]`, `["get_matter_summary",]`, 1))
	var logs bytes.Buffer
	_, err := wire.Boot(context.Background(), config.Worker, functionEnv(map[string]string{"AGENTS": "file:" + path}), &logs, 0)
	if err == nil {
		t.Fatal("the worker started with agents that do not load")
	}
	envs := envelopes(t, logs.String())
	if len(envs) != 1 {
		t.Fatalf("want one envelope, logged:\n%s", logs.String())
	}
	wantAll(t, envs[0].UserVisibleMessage, []string{"AGENTS (file:" + path + ")", "line 6, column 37", "field agents.intake_clerk.tools", "a trailing comma before ']'"})
}

// Issue 27 item 9: an agent naming a tool the catalog lacks is named, the
// agent, the tool and where, not "the agent registry does not build"; so is
// an agent whose model has no price.
func TestAgentFaultsNamed(t *testing.T) {
	for _, tc := range []struct {
		name, agents string
		want         []string
	}{
		{"an unknown tool", strings.Replace(goodAgents, `["get_matter_summary"]`, `["get_matter_summary", "send_fax"]`, 1),
			[]string{"line 6, column 39", "field agents.intake_clerk.tools[1]", "agent intake_clerk names tool send_fax, which TOOL_CATALOG (file:"}},
		{"an unpriced model", strings.Replace(goodAgents, `"prompt_version": "v1",`, `"prompt_version": "v1", "model_id": "acme.unpriced-`+planted+`",`, 1),
			[]string{"line 5, column 31", "field agents.intake_clerk.model_id", "agent intake_clerk's model has no price"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			catalogPath, agentsPath := writeDoc(t, "catalog.json", goodCatalog), writeDoc(t, "agents.json", tc.agents)
			var logs bytes.Buffer
			h, err := wire.Boot(context.Background(), config.Invoke,
				functionEnv(map[string]string{"TOOL_CATALOG": "file:" + catalogPath, "AGENTS": "file:" + agentsPath}), &logs, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			envs := envelopes(t, logs.String())
			if len(envs) != 1 {
				t.Fatalf("want one envelope, logged:\n%s", logs.String())
			}
			wantAll(t, envs[0].UserVisibleMessage, append([]string{"AGENTS (file:" + agentsPath + ")"}, tc.want...))
			resp, _ := h.(wire.APIHandler)(context.Background(), apiRequest("POST", "/v1/runs", `{}`, nil))
			wantAll(t, problemOf(t, resp).Detail, tc.want)
			if strings.Contains(logs.String(), planted) || strings.Contains(resp.Body, planted) {
				t.Errorf("the fault quotes the document:\n%s\n%s", logs.String(), resp.Body)
			}
		})
	}
}

// Issue 27 item 10: POST /v1/runs naming an agent the stack lacks is
// answered unknown_agent naming the key and listing the stack's agents.
func TestUnknownAgentNamesTheAgents(t *testing.T) {
	agents := strings.Replace(goodAgents, `"intake_clerk": {`, `"conflicts_clerk": {"system_prompt": "p", "prompt_version": "v1", "tools": ["get_matter_summary"]},
    "intake_clerk": {`, 1)
	catalogPath, agentsPath := writeDoc(t, "catalog.json", goodCatalog), writeDoc(t, "agents.json", agents)
	var logs bytes.Buffer
	h, err := wire.Boot(context.Background(), config.Invoke,
		functionEnv(map[string]string{"TOOL_CATALOG": "file:" + catalogPath, "AGENTS": "file:" + agentsPath}), &logs, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	handle := h.(wire.APIHandler)
	claims := map[string]string{"sub": "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", "firm_id": "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b"}
	for key, want := range map[string]string{
		"matter_assistant":      `no agent of this stack has the key "matter_assistant"; this stack's agents (AGENTS): conflicts_clerk, intake_clerk`,
		"Matter Assistant\n<b>": `no agent of this stack has the key asked for (a key is 1 to 64 lowercase letters, digits or '_', starting with a letter); this stack's agents (AGENTS): conflicts_clerk, intake_clerk`,
	} {
		body, _ := json.Marshal(map[string]string{"agent_key": key, "matter_id": "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"})
		resp, err := handle(context.Background(), apiRequest("POST", "/v1/runs", string(body), claims))
		if err != nil || resp.StatusCode != 422 {
			t.Fatalf("%q: answer %d, %v: %s", key, resp.StatusCode, err, resp.Body)
		}
		if p := problemOf(t, resp); p.Kind != failure.KindUnknownAgent || !strings.Contains(p.Detail, want) {
			t.Errorf("%q: problem %+v\nwant detail %q", key, p, want)
		}
	}
}
