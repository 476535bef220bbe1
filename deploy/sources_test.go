package deploy

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/config"
)

// source is a document a function loads at init from the source its
// environment variable names (internal/wire.LoadPolicy, LoadCatalog,
// LoadAgents): empty for the embedded one, "ssm:<name>" for an SSM
// parameter the stack names.
type source struct {
	env, parameter, condition string
}

var sources = []source{
	{"TOOL_POLICY", "ToolPolicyParameter", "HasToolPolicy"},
	{"TOOL_CATALOG", "ToolCatalogParameter", "HasToolCatalog"},
	{"AGENTS", "AgentsParameter", "HasAgents"},
}

// TestDocumentSources: each document source is a parameter (a path, empty by
// default), a condition that holds when it is set, and the environment
// variable "ssm:<path>" on exactly the functions config.FunctionVars says
// read it, each of whose roles may ssm:GetParameter that parameter, under
// that condition, and nothing else does (TestIAMLeastPrivilege holds the
// grants exactly). Evaluated with a path set, the variable and the grant name
// the same parameter, and config.Load accepts the variable.
func TestDocumentSources(t *testing.T) {
	raw := rawTemplate(t)
	const path = "/warrant/prod/document/v7"
	pattern := str(get(raw, "Parameters", "ToolPolicyParameter", "AllowedPattern"))
	for _, src := range sources {
		p, _ := get(raw, "Parameters", src.parameter).(object)
		if p == nil {
			t.Errorf("%s: no parameter %s", src.env, src.parameter)
			continue
		}
		if p["Type"] != "String" || p["Default"] != "" || p["AllowedPattern"] != pattern {
			t.Errorf("%s: Type %v, Default %q, AllowedPattern %v; want a String, default \"\", pattern %s (ToolPolicyParameter's)",
				src.parameter, p["Type"], p["Default"], p["AllowedPattern"], pattern)
		}
		wantCond := object{"Fn::Not": []any{object{"Fn::Equals": []any{object{"Ref": src.parameter}, ""}}}}
		if c := get(raw, "Conditions", src.condition); !reflect.DeepEqual(c, wantCond) {
			t.Errorf("condition %s = %v, want !Not [!Equals [!Ref %s, \"\"]]", src.condition, c, src.parameter)
		}
		wantEnv := object{"Fn::If": []any{src.condition, object{"Fn::Sub": "ssm:${" + src.parameter + "}"}, object{"Ref": "AWS::NoValue"}}}
		for _, fnID := range keys(functionPackages) {
			pkg := functionPackages[fnID]
			vars, _ := get(resourcesOf(raw)[fnID], "Properties", "Environment", "Variables").(object)
			v, set := vars[src.env]
			reads := slices.Contains(config.FunctionVars[pkg], src.env)
			switch {
			case reads && !set:
				t.Errorf("%s reads %s (config.FunctionVars) but the template does not set it from %s", fnID, src.env, src.parameter)
				continue
			case !reads && set:
				t.Errorf("%s: the template sets %s, which the function does not read", fnID, src.env)
				continue
			case !reads:
				continue
			}
			if !reflect.DeepEqual(v, wantEnv) {
				t.Errorf("%s: %s = %v, want !If [%s, !Sub \"ssm:${%s}\", !Ref AWS::NoValue]", fnID, src.env, v, src.condition, src.parameter)
				continue
			}
			if got := evalIntrinsic(t, raw, v, nil); got != (noValue{}) {
				t.Errorf("%s: %s with the parameters' defaults is %v, want it unset (the embedded document)", fnID, src.env, got)
			}
			got := evalIntrinsic(t, raw, v, map[string]string{src.parameter: path})
			if got != "ssm:"+path {
				t.Errorf("%s: %s with %s=%s is %v, want ssm:%s", fnID, src.env, src.parameter, path, got, path)
			}
			env := templateEnv(raw, fnID)
			env[src.env] = fmt.Sprint(got)
			if _, err := config.Load(pkg, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
				t.Errorf("%s: config.Load with %s=%v: %v", fnID, src.env, got, err)
			}
			_, stmts := roleStatements(t, raw, fnID)
			var arns []string
			for _, st := range stmts {
				if slices.Contains(st.actions, "ssm:GetParameter") && st.when == src.condition {
					arns = append(arns, fmt.Sprint(evalIntrinsic(t, raw, st.resources, map[string]string{src.parameter: path})))
				}
			}
			if want := fmt.Sprint([]any{"arn:aws:ssm:us-east-1:123456789012:parameter" + path}); !slices.Equal(arns, []string{want}) {
				t.Errorf("%s: its role's ssm:GetParameter under %s grants %v, want exactly %s (the parameter %s names)", fnID, src.condition, arns, want, src.env)
			}
		}
	}
}

// TestSourcePatternIsConfigs: a path the parameters' AllowedPattern admits is
// one config.Load takes after "ssm:", and one it refuses is refused there too,
// so CloudFormation refuses at deploy what the functions would refuse at init.
func TestSourcePatternIsConfigs(t *testing.T) {
	raw := rawTemplate(t)
	pattern := regexp.MustCompile(str(get(raw, "Parameters", "ToolPolicyParameter", "AllowedPattern")))
	base := templateEnv(raw, "WorkerFunction")
	for _, path := range []string{
		"/warrant/prod/tool-catalog", "/a", "/x.y_z-1/v2", "/" + strings.Repeat("a/", 14) + "b",
		"warrant/prod", "/a b", "/a//b", "/a/", "/" + strings.Repeat("a/", 15) + "b", "/a:b", "/a*",
	} {
		env := maps(base, map[string]string{"TOOL_CATALOG": "ssm:" + path})
		_, err := config.Load(config.Worker, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if admitted := pattern.MatchString(path); admitted != (err == nil) {
			t.Errorf("%q: the parameters' pattern admits it: %v; config.Load: %v", path, admitted, err)
		}
	}
	if !pattern.MatchString("") {
		t.Error("the parameters' pattern must admit \"\" (their default: the embedded document)")
	}
}

// maps is a copy of a with b's entries set.
func maps(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
