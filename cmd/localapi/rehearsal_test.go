package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/internal/walkthrough"
	"github.com/seed-f6d3920e/warrant/pkg/catalog"
)

// TestRehearsalEnv: in a rehearsal a function's environment is exactly its
// stand-up environment, the region, moto as its endpoint and its own role's
// credentials; nothing of the host's AWS settings (a profile, a key, another
// endpoint), and none of the local stack's stand-ins (CHECKPOINT_DIR, the
// fake SQS and EventBridge, the local catalog).
func TestRehearsalEnv(t *testing.T) {
	for _, kv := range []string{"AWS_PROFILE=host", "AWS_ACCESS_KEY_ID=AKIAHOST", "AWS_ENDPOINT_URL_DYNAMODB=http://host", "AWS_REGION=eu-west-1"} {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	r := &Rehearsal{Endpoint: "http://127.0.0.1:5000", Region: "us-east-1", Functions: map[string]RehearsalFunction{
		"WorkerFunction": {Environment: map[string]string{"TABLE_NAME": "t", "QUEUE_URL": "http://127.0.0.1:5000/123456789012/q", "LEDGER_KEY": "kms:arn:k"},
			Credentials: RehearsalCreds{AccessKeyID: "ASIAWORKER", SecretAccessKey: "s", SessionToken: "tok"}},
	}}
	s := &Stack{cfg: StackConfig{Rehearsal: r}, Region: r.Region, toolEnv: []string{"TOOL_CATALOG=file:/local.json"}, checkpoints: "/tmp/cp"}
	got := s.functionEnv(&Function{LogicalID: "WorkerFunction", Name: "worker", Env: []string{"TABLE_NAME=local"}})
	want := []string{"LEDGER_KEY=kms:arn:k", "QUEUE_URL=http://127.0.0.1:5000/123456789012/q", "TABLE_NAME=t",
		"AWS_REGION=us-east-1", "AWS_ENDPOINT_URL=http://127.0.0.1:5000",
		"AWS_ACCESS_KEY_ID=ASIAWORKER", "AWS_SECRET_ACCESS_KEY=s", "AWS_SESSION_TOKEN=tok"}
	if !slices.Equal(got, want) {
		t.Errorf("the worker's environment in a rehearsal:\n got %q\nwant %q", got, want)
	}
}

// TestRehearsalCatalog: the rehearsal's catalog loads, with the filing on
// the firm's HTTPS endpoint, the e-mail on its Lambda function and the
// other tools on its MCP server.
func TestRehearsalCatalog(t *testing.T) {
	fn := "arn:aws:lambda:us-east-1:123456789012:function:" + ReferenceFunction
	doc, err := rehearsalCatalog("http://127.0.0.1:3001/mcp", "http://127.0.0.1:3001/https/", fn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.Parse(doc); err != nil {
		t.Fatal(err)
	}
	var d struct {
		Tools map[string]struct {
			Target struct{ Kind, Server string }
		}
		Servers map[string]struct{ Kind, URL, Function string }
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	for name, tool := range d.Tools {
		want := catalog.TargetMCP
		switch name {
		case walkthrough.FilingTool:
			want = catalog.TargetHTTPS
		case walkthrough.EmailTool:
			want = catalog.TargetLambda
		}
		if tool.Target.Kind != want || d.Servers[tool.Target.Server].Kind != want {
			t.Errorf("tool %s on %s (server %s), want %s", name, tool.Target.Kind, tool.Target.Server, want)
		}
	}
	if d.Servers["firm-lambda"].Function != fn || d.Servers["firm-https"].URL != "http://127.0.0.1:3001/https/" {
		t.Errorf("servers %+v", d.Servers)
	}
}
