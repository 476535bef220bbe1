package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/config"
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
