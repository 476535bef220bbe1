package deploy

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/auth"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/config"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

const deployDoc = "../docs/DEPLOY.md"

// section is the text of the "## <title>" section of a Markdown document, up
// to the next "## " heading.
func section(t *testing.T, path, title string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n## "+title+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", path, title)
	}
	body, _, _ := strings.Cut(rest, "\n## ")
	return body
}

var jsonBlock = regexp.MustCompile("(?s)\n```json\n(.*?)\n```")

// TestConnectingYourSystemsExample loads every JSON document of DEPLOY.md's
// "Connecting your systems" with the code the functions load them with: the
// worked example's catalog (its schema pins included), its whole policy and
// its agents, each once. Then, as the functions and `warrant tools check`
// would: every catalog tool has a policy entry, every agent's tool is in the
// catalog and its model has a price, the secrets the catalog names fit
// ToolSecretArns, the summary the text quotes is the one counsel reads, and
// declaring a record asks for counsel as the text says.
func TestConnectingYourSystemsExample(t *testing.T) {
	text := section(t, deployDoc, "Connecting your systems")
	var cat *catalog.Catalog
	var pol *toolpolicy.Policy
	var agents *catalog.Agents
	for _, m := range jsonBlock.FindAllStringSubmatch(text, -1) {
		doc := []byte(m[1])
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(doc, &probe); err != nil {
			t.Fatalf("a json block of the section is not a JSON object: %v\n%s", err, doc)
		}
		var err error
		switch {
		case probe["agents"] != nil && agents == nil:
			agents, err = catalog.ParseAgents(doc, nil)
		case probe["default"] != nil && pol == nil:
			pol, err = toolpolicy.LoadDocument(doc)
		case probe["servers"] != nil && cat == nil:
			cat, err = catalog.Parse(doc)
		default:
			t.Fatalf("a json block of the section is none of the example's catalog, policy and agents, or one of them twice:\n%s", doc)
		}
		if err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
	}
	if cat == nil || pol == nil || agents == nil {
		t.Fatalf("the example lacks a document: catalog %v, policy %v, agents %v", cat != nil, pol != nil, agents != nil)
	}

	for _, name := range cat.Names() {
		if _, listed := pol.Floor(name); !listed {
			t.Errorf("catalog tool %s has no entry in the example's policy (it would be denied)", name)
		}
	}
	prices, err := pricing.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	stackModel := str(get(rawTemplate(t), "Parameters", "ModelId", "Default"))
	for key, a := range agents.Agents {
		for _, tool := range a.Tools {
			if _, ok := cat.Tools[tool]; !ok {
				t.Errorf("agent %s uses %s, which the example's catalog lacks", key, tool)
			}
		}
		if _, err := prices.Price(a.ModelID); a.ModelID != "" && err != nil {
			t.Errorf("agent %s: model %s has no price: %v", key, a.ModelID, err)
		}
		if a.ModelID != "" && a.ModelID != stackModel {
			t.Errorf("agent %s: model %s is not the stack's ModelId (%s), the one the worker may call", key, a.ModelID, stackModel)
		}
	}
	secretPattern := regexp.MustCompile(str(get(rawTemplate(t), "Parameters", "ToolSecretArns", "AllowedPattern")))
	for name, s := range cat.Servers {
		for _, secret := range []string{s.Auth.Secret, s.Auth.ClientSecret} {
			if strings.HasPrefix(secret, "arn:") && !secretPattern.MatchString(secret) {
				t.Errorf("server %s names secret %s, which ToolSecretArns would not take", name, secret)
			}
		}
	}

	// Issue 19: the Lambda server's function is one ToolFunctionArns takes,
	// the e-filing token is per firm, a conflicts check summarizes, and
	// every court filing waits for counsel.
	fnPattern := regexp.MustCompile(str(get(rawTemplate(t), "Parameters", "ToolFunctionArns", "AllowedPattern")))
	if fn := cat.Servers["conflicts"].Function; cat.Servers["conflicts"].Kind != catalog.TargetLambda || !fnPattern.MatchString(fn) {
		t.Errorf("the conflicts server %+v: ToolFunctionArns would not take its function", cat.Servers["conflicts"])
	}
	if efile := cat.Servers["efile"]; efile.Kind != catalog.TargetHTTPS || !efile.PerFirm() || !efile.FinalClientErrors {
		t.Errorf("the e-filing server %+v: want https, a token per firm, final 4xx answers", efile)
	}
	const matterID = "6f1c2a4e-8b3d-4c5e-9f7a-1b2c3d4e5f60"
	if got := cat.Tools["check_conflicts"].Summarize(json.RawMessage(`{"matter_id":"` + matterID + `","parties":["Ridgeway Logistics","Harbor Freight Partners"]}`)); got != "Check conflicts for Ridgeway Logistics, Harbor Freight Partners." {
		t.Errorf("the conflicts check reads %q", got)
	}
	filing := `{"matter_id":"` + matterID + `","court":"Superior Court","case_number":"CGC-26-1","document_title":"Motion","document_text":"..."}`
	if d, err := pol.Decide(toolpolicy.Call{Tool: "file_with_court", Input: json.RawMessage(filing), Meta: toolpolicy.Metadata{MatterID: matterID}}); err != nil || d.Action != toolpolicy.ActionRequireApproval {
		t.Errorf("a court filing: %+v, %v; want require_approval", d, err)
	}

	input := `{"matter_id":"6f1c2a4e-8b3d-4c5e-9f7a-1b2c3d4e5f60","title":"Engagement letter","doc_class":"correspondence",` +
		`"body":"...","folder":"Engagement","declare_as_record":true}`
	summary := cat.Tools["file_to_matter"].Summarize(json.RawMessage(input))
	if flat := strings.Join(strings.Fields(text), " "); !strings.Contains(flat, "reaches counsel as: "+summary) {
		t.Errorf("the section does not quote the summary counsel reads: %s", summary)
	}
	d, err := pol.Decide(toolpolicy.Call{Tool: "file_to_matter", Input: json.RawMessage(input),
		Meta: toolpolicy.Metadata{MatterID: "6f1c2a4e-8b3d-4c5e-9f7a-1b2c3d4e5f60"}})
	if err != nil || d.Action != toolpolicy.ActionRequireApproval ||
		!slices.ContainsFunc(d.FiredRules, func(r toolpolicy.FiredRule) bool { return r.ID == "dms.declare_record" }) {
		t.Errorf("declaring a record: %+v, %v; want require_approval by dms.declare_record, as the section says", d, err)
	}
}

