package handlers_test

// docs/openapi.yaml is held to the truth in two directions:
//
//   - routes: its operations are exactly the HttpApi events of template.yaml
//     (TestOpenAPIRoutes);
//   - answers: every status it lists for an operation (and, for a problem,
//     every failure kind under x-failure-kinds) is one some request of this
//     package's tests produced through the real handlers, and every (route,
//     status, kind) they produced is listed. The tests record each answer
//     (answers_test.go); TestMain compares once the whole package ran and
//     passed, then holds every recorded answer to its documented response:
//     Content-Type, required headers, and the body (each line of an NDJSON
//     page) against the schema, as JSON Schema 2020-12 with formats.
//
// TestOpenAPIDocument checks the document is OpenAPI 3.1-shaped (operation
// ids, responses, resolvable $refs, declared path parameters, problem
// responses with their kinds, examples that match their schemas) and agrees
// with pkg/failure (kinds, stages, statuses, Retry-After); TestOpenAPISchemas checks the request and view
// schemas name the members of the Go types the handlers decode and encode.

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

var (
	openapiPath  = filepath.Join("..", "..", "docs", "openapi.yaml")
	templatePath = filepath.Join("..", "..", "template.yaml")
)

// unroutable are route keys tests send on purpose although API Gateway
// never delivers them (it answers an unknown route itself): their answers
// are no operation's.
var unroutable = map[string]string{
	"GET /v1/admin": "badinput_test.go: the runs handler's own answer to a route it does not serve",
}

const problemJSON = "application/problem+json"

// TestMain runs the tests (stopping the moto_server the crash suite
// started), then holds docs/openapi.yaml to the answers they produced.
func TestMain(m *testing.M) {
	code := dynamotest.Run(m)
	if toolfn.dir != "" {
		os.RemoveAll(toolfn.dir)
	}
	if cli.dir != "" {
		os.RemoveAll(cli.dir)
	}
	if code == 0 && wholePackageRan() {
		diffs := checkAnswers()
		if len(diffs) == 0 {
			diffs = checkBodies()
		}
		if len(diffs) > 0 {
			fmt.Fprintf(os.Stderr, "docs/openapi.yaml disagrees with the answers this package's tests produced (%d):\n", len(diffs))
			for _, d := range diffs {
				fmt.Fprintln(os.Stderr, "  "+d)
			}
			fmt.Fprintln(os.Stderr, "FAIL: make docs/openapi.yaml say what the handlers answer, or add the test request that produces what it documents (openapi_answers_test.go)")
			code = 1
		}
	}
	os.Exit(code)
}

// wholePackageRan reports whether every test ran: with -run, -skip or
// -list, what was recorded is a part, and comparing it would be noise.
func wholePackageRan() bool {
	for _, name := range []string{"test.run", "test.skip", "test.list"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return true
}

// routes returns the route keys answers recorded, sorted.
func (a *answerLog) routes() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Sorted(maps.Keys(a.seen))
}

// checkAnswers compares the recorded answers with the document, both ways.
func checkAnswers() []string {
	doc, err := loadOpenAPI()
	if err != nil {
		return []string{err.Error()}
	}
	documented, err := documentedAnswers(doc)
	if err != nil {
		return []string{err.Error()}
	}
	served, err := templateRoutes()
	if err != nil {
		return []string{err.Error()}
	}
	var diffs []string
	for _, route := range answers.routes() {
		statuses := answers.statuses(route)
		doc, ok := documented[route]
		if !ok {
			if _, ok := unroutable[route]; ok && !served[route] {
				continue
			}
			diffs = append(diffs, fmt.Sprintf("%s: tests produced %v, but the document has no such operation", route, statuses))
			continue
		}
		for _, st := range statuses {
			got := answers.kinds(route, st)
			want, ok := doc[st]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s %d: produced (kinds %v) but not documented", route, st, got))
				continue
			}
			for _, k := range got {
				if !slices.Contains(want, k) {
					diffs = append(diffs, fmt.Sprintf("%s %d: produced kind %s is not in x-failure-kinds %v", route, st, k, want))
				}
			}
			for _, k := range want {
				if !slices.Contains(got, k) {
					diffs = append(diffs, fmt.Sprintf("%s %d: documented kind %s, no test request produced it (produced %v)", route, st, k, got))
				}
			}
		}
	}
	for _, route := range slices.Sorted(maps.Keys(documented)) {
		produced := answers.statuses(route)
		for _, st := range slices.Sorted(maps.Keys(documented[route])) {
			if !slices.Contains(produced, st) {
				diffs = append(diffs, fmt.Sprintf("%s %d: documented, but no test request produced it", route, st))
			}
		}
	}
	return diffs
}

