package deploy

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/seed-f6d3920e/warrant/pkg/witness"
)

// witness.yaml is the witness's own stack (cmd/witness; docs/EVIDENCE.md, "A
// witness"), which validate.sh lints with cfn-lint. This holds it to the
// code: the table's key is DynamoStore's, the environment is what
// cmd/witness reads under Lambda, and the role allows exactly the calls the
// store and the key's secret make, on those two resources only.
func TestWitnessTemplate(t *testing.T) {
	data, err := os.ReadFile("witness.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	v, err := fromNode(&doc)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := v.(object)

	tbl := mustResource(t, raw, "WitnessTable", "AWS::DynamoDB::Table")
	def := witness.TableInput("t")
	var wantKeys, haveKeys []string
	for _, k := range def.KeySchema {
		wantKeys = append(wantKeys, *k.AttributeName+" "+string(k.KeyType))
	}
	for _, a := range def.AttributeDefinitions {
		wantKeys = append(wantKeys, *a.AttributeName+" "+string(a.AttributeType))
	}
	for _, k := range list(get(tbl, "Properties", "KeySchema")) {
		haveKeys = append(haveKeys, str(get(k, "AttributeName"))+" "+str(get(k, "KeyType")))
	}
	for _, a := range list(get(tbl, "Properties", "AttributeDefinitions")) {
		haveKeys = append(haveKeys, str(get(a, "AttributeName"))+" "+str(get(a, "AttributeType")))
	}
	if !slices.Equal(haveKeys, wantKeys) {
		t.Errorf("the table's keys are %v, DynamoStore's %v", haveKeys, wantKeys)
	}
	if str(get(tbl, "DeletionPolicy")) != "Retain" {
		t.Error("the witness's table (its memory of every log) must be retained when the stack goes")
	}

	fn := mustResource(t, raw, "WitnessFunction", "AWS::Serverless::Function")
	env, _ := get(fn, "Properties", "Environment", "Variables").(object)
	names := keys(env)
	slices.Sort(names)
	if want := []string{"WITNESS_CONFIG", "WITNESS_KEY_SECRET", "WITNESS_TABLE"}; !slices.Equal(names, want) {
		t.Errorf("the function's environment is %v, want %v", names, want)
	}
	src, err := os.ReadFile("../cmd/witness/main.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !strings.Contains(string(src), `os.Getenv("`+n+`")`) {
			t.Errorf("cmd/witness does not read %s", n)
		}
	}
	if refOf(env["WITNESS_TABLE"]) != "WitnessTable" || refOf(env["WITNESS_KEY_SECRET"]) != "WitnessKeySecretArn" {
		t.Errorf("the environment names other resources: %v", env)
	}

	// The role: the store's calls on the table, the key's read on the secret.
	var store []string
	api := reflect.TypeFor[witness.DynamoAPI]()
	for i := range api.NumMethod() {
		store = append(store, "dynamodb:"+api.Method(i).Name)
	}
	grants := map[string]string{}
	for _, p := range list(get(fn, "Properties", "Policies")) {
		for _, s := range list(get(p, "Statement")) {
			if str(get(s, "Effect")) != "Allow" {
				continue
			}
			res := ""
			if id, attr, ok := getAtt(get(s, "Resource")); ok {
				res = id + "." + attr
			} else if r := refOf(get(s, "Resource")); r != "" {
				res = r
			} else {
				t.Errorf("a grant on %v: name the table or the secret", get(s, "Resource"))
			}
			for _, a := range list(get(s, "Action")) {
				grants[str(a)] = res
			}
		}
	}
	want := map[string]string{"secretsmanager:GetSecretValue": "WitnessKeySecretArn"}
	for _, a := range store {
		want[a] = "WitnessTable.Arn"
	}
	if !reflect.DeepEqual(grants, want) {
		t.Errorf("the witness's role grants %v, want %v", grants, want)
	}
	if str(get(fn, "Properties", "Handler")) != "bootstrap" || str(get(fn, "Properties", "Runtime")) != "provided.al2023" {
		t.Error("the witness runs as a provided.al2023 bootstrap, as the other functions")
	}
}
