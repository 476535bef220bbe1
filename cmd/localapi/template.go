package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"
)

// Function is one AWS::Serverless::Function of the template, as the local
// stack runs it.
type Function struct {
	LogicalID string        // InvokeFunction
	Name      string        // invoke: the folder under functions/
	Dir       string        // absolute path of functions/<Name>
	Env       []string      // Globals + the function's Environment, intrinsics resolved
	Timeout   time.Duration // Properties.Timeout, else Globals, else 3 s (the Lambda default)
	Routes    []Route       // its HttpApi events
	Stream    bool          // it has a DynamoDB stream event (stream-reduce)
	BatchSize int           // that event's BatchSize (default 100)
}

// Route is one HttpApi event: Method and Path ("/v1/runs/{run_id}").
type Route struct {
	Method   string
	Path     string
	Function string // the function's Name
	segs     []string
}

// Key is the API Gateway route key, "POST /v1/runs/{run_id}/resume".
func (r Route) Key() string { return r.Method + " " + r.Path }

// Template is what the local stack reads of template.yaml.
type Template struct {
	Path      string
	Functions []*Function
	Routes    []Route
}

// Locals are the values of intrinsics (!Ref Table, !GetAtt ...) on the local
// stack, by environment variable name. An intrinsic without one is a !Ref
// to a parameter (its Default) or a !Sub of parameters.
type Locals map[string]string

