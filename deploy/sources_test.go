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
// parameter the stack names, "file:<path>" for a file of the bundle.
type source struct {
	env, parameter, condition, file, fileCondition, rule string
}

var sources = []source{
	{"TOOL_POLICY", "ToolPolicyParameter", "HasToolPolicy", "ToolPolicyFile", "HasToolPolicyFile", "OneToolPolicySource"},
	{"TOOL_CATALOG", "ToolCatalogParameter", "HasToolCatalog", "ToolCatalogFile", "HasToolCatalogFile", "OneToolCatalogSource"},
	{"AGENTS", "AgentsParameter", "HasAgents", "AgentsFile", "HasAgentsFile", "OneAgentsSource"},
}

// notEmpty is the condition that parameter is set.
func notEmpty(parameter string) object {
	return object{"Fn::Not": []any{object{"Fn::Equals": []any{object{"Ref": parameter}, ""}}}}
}

// TestDocumentSources: each document source is an SSM parameter (a path)
// and a file of the bundle (a relative path), both empty by default, each
// with a condition that holds when it is set and a rule that refuses both at
// once, and the environment variable "ssm:<path>", else "file:<path>", else
// unset, on exactly the functions config.FunctionVars says read it, each of
// whose roles may ssm:GetParameter that parameter, under that condition, and
// nothing else does (TestIAMLeastPrivilege holds the grants exactly).
// Evaluated with a path set, the variable and the grant name the same
// parameter, and config.Load accepts the variable.
func TestDocumentSources(t *testing.T) {
	raw := rawTemplate(t)
	const path, file = "/warrant/prod/document/v7", "documents/firm-7.json"
	pattern := str(get(raw, "Parameters", "ToolPolicyParameter", "AllowedPattern"))
	filePattern := str(get(raw, "Parameters", "ToolPolicyFile", "AllowedPattern"))
	for _, src := range sources {
		f, _ := get(raw, "Parameters", src.file).(object)
		if f == nil || f["Type"] != "String" || f["Default"] != "" || f["AllowedPattern"] != filePattern {
			t.Errorf("%s: parameter %s is %v; want a String, default \"\", pattern %s (ToolPolicyFile's)", src.env, src.file, f, filePattern)
		}
		if c := get(raw, "Conditions", src.fileCondition); !reflect.DeepEqual(c, notEmpty(src.file)) {
			t.Errorf("condition %s = %v, want !Not [!Equals [!Ref %s, \"\"]]", src.fileCondition, c, src.file)
		}
		assertions := list(get(raw, "Rules", src.rule, "Assertions"))
		oneSource := object{"Fn::Or": []any{object{"Fn::Equals": []any{object{"Ref": src.parameter}, ""}}, object{"Fn::Equals": []any{object{"Ref": src.file}, ""}}}}
		if len(assertions) != 1 || !reflect.DeepEqual(get(assertions[0], "Assert"), oneSource) || get(raw, "Rules", src.rule, "RuleCondition") != nil {
			t.Errorf("rule %s = %v, want one unconditional assertion !Or [!Equals [!Ref %s, \"\"], !Equals [!Ref %s, \"\"]]",
				src.rule, get(raw, "Rules", src.rule), src.parameter, src.file)
		} else {
			for _, c := range []struct {
				params map[string]string
				ok     bool
			}{{nil, true}, {map[string]string{src.parameter: path}, true}, {map[string]string{src.file: file}, true},
				{map[string]string{src.parameter: path, src.file: file}, false}} {
				if got := evalIntrinsic(t, raw, oneSource, c.params); got != c.ok {
					t.Errorf("rule %s with %v holds: %v, want %v", src.rule, c.params, got, c.ok)
				}
			}
		}
		p, _ := get(raw, "Parameters", src.parameter).(object)
		if p == nil {
			t.Errorf("%s: no parameter %s", src.env, src.parameter)
			continue
		}
		if p["Type"] != "String" || p["Default"] != "" || p["AllowedPattern"] != pattern {
			t.Errorf("%s: Type %v, Default %q, AllowedPattern %v; want a String, default \"\", pattern %s (ToolPolicyParameter's)",
				src.parameter, p["Type"], p["Default"], p["AllowedPattern"], pattern)
		}
		if c := get(raw, "Conditions", src.condition); !reflect.DeepEqual(c, notEmpty(src.parameter)) {
			t.Errorf("condition %s = %v, want !Not [!Equals [!Ref %s, \"\"]]", src.condition, c, src.parameter)
		}
		wantEnv := object{"Fn::If": []any{src.condition, object{"Fn::Sub": "ssm:${" + src.parameter + "}"},
			object{"Fn::If": []any{src.fileCondition, object{"Fn::Sub": "file:${" + src.file + "}"}, object{"Ref": "AWS::NoValue"}}}}}
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
				t.Errorf("%s: %s = %v, want !If [%s, !Sub \"ssm:${%s}\", !If [%s, !Sub \"file:${%s}\", !Ref AWS::NoValue]]",
					fnID, src.env, v, src.condition, src.parameter, src.fileCondition, src.file)
				continue
			}
			if got := evalIntrinsic(t, raw, v, nil); got != (noValue{}) {
				t.Errorf("%s: %s with the parameters' defaults is %v, want it unset (the embedded document)", fnID, src.env, got)
			}
			for param, want := range map[string]string{src.parameter: "ssm:" + path, src.file: "file:" + file} {
				value := strings.TrimPrefix(strings.TrimPrefix(want, "ssm:"), "file:")
				got := evalIntrinsic(t, raw, v, map[string]string{param: value})
				if got != want {
					t.Errorf("%s: %s with %s=%s is %v, want %s", fnID, src.env, param, value, got, want)
				}
				env := templateEnv(raw, fnID)
				env[src.env] = fmt.Sprint(got)
				if _, err := config.Load(pkg, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
					t.Errorf("%s: config.Load with %s=%v: %v", fnID, src.env, got, err)
				}
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
