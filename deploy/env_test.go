package deploy

import (
	"fmt"
	"go/ast"
	"go/token"
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

// envNamesRead returns the environment variables the package p reads:
// string literals (or constants of the same package defined as literals)
// passed to an envReaders function, in every file of the package that the
// Lambda build compiles (tests excluded).
func envNamesRead(fset *token.FileSet, p *srcPkg) map[string]token.Position {
	consts := map[string]string{}
	for _, af := range p.files {
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
	for _, af := range p.files {
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
	return names
}

// templateEnv is the environment the template gives fnID: Globals merged by
// hand (goformation does not, limit 3) with the function's own variables.
// Values are resolved for TestTemplateEnvironmentLoads: a Ref to a parameter
// is its default, a Ref to a resource a placeholder. In a !Sub, a parameter
// is its default too, a pseudo parameter a value of its form (subPseudo) and
// a resource or its attribute placeholder-<name> (a valid host label, so a
// URL built of them parses, as DESK_URL's must).
var subPlaceholder = regexp.MustCompile(`\$\{([^}]+)\}`)

var subPseudo = map[string]string{"AWS::Partition": "aws", "AWS::Region": "us-east-1", "AWS::AccountId": "123456789012",
	"AWS::URLSuffix": "amazonaws.com", "AWS::StackName": "warrant-test"}

func subValue(raw object, text string) string {
	return subPlaceholder.ReplaceAllStringFunc(text, func(ref string) string {
		name := ref[2 : len(ref)-1]
		if v, ok := subPseudo[name]; ok {
			return v
		}
		if p, ok := get(raw, "Parameters", name).(object); ok {
			return fmt.Sprint(p["Default"])
		}
		return "placeholder-" + strings.ReplaceAll(name, ".", "-")
	})
}

func templateEnv(raw object, fnID string) map[string]string {
	env := map[string]string{}
	for _, vars := range []any{
		get(raw, "Globals", "Function", "Environment", "Variables"),
		get(resourcesOf(raw)[fnID], "Properties", "Environment", "Variables"),
	} {
		m, _ := vars.(object)
		for k, v := range m {
			// !If [Condition, then, else] with the parameters' defaults, the
			// chosen branch an !If again or not; a branch of !Ref
			// AWS::NoValue leaves the variable unset.
			for ifv := get(v, "Fn::If"); ifv != nil; ifv = get(v, "Fn::If") {
				branches := list(ifv)
				v = branches[2]
				if conditionHolds(raw, str(branches[0])) {
					v = branches[1]
				}
			}
			if refOf(v) == "AWS::NoValue" {
				continue
			}
			switch {
			case refOf(v) != "" && get(raw, "Parameters", refOf(v)) != nil:
				env[k] = fmt.Sprint(get(raw, "Parameters", refOf(v), "Default"))
			case refOf(v) != "":
				env[k] = "placeholder-" + refOf(v)
			case get(v, "Fn::Sub") != nil:
				// !Sub of resource attributes: the text with each ${...}
				// resolved as subValue says, so a checked prefix
				// (LEDGER_KEY's kms:) or form (DESK_URL's https URL) is
				// what the function will see.
				env[k] = subValue(raw, str(list(get(v, "Fn::Sub"))[0]))
			default:
				env[k] = fmt.Sprint(v)
			}
		}
	}
	return env
}

// conditionHolds evaluates a template condition with the parameters'
// defaults: Fn::Not, Fn::And, Fn::Equals of !Ref parameters and literals, and
// Condition references (what the template's conditions use).
func conditionHolds(raw object, name string) bool {
	var eval func(v any) bool
	value := func(v any) string {
		if r := refOf(v); r != "" {
			return fmt.Sprint(get(raw, "Parameters", r, "Default"))
		}
		return fmt.Sprint(v)
	}
	eval = func(v any) bool {
		switch {
		case get(v, "Fn::Not") != nil:
			return !eval(list(get(v, "Fn::Not"))[0])
		case get(v, "Fn::Equals") != nil:
			a := list(get(v, "Fn::Equals"))
			return value(a[0]) == value(a[1])
		case get(v, "Fn::And") != nil:
			for _, c := range list(get(v, "Fn::And")) {
				if !eval(c) {
					return false
				}
			}
			return true
		case get(v, "Condition") != nil:
			return conditionHolds(raw, str(get(v, "Condition")))
		}
		panic(fmt.Sprintf("conditionHolds: %v is not a condition this test evaluates", v))
	}
	return eval(get(raw, "Conditions", name))
}

// TestEnvironmentCoversWhatMainsRead checks that the template gives each
// function every variable the function reads, found two ways:
//
//   - in the source: the names passed to an environment reader
//     (envNamesRead) anywhere in the function's package or the module
//     packages it imports, directly or not, as the Lambda build compiles
//     them (goSource.closure). So a main that leaves its wiring to a shared
//     package of the module is checked through that package;
//   - config.FunctionVars, the list pkg/config keeps of what each function
//     reads through config.Load (which gets os.LookupEnv from the function's
//     wiring, so the names are at no call site). It applies because the
//     function reaches pkg/config; the test checks that it does.
//
// And the template sets nothing FunctionVars does not list. AWS_* variables
// are Lambda's own (or the SDK's AWS_ENDPOINT_URL_* for local runs), and
// config.Optional ones may be left unset.
func TestEnvironmentCoversWhatMainsRead(t *testing.T) {
	raw := rawTemplate(t)
	src := newGoSource(t)
	configPath := src.module + "/pkg/config"
	for _, fnID := range keys(functionPackages) {
		pkg := functionPackages[fnID]
		set := templateEnv(raw, fnID)
		pkgs, err := src.closure(src.functionPath(pkg))
		if err != nil {
			t.Errorf("%s: cannot check its environment: %v", fnID, err)
			continue
		}
		read := map[string]token.Position{}
		reachesConfig := false
		for _, p := range pkgs {
			reachesConfig = reachesConfig || p.path == configPath
			for name, pos := range envNamesRead(src.fset, p) {
				read[name] = pos
			}
		}
		for _, name := range keys(read) {
			if _, ok := set[name]; !ok && !config.Optional[name] && !strings.HasPrefix(name, "AWS_") {
				t.Errorf("%s reads %s (%s) but the template does not set it", fnID, name, read[name])
			}
		}
		if !reachesConfig {
			t.Errorf("%s: functions/%s never imports %s, even indirectly, so config.FunctionVars does not say what it reads", fnID, pkg, configPath)
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
		if testing.Verbose() {
			var where []string
			for _, name := range keys(read) {
				where = append(where, fmt.Sprintf("%s (%s)", name, read[name]))
			}
			t.Logf("%s: %d module packages; env reads in source: %v", fnID, len(pkgs), where)
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