// checkBodies holds every recorded answer to its documented response: the
// Content-Type is one the response lists, the body (each line, for NDJSON)
// validates against its schema, and every header the response requires is
// there. Identical findings are reported once.
func checkBodies() []string {
	doc, err := loadOpenAPI()
	if err != nil {
		return []string{err.Error()}
	}
	schemas, err := newSchemas(doc)
	if err != nil {
		return []string{err.Error()}
	}
	ops, err := operations(doc)
	if err != nil {
		return []string{err.Error()}
	}
	seen := map[string]bool{}
	var diffs []string
	report := func(format string, args ...any) {
		if d := fmt.Sprintf(format, args...); !seen[d] {
			seen[d] = true
			diffs = append(diffs, d)
		}
	}
	answers.mu.Lock()
	all := slices.Clone(answers.all)
	answers.mu.Unlock()
	for _, a := range all {
		op, ok := ops[a.route]
		if !ok {
			continue // checkAnswers' business
		}
		resp := a.resp
		at := fmt.Sprintf("%s %d", a.route, resp.StatusCode)
		r, _ := resolveAll(doc, dig(op.op, "responses", strconv.Itoa(resp.StatusCode))).(map[string]any)
		headers, _ := r["headers"].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(headers)) {
			h, _ := resolveAll(doc, headers[name]).(map[string]any)
			if h["required"] == true && resp.Headers[name] == "" {
				report("%s: the answer has no %s header, which the document requires", at, name)
			}
		}
		ct := resp.Headers["Content-Type"]
		media, _ := dig(r, "content", ct).(map[string]any)
		if media == nil {
			report("%s: answered Content-Type %q; the document lists %v", at, ct, slices.Sorted(maps.Keys(dig(r, "content").(map[string]any))))
			continue
		}
		if strings.HasPrefix(ct, "text/") {
			// The desk's page, script and style sheet: text the document
			// types as a string; the Content-Type above is the check.
			if dig(media, "schema", "type") != "string" || resp.Body == "" {
				report("%s: a text answer is documented as a string schema and has a body", at)
			}
			continue
		}
		if ct == "application/x-ndjson" {
			var refs []string
			for _, l := range items(media["x-line-schemas"]) {
				ref, _ := dig(l, "$ref").(string)
				refs = append(refs, ref)
			}
			for _, line := range strings.Split(strings.TrimSuffix(resp.Body, "\n"), "\n") {
				if resp.Body == "" {
					break
				}
				if err := schemas.validateAny(refs, []byte(line)); err != nil {
					report("%s: a line matches none of %v: %v", at, refs, oneLine(err))
					break
				}
			}
			continue
		}
		ref, _ := dig(media, "schema", "$ref").(string)
		if err := schemas.validate(ref, []byte(resp.Body)); err != nil {
			report("%s: the body does not match %s: %v", at, ref, oneLine(err))
		}
	}
	return diffs
}

// oneLine is a validation error on one line, without the schema URL.
func oneLine(err error) string {
	var parts []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "jsonschema validation failed") {
			parts = append(parts, strings.TrimPrefix(l, "- "))
		}
	}
	return strings.Join(parts, "; ")
}

// schemas compiles the document's schemas (JSON Schema 2020-12, formats
// asserted) by reference.
type schemas struct {
	c        *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema
}

