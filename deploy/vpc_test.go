package deploy

import (
	"reflect"
	"regexp"
	"testing"
)

// TestWorkerVpc: the worker, the one function that reaches the firm's
// systems, joins the firm's VPC when the stack names its subnets and its
// security groups (both, or neither: the WorkerVpcComplete rule refuses one
// without the other), and runs in no VPC of the firm's otherwise; no other
// function ever has a VpcConfig. Its role manages network interfaces only
// under the same condition (TestIAMLeastPrivilege holds those grants).
// deploy/validate.sh lints and transforms the template with a VPC too.
func TestWorkerVpc(t *testing.T) {
	raw := rawTemplate(t)
	for name, cases := range map[string]map[string]bool{
		"WorkerSubnetIds": {
			"": true, "subnet-0a1b2c3d": true, "subnet-0a1b2c3d4e5f60718": true,
			"subnet-0A1B2C3D4E5F60718": false, "subnet-0a1b2c3d4e": false, "subnet-*": false, "sg-0a1b2c3d": false,
			"subnet-0a1b2c3d,subnet-0f1e2d3c": false, // one element: CloudFormation splits the list first
		},
		"WorkerSecurityGroupIds": {
			"": true, "sg-0a1b2c3d": true, "sg-0123456789abcdef0": true,
			"sg-0123456789ABCDEF0": false, "sg-012345678": false, "sg-*": false, "subnet-0a1b2c3d": false, "default": false,
		},
	} {
		p, _ := get(raw, "Parameters", name).(object)
		if p == nil || p["Type"] != "CommaDelimitedList" || p["Default"] != "" {
			t.Errorf("%s %v: want a CommaDelimitedList, empty by default", name, p)
			continue
		}
		// CloudFormation matches a CommaDelimitedList's pattern against
		// each element.
		pattern := regexp.MustCompile(str(p["AllowedPattern"]))
		for id, ok := range cases {
			if pattern.MatchString(id) != ok {
				t.Errorf("%s element %q: admitted %v, want %v", name, id, !ok, ok)
			}
		}
	}

	if v := get(raw, "Globals", "Function", "VpcConfig"); v != nil {
		t.Errorf("Globals.Function.VpcConfig %v: only the worker joins the firm's VPC", v)
	}
	for id, fn := range ofType(raw, "AWS::Serverless::Function") {
		if v := get(fn, "Properties", "VpcConfig"); v != nil && id != "WorkerFunction" {
			t.Errorf("%s: VpcConfig %v; only the worker reaches the firm's systems, so only it joins the VPC", id, v)
		}
	}
	vpcConfig := get(resourcesOf(raw)["WorkerFunction"], "Properties", "VpcConfig")
	assertions := list(get(raw, "Rules", "WorkerVpcComplete", "Assertions"))
	if len(assertions) != 1 || get(raw, "Rules", "WorkerVpcComplete", "RuleCondition") != nil {
		t.Fatalf("rule WorkerVpcComplete %v: want one unconditional assertion", get(raw, "Rules", "WorkerVpcComplete"))
	}
	rule := get(assertions[0], "Assert")

	const (
		subnets = "subnet-0a1b2c3d4e5f60718,subnet-0f1e2d3c4b5a69788"
		groups  = "sg-0123456789abcdef0"
	)
	for _, c := range []struct {
		name   string
		params map[string]string
		ruleOK bool
		want   any // the worker's VpcConfig
	}{
		{"defaults", nil, true, noValue{}},
		{"subnets and security groups", map[string]string{"WorkerSubnetIds": subnets, "WorkerSecurityGroupIds": groups}, true,
			object{"SubnetIds": []any{"subnet-0a1b2c3d4e5f60718", "subnet-0f1e2d3c4b5a69788"}, "SecurityGroupIds": []any{groups}}},
		{"subnets alone", map[string]string{"WorkerSubnetIds": subnets}, false, noValue{}},
		{"security groups alone", map[string]string{"WorkerSecurityGroupIds": groups}, false, noValue{}},
	} {
		if got := evalIntrinsic(t, raw, rule, c.params); got != c.ruleOK {
			t.Errorf("%s: rule WorkerVpcComplete holds: %v, want %v", c.name, got, c.ruleOK)
		}
		joins := c.want != noValue{}
		if got := evalIntrinsic(t, raw, object{"Condition": "HasWorkerVpc"}, c.params); got != joins {
			t.Errorf("%s: HasWorkerVpc %v, want %v", c.name, got, joins)
		}
		if got := evalIntrinsic(t, raw, vpcConfig, c.params); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: the worker's VpcConfig is %#v, want %#v", c.name, got, c.want)
		}
	}
}
