package deploy

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
// targets in ../Makefile (docs/DEPLOY.md has them) and functions/<pkg>/main.go.

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/global"
	"gopkg.in/yaml.v3"

	"github.com/seed-f6d3920e/warrant/pkg/config"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
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
}

type route struct{ Method, Path string }

func (r route) String() string { return r.Method + " " + r.Path }

// wantRoutes is the HTTP API of shared/DESIGN.md §9 and the function serving
// each route.
var wantRoutes = map[route]string{
	{"POST", "/v1/runs"}: "InvokeFunction",
	{"POST", "/v1/runs/{run_id}/approvals/{approval_id}"}: "ApproveFunction",
	{"POST", "/v1/runs/{run_id}/resume"}:                  "ResumeFunction",
	{"GET", "/v1/runs/{run_id}"}:                          "RunsFunction",
	{"GET", "/v1/runs/{run_id}/events"}:                   "RunsFunction",
	{"GET", "/v1/approvals"}:                              "RunsFunction",
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

// ---------------------------------------------------------------- functions

func TestTemplateDeclaresExactlyTheFunctions(t *testing.T) {
	tmpl := typedTemplate(t)
	got := keys(tmpl.GetAllServerlessFunctionResources())
	if want := keys(functionPackages); !slices.Equal(got, want) {
		t.Fatalf("AWS::Serverless::Function resources = %v, want %v", got, want)
	}
	for id, fn := range tmpl.GetAllServerlessFunctionResources() {
		if fn.CodeUri == nil || aws.ToString(fn.CodeUri.String) != "." {
			t.Errorf("%s: CodeUri must be \".\" (one root go.mod), got %+v", id, fn.CodeUri)
		}
		if m := fn.AWSCloudFormationMetadata["BuildMethod"]; m != "makefile" {
			t.Errorf("%s: Metadata.BuildMethod = %v, want makefile", id, m)
		}
		if fn.Runtime != nil || fn.Handler != nil {
			t.Errorf("%s: Runtime/Handler belong in Globals, got %v/%v", id, aws.ToString(fn.Runtime), aws.ToString(fn.Handler))
		}
	}
}

// makefile is the part of a Makefile these tests need: variables and the
// recipe lines of each target.
type makefile struct {
	vars  map[string]string
	rules map[string][]string
}

var (
	makeVarDef = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*(\?=|::=|:=|\+=|=)\s*(.*)$`)
	makeVarRef = regexp.MustCompile(`\$[({]([A-Za-z_][A-Za-z0-9_]*)[)}]`)
)

func parseMakefile(text string) makefile {
	mf := makefile{vars: map[string]string{}, rules: map[string][]string{}}
	var lines []string
	var cont strings.Builder
	for _, l := range strings.Split(text, "\n") {
		if strings.HasSuffix(l, "\\") {
			cont.WriteString(strings.TrimSuffix(l, "\\") + " ")
			continue
		}
		cont.WriteString(l)
		lines = append(lines, cont.String())
		cont.Reset()
	}
	var targets []string
	for _, l := range lines {
		if strings.HasPrefix(l, "\t") {
			for _, tg := range targets {
				mf.rules[tg] = append(mf.rules[tg], strings.TrimSpace(l))
			}
			continue
		}
		trimmed := strings.TrimSpace(l)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue // blank and comment lines do not end a recipe
		}
		targets = nil
		if m := makeVarDef.FindStringSubmatch(trimmed); m != nil {
			if m[2] == "+=" {
				mf.vars[m[1]] = strings.TrimSpace(mf.vars[m[1]] + " " + m[3])
			} else if _, set := mf.vars[m[1]]; !set || m[2] != "?=" {
				mf.vars[m[1]] = m[3]
			}
			continue
		}
		head, recipe, ok := strings.Cut(trimmed, ":")
		if !ok {
			continue
		}
		targets = strings.Fields(head)
		for _, tg := range targets {
			if _, seen := mf.rules[tg]; !seen {
				mf.rules[tg] = []string{} // a target with no recipe is still a target
			}
			if _, r, ok := strings.Cut(recipe, ";"); ok {
				mf.rules[tg] = append(mf.rules[tg], strings.TrimSpace(r))
			}
		}
	}
	return mf
}

// expand substitutes the Makefile's own variables, leaving the others (such
// as ARTIFACTS_DIR, which sam build passes) as written.
func (mf makefile) expand(s string) string {
	for range 10 {
		next := makeVarRef.ReplaceAllStringFunc(s, func(ref string) string {
			if v, ok := mf.vars[makeVarRef.FindStringSubmatch(ref)[1]]; ok {
				return v
			}
			return ref
		})
		if next == s {
			break
		}
		s = next
	}
	return s
}

func TestMakefileBuildsEachFunction(t *testing.T) {
	data, err := os.ReadFile(makefilePath)
	if err != nil {
		t.Fatal(err)
	}
	mf := parseMakefile(string(data))
	for _, id := range keys(functionPackages) {
		pkg := functionPackages[id]
		target := "build-" + id
		recipe, ok := mf.rules[target]
		if !ok {
			t.Errorf("Makefile has no %s target: sam build (BuildMethod: makefile) runs it; the rules are in docs/DEPLOY.md", target)
			continue
		}
		cmd := mf.expand(strings.Join(recipe, " ; "))
		fields := strings.Fields(cmd)
		for _, want := range []string{"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0", "-trimpath", "./functions/" + pkg} {
			if !slices.Contains(fields, want) {
				t.Errorf("%s: recipe lacks %s: %s", target, want, cmd)
			}
		}
		if !strings.Contains(cmd, "go build") {
			t.Errorf("%s: recipe does not run go build: %s", target, cmd)
		}
		if i := slices.Index(fields, "-tags"); i < 0 || i+1 == len(fields) || !slices.Contains(strings.Split(strings.Trim(fields[i+1], `'"`), ","), "lambda.norpc") {
			t.Errorf("%s: recipe does not build with -tags lambda.norpc: %s", target, cmd)
		}
		if i := slices.Index(fields, "-o"); i < 0 || i+1 == len(fields) ||
			(fields[i+1] != "$(ARTIFACTS_DIR)/bootstrap" && fields[i+1] != "${ARTIFACTS_DIR}/bootstrap") {
			t.Errorf("%s: recipe must write -o $(ARTIFACTS_DIR)/bootstrap: %s", target, cmd)
		}
	}
}

