package deploy

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestToolFunctionsGrant: the worker invokes the firm's Lambda functions the
// catalog names as tools, exactly the ARNs ToolFunctionArns names (a
// function's ARN, or its ARN with a version or alias; never a wildcard), and
// nothing else in the stack may invoke a function: with the parameter empty no
// statement of any role grants a lambda: action, with ARNs only the worker's
// role does, lambda:InvokeFunction on exactly those. (The role SAM makes for
// the sweeper's schedule, which invokes the sweeper, is deploy/translate.py's
// to check: it exists only in the transform's output.)
func TestToolFunctionsGrant(t *testing.T) {
	raw := rawTemplate(t)
	p, _ := get(raw, "Parameters", "ToolFunctionArns").(object)
	if p == nil || p["Type"] != "CommaDelimitedList" || p["Default"] != "" {
		t.Fatalf("ToolFunctionArns %v: want a CommaDelimitedList, empty by default", p)
	}
	// CloudFormation matches a CommaDelimitedList's pattern against each
	// element.
	pattern := regexp.MustCompile(str(p["AllowedPattern"]))
	for arn, ok := range map[string]bool{
		"": true, // the default, [""]
		"arn:aws:lambda:us-east-1:123456789012:function:dms-file":                   true,
		"arn:aws:lambda:us-east-1:123456789012:function:dms_file:7":                 true, // a version
		"arn:aws:lambda:us-east-1:123456789012:function:dms-file:prod":              true, // an alias
		"arn:aws:lambda:us-east-1:123456789012:function:dms-file:$LATEST":           true,
		"arn:aws-us-gov:lambda:us-gov-west-1:123456789012:function:efiling-clerk":   true,
		"arn:aws:lambda:us-east-1:123456789012:function:*":                          false,
		"arn:aws:lambda:us-east-1:123456789012:function:dms-*":                      false,
		"arn:aws:lambda:us-east-1:123456789012:function:dms-file:*":                 false,
		"arn:aws:lambda:us-east-1:123456789012:function:dms-fil?":                   false,
		"arn:aws:lambda:*:123456789012:function:dms-file":                           false,
		"arn:aws:lambda:us-east-1:*:function:dms-file":                              false,
		"arn:aws:lambda:us-east-1:123456789012:function:dms.file":                   false,
		"arn:aws:lambda:us-east-1:123456789012:function:dms-file:prod:1":            false,
		"arn:aws:lambda:us-east-1:123456789012:layer:dms-file":                      false,
		"arn:aws:lambda:us-east-1:123456789012:function:" + strings.Repeat("f", 65): false,
		"dms-file": false,
		"*":        false,
	} {
		if pattern.MatchString(arn) != ok {
			t.Errorf("ToolFunctionArns element %q: admitted %v, want %v", arn, !ok, ok)
		}
	}

	// Every policy of the stack is an inline policy of one of its roles
	// (TestIAMLeastPrivilege refuses managed policies and SAM's Policies).
	for _, typ := range []string{"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::IAM::User", "AWS::IAM::Group"} {
		if r := ofType(raw, typ); len(r) > 0 {
			t.Errorf("the template declares %s %v: a grant outside the functions' roles", typ, keys(r))
		}
	}
	workerRole, _, _ := getAtt(get(resourcesOf(raw)["WorkerFunction"], "Properties", "Role"))
	const (
		a = "arn:aws:lambda:us-east-1:123456789012:function:dms-file"
		b = "arn:aws:lambda:us-east-1:123456789012:function:efiling-clerk:prod"
	)
	for _, c := range []struct {
		name   string
		params map[string]string
		want   []string // the worker's lambda:InvokeFunction resources; nil: no lambda grant anywhere
	}{
		{"defaults", nil, nil},
		{"one function", map[string]string{"ToolFunctionArns": a}, []string{a}},
		{"a function and an alias", map[string]string{"ToolFunctionArns": a + "," + b}, []string{a, b}},
	} {
		if got := evalIntrinsic(t, raw, object{"Condition": "HasToolFunctions"}, c.params).(bool); got != (c.want != nil) {
			t.Errorf("%s: HasToolFunctions %v, want %v", c.name, got, c.want != nil)
		}
		var granted []string
		for _, roleID := range keys(ofType(raw, "AWS::IAM::Role")) {
			for _, st := range policyStatements(t, raw, roleID) {
				if st.when != "" && !evalIntrinsic(t, raw, object{"Condition": st.when}, c.params).(bool) {
					continue // not given with these parameters
				}
				if !slices.ContainsFunc(st.actions, func(a string) bool { return strings.HasPrefix(strings.ToLower(a), "lambda:") }) {
					continue
				}
				if roleID != workerRole || !reflect.DeepEqual(st.actions, []string{"lambda:InvokeFunction"}) || st.effect != "Allow" || st.conditions != nil {
					t.Errorf("%s: %s grants %s %v (Condition %v); only the worker's role may invoke, and only lambda:InvokeFunction",
						c.name, roleID, st.effect, st.actions, st.conditions)
					continue
				}
				granted = append(granted, flat(evalIntrinsic(t, raw, st.resources, c.params))...)
			}
		}
		if !slices.Equal(granted, c.want) {
			t.Errorf("%s: lambda:InvokeFunction on %v, want exactly %v", c.name, granted, c.want)
		}
	}
}