const openapiURL = "file:///docs/openapi.json"

func newSchemas(doc map[string]any) (*schemas, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(openapiURL, v); err != nil {
		return nil, err
	}
	return &schemas{c: c, compiled: map[string]*jsonschema.Schema{}}, nil
}

func (s *schemas) validate(ref string, body []byte) error {
	if !strings.HasPrefix(ref, "#/") {
		return fmt.Errorf("the response's schema is not a $ref (%q)", ref)
	}
	sch, ok := s.compiled[ref]
	if !ok {
		var err error
		if sch, err = s.c.Compile(openapiURL + ref); err != nil {
			return err
		}
		s.compiled[ref] = sch
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	return sch.Validate(v)
}

// validateAny succeeds when body matches one of refs.
func (s *schemas) validateAny(refs []string, body []byte) error {
	if len(refs) == 0 {
		return errors.New("no x-line-schemas")
	}
	var errs []error
	for _, ref := range refs {
		err := s.validate(ref, body)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// TestOpenAPIRoutes: the document's operations are exactly the routes of
// the template's HttpApi events.
func TestOpenAPIRoutes(t *testing.T) {
	doc := mustLoadOpenAPI(t)
	served, err := templateRoutes()
	if err != nil {
		t.Fatal(err)
	}
	if len(served) == 0 {
		t.Fatal("template.yaml declares no HttpApi route")
	}
	ops, err := operations(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range slices.Sorted(maps.Keys(served)) {
		if _, ok := ops[r]; !ok {
			t.Errorf("template.yaml serves %s; docs/openapi.yaml does not document it", r)
		}
	}
	for _, r := range slices.Sorted(maps.Keys(ops)) {
		if !served[r] {
			t.Errorf("docs/openapi.yaml documents %s; template.yaml serves no such route", r)
		}
	}
	for r := range unroutable {
		if served[r] {
			t.Errorf("%s is listed as unroutable, but template.yaml serves it", r)
		}
	}
}

// TestOpenAPIDocument checks the document's shape as OpenAPI 3.1 and its
// agreement with pkg/failure.
func TestOpenAPIDocument(t *testing.T) {
	doc := mustLoadOpenAPI(t)
	if v, _ := doc["openapi"].(string); !regexp.MustCompile(`^3\.1\.\d+$`).MatchString(v) {
		t.Errorf("openapi %q, want 3.1.x", v)
	}
	for _, k := range []string{"title", "version"} {
		if s, _ := dig(doc, "info", k).(string); s == "" {
			t.Errorf("info.%s is missing", k)
		}
	}
	// Every $ref is local and resolves.
	walk(doc, "#", func(at string, m map[string]any) {
		ref, ok := m["$ref"]
		if !ok {
			return
		}
		s, _ := ref.(string)
		if !strings.HasPrefix(s, "#/") {
			t.Errorf("%s: $ref %v is not a local reference", at, ref)
			return
		}
		if _, err := pointer(doc, s); err != nil {
			t.Errorf("%s: %v", at, err)
		}
	})
	// Security: every requirement names a scheme.
	for _, req := range items(doc["security"]) {
		r, _ := req.(map[string]any)
		for name := range r {
			if dig(doc, "components", "securitySchemes", name) == nil {
				t.Errorf("security names %q, which components.securitySchemes lacks", name)
			}
		}
	}
	if len(items(doc["security"])) == 0 {
		t.Error("no global security requirement: every route sits behind the JWT authorizer")
	}

	ops, err := operations(doc)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, route := range slices.Sorted(maps.Keys(ops)) {
		op := ops[route]
		id, _ := op.op["operationId"].(string)
		if id == "" {
			t.Errorf("%s: no operationId", route)
		} else if prev, dup := ids[id]; dup {
			t.Errorf("%s: operationId %s is also %s's", route, id, prev)
		}
		ids[id] = route
		checkParameters(t, doc, route, op)
		if body := op.op["requestBody"]; body != nil {
			schema := resolveAll(doc, dig(resolveAll(doc, body), "content", "application/json", "schema"))
			if schema == nil {
				t.Errorf("%s: the request body has no application/json schema", route)
			} else if dig(schema, "additionalProperties") != false {
				t.Errorf("%s: the request body schema must say additionalProperties: false (unknown members are a 400)", route)
			}
		}
		responses, _ := op.op["responses"].(map[string]any)
		if len(responses) == 0 {
			t.Errorf("%s: no responses", route)
		}
		for code, r := range responses {
			checkResponse(t, doc, route, code, r)
		}
	}

	// Every example of a media type matches the media type's schema.
	sch, err := newSchemas(doc)
	if err != nil {
		t.Fatal(err)
	}
	walk(doc, "#", func(at string, m map[string]any) {
		ex, ok := m["example"]
		ref, _ := dig(m, "schema", "$ref").(string)
		if !ok || ref == "" {
			return
		}
		b, _ := json.Marshal(ex)
		if err := sch.validate(ref, b); err != nil {
			t.Errorf("%s: the example does not match %s: %s", at, ref, oneLine(err))
		}
	})

	// The closed lists are pkg/failure's.
	var kinds, stages []string
	for _, k := range failure.AllKinds() {
		kinds = append(kinds, string(k))
	}
	for _, s := range failure.AllStages() {
		stages = append(stages, string(s))
	}
	for name, want := range map[string][]string{"FailureKind": kinds, "FailureStage": stages} {
		got := strs(dig(doc, "components", "schemas", name, "enum"))
		if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
			t.Errorf("components.schemas.%s.enum = %v, pkg/failure has %v", name, got, want)
		}
	}
	if ref, _ := dig(doc, "components", "schemas", "Problem", "properties", "kind", "$ref").(string); ref != "#/components/schemas/FailureKind" {
		t.Errorf("Problem.kind is %q, want the FailureKind enum", ref)
	}
}

func checkParameters(t *testing.T, doc map[string]any, route string, op operation) {
	t.Helper()
	_, path, _ := strings.Cut(route, " ")
	var want []string
	for _, m := range regexp.MustCompile(`\{([^{}]+)\}`).FindAllStringSubmatch(path, -1) {
		want = append(want, m[1])
	}
	declared := map[string]int{}
	for _, p := range append(items(op.item["parameters"]), items(op.op["parameters"])...) {
		pm, _ := resolveAll(doc, p).(map[string]any)
		name, _ := pm["name"].(string)
		in, _ := pm["in"].(string)
		if name == "" || !slices.Contains([]string{"path", "query", "header", "cookie"}, in) {
			t.Errorf("%s: parameter %v has no name or a wrong in", route, pm)
			continue
		}
		if pm["schema"] == nil {
			t.Errorf("%s: parameter %s has no schema", route, name)
		}
		if in != "path" {
			continue
		}
		declared[name]++
		if pm["required"] != true {
			t.Errorf("%s: path parameter %s must be required: true", route, name)
		}
		if !slices.Contains(want, name) {
			t.Errorf("%s: declares path parameter %s, which the path does not hold", route, name)
		}
	}
	for _, name := range want {
		if declared[name] != 1 {
			t.Errorf("%s: path parameter {%s} declared %d times, want once", route, name, declared[name])
		}
	}
}

func checkResponse(t *testing.T, doc map[string]any, route, code string, raw any) {
	t.Helper()
	at := route + " " + code
	status, err := strconv.Atoi(code)
	if err != nil || status < 100 || status > 599 {
		t.Errorf("%s: responses are listed by exact status (no default, no ranges)", at)
		return
	}
	r, _ := resolveAll(doc, raw).(map[string]any)
	if d, _ := r["description"].(string); d == "" {
		t.Errorf("%s: no description", at)
	}
	headers, _ := r["headers"].(map[string]any)
	if headers["X-Correlation-Id"] == nil {
		t.Errorf("%s: every answer carries X-Correlation-Id; the response does not list it", at)
	}
	content, _ := r["content"].(map[string]any)
	if len(content) == 0 {
		t.Errorf("%s: no content", at)
	}
	kinds, err := responseKinds(r)
	if err != nil {
		t.Errorf("%s: %v", at, err)
		return
	}
	if content[problemJSON] == nil {
		if status >= 400 {
			t.Errorf("%s: an error answer that is not %s", at, problemJSON)
		}
		return
	}
	if len(content) != 1 {
		t.Errorf("%s: a problem answer has one media type, %s", at, problemJSON)
	}
	if ref, _ := dig(content, problemJSON, "schema", "$ref").(string); ref != "#/components/schemas/Problem" {
		t.Errorf("%s: problem schema %q, want #/components/schemas/Problem", at, ref)
	}
	retry := false
	for _, k := range kinds {
		kind := failure.Kind(k)
		if !kind.Valid() {
			t.Errorf("%s: x-failure-kinds names %q, which is not a failure kind", at, k)
			continue
		}
		env := failure.Build(failure.New(kind, "x"), failure.StageRequest, "openapi_test", failure.Identity{CorrelationID: fixUser})
		st, h, _ := failure.ProblemFrom(env)
		if st != status {
			t.Errorf("%s: kind %s is answered with status %d", at, k, st)
		}
		if _, ok := h["Retry-After"]; ok {
			retry = true
		}
	}
	if retry != (headers["Retry-After"] != nil) {
		t.Errorf("%s: Retry-After listed %v, but the kinds' problems carry it: %v", at, headers["Retry-After"] != nil, retry)
	}
}

// TestOpenAPISchemas: each request and view schema names exactly the JSON
// members of the Go type behind it, and requires exactly those without
// omitempty (the strict decoder's rule for bodies; always present in views).
func TestOpenAPISchemas(t *testing.T) {
	doc := mustLoadOpenAPI(t)
	for name, typ := range map[string]reflect.Type{
		"StartRunRequest":        reflect.TypeFor[handlers.InvokeBody](),
		"HistoryMessage":         reflect.TypeFor[contracts.HistoryMessage](),
		"DecideWarrantRequest":   reflect.TypeFor[handlers.ApproveBody](),
		"ResumeRunRequest":       reflect.TypeFor[handlers.ResumeBody](),
		"ReconcileEffectRequest": reflect.TypeFor[handlers.ReconcileBody](),
		"RunView":                reflect.TypeFor[handlers.RunView](),
		"LedgerView":             reflect.TypeFor[handlers.LedgerView](),
		"FailureView":            reflect.TypeFor[handlers.FailureView](),
		"WarrantView":            reflect.TypeFor[handlers.WarrantView](),
		"ReconciliationView":     reflect.TypeFor[handlers.ReconciliationView](),
		"BudgetView":             reflect.TypeFor[handlers.BudgetView](),
		"ReservationView":        reflect.TypeFor[handlers.ReservationView](),
		"Problem":                reflect.TypeFor[failure.Problem](),
		"LedgerHeadLine":         reflect.TypeFor[struct{ LedgerHead contracts.HeadLine }](),
	} {
		schema, _ := dig(doc, "components", "schemas", name).(map[string]any)
		if schema == nil {
			t.Errorf("components.schemas.%s is missing", name)
			continue
		}
		if name == "LedgerHeadLine" {
			schema, _ = dig(schema, "properties", "ledger_head").(map[string]any)
			typ = reflect.TypeFor[contracts.HeadLine]()
		}
		var members, required []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			tag := f.Tag.Get("json")
			if !f.IsExported() || tag == "-" {
				continue
			}
			member, opts, _ := strings.Cut(tag, ",")
			members = append(members, member)
			if !strings.Contains(opts, "omitempty") {
				required = append(required, member)
			}
		}
		props, _ := schema["properties"].(map[string]any)
		if got := slices.Sorted(maps.Keys(props)); !slices.Equal(got, slices.Sorted(slices.Values(members))) {
			t.Errorf("%s: properties %v, %s has %v", name, got, typ, members)
		}
		if got := slices.Sorted(slices.Values(strs(schema["required"]))); !slices.Equal(got, slices.Sorted(slices.Values(required))) {
			t.Errorf("%s: required %v, %s has %v", name, got, typ, required)
		}
	}
}

// ---------------------------------------------------------------- the document

func mustLoadOpenAPI(t *testing.T) map[string]any {
	t.Helper()
	doc, err := loadOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func loadOpenAPI() (map[string]any, error) {
	v, err := loadYAML(openapiPath, false)
	if err != nil {
		return nil, err
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: the top level is not a mapping", openapiPath)
	}
	return doc, nil
}

// operation is one method of a path item.
type operation struct {
	item, op map[string]any
}

var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// operations returns the document's operations by API Gateway route key
// ("POST /v1/runs/{run_id}/resume").
func operations(doc map[string]any) (map[string]operation, error) {
	paths, _ := doc["paths"].(map[string]any)
	if len(paths) == 0 {
		return nil, fmt.Errorf("%s: no paths", openapiPath)
	}
	out := map[string]operation{}
	for path, raw := range paths {
		item, _ := raw.(map[string]any)
		if !strings.HasPrefix(path, "/") || item == nil {
			return nil, fmt.Errorf("%s: path %q is not a path item", openapiPath, path)
		}
		if _, ok := item["$ref"]; ok {
			return nil, fmt.Errorf("%s: path %s: a $ref path item is not supported here", openapiPath, path)
		}
		for _, m := range methods {
			if op, ok := item[m].(map[string]any); ok {
				out[strings.ToUpper(m)+" "+path] = operation{item: item, op: op}
			}
		}
	}
	return out, nil
}

// documentedAnswers returns, per route key, the documented statuses and
// for each the x-failure-kinds of its problem (nil for a success).
func documentedAnswers(doc map[string]any) (map[string]map[int][]string, error) {
	ops, err := operations(doc)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int][]string{}
	for route, op := range ops {
		out[route] = map[int][]string{}
		responses, _ := op.op["responses"].(map[string]any)
		for code, raw := range responses {
			status, err := strconv.Atoi(code)
			if err != nil {
				return nil, fmt.Errorf("%s: response %q is not an exact status", route, code)
			}
			r, _ := resolveAll(doc, raw).(map[string]any)
			kinds, err := responseKinds(r)
			if err != nil {
				return nil, fmt.Errorf("%s %d: %v", route, status, err)
			}
			out[route][status] = kinds
		}
	}
	return out, nil
}

// responseKinds returns a response's x-failure-kinds, sorted: required and
// non-empty on a problem answer, absent on any other.
func responseKinds(r map[string]any) ([]string, error) {
	_, isProblem := dig(r, "content", problemJSON).(map[string]any)
	raw, listed := r["x-failure-kinds"]
	switch {
	case !isProblem && listed:
		return nil, errors.New("x-failure-kinds on an answer that is not a problem")
	case !isProblem:
		return nil, nil
	}
	kinds := strs(raw)
	if len(kinds) == 0 || len(kinds) != len(items(raw)) {
		return nil, errors.New("a problem answer lists its failure kinds (x-failure-kinds: a non-empty list of strings)")
	}
	slices.Sort(kinds)
	if len(slices.Compact(slices.Clone(kinds))) != len(kinds) {
		return nil, fmt.Errorf("x-failure-kinds %v repeats a kind", kinds)
	}
	return kinds, nil
}

// ---------------------------------------------------------------- the template

// templateRoutes returns the route keys of every HttpApi event of every
// AWS::Serverless::Function in template.yaml.
func templateRoutes() (map[string]bool, error) {
	v, err := loadYAML(templatePath, true)
	if err != nil {
		return nil, err
	}
	resources, _ := dig(v, "Resources").(map[string]any)
	if len(resources) == 0 {
		return nil, fmt.Errorf("%s: no Resources", templatePath)
	}
	out := map[string]bool{}
	for _, id := range slices.Sorted(maps.Keys(resources)) {
		res := resources[id]
		if dig(res, "Type") != "AWS::Serverless::Function" {
			continue
		}
		evs, _ := dig(res, "Properties", "Events").(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(evs)) {
			ev := evs[name]
			if dig(ev, "Type") != "HttpApi" {
				continue
			}
			path, _ := dig(ev, "Properties", "Path").(string)
			method, _ := dig(ev, "Properties", "Method").(string)
			if path == "" || method == "" {
				return nil, fmt.Errorf("%s: %s.Events.%s: an HttpApi event without a literal Path and Method", templatePath, id, name)
			}
			route := strings.ToUpper(method) + " " + path
			if out[route] {
				return nil, fmt.Errorf("%s: route %s is declared twice", templatePath, route)
			}
			out[route] = true
		}
	}
	return out, nil
}

// ---------------------------------------------------------------- YAML

// loadYAML reads one YAML document as maps, slices and scalars. A mapping
// key that repeats is an error. CloudFormation's short-form intrinsics
// (!Ref, !GetAtt, !Sub ...) become {"!Ref": value} when tags are allowed,
// and are an error otherwise.
func loadYAML(path string, tags bool) (any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	v, err := plain(&n, tags)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return v, nil
}

func plain(n *yaml.Node, tags bool) (any, error) {
	var v any
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return nil, fmt.Errorf("want one YAML document, got %d", len(n.Content))
		}
		return plain(n.Content[0], tags)
	case yaml.AliasNode:
		return plain(n.Alias, tags)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if _, dup := m[k]; dup {
				return nil, fmt.Errorf("line %d: key %q repeats", n.Content[i].Line, k)
			}
			val, err := plain(n.Content[i+1], tags)
			if err != nil {
				return nil, err
			}
			m[k] = val
		}
		v = m
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			val, err := plain(c, tags)
			if err != nil {
				return nil, err
			}
			s = append(s, val)
		}
		v = s
	case yaml.ScalarNode:
		scalar := *n
		if custom(n.Tag) {
			scalar.Tag = "" // resolve as if untagged
		}
		if err := scalar.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %v", n.Line, err)
		}
	}
	if !custom(n.Tag) {
		return v, nil
	}
	if !tags {
		return nil, fmt.Errorf("line %d: tag %s", n.Line, n.Tag)
	}
	return map[string]any{n.Tag: v}, nil
}