var (
	// overrideExample is a parameter example as samconfig.toml's
	// parameter_overrides spell it in the document: Key=\"value\".
	overrideExample = regexp.MustCompile(`([A-Za-z0-9]+)=\\"([^"\\]*)\\"`)
	endpointRow     = regexp.MustCompile("(?m)^\\|[^|\\n]*\\|[^|\\n]*\\| `com\\.amazonaws\\.<region>\\.([a-z0-9-]+)` \\|")
)

// TestDeployDocParameterExamples: every parameter example of DEPLOY.md names a
// parameter of the template and satisfies its constraints, as `make validate`
// would hold it in samconfig.toml ("..." is a placeholder).
func TestDeployDocParameterExamples(t *testing.T) {
	data, err := os.ReadFile(deployDoc)
	if err != nil {
		t.Fatal(err)
	}
	raw := rawTemplate(t)
	examples := overrideExample.FindAllStringSubmatch(string(data), -1)
	if len(examples) == 0 {
		t.Fatal("DEPLOY.md has no Key=\\\"value\\\" parameter example")
	}
	for _, m := range examples {
		name, value := m[1], m[2]
		p, _ := get(raw, "Parameters", name).(object)
		if p == nil {
			t.Errorf("DEPLOY.md's example %s: not a parameter of the template", m[0])
			continue
		}
		if value == "..." {
			continue
		}
		if allowed := list(p["AllowedValues"]); len(allowed) > 0 && !slices.ContainsFunc(allowed, func(a any) bool { return fmt.Sprint(a) == value }) {
			t.Errorf("DEPLOY.md's example %s: %q is not one of %v", m[0], value, allowed)
		}
		elements := []string{value}
		if p["Type"] == "CommaDelimitedList" {
			elements = strings.Split(value, ",") // CloudFormation matches each element
		}
		if pattern := str(p["AllowedPattern"]); pattern != "" {
			for _, e := range elements {
				if !regexp.MustCompile(pattern).MatchString(e) {
					t.Errorf("DEPLOY.md's example %s: %q does not match %s", m[0], e, pattern)
				}
			}
		}
	}
}