func TestFunctionPackagesStartLambda(t *testing.T) {
	for _, id := range keys(functionPackages) {
		main := filepath.Join(functionsDir, functionPackages[id], "main.go")
		f, err := parser.ParseFile(token.NewFileSet(), main, nil, 0)
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		if f.Name.Name != "main" {
			t.Errorf("%s: %s is package %s, want main", id, main, f.Name.Name)
		}
		lambdaName := ""
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == lambdaImport {
				lambdaName = "lambda"
				if imp.Name != nil {
					lambdaName = imp.Name.Name
				}
			}
		}
		started := false
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && lambdaName != "" && x.Name == lambdaName &&
						(sel.Sel.Name == "Start" || sel.Sel.Name == "StartWithOptions") {
						started = true
					}
				}
			}
			return !started
		})
		if !started {
			t.Errorf("%s: %s never calls %s.Start", id, main, lambdaImport)
		}
	}

	// And no function package the template does not deploy.
	entries, err := os.ReadDir(functionsDir)
	if err != nil {
		t.Fatal(err)
	}
	deployed := map[string]bool{}
	for _, pkg := range functionPackages {
		deployed[pkg] = true
	}
	for _, e := range entries {
		if e.IsDir() && !deployed[e.Name()] {
			t.Errorf("functions/%s is not a function of template.yaml", e.Name())
		}
	}
}

func TestArchitecturesOnlyInGlobals(t *testing.T) {
	tmpl := typedTemplate(t)
	g, ok := tmpl.Globals["Function"].(*global.Function)
	if !ok || g == nil {
		t.Fatalf("Globals.Function is missing (%T)", tmpl.Globals["Function"])
	}
	if g.Architectures == nil || !slices.Equal(*g.Architectures, []string{"arm64"}) {
		t.Errorf("Globals.Function.Architectures = %v, want [arm64]", g.Architectures)
	}
	if aws.ToString(g.Runtime) != "provided.al2023" || aws.ToString(g.Handler) != "bootstrap" {
		t.Errorf("Globals.Function Runtime/Handler = %q/%q, want provided.al2023/bootstrap", aws.ToString(g.Runtime), aws.ToString(g.Handler))
	}
	for id, fn := range tmpl.GetAllServerlessFunctionResources() {
		if fn.Architectures != nil {
			t.Errorf("%s sets Architectures %v: keep it in Globals only (cfn-lint flags both)", id, fn.Architectures)
		}
	}
}

// TestLogging reads LoggingConfig raw (goformation limit 1).
func TestLogging(t *testing.T) {
	raw := rawTemplate(t)
	if f := get(raw, "Globals", "Function", "LoggingConfig", "LogFormat"); f != "JSON" {
		t.Errorf("Globals.Function.LoggingConfig.LogFormat = %v, want JSON (EMF failure lines)", f)
	}
	groups := map[string]string{}
	for id := range functionPackages {
		fn := mustResource(t, raw, id, "AWS::Serverless::Function")
		lg := refOf(get(fn, "Properties", "LoggingConfig", "LogGroup"))
		if lg == "" {
			t.Errorf("%s: LoggingConfig.LogGroup must !Ref its own AWS::Logs::LogGroup", id)
			continue
		}
		if other, dup := groups[lg]; dup {
			t.Errorf("%s and %s share log group %s", id, other, lg)
		}
		groups[lg] = id
		g := mustResource(t, raw, lg, "AWS::Logs::LogGroup")
		if refOf(get(g, "Properties", "RetentionInDays")) != "LogRetentionDays" {
			t.Errorf("%s: RetentionInDays must be !Ref LogRetentionDays", lg)
		}
	}
}

// ---------------------------------------------------------------- HTTP API

