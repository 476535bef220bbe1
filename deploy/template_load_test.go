package deploy

// The tests of template.yaml against the code, by concern: functions_test.go
// (the functions, their build targets and packages, architectures, logging),
// api_test.go (routes, authorizer, access log, each function's events),
// table_test.go (the table and its stream mapping), queue_test.go (the worker
// queue, its dead-letter queue, alarm and policy, the worker's SQS event, the
// sweeper's schedule), iam_test.go (the roles), env_test.go (each function's
// environment), sources_test.go (where the policy, the tool catalog and the
// agents come from: SSM parameters or files of the bundle, and who may read
// them), secrets_test.go (the tool servers' secrets and their key),
// toolfunctions_test.go (the firm's Lambda functions the worker may invoke),
// vpc_test.go (the worker in the firm's VPC), evidence_test.go (the receipt
// key, who may sign with it, and the Object Lock checkpoint bucket),
// bundle_test.go (the Makefile's copy of BUNDLE_DIR into the artifacts);
// gosrc_test.go reads the functions' Go source for the functions and
// environment checks. This file loads the template for all.
//
// These tests read template.yaml two ways:
//
//   - typed, through goformation v7 (typedTemplate), for what it represents
//     faithfully: the functions and their HttpApi events, CodeUri, Metadata,
//     Architectures/Runtime/Handler, Globals, the table, the queue;
//   - raw, through yaml.v3 nodes (rawTemplate), with short-form intrinsics
//     turned into their long form ({"Ref": ...}, {"Fn::GetAtt": [...]}), for
//     everything goformation loses.
//
// goformation v7.14.9's limits, and which check works around which:
//
//  1. Resource structs reject unknown properties, and its SAM schema predates
//     LoggingConfig on AWS::Serverless::Function and spells the HttpApi's
//     AccessLogSettings "AccessLogSetting": goformation.Open("../template.yaml")
//     fails outright with `json: unknown field "LoggingConfig"`. typedTemplate
//     therefore hands goformation.ParseJSON the template without those keys
//     (goformationUnknown), and TestLogging / TestHTTPAPIAuthorizerAndAccessLog
//     read them raw.
//  2. Its intrinsic processor resolves Ref only to parameter defaults and
//     pseudo parameters: a Ref to a resource and every Fn::GetAtt come back
//     null. So Role, ApiId, the stream ARN, log group links and every IAM
//     Resource are read raw (TestIAMLeastPrivilege, TestRoutes' ApiId,
//     TestStreamMapping), and the Bedrock ARNs are evaluated by evalIntrinsic.
//  3. It does not merge Globals into functions: templateEnv merges the
//     environment by hand for TestEnvironmentCoversWhatMainsRead and
//     TestTemplateEnvironmentLoads; TestArchitecturesOnlyInGlobals reads both.
//  4. An event's Properties decode into every event struct that accepts all
//     its keys (an HttpApi event also decodes as an ApiEvent), and its DynamoDB
//     struct lacks FilterCriteria and FunctionResponseTypes, so the stream
//     event comes back empty: the checks go by the event Type, and
//     TestStreamMapping reads the stream event raw.
//
// Some checks fail until other parts of the tree exist: the build-<LogicalId>
// targets in ../Makefile (docs/DEPLOY.md says what each is for) and the
// functions/<pkg> packages.

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	"gopkg.in/yaml.v3"
)

const (
	templatePath = "../template.yaml"
	makefilePath = "../Makefile"
	functionsDir = "../functions"
	lambdaImport = "github.com/aws/aws-lambda-go/lambda"
)

// functionPackages maps each function's logical id to its package under
// functions/.
var functionPackages = map[string]string{
	"InvokeFunction":       "invoke",
	"ApproveFunction":      "approve",
	"ResumeFunction":       "resume",
	"RunsFunction":         "runs",
	"StreamReduceFunction": "stream-reduce",
	"WorkerFunction":       "worker",
	"SweeperFunction":      "sweeper",
}

// ---------------------------------------------------------------- loading

type object = map[string]any

