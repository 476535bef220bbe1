package deploy

import (
	"fmt"
	"reflect"
	"regexp"
	"testing"
)

// flat is v's leaves in order (an evaluated Resource is a list of lists).
func flat(v any) []string {
	var out []string
	for _, e := range list(v) {
		if l, ok := e.([]any); ok {
			out = append(out, flat(l)...)
			continue
		}
		out = append(out, fmt.Sprint(e))
	}
	return out
}

// TestToolSecretsGrant: the worker reads its tool servers' credentials from
// exactly the secrets ToolSecretArns names, complete ARNs without wildcards,
// and decrypts them with ToolSecretsKeyArn (when set) only through Secrets
// Manager in the stack's Region and only for those secrets. No secret, no
// grant; a key without secrets grants nothing either. That no other role
// reads a secret or decrypts is TestIAMLeastPrivilege's.
func TestToolSecretsGrant(t *testing.T) {
	raw := rawTemplate(t)
	arns := get(raw, "Parameters", "ToolSecretArns").(object)
	key := get(raw, "Parameters", "ToolSecretsKeyArn").(object)
	if arns["Type"] != "CommaDelimitedList" || arns["Default"] != "" || key["Type"] != "String" || key["Default"] != "" {
		t.Fatalf("ToolSecretArns %v, ToolSecretsKeyArn %v: want a CommaDelimitedList and a String, both empty by default", arns, key)
	}
	// CloudFormation matches a CommaDelimitedList's pattern against each
	// element.
	arnPattern := regexp.MustCompile(str(arns["AllowedPattern"]))
	for arn, ok := range map[string]bool{
		"": true, // the default, [""]
		"arn:aws:secretsmanager:us-east-1:123456789012:secret:warrant/prod/dms-bearer-a1B2c3":      true,
		"arn:aws-us-gov:secretsmanager:us-gov-west-1:123456789012:secret:dms_client.secret-Zz9Yy8": true,
		"arn:aws:secretsmanager:us-east-1:123456789012:secret:dms-token":                           false, // no suffix: a partial ARN
		"arn:aws:secretsmanager:us-east-1:123456789012:secret:*":                                   false,
		"arn:aws:secretsmanager:us-east-1:123456789012:secret:dms-bearer-??????":                   false,
		"arn:aws:secretsmanager:*:123456789012:secret:dms-bearer-a1B2c3":                           false,
		"arn:aws:ssm:us-east-1:123456789012:parameter/dms-bearer-a1B2c3":                           false,
		"dms-bearer": false,
		"*":          false,
	} {
		if arnPattern.MatchString(arn) != ok {
			t.Errorf("ToolSecretArns element %q: admitted %v, want %v", arn, !ok, ok)
		}
	}
	keyPattern := regexp.MustCompile(str(key["AllowedPattern"]))
	for k, ok := range map[string]bool{
		"": true,
		"arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab":      true,
		"arn:aws:kms:us-east-1:123456789012:key/mrk-1234abcd12ab34cd56ef1234567890ab":      true,
		"arn:aws:kms:us-east-1:123456789012:alias/warrant-secrets":                         false,
		"arn:aws:kms:us-east-1:123456789012:key/*":                                         false,
		"1234abcd-12ab-34cd-56ef-1234567890ab":                                             false,
		"arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab,more": false,
	} {
		if keyPattern.MatchString(k) != ok {
			t.Errorf("ToolSecretsKeyArn %q: admitted %v, want %v", k, !ok, ok)
		}
	}

	const (
		a = "arn:aws:secretsmanager:us-east-1:123456789012:secret:warrant/prod/dms-bearer-a1B2c3"
		b = "arn:aws:secretsmanager:us-east-1:123456789012:secret:warrant/prod/efiling-client-Q7r8S9"
		k = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	)
	cases := []struct {
		name              string
		params            map[string]string
		secrets, withKey  bool
		wantSecretsResult []string
	}{
		{"defaults", nil, false, false, nil},
		{"a key without secrets", map[string]string{"ToolSecretsKeyArn": k}, false, false, nil},
		{"one secret", map[string]string{"ToolSecretArns": a}, true, false, []string{a}},
		{"two secrets and their key", map[string]string{"ToolSecretArns": a + "," + b, "ToolSecretsKeyArn": k}, true, true, []string{a, b}},
	}
	_, stmts := roleStatements(t, raw, "WorkerFunction")
	var secretsSt, keySt *statement
	for i, st := range stmts {
		switch st.when {
		case "HasToolSecrets":
			secretsSt = &stmts[i]
		case "HasToolSecretsKey":
			keySt = &stmts[i]
		}
	}
	if secretsSt == nil || keySt == nil {
		t.Fatalf("WorkerRole: no statement under HasToolSecrets (%v) or HasToolSecretsKey (%v)", secretsSt, keySt)
	}
	for _, c := range cases {
		holds := func(cond string) bool { return evalIntrinsic(t, raw, object{"Condition": cond}, c.params).(bool) }
		if holds("HasToolSecrets") != c.secrets || holds("HasToolSecretsKey") != c.withKey {
			t.Errorf("%s: HasToolSecrets %v, HasToolSecretsKey %v; want %v, %v", c.name, holds("HasToolSecrets"), holds("HasToolSecretsKey"), c.secrets, c.withKey)
		}
		if !c.secrets {
			continue
		}
		if got := flat(evalIntrinsic(t, raw, secretsSt.resources, c.params)); !reflect.DeepEqual(got, c.wantSecretsResult) {
			t.Errorf("%s: secretsmanager:GetSecretValue on %v, want exactly %v", c.name, got, c.wantSecretsResult)
		}
		if !c.withKey {
			continue
		}
		if got := flat(evalIntrinsic(t, raw, keySt.resources, c.params)); !reflect.DeepEqual(got, []string{k}) {
			t.Errorf("%s: kms:Decrypt on %v, want exactly %s", c.name, got, k)
		}
		want := object{"StringEquals": object{
			"kms:ViaService":                  "secretsmanager.us-east-1.amazonaws.com",
			"kms:EncryptionContext:SecretARN": []any{a, b},
		}}
		if got := evalIntrinsic(t, raw, keySt.conditions, c.params); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: kms:Decrypt's Condition %v, want %v (through Secrets Manager, for those secrets only)", c.name, got, want)
		}
	}
}