// functionName maps a logical id to its folder under functions/, by the
// Makefile's convention (target build-<LogicalId> builds functions/<name>):
// the id without its "Function" suffix, in kebab case. InvokeFunction ->
// invoke, StreamReduceFunction -> stream-reduce.
func functionName(logicalID string) string {
	base := strings.TrimSuffix(logicalID, "Function")
	var b strings.Builder
	for i, r := range base {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('-')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// LoadTemplate reads the SAM template at path. CloudFormation's short-form
// tags (!Ref, !Sub, !GetAtt, !If ...) are read as generic tagged nodes;
// where an environment variable is an intrinsic, locals (or the referenced
// parameter's Default) gives its local value.
func LoadTemplate(path string, locals Locals) (*Template, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("template %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("template %s: empty", path)
	}
	root := doc.Content[0]
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	t := &Template{Path: abs}
	params := defaults(get(root, "Parameters"))
	resources := get(root, "Resources")
	if resources == nil || resources.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("template %s: no Resources", path)
	}
	types := map[string]string{}
	for i := 0; i+1 < len(resources.Content); i += 2 {
		types[resources.Content[i].Value] = scalar(get(resources.Content[i+1], "Type"))
	}
	globals := get(get(root, "Globals"), "Function")
	globalEnv := get(get(globals, "Environment"), "Variables")
	globalTimeout := scalar(get(globals, "Timeout"))

	for i := 0; i+1 < len(resources.Content); i += 2 {
		id, res := resources.Content[i].Value, resources.Content[i+1]
		if scalar(get(res, "Type")) != "AWS::Serverless::Function" {
			continue
		}
		props := get(res, "Properties")
		f := &Function{LogicalID: id, Name: functionName(id), BatchSize: 100}
		f.Dir = filepath.Join(filepath.Dir(abs), "functions", f.Name)
		if st, err := os.Stat(filepath.Join(f.Dir, "main.go")); err != nil || st.IsDir() {
			return nil, fmt.Errorf("template %s: %s: no functions/%s/main.go (the function folder is the logical id without \"Function\", in kebab case)", path, id, f.Name)
		}
		env := map[string]string{}
		for _, vars := range []*yaml.Node{globalEnv, get(get(props, "Environment"), "Variables")} {
			if vars == nil {
				continue
			}
			for j := 0; j+1 < len(vars.Content); j += 2 {
				name, val := vars.Content[j].Value, vars.Content[j+1]
				v, err := resolve(name, val, params, types, locals)
				if err != nil {
					return nil, fmt.Errorf("template %s: %s: environment variable %s: %w", path, id, name, err)
				}
				env[name] = v
			}
		}
		names := make([]string, 0, len(env))
		for k := range env {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			f.Env = append(f.Env, k+"="+env[k])
		}
		timeout := globalTimeout
		if s := scalar(get(props, "Timeout")); s != "" {
			timeout = s
		}
		f.Timeout = 3 * time.Second
		if n, err := strconv.Atoi(timeout); err == nil && n > 0 {
			f.Timeout = time.Duration(n) * time.Second
		}
		evs := get(props, "Events")
		if evs != nil {
			for j := 0; j+1 < len(evs.Content); j += 2 {
				ev := evs.Content[j+1]
				ep := get(ev, "Properties")
				switch scalar(get(ev, "Type")) {
				case "HttpApi":
					method, p := strings.ToUpper(scalar(get(ep, "Method"))), scalar(get(ep, "Path"))
					if method == "" || !strings.HasPrefix(p, "/") {
						return nil, fmt.Errorf("template %s: %s: HttpApi event %s needs Method and Path", path, id, evs.Content[j].Value)
					}
					r := Route{Method: method, Path: p, Function: f.Name, segs: splitPath(p)}
					f.Routes = append(f.Routes, r)
					t.Routes = append(t.Routes, r)
				case "DynamoDB":
					f.Stream = true
					if n, err := strconv.Atoi(scalar(get(ep, "BatchSize"))); err == nil && n > 0 {
						f.BatchSize = n
					}
				}
			}
		}
		t.Functions = append(t.Functions, f)
	}
	if len(t.Functions) == 0 {
		return nil, fmt.Errorf("template %s: no AWS::Serverless::Function", path)
	}
	sortRoutes(t.Routes)
	return t, nil
}

// Function returns the function named name (its folder) or logical id.
func (t *Template) Function(name string) *Function {
	for _, f := range t.Functions {
		if f.Name == name || f.LogicalID == name {
			return f
		}
	}
	return nil
}

// resolve gives an environment value its local meaning.
func resolve(name string, n *yaml.Node, params map[string]string, types map[string]string, locals Locals) (string, error) {
	if n.Kind == yaml.ScalarNode && (n.Tag == "" || n.Tag == "!!str" || n.Tag == "!!int" || n.Tag == "!!bool" || n.Tag == "!!float") {
		return n.Value, nil
	}
	// An intrinsic: short form (!Ref X) or long form ({Ref: X}).
	tag, arg := n.Tag, n
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 {
		tag, arg = "!"+strings.TrimPrefix(n.Content[0].Value, "Fn::"), n.Content[1]
	}
	if v, ok := locals[name]; ok {
		return v, nil
	}
	if tag == "!Ref" && arg.Kind == yaml.ScalarNode {
		if d, ok := params[arg.Value]; ok {
			return d, nil
		}
	}
	if tag == "!Sub" && arg.Kind == yaml.ScalarNode {
		// ${Param} from the parameters' defaults; anything else is not local.
		var missing string
		out := subRE.ReplaceAllStringFunc(arg.Value, func(m string) string {
			k := m[2 : len(m)-1]
			if d, ok := params[k]; ok {
				return d
			}
			missing = k
			return m
		})
		if missing == "" {
			return out, nil
		}
	}
	return "", fmt.Errorf("%s has no local value (add it to the local stack's defaults)", tag)
}

var subRE = regexp.MustCompile(`\$\{[^}]+\}`)

// defaults maps each parameter that has a Default to it.
func defaults(params *yaml.Node) map[string]string {
	out := map[string]string{}
	if params == nil {
		return out
	}
	for i := 0; i+1 < len(params.Content); i += 2 {
		if d := get(params.Content[i+1], "Default"); d != nil && d.Kind == yaml.ScalarNode {
			out[params.Content[i].Value] = d.Value
		}
	}
	return out
}

func get(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

func splitPath(p string) []string {
	return strings.Split(strings.Trim(p, "/"), "/")
}

// sortRoutes orders routes the way API Gateway prefers them: more literal
// segments first, then greedy {proxy+} last.
func sortRoutes(rs []Route) {
	score := func(r Route) (lit int, greedy bool) {
		for _, s := range r.segs {
			switch {
			case strings.HasSuffix(s, "+}"):
				greedy = true
			case !strings.HasPrefix(s, "{"):
				lit++
			}
		}
		return
	}
	sort.SliceStable(rs, func(i, j int) bool {
		li, gi := score(rs[i])
		lj, gj := score(rs[j])
		if gi != gj {
			return !gi
		}
		if len(rs[i].segs) != len(rs[j].segs) && li == lj {
			return len(rs[i].segs) > len(rs[j].segs)
		}
		return li > lj
	})
}

// match finds the route for method and path and its path parameters.
func match(rs []Route, method, path string) (r *Route, params map[string]string) {
	segs := splitPath(path)
	for i := range rs {
		if rs[i].Method != method && rs[i].Method != "ANY" {
			continue
		}
		if p, ok := matchSegs(rs[i].segs, segs); ok {
			return &rs[i], p
		}
	}
	return nil, nil
}

func matchSegs(pattern, segs []string) (map[string]string, bool) {
	params := map[string]string{}
	for i, p := range pattern {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "+}") {
			if i >= len(segs) {
				return nil, false
			}
			params[p[1:len(p)-2]] = strings.Join(segs[i:], "/")
			return params, true
		}
		if i >= len(segs) {
			return nil, false
		}
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			if segs[i] == "" {
				return nil, false
			}
			params[p[1:len(p)-1]] = segs[i]
			continue
		}
		if p != segs[i] {
			return nil, false
		}
	}
	if len(pattern) != len(segs) {
		return nil, false
	}
	return params, true
}