// rawTemplate is template.yaml as maps, slices and scalars, intrinsics in
// long form, the way CloudFormation reads it.
func rawTemplate(t *testing.T) object {
	t.Helper()
	data, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	v, err := fromNode(&doc)
	if err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	m, ok := v.(object)
	if !ok {
		t.Fatalf("template.yaml: top level is %T, not a mapping", v)
	}
	return m
}

func fromNode(n *yaml.Node) (any, error) {
	var v any
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return nil, fmt.Errorf("want one YAML document, got %d", len(n.Content))
		}
		return fromNode(n.Content[0])
	case yaml.AliasNode:
		return fromNode(n.Alias)
	case yaml.MappingNode:
		m := make(object, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			val, err := fromNode(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = val
		}
		v = m
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			val, err := fromNode(c)
			if err != nil {
				return nil, err
			}
			s = append(s, val)
		}
		v = s
	case yaml.ScalarNode:
		plain := *n
		if isIntrinsicTag(n.Tag) {
			plain.Tag = "" // resolve the scalar as if untagged
		}
		if err := plain.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %v", n.Line, err)
		}
	}
	if !isIntrinsicTag(n.Tag) {
		return v, nil
	}
	name := strings.TrimPrefix(n.Tag, "!")
	key := "Fn::" + name
	if name == "Ref" || name == "Condition" {
		key = name
	}
	if s, ok := v.(string); ok && name == "GetAtt" {
		id, attr, ok := strings.Cut(s, ".")
		if !ok {
			return nil, fmt.Errorf("line %d: !GetAtt %q has no attribute", n.Line, s)
		}
		v = []any{id, attr}
	}
	return object{key: v}, nil
}

func isIntrinsicTag(tag string) bool {
	return strings.HasPrefix(tag, "!") && !strings.HasPrefix(tag, "!!")
}

// goformationUnknown lists the properties goformation v7.14.9 does not know
// (limit 1 above); typedTemplate drops them before parsing.
var goformationUnknown = map[string][]string{
	"AWS::Serverless::Function": {"LoggingConfig"},
	"AWS::Serverless::HttpApi":  {"AccessLogSettings"},
}

func typedTemplate(t *testing.T) *cloudformation.Template {
	t.Helper()
	raw := rawTemplate(t) // a fresh copy: safe to edit
	if g, ok := get(raw, "Globals", "Function").(object); ok {
		for _, p := range goformationUnknown["AWS::Serverless::Function"] {
			delete(g, p)
		}
	}
	for _, r := range resourcesOf(raw) {
		if p, ok := r["Properties"].(object); ok {
			for _, prop := range goformationUnknown[str(r["Type"])] {
				delete(p, prop)
			}
		}
	}
	data, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := goformation.ParseJSON(data)
	if err != nil {
		t.Fatalf("goformation cannot parse template.yaml (a property it does not know? add it to goformationUnknown and check it raw): %v", err)
	}
	return tmpl
}

// ---------------------------------------------------------------- raw access

func get(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(object)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func str(v any) string { s, _ := v.(string); return s }

func list(v any) []any {
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		return v
	default:
		return []any{v}
	}
}

func resourcesOf(raw object) map[string]object {
	out := map[string]object{}
	res, _ := raw["Resources"].(object)
	for id, r := range res {
		if m, ok := r.(object); ok {
			out[id] = m
		}
	}
	return out
}

func ofType(raw object, typ string) map[string]object {
	out := map[string]object{}
	for id, r := range resourcesOf(raw) {
		if r["Type"] == typ {
			out[id] = r
		}
	}
	return out
}

func mustResource(t *testing.T, raw object, id, typ string) object {
	t.Helper()
	r, ok := resourcesOf(raw)[id]
	if !ok {
		t.Fatalf("template has no resource %s", id)
	}
	if r["Type"] != typ {
		t.Fatalf("%s is a %v, want %s", id, r["Type"], typ)
	}
	return r
}

// getAtt returns the logical id and attribute of {"Fn::GetAtt": [id, attr]}.
func getAtt(v any) (id, attr string, ok bool) {
	a, _ := get(v, "Fn::GetAtt").([]any)
	if len(a) != 2 {
		return "", "", false
	}
	return str(a[0]), str(a[1]), true
}

func refOf(v any) string { return str(get(v, "Ref")) }

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