// TestPrivateNetworksEndpoints: the endpoints table of DEPLOY.md's "Private
// networks" lists exactly the AWS services the worker calls: each service its
// role is granted actions on (but CloudWatch Logs, whose lines Lambda ships
// outside the VPC's routes, and EC2, whose network interfaces Lambda manages
// for it), and each service whose SDK client its code imports, as the Lambda
// build compiles it (but a client built only for a variable the worker does not
// read). It imports no STS client: the section says none is needed.
func TestPrivateNetworksEndpoints(t *testing.T) {
	text := section(t, deployDoc, "Private networks")
	documented := map[string]bool{}
	for _, m := range endpointRow.FindAllStringSubmatch(text, -1) {
		documented[m[1]] = true
	}
	// An IAM service prefix or an SDK package, and the endpoint's service
	// name where the two differ.
	endpointOf := func(service string) string {
		switch service {
		case "bedrock", "bedrockruntime": // Converse is bedrock:InvokeModel on bedrock-runtime
			return "bedrock-runtime"
		}
		return service
	}
	want := map[string]string{} // endpoint -> why
	_, stmts := roleStatements(t, rawTemplate(t), "WorkerFunction")
	for _, st := range stmts {
		for _, a := range st.actions {
			service, _, _ := strings.Cut(a, ":")
			if service != "logs" && service != "ec2" {
				want[endpointOf(service)] = "the worker's role grants " + a
			}
		}
	}
	// A client the worker's code compiles but never builds, because the
	// wiring shared by all functions builds it only for a variable the
	// worker does not read: S3 for CHECKPOINT_BUCKET (the sweeper's
	// checkpoints, anchor.S3Sink), EventBridge for EVENT_BUS_NAME
	// (stream-reduce's and the sweeper's notifications, pkg/eventbus).
	onlyFor := map[string]string{"s3": "CHECKPOINT_BUCKET", "eventbridge": "EVENT_BUS_NAME"}
	src := newGoSource(t)
	pkgs, err := src.closure(src.functionPath(functionPackages["WorkerFunction"]))
	if err != nil {
		t.Fatal(err)
	}
	const sdk = "github.com/aws/aws-sdk-go-v2/service/"
	for _, p := range pkgs {
		for _, f := range p.files {
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				rest, ok := strings.CutPrefix(path, sdk)
				if !ok {
					continue
				}
				service, _, _ := strings.Cut(rest, "/")
				if service == "sts" {
					t.Errorf("%s imports %s: the worker calls STS, and DEPLOY.md says it needs no STS endpoint", p.path, path)
				}
				if v, ok := onlyFor[service]; ok && !slices.Contains(config.FunctionVars[functionPackages["WorkerFunction"]], v) {
					continue
				}
				want[endpointOf(service)] = p.path + " imports " + path
			}
		}
	}
	for _, e := range keys(want) {
		if !documented[e] {
			t.Errorf("\"Private networks\" has no row for com.amazonaws.<region>.%s (%s)", e, want[e])
		}
	}
	for _, e := range keys(documented) {
		if _, ok := want[e]; !ok {
			t.Errorf("\"Private networks\" lists com.amazonaws.<region>.%s, which the worker neither is granted nor imports", e)
		}
	}
}

// TestMain stops the moto_server a test started: TestConnectingYourSystemsImport
// (Secrets Manager, for the DMS's client secret), TestNotificationMessageThroughMoto
// (EventBridge and SQS).
func TestMain(m *testing.M) { dynamotest.Main(m) }