func TestRoutes(t *testing.T) {
	tmpl := typedTemplate(t)
	raw := rawTemplate(t)
	got := map[route]string{}
	for id, fn := range tmpl.GetAllServerlessFunctionResources() {
		for name, ev := range fn.Events {
			switch ev.Type {
			case "HttpApi":
				h := ev.Properties.HttpApiEvent
				if h == nil || h.Method == nil || h.Path == nil {
					t.Errorf("%s.%s: HttpApi event without Method and Path", id, name)
					continue
				}
				r := route{strings.ToUpper(*h.Method), *h.Path}
				if prev, dup := got[r]; dup {
					t.Errorf("route %s is served by both %s and %s", r, prev, id)
				}
				got[r] = id
				if h.Auth != nil {
					t.Errorf("%s.%s overrides Auth: every route must use the default JWT authorizer", id, name)
				}
				// ApiId is a Ref to a resource, which goformation drops (limit 2).
				if api := refOf(get(resourcesOf(raw)[id], "Properties", "Events", name, "Properties", "ApiId")); api != "HttpApi" {
					t.Errorf("%s.%s: ApiId must be !Ref HttpApi, got %q", id, name, api)
				}
			case "DynamoDB":
				if id != "StreamReduceFunction" {
					t.Errorf("%s.%s: only StreamReduceFunction reads the stream", id, name)
				}
			default:
				t.Errorf("%s.%s: unexpected event type %s", id, name, ev.Type)
			}
		}
	}
	for r, id := range wantRoutes {
		if got[r] != id {
			t.Errorf("route %s: served by %q, want %s", r, got[r], id)
		}
	}
	for r, id := range got {
		if _, ok := wantRoutes[r]; !ok {
			t.Errorf("route %s (%s) is not in the API of shared/DESIGN.md", r, id)
		}
	}
}

// TestHTTPAPIAuthorizerAndAccessLog reads Auth and AccessLogSettings raw
// (AccessLogSettings: goformation limit 1).
func TestHTTPAPIAuthorizerAndAccessLog(t *testing.T) {
	raw := rawTemplate(t)
	apis := ofType(raw, "AWS::Serverless::HttpApi")
	if len(apis) != 1 {
		t.Fatalf("want one AWS::Serverless::HttpApi, got %v", keys(apis))
	}
	api := mustResource(t, raw, "HttpApi", "AWS::Serverless::HttpApi")
	p, _ := api["Properties"].(object)
	if refOf(p["StageName"]) != "Stage" {
		t.Errorf("StageName must be !Ref Stage, got %v", p["StageName"])
	}
	if _, ok := p["CorsConfiguration"]; ok {
		t.Error("CORS must stay off (no CorsConfiguration)")
	}
	def := str(get(p, "Auth", "DefaultAuthorizer"))
	auth, _ := get(p, "Auth", "Authorizers", def).(object)
	if def == "" || auth == nil {
		t.Fatalf("HttpApi needs Auth.DefaultAuthorizer naming one of Auth.Authorizers, got %v", get(p, "Auth"))
	}
	if auth["IdentitySource"] != "$request.header.Authorization" {
		t.Errorf("authorizer %s: IdentitySource = %v", def, auth["IdentitySource"])
	}
	if refOf(get(auth, "JwtConfiguration", "issuer")) != "JwtIssuer" {
		t.Errorf("authorizer %s: JwtConfiguration.issuer must be !Ref JwtIssuer", def)
	}
	aud := list(get(auth, "JwtConfiguration", "audience"))
	if len(aud) != 1 || refOf(aud[0]) != "JwtAudience" {
		t.Errorf("authorizer %s: JwtConfiguration.audience must be [!Ref JwtAudience], got %v", def, aud)
	}

	dest, attr, ok := getAtt(get(p, "AccessLogSettings", "DestinationArn"))
	if !ok || attr != "Arn" {
		t.Errorf("AccessLogSettings.DestinationArn must be !GetAtt <LogGroup>.Arn")
	} else {
		mustResource(t, raw, dest, "AWS::Logs::LogGroup")
	}
	var format map[string]string
	if err := json.Unmarshal([]byte(str(get(p, "AccessLogSettings", "Format"))), &format); err != nil {
		t.Fatalf("AccessLogSettings.Format must be a JSON object of strings: %v", err)
	}
	vals := map[string]bool{}
	for k, v := range format {
		vals[v] = true
		lv := strings.ToLower(v)
		if strings.Contains(lv, "body") || strings.Contains(lv, "header") || strings.Contains(lv, "claims") {
			t.Errorf("access log field %s logs %s: no bodies, headers or claims", k, v)
		}
	}
	for _, want := range []string{"$context.requestId", "$context.routeKey", "$context.status"} {
		if !vals[want] {
			t.Errorf("access log format lacks %s", want)
		}
	}
}

// ---------------------------------------------------------------- table