// custom reports a local tag (!Ref), not a core one (!!str).
func custom(tag string) bool { return strings.HasPrefix(tag, "!") && !strings.HasPrefix(tag, "!!") }

// ---------------------------------------------------------------- access

func dig(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func items(v any) []any { s, _ := v.([]any); return s }

func strs(v any) []string {
	var out []string
	for _, e := range items(v) {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// pointer resolves a local reference ("#/components/schemas/Problem").
func pointer(doc map[string]any, ref string) (any, error) {
	var v any = doc
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("$ref %s does not resolve (at %q)", ref, tok)
		}
		if v, ok = m[tok]; !ok {
			return nil, fmt.Errorf("$ref %s does not resolve (no %q)", ref, tok)
		}
	}
	return v, nil
}

// resolveAll follows v's $ref (and the $ref it lands on, ...); v itself when
// it is not a reference or does not resolve.
func resolveAll(doc map[string]any, v any) any {
	for range 16 {
		ref, ok := dig(v, "$ref").(string)
		if !ok {
			return v
		}
		next, err := pointer(doc, ref)
		if err != nil {
			return v
		}
		v = next
	}
	return v
}

// walk visits every mapping of v, with its JSON pointer.
func walk(v any, at string, fn func(at string, m map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		fn(at, v)
		for _, k := range slices.Sorted(maps.Keys(v)) {
			walk(v[k], at+"/"+strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"), fn)
		}
	case []any:
		for i, e := range v {
			walk(e, at+"/"+strconv.Itoa(i), fn)
		}
	}
}