// shCommands are the commands of the ```sh blocks of text, each with its
// continued lines joined.
func shCommands(text string) []string {
	var out []string
	for _, m := range shBlock.FindAllStringSubmatch(text, -1) {
		cur := ""
		for _, line := range strings.Split(m[1], "\n") {
			line = strings.TrimSpace(line)
			if cur == "" && (line == "" || strings.HasPrefix(line, "#")) {
				continue
			}
			part, more := strings.CutSuffix(line, `\`)
			cur = strings.TrimSpace(cur + " " + strings.TrimSpace(part))
			if !more {
				out = append(out, cur)
				cur = ""
			}
		}
	}
	return out
}

var shBlock = regexp.MustCompile("(?s)\n```sh\n(.*?)\n```")

// Issue 25, item 9: the worked example's `warrant tools import` runs, as
// written, against a DMS the test serves over TLS (its MCP server offers
// search and file_document behind OAuth client credentials, its token
// endpoint takes the client secret the command names, read from Secrets
// Manager on moto), and what it prints is the example catalog's dms server
// and its two tools once the tools are renamed and the members the user
// decides are set as the example sets them: the example's schemas and pins
// are the server's, copied by no one. The printed document itself does not
// load.
func TestConnectingYourSystemsImport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs cmd/warrant; skipped with -short")
	}
	text := section(t, deployDoc, "Connecting your systems")
	var command string
	for _, c := range shCommands(text) {
		if strings.Contains(c, "warrant tools import") {
			if command != "" {
				t.Fatalf("the section has more than one tools import: %q and %q", command, c)
			}
			command = c
		}
	}
	if command == "" {
		t.Fatal("the section imports no server's tools (warrant tools import)")
	}
	var example struct {
		Servers map[string]json.RawMessage            `json:"servers"`
		Tools   map[string]map[string]json.RawMessage `json:"tools"`
	}
	for _, m := range jsonBlock.FindAllStringSubmatch(text, -1) {
		if strings.Contains(m[1], `"servers"`) {
			if err := json.Unmarshal([]byte(m[1]), &example); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The example's tools on the dms server, by their names there.
	onDMS := map[string]string{}
	for name, entry := range example.Tools {
		var target struct{ Server, Tool string }
		if err := json.Unmarshal(entry["target"], &target); err != nil {
			t.Fatal(err)
		}
		if target.Server == "dms" {
			onDMS[target.Tool] = name
		}
	}
	if len(onDMS) != 2 {
		t.Fatalf("the example's dms tools: %v", onDMS)
	}

	// Secrets Manager (moto) holds the client secret; the command's ARN is
	// the example's, so the test names moto's in its place.
	ep := dynamotest.Moto(t)
	awsEnv := []string{"AWS_ENDPOINT_URL_SECRETS_MANAGER=" + ep.URL, "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test",
		"AWS_SECRET_ACCESS_KEY=test", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true"}
	sm := secretsmanager.New(secretsmanager.Options{Region: "us-east-1", BaseEndpoint: aws.String(ep.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	clientSecret := "cs-" + uuid.NewString()
	created, err := sm.CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{
		Name: aws.String("warrant/prod/dms-client-" + uuid.NewString()), SecretString: aws.String(clientSecret)})
	if err != nil {
		t.Fatal(err)
	}
	const exampleARN = "arn:aws:secretsmanager:us-east-1:111122223333:secret:warrant/prod/dms-client-a1B2c3"

	// The DMS: its MCP server lists the two tools with the example's
	// schemas (and descriptions and hints of its own); its token endpoint
	// gives a token to warrant-prod with the secret, for the scopes asked.
	token := "tok-" + uuid.NewString()
	server := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "dms", Version: "1"}, nil)
	for remote, name := range onDMS {
		server.AddTool(&mcpsdk.Tool{Name: remote, Description: "The DMS's " + remote + ".", InputSchema: example.Tools[name]["input_schema"],
			Annotations: &mcpsdk.ToolAnnotations{ReadOnlyHint: remote == "search"}},
			func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
				t.Error("tools import called a tool")
				return nil, errors.New("not called")
			})
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", auth.RequireBearerToken(func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		if tok != token {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}, nil)(mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return server }, nil)))
	mux.HandleFunc("/oauth2/token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, basic := r.BasicAuth()
		if !basic {
			id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
		}
		w.Header().Set("Content-Type", "application/json")
		if r.PostFormValue("grant_type") != "client_credentials" || id != "warrant-prod" || secret != clientSecret ||
			r.PostFormValue("scope") != "documents.read documents.write" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": 3600})
	})
	dms := httptest.NewTLSServer(mux)
	t.Cleanup(dms.Close)
	certFile := filepath.Join(t.TempDir(), "dms.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: dms.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}

	// The command as written, in a directory that mirrors the repository
	// (where dms-tools.json lands), trusting the test's certificate.
	work := t.TempDir()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != ".git" && e.Name() != "bin" {
			if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(work, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := strings.NewReplacer("https://dms.firm.example", dms.URL, exampleARN, *created.ARN).Replace(command)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -eo pipefail\n"+run)
	cmd.Dir = work
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "AWS_") }),
		append(awsEnv, "SSL_CERT_FILE="+certFile)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s\n%v\n%s", command, err, stderr.String())
	}
	if !strings.Contains(stderr.String(), `"readOnlyHint":true`) {
		t.Errorf("the server's hints are not shown on stderr:\n%s", stderr.String())
	}
	out, err := os.ReadFile(filepath.Join(work, "dms-tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.Parse(out); err == nil {
		t.Error("the catalog loads what tools import printed, its {{TO_SET}} members unset")
	}
	out = []byte(strings.NewReplacer(dms.URL, "https://dms.firm.example", *created.ARN, exampleARN).Replace(string(out)))
	var got struct {
		Servers map[string]json.RawMessage            `json:"servers"`
		Tools   map[string]map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := map[string]any{"servers": map[string]json.RawMessage{"dms": example.Servers["dms"]}, "tools": map[string]any{}}
	set := map[string]any{"servers": got.Servers, "tools": map[string]any{}}
	for remote, name := range onDMS {
		entry := got.Tools[remote]
		if entry == nil {
			t.Fatalf("tools import printed no %s:\n%s", remote, out)
		}
		for _, m := range []string{"description", "summary", "matter_field", "class", "timeout"} {
			if v, ok := example.Tools[name][m]; ok {
				entry[m] = v
			} else {
				delete(entry, m)
			}
		}
		set["tools"].(map[string]any)[name] = entry
		want["tools"].(map[string]any)[name] = example.Tools[name]
	}
	g, _ := json.Marshal(set)
	w, _ := json.Marshal(want)
	gc, err1 := contracts.Canonicalize(g)
	wc, err2 := contracts.Canonicalize(w)
	if err1 != nil || err2 != nil || string(gc) != string(wc) {
		t.Fatalf("tools import printed, with the tools renamed and the user's members set as the example sets them:\n%s\nthe example:\n%s", gc, wc)
	}
}

// Issue 27 items 9 and 10: the section's `warrant config check` runs, as
// written, on the worked example's three documents (written under the
// names the command gives them) and passes; with an agent's tool misspelt
// it prints the fault the text quotes; and the fault the text quotes for a
// catalog in SSM is the one the functions' loader gives.
func TestConnectingYourSystemsConfigCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs cmd/warrant; skipped with -short")
	}
	text := section(t, deployDoc, "Connecting your systems")
	flat := strings.Join(strings.Fields(text), " ")
	var command string
	for _, c := range shCommands(text) {
		if strings.Contains(c, "warrant config check") {
			if command != "" {
				t.Fatalf("the section has more than one config check: %q and %q", command, c)
			}
			command = c
		}
	}
	if command == "" {
		t.Fatal("the section checks no documents (warrant config check)")
	}
	docs := map[string]string{}
	for _, m := range jsonBlock.FindAllStringSubmatch(text, -1) {
		var probe map[string]json.RawMessage
		if err := json.Unmarshal([]byte(m[1]), &probe); err != nil {
			t.Fatal(err)
		}
		switch {
		case probe["agents"] != nil:
			docs["agents.json"] = m[1]
		case probe["default"] != nil:
			docs["tool_policy.json"] = m[1]
		case probe["servers"] != nil:
			docs["tool_catalog.json"] = m[1]
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	for _, e := range entries {
		if e.Name() != ".git" && e.Name() != "bin" {
			if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(work, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := func(files map[string]string) (string, error) {
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-c", "set -eo pipefail\n"+command)
		cmd.Dir = work
		cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PRICING_FILE=") })
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, stderr.String())
		}
		return stdout.String(), err
	}
	if out, err := run(docs); err != nil || !strings.HasPrefix(out, "config check: ok: ") {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
	misspelt := strings.Replace(docs["agents.json"], `["search_documents", "file_to_matter"]`, `["search_documents", "file_to_matters"]`, 1)
	if misspelt == docs["agents.json"] {
		t.Fatal("the example's dms_clerk does not use file_to_matter")
	}
	out, err := run(map[string]string{"agents.json": misspelt})
	if err == nil || strings.Count(out, "\n") != 1 || !strings.Contains(flat, "`"+strings.TrimSpace(out)+"`") {
		t.Fatalf("%s with dms_clerk's file_to_matter misspelt: %v, printed\n%s\nwhich the section does not quote", command, err, out)
	}

	comma := strings.Replace(docs["tool_catalog.json"], `"declare_as_record": {"type": "boolean"}`, `"declare_as_record": {"type": "boolean"},`, 1)
	if comma == docs["tool_catalog.json"] {
		t.Fatal("the example's file_to_matter has no declare_as_record")
	}
	_, err = config.Document{Variable: config.DocCatalog, Source: "ssm:/warrant/prod/tool-catalog/v1", Data: []byte(comma)}.Catalog()
	var de *config.DocumentError
	if !errors.As(err, &de) || !strings.Contains(flat, "`"+de.Error()+"`") {
		t.Fatalf("the catalog with a trailing comma: %v, which the section does not quote", err)
	}
}