func TestTableMatchesStore(t *testing.T) {
	tmpl := typedTemplate(t)
	tbl, err := tmpl.GetDynamoDBTableWithName("Table")
	if err != nil {
		t.Fatal(err)
	}
	want := dynamo.TableDefinition("x")

	attrs := func(name, typ string) string { return name + ":" + typ }
	var gotAttrs, wantAttrs []string
	for _, a := range tbl.AttributeDefinitions {
		gotAttrs = append(gotAttrs, attrs(a.AttributeName, a.AttributeType))
	}
	for _, a := range want.AttributeDefinitions {
		wantAttrs = append(wantAttrs, attrs(aws.ToString(a.AttributeName), string(a.AttributeType)))
	}
	sort.Strings(gotAttrs)
	sort.Strings(wantAttrs)
	if !slices.Equal(gotAttrs, wantAttrs) {
		t.Errorf("AttributeDefinitions = %v, pkg/dynamo has %v", gotAttrs, wantAttrs)
	}

	keySchema := func(ks []string) string { return strings.Join(ks, " ") }
	var gotKeys, wantKeys []string
	for _, k := range tbl.KeySchema {
		gotKeys = append(gotKeys, k.AttributeName+":"+k.KeyType)
	}
	for _, k := range want.KeySchema {
		wantKeys = append(wantKeys, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
	}
	if keySchema(gotKeys) != keySchema(wantKeys) {
		t.Errorf("KeySchema = %v, pkg/dynamo has %v", gotKeys, wantKeys)
	}

	// An index as "<key schema> <projection type> [<non-key attributes>]".
	index := func(keys []string, projection string, nonKey []string) string {
		nonKey = slices.Sorted(slices.Values(nonKey))
		return keySchema(keys) + " " + projection + " " + fmt.Sprint(nonKey)
	}
	gotGSI, wantGSI := map[string]string{}, map[string]string{}
	for _, g := range tbl.GlobalSecondaryIndexes {
		var ks []string
		for _, k := range g.KeySchema {
			ks = append(ks, k.AttributeName+":"+k.KeyType)
		}
		var proj string
		var nonKey []string
		if g.Projection != nil {
			proj, nonKey = aws.ToString(g.Projection.ProjectionType), g.Projection.NonKeyAttributes
		}
		gotGSI[g.IndexName] = index(ks, proj, nonKey)
	}
	for _, g := range want.GlobalSecondaryIndexes {
		var ks []string
		for _, k := range g.KeySchema {
			ks = append(ks, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
		}
		var proj string
		var nonKey []string
		if g.Projection != nil {
			proj, nonKey = string(g.Projection.ProjectionType), g.Projection.NonKeyAttributes
		}
		wantGSI[aws.ToString(g.IndexName)] = index(ks, proj, nonKey)
	}
	if fmt.Sprint(gotGSI) != fmt.Sprint(wantGSI) {
		t.Errorf("GlobalSecondaryIndexes = %v, pkg/dynamo has %v", gotGSI, wantGSI)
	}
	if len(tbl.LocalSecondaryIndexes) != len(want.LocalSecondaryIndexes) {
		t.Errorf("LocalSecondaryIndexes: template %d, pkg/dynamo %d", len(tbl.LocalSecondaryIndexes), len(want.LocalSecondaryIndexes))
	}
	if got := aws.ToString(tbl.BillingMode); got != string(want.BillingMode) {
		t.Errorf("BillingMode = %q, pkg/dynamo has %q", got, want.BillingMode)
	}
	if want.StreamSpecification == nil || !aws.ToBool(want.StreamSpecification.StreamEnabled) {
		t.Fatalf("pkg/dynamo's table has no stream, but stream-reduce reads one")
	}
	if tbl.StreamSpecification == nil || tbl.StreamSpecification.StreamViewType != string(want.StreamSpecification.StreamViewType) {
		t.Errorf("StreamSpecification = %+v, pkg/dynamo has view type %s", tbl.StreamSpecification, want.StreamSpecification.StreamViewType)
	}

	// What CreateTable cannot say but the deployment promises.
	if tbl.PointInTimeRecoverySpecification == nil || !aws.ToBool(tbl.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled) {
		t.Error("point-in-time recovery must be on")
	}
	if tbl.SSESpecification == nil || !tbl.SSESpecification.SSEEnabled {
		t.Error("SSESpecification.SSEEnabled must be true")
	}
	if tbl.AWSCloudFormationDeletionPolicy != "Retain" || tbl.AWSCloudFormationUpdateReplacePolicy != "Retain" {
		t.Errorf("the ledger is evidence: DeletionPolicy/UpdateReplacePolicy = %q/%q, want Retain/Retain",
			tbl.AWSCloudFormationDeletionPolicy, tbl.AWSCloudFormationUpdateReplacePolicy)
	}
	if tbl.TableName != nil {
		t.Errorf("TableName %q: let CloudFormation name the table (a fixed name blocks replacement and a second stack)", *tbl.TableName)
	}
	raw := rawTemplate(t)
	dp := get(mustResource(t, raw, "Table", "AWS::DynamoDB::Table"), "Properties", "DeletionProtectionEnabled")
	if fmt.Sprint(dp) != fmt.Sprint(object{"Fn::If": []any{"ProtectTable", true, false}}) {
		t.Errorf("DeletionProtectionEnabled must be !If [ProtectTable, true, false], got %v", dp)
	}
}

// TestStreamMapping reads the DynamoDB event raw (goformation limit 4).
func TestStreamMapping(t *testing.T) {
	raw := rawTemplate(t)
	fn := mustResource(t, raw, "StreamReduceFunction", "AWS::Serverless::Function")
	events, _ := get(fn, "Properties", "Events").(object)
	if len(events) != 1 {
		t.Fatalf("StreamReduceFunction wants exactly one event, got %v", keys(events))
	}
	for name, ev := range events {
		if get(ev, "Type") != "DynamoDB" {
			t.Fatalf("%s: Type = %v, want DynamoDB", name, get(ev, "Type"))
		}
		p, _ := get(ev, "Properties").(object)
		if id, attr, _ := getAtt(p["Stream"]); id != "Table" || attr != "StreamArn" {
			t.Errorf("%s: Stream must be !GetAtt Table.StreamArn, got %v", name, p["Stream"])
		}
		if p["StartingPosition"] != "LATEST" {
			t.Errorf("%s: StartingPosition = %v, want LATEST", name, p["StartingPosition"])
		}
		filters := list(get(p, "FilterCriteria", "Filters"))
		wantPattern := map[string]any{
			"eventName": []any{"INSERT"},
			"dynamodb":  map[string]any{"Keys": map[string]any{"SK": map[string]any{"S": []any{map[string]any{"prefix": "EVT#"}}}}},
		}
		if len(filters) != 1 {
			t.Errorf("%s: want one filter (ledger inserts), got %v", name, filters)
		} else {
			var pattern map[string]any
			if err := json.Unmarshal([]byte(str(get(filters[0], "Pattern"))), &pattern); err != nil {
				t.Errorf("%s: filter pattern is not JSON: %v", name, err)
			} else if fmt.Sprint(pattern) != fmt.Sprint(wantPattern) {
				t.Errorf("%s: filter pattern = %v, want %v", name, pattern, wantPattern)
			}
		}
		if !slices.Contains(list(p["FunctionResponseTypes"]), any("ReportBatchItemFailures")) {
			t.Errorf("%s: FunctionResponseTypes must include ReportBatchItemFailures", name)
		}
		if p["BisectBatchOnFunctionError"] != true {
			t.Errorf("%s: BisectBatchOnFunctionError must be true", name)
		}
		if n, ok := p["MaximumRetryAttempts"].(int); !ok || n < 0 || n > 10 {
			t.Errorf("%s: MaximumRetryAttempts = %v, want a bound in [0, 10]", name, p["MaximumRetryAttempts"])
		}
		if n, ok := p["MaximumRecordAgeInSeconds"].(int); !ok || n < 60 || n > 86400 {
			t.Errorf("%s: MaximumRecordAgeInSeconds = %v, want a bound within the stream's 24 h", name, p["MaximumRecordAgeInSeconds"])
		}
		q, attr, _ := getAtt(get(p, "DestinationConfig", "OnFailure", "Destination"))
		if attr != "Arn" {
			t.Fatalf("%s: DestinationConfig.OnFailure.Destination must be !GetAtt <queue>.Arn", name)
		}
		mustResource(t, raw, q, "AWS::SQS::Queue")
		queue, err := typedTemplate(t).GetSQSQueueWithName(q)
		if err != nil {
			t.Fatal(err)
		}
		if !aws.ToBool(queue.SqsManagedSseEnabled) && queue.KmsMasterKeyId == nil {
			t.Errorf("%s: dead-letter queue must be encrypted", q)
		}
		if aws.ToInt(queue.MessageRetentionPeriod) != 14*24*3600 {
			t.Errorf("%s: MessageRetentionPeriod = %d, want 14 days", q, aws.ToInt(queue.MessageRetentionPeriod))
		}
	}
}

// ---------------------------------------------------------------- IAM

type statement struct {
	effect    string
	actions   []string
	resources []any
}

// grant is one (action, resource) pair, the resource written canonically:
// "Table.Arn" for !GetAtt Table.Arn, "sub:..." for !Sub, "if:<Condition>" for
// !If, "*" for a literal star.
type grant struct{ action, resource string }

func resourceKey(v any) string {
	if id, attr, ok := getAtt(v); ok {
		return id + "." + attr
	}
	switch {
	case get(v, "Fn::Sub") != nil:
		return "sub:" + str(list(get(v, "Fn::Sub"))[0])
	case get(v, "Fn::If") != nil:
		return "if:" + str(list(get(v, "Fn::If"))[0])
	case refOf(v) != "":
		return "ref:" + refOf(v)
	}
	return fmt.Sprint(v)
}

// roleStatements returns the policy statements of fn's execution role, which
// must be an explicit AWS::IAM::Role of the template: a SAM-generated role
// carries AWS managed policies with Resource "*" that no statement here shows.
func roleStatements(t *testing.T, raw object, fnID string) (string, []statement) {
	t.Helper()
	fn := mustResource(t, raw, fnID, "AWS::Serverless::Function")
	p, _ := fn["Properties"].(object)
	if _, ok := p["Policies"]; ok {
		t.Errorf("%s: uses SAM Policies; give it an explicit Role with explicit statements", fnID)
	}
	roleID, attr, ok := getAtt(p["Role"])
	if !ok || attr != "Arn" {
		t.Fatalf("%s: Role must be !GetAtt <AWS::IAM::Role>.Arn, got %v", fnID, p["Role"])
	}
	role := mustResource(t, raw, roleID, "AWS::IAM::Role")
	rp, _ := role["Properties"].(object)
	if len(list(rp["ManagedPolicyArns"])) > 0 {
		t.Errorf("%s: ManagedPolicyArns %v: write the statements out", roleID, rp["ManagedPolicyArns"])
	}
	if trust := fmt.Sprint(get(rp, "AssumeRolePolicyDocument")); !strings.Contains(trust, "lambda.amazonaws.com") {
		t.Errorf("%s: must be assumable by lambda.amazonaws.com only, got %s", roleID, trust)
	}
	var out []statement
	for _, pol := range list(rp["Policies"]) {
		for _, s := range list(get(pol, "PolicyDocument", "Statement")) {
			sm, _ := s.(object)
			for _, k := range []string{"NotAction", "NotResource", "NotPrincipal"} {
				if _, ok := sm[k]; ok {
					t.Errorf("%s: statement uses %s", roleID, k)
				}
			}
			st := statement{effect: str(sm["Effect"]), resources: list(sm["Resource"])}
			for _, a := range list(sm["Action"]) {
				st.actions = append(st.actions, str(a))
			}
			out = append(out, st)
		}
	}
	return roleID, out
}

func TestIAMLeastPrivilege(t *testing.T) {
	raw := rawTemplate(t)
	logGroup := func(fnID string) string {
		return refOf(get(resourcesOf(raw)[fnID], "Properties", "LoggingConfig", "LogGroup")) + ".Arn"
	}
	logs := func(fnID string) []grant {
		return []grant{{"logs:CreateLogStream", logGroup(fnID)}, {"logs:PutLogEvents", logGroup(fnID)}}
	}
	on := func(resource string, actions ...string) []grant {
		var g []grant
		for _, a := range actions {
			g = append(g, grant{a, resource})
		}
		return g
	}
	model := "if:ModelIsInferenceProfile"
	want := map[string][]grant{
		"InvokeFunction": slices.Concat(logs("InvokeFunction"),
			on("Table.Arn", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem"),
			on(model, "bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream")),
		"ResumeFunction": slices.Concat(logs("ResumeFunction"),
			on("Table.Arn", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem"),
			on(model, "bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream")),
		"ApproveFunction": slices.Concat(logs("ApproveFunction"),
			on("Table.Arn", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem")),
		"RunsFunction": slices.Concat(logs("RunsFunction"),
			on("Table.Arn", "dynamodb:GetItem", "dynamodb:Query"),
			on("sub:${Table.Arn}/index/GSI1", "dynamodb:Query")),
		"StreamReduceFunction": slices.Concat(logs("StreamReduceFunction"),
			on("Table.Arn", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"),
			on("Table.StreamArn", "dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"),
			on("StreamDeadLetterQueue.Arn", "sqs:SendMessage")),
	}
	readOnly := []string{"dynamodb:GetItem", "dynamodb:Query"}

	for _, fnID := range keys(functionPackages) {
		roleID, stmts := roleStatements(t, raw, fnID)
		var got []grant
		for _, st := range stmts {
			if st.effect != "Allow" {
				continue
			}
			for _, a := range st.actions {
				la := strings.ToLower(a)
				isDynamo := strings.HasPrefix(la, "dynamodb:")
				if strings.Contains(a, "*") {
					t.Errorf("%s (%s): wildcard action %q", fnID, roleID, a)
				}
				if la == "dynamodb:scan" {
					t.Errorf("%s (%s): grants dynamodb:Scan; every read is keyed", fnID, roleID)
				}
				if fnID == "ApproveFunction" && strings.HasPrefix(la, "bedrock:") {
					t.Errorf("ApproveFunction (%s): grants %s; approving never calls the model", roleID, a)
				}
				if fnID == "RunsFunction" && isDynamo && !slices.Contains(readOnly, a) {
					t.Errorf("RunsFunction (%s): grants %s; it is read-only (%v)", roleID, a, readOnly)
				}
				for _, r := range st.resources {
					key := resourceKey(r)
					if s, ok := r.(string); ok && strings.Contains(s, "*") && (isDynamo || s == "*") {
						t.Errorf("%s (%s): %s on wildcard resource %q", fnID, roleID, a, s)
					}
					if isDynamo && key != "Table.Arn" && key != "Table.StreamArn" && !strings.HasPrefix(key, "sub:${Table.Arn}/index/") {
						t.Errorf("%s (%s): %s on %s, which is not the table, its stream or one of its indexes", fnID, roleID, a, key)
					}
					got = append(got, grant{a, key})
				}
			}
		}
		sortGrants := func(g []grant) []string {
			var s []string
			for _, x := range g {
				s = append(s, x.action+" on "+x.resource)
			}
			sort.Strings(s)
			return slices.Compact(s)
		}
		if g, w := sortGrants(got), sortGrants(want[fnID]); !slices.Equal(g, w) {
			t.Errorf("%s (%s) grants\n  %s\nwant\n  %s", fnID, roleID, strings.Join(g, "\n  "), strings.Join(w, "\n  "))
		}
	}

	// The dead-letter queue granted is the one the stream mapping sends to.
	dest, _, _ := getAtt(get(resourcesOf(raw)["StreamReduceFunction"], "Properties", "Events", "LedgerStream", "Properties", "DestinationConfig", "OnFailure", "Destination"))
	if dest != "StreamDeadLetterQueue" {
		t.Errorf("the stream mapping sends failures to %q, the role grants StreamDeadLetterQueue", dest)
	}
}

// evalIntrinsic evaluates the few intrinsics the Bedrock grant uses, with the
// given parameters and fixed pseudo parameters: goformation resolves no Fn::If
// on a parameter it was not given, no GetAtt, and never reports the ARN a
// policy ends up with (limit 2).
func evalIntrinsic(t *testing.T, raw object, v any, params map[string]string) any {
	t.Helper()
	pseudo := map[string]string{"AWS::Partition": "aws", "AWS::Region": "us-east-1", "AWS::AccountId": "123456789012"}
	lookup := func(name string) string {
		if v, ok := pseudo[name]; ok {
			return v
		}
		if v, ok := params[name]; ok {
			return v
		}
		if d := get(raw, "Parameters", name, "Default"); d != nil {
			return fmt.Sprint(d)
		}
		t.Fatalf("no value for %s", name)
		return ""
	}
	var eval func(v any) any
	cond := func(name string) bool {
		b, ok := eval(get(raw, "Conditions", name)).(bool)
		if !ok {
			t.Fatalf("condition %s does not evaluate to a bool", name)
		}
		return b
	}
	eval = func(v any) any {
		m, ok := v.(object)
		if !ok || len(m) != 1 {
			if s, ok := v.([]any); ok {
				out := make([]any, len(s))
				for i := range s {
					out[i] = eval(s[i])
				}
				return out
			}
			return v
		}
		for fn, arg := range m {
			switch fn {
			case "Ref":
				return lookup(str(arg))
			case "Condition":
				return cond(str(arg))
			case "Fn::Equals":
				a := list(arg)
				return fmt.Sprint(eval(a[0])) == fmt.Sprint(eval(a[1]))
			case "Fn::Not":
				return !eval(list(arg)[0]).(bool)
			case "Fn::Or", "Fn::And":
				res := fn == "Fn::And"
				for _, c := range list(arg) {
					b := eval(c).(bool)
					if fn == "Fn::Or" {
						res = res || b
					} else {
						res = res && b
					}
				}
				return res
			case "Fn::If":
				a := list(arg)
				if cond(str(a[0])) {
					return eval(a[1])
				}
				return eval(a[2])
			case "Fn::Split":
				a := list(arg)
				var out []any
				for _, p := range strings.Split(eval(a[1]).(string), str(a[0])) {
					out = append(out, p)
				}
				return out
			case "Fn::Select":
				a := list(arg)
				i, _ := strconv.Atoi(fmt.Sprint(eval(a[0])))
				items := eval(a[1]).([]any)
				if i >= len(items) {
					t.Fatalf("Fn::Select index %d out of range of %v", i, items)
				}
				return items[i]
			case "Fn::Sub":
				a := list(arg)
				vars := map[string]string{}
				if len(a) == 2 {
					for k, v := range a[1].(object) {
						vars[k] = fmt.Sprint(eval(v))
					}
				}
				return regexp.MustCompile(`\$\{([^}]+)\}`).ReplaceAllStringFunc(str(a[0]), func(ref string) string {
					name := ref[2 : len(ref)-1]
					if v, ok := vars[name]; ok {
						return v
					}
					return lookup(name)
				})
			}
		}
		return v
	}
	return eval(v)
}

func TestBedrockGrantFollowsModelId(t *testing.T) {
	raw := rawTemplate(t)
	pattern := regexp.MustCompile(str(get(raw, "Parameters", "ModelId", "AllowedPattern")))
	cases := map[string][]string{
		"us.anthropic.claude-sonnet-4-5-20250929-v1:0": {
			"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0",
			"arn:aws:bedrock:*::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0",
		},
		"global.anthropic.claude-haiku-4-5-20251001-v1:0": {
			"arn:aws:bedrock:us-east-1:123456789012:inference-profile/global.anthropic.claude-haiku-4-5-20251001-v1:0",
			"arn:aws:bedrock:*::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0",
		},
		"eu.amazon.nova-pro-v1:0": {
			"arn:aws:bedrock:us-east-1:123456789012:inference-profile/eu.amazon.nova-pro-v1:0",
			"arn:aws:bedrock:*::foundation-model/amazon.nova-pro-v1:0",
		},
		"anthropic.claude-3-5-haiku-20241022-v1:0": {
			"arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0",
		},
	}
	for _, fnID := range []string{"InvokeFunction", "ResumeFunction"} {
		_, stmts := roleStatements(t, raw, fnID)
		var resource any
		for _, st := range stmts {
			if slices.Contains(st.actions, "bedrock:InvokeModel") {
				resource = st.resources
			}
		}
		if resource == nil {
			t.Fatalf("%s: no bedrock:InvokeModel statement", fnID)
		}
		for modelID, want := range cases {
			if !pattern.MatchString(modelID) {
				t.Errorf("ModelId %s does not match the parameter's AllowedPattern", modelID)
			}
			got := fmt.Sprint(evalIntrinsic(t, raw, resource, map[string]string{"ModelId": modelID}))
			if got != fmt.Sprint([]any{anySlice(want)}) {
				t.Errorf("%s with ModelId %s grants %s, want %v", fnID, modelID, got, want)
			}
		}
	}
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// ---------------------------------------------------------------- environment

// envReaders are the names of the functions whose string-literal arguments
// are environment variable names.
var envReaders = map[string]bool{
	"Getenv": true, "LookupEnv": true, "MustEnv": true, "Env": true, "envOr": true, "Lookup": true,
	"env": true, "mustEnv": true, "getenv": true, "EnvOr": true,
}

var envName = regexp.MustCompile(`^[A-Z][A-Z0-9_]+$`)

// envNamesRead returns the environment variables the package in dir reads:
// string literals (or constants of the same package defined as literals)
// passed to an envReaders function, in every non-test file of the package.
func envNamesRead(dir string) (map[string]token.Position, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var parsed []*ast.File
	consts := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			return nil, err
		}
		parsed = append(parsed, af)
		ast.Inspect(af, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							if s, err := strconv.Unquote(lit.Value); err == nil {
								consts[name.Name] = s
							}
						}
					}
				}
			}
			return true
		})
	}
	names := map[string]token.Position{}
	for _, af := range parsed {
		ast.Inspect(af, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			var fn string
			switch f := call.Fun.(type) {
			case *ast.Ident:
				fn = f.Name
			case *ast.SelectorExpr:
				fn = f.Sel.Name
			}
			if !envReaders[fn] {
				return true
			}
			for _, arg := range call.Args {
				var s string
				switch a := arg.(type) {
				case *ast.BasicLit:
					if a.Kind == token.STRING {
						s, _ = strconv.Unquote(a.Value)
					}
				case *ast.Ident:
					s = consts[a.Name]
				}
				if envName.MatchString(s) {
					names[s] = fset.Position(arg.Pos())
				}
			}
			return true
		})
	}
	return names, nil
}

