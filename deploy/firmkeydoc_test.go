package deploy

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/seal"
)

var firmKeySection = regexp.MustCompile(`(?s)\n### The firm's key\n(.*?)(?:\n### |\z)`)

// TestFirmKeyDoc: DEPLOY.md's "The firm's key" shows, for a key of the
// firm's own (DataKeyArn), the statements its policy needs, in JSON blocks
// written for stack warrant-prod in account 123456789012, us-east-1. They
// must allow every request some role of the stack is allowed (to the
// stack's account, whose IAM policies then hold each role to its own), and
// every request of a service as itself that DataKey's policy allows, and
// refuse what DataKey's policy refuses; and every CloudTrail sample of the
// section carries the encryption context pkg/seal sends.
func TestFirmKeyDoc(t *testing.T) {
	sec := firmKeySection.FindStringSubmatch(section(t, deployDoc, "Keys, retention and legal hold"))
	if sec == nil {
		t.Fatal(`"Keys, retention and legal hold" has no "### The firm's key"`)
	}
	raw := rawTemplate(t)
	var stmts []any
	samples := 0
	for _, m := range jsonBlock.FindAllStringSubmatch(sec[1], -1) {
		var doc map[string]any
		if err := json.Unmarshal([]byte(m[1]), &doc); err != nil {
			t.Fatalf("a json block of \"The firm's key\" is not a JSON object: %v\n%s", err, m[1])
		}
		switch {
		case doc["Statement"] != nil:
			for _, st := range list(doc["Statement"]) {
				stmts = append(stmts, st)
			}
		case doc["eventName"] != nil:
			samples++
			ctx, _ := get(doc, "requestParameters", "encryptionContext").(object)
			if len(ctx) != 2 || ctx[seal.ContextFirm] == nil || ctx[seal.ContextRun] == nil {
				t.Errorf("the CloudTrail sample's encryption context %v is not pkg/seal's {%s, %s}", ctx, seal.ContextFirm, seal.ContextRun)
			}
			if doc["eventName"] != "GenerateDataKey" || !strings.Contains(fmt.Sprint(get(doc, "userIdentity", "sessionContext", "sessionIssuer", "arn")), "InvokeRole") {
				t.Errorf("the CloudTrail sample is %v by %v; want GenerateDataKey by the invoke function's role", doc["eventName"], get(doc, "userIdentity", "sessionContext", "sessionIssuer", "arn"))
			}
		default:
			t.Errorf("a json block of \"The firm's key\" is neither a key policy nor a CloudTrail event: %s", m[1])
		}
	}
	if len(stmts) == 0 || samples == 0 {
		t.Fatalf("\"The firm's key\" has %d key policy statements and %d CloudTrail samples; want both", len(stmts), samples)
	}
	account := "arn:aws:iam::123456789012:root"
	accountAllows := func(req kmsRequest) bool {
		for _, st := range stmts {
			if get(st, "Effect") != "Allow" || !slices.Contains(list(get(st, "Principal", "AWS")), any(account)) ||
				!slices.ContainsFunc(list(get(st, "Action")), func(a any) bool { return actionMatches(str(a), req.action) }) {
				continue
			}
			if iamConditionHolds(t, get(st, "Condition"), req) {
				return true
			}
		}
		return false
	}
	// The resources' stand-ins as the deployed stack names them.
	deployed := strings.NewReplacer(
		"getatt:WorkerQueue.Arn", "arn:aws:sqs:us-east-1:123456789012:warrant-prod-WorkerQueue-Zq8RkT2mVb1x",
		"getatt:StreamDeadLetterQueue.Arn", "arn:aws:sqs:us-east-1:123456789012:warrant-prod-StreamDeadLetterQueue-Hp3sLw9cNd4e",
		"getatt:CheckpointBucket.Arn", "arn:aws:s3:::warrant-prod-checkpointbucket-1x2y3z4w5v6u",
		"ref:Table", "warrant-prod-Table-1A2B3C4D5E6F")
	for _, c := range roleRequests(t) {
		for k, v := range c.req.context {
			c.req.context[k] = deployed.Replace(v)
		}
		if len(c.allowed) > 0 && !accountAllows(c.req) {
			t.Errorf("DEPLOY.md's statements refuse the stack's account %s (%s via %q, context %v), which %v are granted", c.req.name, c.req.action, c.req.via, c.req.context, c.allowed)
		}
	}
	for _, c := range []kmsRequest{
		{name: "a data key with a third context key", action: "kms:Decrypt", context: map[string]string{seal.ContextFirm: "f", seal.ContextRun: "r", "x": "y"}},
		{name: "a data key with no context", action: "kms:GenerateDataKey"},
		{name: "Warrant's context through SQS", action: "kms:Decrypt", via: "sqs.us-east-1.amazonaws.com", context: map[string]string{seal.ContextFirm: "f", seal.ContextRun: "r"}},
		{name: "Warrant's context through S3", action: "kms:GenerateDataKey", via: "s3.us-east-1.amazonaws.com", context: map[string]string{seal.ContextFirm: "f", seal.ContextRun: "r"}},
		{name: "Warrant's context through DynamoDB", action: "kms:Decrypt", via: "dynamodb.us-east-1.amazonaws.com", context: map[string]string{seal.ContextFirm: "f", seal.ContextRun: "r"}},
		{name: "another account's queue", action: "kms:Decrypt", via: "sqs.us-east-1.amazonaws.com", context: map[string]string{"aws:sqs:arn": "arn:aws:sqs:us-east-1:999999999999:q"}},
		{name: "another account's table", action: "kms:Decrypt", via: "dynamodb.us-east-1.amazonaws.com", context: map[string]string{"aws:dynamodb:tableName": "t", "aws:dynamodb:subscriberId": "999999999999"}},
		{name: "a table key, directly", action: "kms:Decrypt", context: map[string]string{"aws:dynamodb:tableName": "t"}},
		{name: "a queue's key, directly", action: "kms:GenerateDataKey", context: map[string]string{"aws:sqs:arn": "q"}},
		{name: "through Secrets Manager", action: "kms:Decrypt", via: "secretsmanager.us-east-1.amazonaws.com", context: map[string]string{"SecretARN": "s"}},
	} {
		if accountAllows(c) {
			t.Errorf("DEPLOY.md's statements allow the stack's account %s (%s via %q, context %v)", c.name, c.action, c.via, c.context)
		}
	}
	for _, c := range servicePrincipalRequests(t, raw, "warrant-prod") {
		if got := keyPolicyAllows(t, stmts, c.principal, c.req); got != c.allowed {
			t.Errorf("DEPLOY.md's statements: %s, %s for %s (context %v): allowed %v, DataKey's policy %v", c.principal, c.req.action, c.req.name, c.req.context, got, c.allowed)
		}
	}
	// The deployer creates the table under the key: DynamoDB creates its
	// grants as the deployer, through DynamoDB.
	if !accountAllows(kmsRequest{name: "the table's grant", action: "kms:CreateGrant", via: "dynamodb.us-east-1.amazonaws.com"}) {
		t.Error("DEPLOY.md's statements do not let the stack's account kms:CreateGrant through DynamoDB: the table cannot be created")
	}
	if accountAllows(kmsRequest{name: "a grant made directly", action: "kms:CreateGrant"}) {
		t.Error("DEPLOY.md's statements let the stack's account kms:CreateGrant directly")
	}
}
