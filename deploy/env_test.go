package deploy

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/config"
)

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