// templateEnv is the environment the template gives fnID: Globals merged by
// hand (goformation does not, limit 3) with the function's own variables.
// Values are resolved for TestTemplateEnvironmentLoads: a Ref to a parameter
// is its default, a Ref to a resource a placeholder.
func templateEnv(raw object, fnID string) map[string]string {
	env := map[string]string{}
	for _, vars := range []any{
		get(raw, "Globals", "Function", "Environment", "Variables"),
		get(resourcesOf(raw)[fnID], "Properties", "Environment", "Variables"),
	} {
		m, _ := vars.(object)
		for k, v := range m {
			switch {
			case refOf(v) != "" && get(raw, "Parameters", refOf(v)) != nil:
				env[k] = fmt.Sprint(get(raw, "Parameters", refOf(v), "Default"))
			case refOf(v) != "":
				env[k] = "placeholder-" + refOf(v)
			default:
				env[k] = fmt.Sprint(v)
			}
		}
	}
	return env
}

// TestEnvironmentCoversWhatMainsRead checks each function's environment two
// ways: against the names its package's source passes to an environment
// reader (envNamesRead), and against config.FunctionVars, the list pkg/config
// keeps of what each function reads through config.Load (the mains pass
// os.LookupEnv to it, so the names are not at the call site).
func TestEnvironmentCoversWhatMainsRead(t *testing.T) {
	raw := rawTemplate(t)
	for _, fnID := range keys(functionPackages) {
		pkg := functionPackages[fnID]
		set := templateEnv(raw, fnID)
		dir := filepath.Join(functionsDir, pkg)
		if _, err := os.Stat(filepath.Join(dir, "main.go")); err != nil {
			t.Errorf("%s: cannot check its environment: %v", fnID, err)
			continue
		}
		read, err := envNamesRead(dir)
		if err != nil {
			t.Errorf("%s: %v", fnID, err)
			continue
		}
		for _, name := range keys(read) {
			if _, ok := set[name]; !ok && !strings.HasPrefix(name, "AWS_") {
				// AWS_* are Lambda's own, or the SDK's AWS_ENDPOINT_URL_* for local runs.
				t.Errorf("%s reads %s (%s) but the template does not set it", fnID, name, read[name])
			}
		}
		vars, ok := config.FunctionVars[pkg]
		if !ok {
			t.Errorf("%s: config.FunctionVars has no entry %q", fnID, pkg)
			continue
		}
		for _, name := range vars {
			if _, ok := set[name]; !ok && !config.Optional[name] && !strings.HasPrefix(name, "AWS_") {
				t.Errorf("%s reads %s through config.Load but the template does not set it", fnID, name)
			}
		}
		for name := range set {
			if !slices.Contains(vars, name) {
				t.Errorf("%s: the template sets %s, which config.FunctionVars[%q] does not list", fnID, name, pkg)
			}
		}
	}
}

// TestTemplateEnvironmentLoads runs config.Load on the environment the
// template gives each function with the parameters' defaults: the defaults
// (cost caps, warrant TTL, model id and its price, ...) are valid for the code.
func TestTemplateEnvironmentLoads(t *testing.T) {
	raw := rawTemplate(t)
	for _, fnID := range keys(functionPackages) {
		env := templateEnv(raw, fnID)
		lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
		if _, err := config.Load(functionPackages[fnID], lookup); err != nil {
			t.Errorf("%s: config.Load on the template's environment: %v", fnID, err)
		}
	}
}
