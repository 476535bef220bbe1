package deploy

// The firm's key (issue 26, item 1): one customer-managed KMS key for
// Warrant's data, created by the stack (DataKey) or named by DataKeyArn (the
// firm's own, possibly in another account). Each run's data key is generated
// under it (pkg/seal, DATA_KEY), and the table, the queues, the checkpoint
// bucket, the notification topic and the log groups are encrypted with it.
// Its uses are kept apart by conditions: content only with Warrant's
// encryption context and never through a service; each service's use only
// through that service and for that resource. These tests check the key, what
// it encrypts, every grant on it (structurally, and by evaluating the
// requests pkg/seal and the services make against the roles' and the key's
// statements), and DEPLOY.md's statements for a key of the firm's own.
// TestIAMLeastPrivilege holds each role to its exact grants.

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/seed-f6d3920e/warrant/pkg/config"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
)

// testStackID is AWS::StackId in the evaluated templates.
const testStackID = "arn:aws:cloudformation:us-east-1:123456789012:stack/warrant-prod/5f0c6a10-3e2b-11f0-9b1d-0a1b2c3d4e5f"

// firmKey is a DataKeyArn of the firm's own, in another account.
const firmKey = "arn:aws:kms:us-east-1:210987654321:key/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"

// dataKeyInUse is how the template names the firm's key: the DataKey it
// created, or the key DataKeyArn names.
var dataKeyInUse = object{"Fn::If": []any{"CreateDataKey",
	object{"Fn::GetAtt": []any{"DataKey", "Arn"}}, object{"Ref": "DataKeyArn"}}}

// contentCondition is the one condition content use is granted under:
// Warrant's encryption context, both keys and no other, and a direct call
// (kms:ViaService absent), so no service's ciphertext can be opened with it.
var contentCondition = object{
	"ForAllValues:StringEquals": object{"kms:EncryptionContextKeys": []any{seal.ContextFirm, seal.ContextRun}},
	"Null": object{
		"kms:EncryptionContext:" + seal.ContextFirm: "false",
		"kms:EncryptionContext:" + seal.ContextRun:  "false",
		"kms:ViaService": "true",
	},
}

// serviceContext is the encryption context key each service puts in its KMS
// requests for the resources the roles use through it, and how the template
// names that resource in the condition.
var serviceContext = map[string]struct{ key, attr string }{
	"sqs":      {"kms:EncryptionContext:aws:sqs:arn", "Arn"},         // !GetAtt <queue>.Arn
	"s3":       {"kms:EncryptionContext:aws:s3:arn", "Arn"},          // !GetAtt <bucket>.Arn (a bucket key)
	"dynamodb": {"kms:EncryptionContext:aws:dynamodb:tableName", ""}, // !Ref <table>
}

// dataKeyUse names the use a statement on the firm's key grants: "content"
// under contentCondition, "via <service> <resource>" under exactly
// kms:ViaService <service>.<region>.amazonaws.com and that service's
// encryption context naming one resource of the template; anything else is
// "unclassified", which no expectation names.
func dataKeyUse(st statement) string {
	if reflect.DeepEqual(st.conditions, contentCondition) {
		return "content"
	}
	cond, _ := st.conditions.(object)
	equals, _ := cond["StringEquals"].(object)
	via := str(get(equals, "kms:ViaService", "Fn::Sub"))
	service, rest, _ := strings.Cut(via, ".")
	sc, known := serviceContext[service]
	if len(cond) != 1 || len(equals) != 2 || !known || rest != "${AWS::Region}.amazonaws.com" {
		return fmt.Sprintf("unclassified %v", st.conditions)
	}
	ctx := equals[sc.key]
	if id, attr, ok := getAtt(ctx); ok && attr == sc.attr {
		return "via " + service + " " + id
	}
	if sc.attr == "" && refOf(ctx) != "" {
		return "via " + service + " " + refOf(ctx)
	}
	return fmt.Sprintf("unclassified %v", st.conditions)
}

// TestDataKey: DataKeyArn takes a key ARN (any account, never an alias);
// empty, the stack creates DataKey (symmetric, rotated, retained, 30 days'
// wait) with an alias; the content functions get DATA_KEY=kms:<the key in
// use>, which pkg/seal reads, and no other function does; the output names
// the key in use.
func TestDataKey(t *testing.T) {
	raw := rawTemplate(t)
	p, _ := get(raw, "Parameters", "DataKeyArn").(object)
	if p == nil || p["Type"] != "String" || p["Default"] != "" {
		t.Fatalf("parameter DataKeyArn: %v; want a String, empty by default", p)
	}
	if p["AllowedPattern"] != get(raw, "Parameters", "ReceiptKeyArn", "AllowedPattern") {
		t.Errorf("DataKeyArn's AllowedPattern %v differs from ReceiptKeyArn's: both take exactly a key ARN", p["AllowedPattern"])
	}
	pattern := regexp.MustCompile(str(p["AllowedPattern"]))
	for k, ok := range map[string]bool{
		"":      true,
		firmKey: true,
		"arn:aws:kms:eu-west-1:123456789012:key/mrk-1234abcd12ab34cd56ef1234567890ab":            true,
		"arn:aws-us-gov:kms:us-gov-west-1:123456789012:key/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d": true,
		"arn:aws:kms:us-east-1:123456789012:alias/warrant-data":                                  false,
		"arn:aws:kms:us-east-1:123456789012:alias/aws/dynamodb":                                  false,
		"arn:aws:kms:us-east-1:123456789012:key/*":                                               false,
		"kms:" + firmKey:                       false,
		"0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d": false,
	} {
		if pattern.MatchString(k) != ok {
			t.Errorf("DataKeyArn %q: admitted %v, want %v", k, !ok, ok)
		}
	}
	for _, c := range []struct {
		params  map[string]string
		create  bool
		wantKey any
	}{
		{nil, true, object{"Fn::GetAtt": []any{"DataKey", "Arn"}}},
		{map[string]string{"DataKeyArn": firmKey}, false, firmKey},
	} {
		if got := evalIntrinsic(t, raw, object{"Condition": "CreateDataKey"}, c.params).(bool); got != c.create {
			t.Errorf("%v: CreateDataKey %v, want %v", c.params, got, c.create)
		}
		if got := evalIntrinsic(t, raw, dataKeyInUse, c.params); !reflect.DeepEqual(got, c.wantKey) {
			t.Errorf("%v: the key in use evaluates to %v, want %v", c.params, got, c.wantKey)
		}
	}

	key := mustResource(t, raw, "DataKey", "AWS::KMS::Key")
	kp, _ := key["Properties"].(object)
	if key["Condition"] != "CreateDataKey" {
		t.Errorf("DataKey: Condition %v, want CreateDataKey (created only when DataKeyArn is empty)", key["Condition"])
	}
	if kp["KeySpec"] != "SYMMETRIC_DEFAULT" || kp["KeyUsage"] != "ENCRYPT_DECRYPT" {
		t.Errorf("DataKey: KeySpec %v, KeyUsage %v; want SYMMETRIC_DEFAULT, ENCRYPT_DECRYPT (GenerateDataKey, and every service's SSE, need a symmetric key)", kp["KeySpec"], kp["KeyUsage"])
	}
	if kp["EnableKeyRotation"] != true {
		t.Error("DataKey: EnableKeyRotation is not true")
	}
	if key["DeletionPolicy"] != "Retain" || key["UpdateReplacePolicy"] != "Retain" {
		t.Errorf("DataKey: DeletionPolicy %v, UpdateReplacePolicy %v; want Retain: the retained table and bucket are under it", key["DeletionPolicy"], key["UpdateReplacePolicy"])
	}
	if n, ok := intOf(kp["PendingWindowInDays"]); !ok || n != 30 {
		t.Errorf("DataKey: PendingWindowInDays %v, want 30, KMS's longest: deleting the key destroys every run's content", kp["PendingWindowInDays"])
	}
	aliases := ofType(raw, "AWS::KMS::Alias")
	if len(aliases) != 1 {
		t.Fatalf("aliases %v, want DataKeyAlias alone", keys(aliases))
	}
	alias := mustResource(t, raw, "DataKeyAlias", "AWS::KMS::Alias")
	if alias["Condition"] != "CreateDataKey" || refOf(get(alias, "Properties", "TargetKeyId")) != "DataKey" {
		t.Errorf("DataKeyAlias: Condition %v, TargetKeyId %v; want CreateDataKey, !Ref DataKey", alias["Condition"], get(alias, "Properties", "TargetKeyId"))
	}
	name := str(evalIntrinsic(t, raw, get(alias, "Properties", "AliasName"), map[string]string{"AWS::StackName": "warrant-prod"}))
	if name != "alias/warrant/warrant-prod/data" || !regexp.MustCompile(`^alias/[a-zA-Z0-9/_-]{1,250}$`).MatchString(name) {
		t.Errorf("DataKeyAlias: AliasName %q, want alias/warrant/<stack>/data", name)
	}
	if got := get(raw, "Outputs", "DataKeyArn", "Value"); !reflect.DeepEqual(got, dataKeyInUse) {
		t.Errorf("output DataKeyArn is %v, want %v", got, dataKeyInUse)
	}

	// DATA_KEY: kms:<the key in use> on exactly the functions that read
	// content (config.FunctionVars), never in Globals.
	wantEnv := object{"Fn::If": []any{"CreateDataKey", object{"Fn::Sub": "kms:${DataKey.Arn}"}, object{"Fn::Sub": "kms:${DataKeyArn}"}}}
	if _, ok := get(raw, "Globals", "Function", "Environment", "Variables", "DATA_KEY").(object); ok {
		t.Error("Globals sets DATA_KEY; stream-reduce and the sweeper must not be told of the key")
	}
	for _, fnID := range keys(functionPackages) {
		v := get(resourcesOf(raw)[fnID], "Properties", "Environment", "Variables", "DATA_KEY")
		reads := slices.Contains(config.FunctionVars[functionPackages[fnID]], "DATA_KEY")
		switch {
		case reads && !reflect.DeepEqual(v, wantEnv):
			t.Errorf("%s: DATA_KEY is %v, want %v", fnID, v, wantEnv)
		case !reads && v != nil:
			t.Errorf("%s: sets DATA_KEY, which it does not read", fnID)
		}
	}
	for _, pkg := range []string{config.StreamReduce, config.Sweeper} {
		if slices.Contains(config.FunctionVars[pkg], "DATA_KEY") {
			t.Errorf("config.FunctionVars[%q] lists DATA_KEY: %s never reads content", pkg, pkg)
		}
	}
	// With the firm's key, what the functions are told is what pkg/seal
	// reads, naming exactly that key.
	spec, err := seal.ParseKeySpec(str(evalIntrinsic(t, raw, wantEnv, map[string]string{"DataKeyArn": firmKey})))
	if err != nil || spec.KMSKeyID != firmKey {
		t.Errorf("DATA_KEY with DataKeyArn %s: seal.ParseKeySpec gives %v, %v", firmKey, spec, err)
	}
}

// TestDataKeyEncryptsTheStack: every queue, the table, the bucket, the
// notification topic and every log group are encrypted with the firm's key in
// use, by its ARN (a key of another account is named by its ARN only). The
// alarm topic alone stays unencrypted: alarm messages carry no run data, and
// CloudWatch would need the key too. No other KMS key encrypts data.
func TestDataKeyEncryptsTheStack(t *testing.T) {
	raw := rawTemplate(t)
	named := func(where string, v any) {
		t.Helper()
		if !reflect.DeepEqual(v, dataKeyInUse) {
			t.Errorf("%s is %v, want the firm's key in use %v", where, v, dataKeyInUse)
		}
	}
	queues := ofType(raw, "AWS::SQS::Queue")
	if len(queues) == 0 {
		t.Fatal("no queues")
	}
	for id, q := range queues {
		named(id+".KmsMasterKeyId", get(q, "Properties", "KmsMasterKeyId"))
		if v := get(q, "Properties", "SqsManagedSseEnabled"); v != nil {
			t.Errorf("%s: SqsManagedSseEnabled %v alongside the key", id, v)
		}
	}
	tables := ofType(raw, "AWS::DynamoDB::Table")
	for id, tb := range tables {
		sse, _ := get(tb, "Properties", "SSESpecification").(object)
		if sse["SSEEnabled"] != true || sse["SSEType"] != "KMS" {
			t.Errorf("%s: SSESpecification %v, want SSEEnabled true, SSEType KMS", id, sse)
		}
		named(id+".SSESpecification.KMSMasterKeyId", sse["KMSMasterKeyId"])
	}
	buckets := ofType(raw, "AWS::S3::Bucket")
	for id, b := range buckets {
		rules := list(get(b, "Properties", "BucketEncryption", "ServerSideEncryptionConfiguration"))
		if len(rules) != 1 {
			t.Errorf("%s: %d encryption rules, want one", id, len(rules))
			continue
		}
		if get(rules[0], "ServerSideEncryptionByDefault", "SSEAlgorithm") != "aws:kms" || get(rules[0], "BucketKeyEnabled") != true {
			t.Errorf("%s: encryption %v, want aws:kms with BucketKeyEnabled (the key policy's and roles' context is the bucket's ARN)", id, rules[0])
		}
		named(id+".KMSMasterKeyID", get(rules[0], "ServerSideEncryptionByDefault", "KMSMasterKeyID"))
		if get(b, "Properties", "ObjectLockEnabled") != true {
			t.Errorf("%s: Object Lock is off", id)
		}
	}
	for id, tp := range ofType(raw, "AWS::SNS::Topic") {
		if id == "AlarmTopic" {
			if v := get(tp, "Properties", "KmsMasterKeyId"); v != nil {
				t.Errorf("AlarmTopic: KmsMasterKeyId %v; it stays unencrypted (no run data; CloudWatch would need the firm's key)", v)
			}
			continue
		}
		named(id+".KmsMasterKeyId", get(tp, "Properties", "KmsMasterKeyId"))
	}
	groups := ofType(raw, "AWS::Logs::LogGroup")
	if len(groups) != len(functionPackages)+1 {
		t.Errorf("log groups %v, want one per function and the API's access log", keys(groups))
	}
	for id, g := range groups {
		named(id+".KmsKeyId", get(g, "Properties", "KmsKeyId"))
	}
	if ks := keys(ofType(raw, "AWS::KMS::Key")); !slices.Equal(ks, []string{"DataKey", "LedgerKey", "ReceiptKey"}) {
		t.Errorf("KMS keys %v, want DataKey (data), LedgerKey (HMAC) and ReceiptKey (signing)", ks)
	}
	for _, c := range []map[string]string{nil, {"DataKeyArn": firmKey}} {
		want := any(object{"Fn::GetAtt": []any{"DataKey", "Arn"}})
		if c != nil {
			want = firmKey
		}
		if got := evalIntrinsic(t, raw, get(resourcesOf(raw)["Table"], "Properties", "SSESpecification", "KMSMasterKeyId"), c); !reflect.DeepEqual(got, want) {
			t.Errorf("%v: the table's key evaluates to %v, want %v", c, got, want)
		}
	}
}

// kmsRequest is a KMS request as the conditions see it: who asks is a role
// (or, for the key policy, the principal), through which service (ViaService
// "" for a direct call) and with which encryption context.
type kmsRequest struct {
	name    string
	action  string
	via     string
	context map[string]string
}

// resourceStand replaces !GetAtt X.Attr and !Ref <resource> with stand-ins
// ("getatt:X.Attr", "ref:X"), so a condition naming a resource evaluates to a
// string a request can carry.
func resourceStand(raw object, v any) any {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i := range v {
			out[i] = resourceStand(raw, v[i])
		}
		return out
	case object:
		if id, attr, ok := getAtt(v); ok {
			return "getatt:" + id + "." + attr
		}
		if r := refOf(v); r != "" && resourcesOf(raw)[r] != nil {
			return "ref:" + r
		}
		out := make(object, len(v))
		for k, e := range v {
			out[k] = resourceStand(raw, e)
		}
		return out
	}
	return v
}

// iamConditionHolds evaluates an evaluated IAM Condition block on req: the
// operators the template and DEPLOY.md use (StringEquals, StringLike,
// ArnLike, ArnEquals, ForAllValues:StringEquals, Null). Any other operator
// fails the test: it would be allowed or refused by guesswork.
func iamConditionHolds(t *testing.T, cond any, req kmsRequest) bool {
	t.Helper()
	value := func(key string) (string, bool) {
		if key == "kms:ViaService" {
			return req.via, req.via != ""
		}
		if k, ok := strings.CutPrefix(key, "kms:EncryptionContext:"); ok {
			v, ok := req.context[k]
			return v, ok
		}
		t.Fatalf("condition key %s is not one this test evaluates", key)
		return "", false
	}
	m, _ := cond.(object)
	for op, block := range m {
		for key, want := range block.(object) {
			var wants []string
			for _, w := range list(want) {
				wants = append(wants, fmt.Sprint(w))
			}
			switch op {
			case "StringEquals", "ArnEquals", "StringLike", "ArnLike":
				got, ok := value(key)
				if !ok || !slices.ContainsFunc(wants, func(w string) bool {
					if op == "StringLike" || op == "ArnLike" {
						return iamGlob(w, got)
					}
					return w == got
				}) {
					return false
				}
			case "ForAllValues:StringEquals":
				if key != "kms:EncryptionContextKeys" {
					t.Fatalf("ForAllValues on %s", key)
				}
				for k := range req.context {
					if !slices.Contains(wants, k) {
						return false
					}
				}
			case "Null":
				_, present := value(key)
				if len(wants) != 1 || present != (wants[0] == "false") {
					return false
				}
			default:
				t.Fatalf("condition operator %s is not one this test evaluates", op)
			}
		}
	}
	return true
}

// iamGlob matches s against an IAM pattern: * any run of characters (a /
// too), ? any one.
func iamGlob(pattern, s string) bool {
	var re strings.Builder
	re.WriteString("^")
	for _, r := range pattern {
		switch r {
		case '*':
			re.WriteString(".*")
		case '?':
			re.WriteString(".")
		default:
			re.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	re.WriteString("$")
	return regexp.MustCompile(re.String()).MatchString(s)
}

// actionMatches reports whether a policy action (possibly with a *) covers
// action; actions are case-insensitive.
func actionMatches(pattern, action string) bool {
	return iamGlob(strings.ToLower(pattern), strings.ToLower(action))
}

// roleAllows reports whether fnID's role allows req on the firm's key in use.
func roleAllows(t *testing.T, raw object, fnID string, req kmsRequest) bool {
	t.Helper()
	_, stmts := roleStatements(t, raw, fnID)
	for _, st := range stmts {
		if st.effect != "Allow" || !slices.ContainsFunc(st.actions, func(a string) bool { return actionMatches(a, req.action) }) ||
			!slices.ContainsFunc(st.resources, func(r any) bool { return reflect.DeepEqual(r, dataKeyInUse) }) {
			continue
		}
		cond := evalIntrinsic(t, raw, resourceStand(raw, st.conditions), nil)
		if iamConditionHolds(t, cond, req) {
			return true
		}
	}
	return false
}

// recordingKMS stands in for KMS under pkg/seal: it records each request
// and answers with a 32-byte key.
type recordingKMS struct{ reqs []kmsRequest }

func (r *recordingKMS) GenerateDataKey(_ context.Context, in *kms.GenerateDataKeyInput, _ ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	r.reqs = append(r.reqs, kmsRequest{name: "pkg/seal makes a run's data key", action: "kms:GenerateDataKey", context: in.EncryptionContext})
	return &kms.GenerateDataKeyOutput{Plaintext: make([]byte, 32), CiphertextBlob: []byte("blob")}, nil
}

func (r *recordingKMS) Decrypt(_ context.Context, in *kms.DecryptInput, _ ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	r.reqs = append(r.reqs, kmsRequest{name: "pkg/seal opens a run's data key", action: "kms:Decrypt", context: in.EncryptionContext})
	return &kms.DecryptOutput{Plaintext: make([]byte, 32)}, nil
}

// sealRequests are the requests pkg/seal makes for one run: the data key
// made, then opened.
func sealRequests(t *testing.T) (generate, open kmsRequest) {
	t.Helper()
	rec := &recordingKMS{}
	ring := seal.NewKMSKeyring(rec, firmKey)
	k, blob, err := ring.NewRunKey(context.Background(), "firm-harbor", "run-7")
	if err != nil {
		t.Fatal(err)
	}
	k.Destroy()
	if k, err = ring.OpenRunKey(context.Background(), "firm-harbor", "run-7", blob); err != nil {
		t.Fatal(err)
	}
	k.Destroy()
	if len(rec.reqs) != 2 {
		t.Fatalf("pkg/seal made %d KMS requests, want GenerateDataKey and Decrypt", len(rec.reqs))
	}
	return rec.reqs[0], rec.reqs[1]
}

// roleRequests are KMS requests on the firm's key and the functions whose
// roles must allow each; every other function's role must refuse it.
func roleRequests(t *testing.T) []struct {
	req     kmsRequest
	allowed []string
} {
	generate, open := sealRequests(t)
	content := []string{"ApproveFunction", "InvokeFunction", "ResumeFunction", "RunsFunction", "WorkerFunction"}
	senders := []string{"InvokeFunction", "ResumeFunction", "SweeperFunction", "WorkerFunction"}
	all := keys(functionPackages)
	sqs, ddb, s3 := "sqs.us-east-1.amazonaws.com", "dynamodb.us-east-1.amazonaws.com", "s3.us-east-1.amazonaws.com"
	queueCtx := func(q string) map[string]string { return map[string]string{"aws:sqs:arn": "getatt:" + q + ".Arn"} }
	tableCtx := map[string]string{"aws:dynamodb:tableName": "ref:Table", "aws:dynamodb:subscriberId": "123456789012"}
	warrantCtx := func(extra map[string]string) map[string]string {
		m := map[string]string{seal.ContextFirm: "firm-harbor", seal.ContextRun: "run-7"}
		for k, v := range extra {
			if v == "" {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	req := func(name, action, via string, ctx map[string]string) kmsRequest {
		return kmsRequest{name: name, action: action, via: via, context: ctx}
	}
	return []struct {
		req     kmsRequest
		allowed []string
	}{
		{generate, []string{"InvokeFunction"}},
		{open, content},
		{req("a data key with a third context key", "kms:Decrypt", "", warrantCtx(map[string]string{"warrant:matter_id": "m-1"})), nil},
		{req("a data key with the firm but no run", "kms:Decrypt", "", warrantCtx(map[string]string{seal.ContextRun: ""})), nil},
		{req("a data key with no context", "kms:GenerateDataKey", "", nil), nil},
		{req("Warrant's context through SQS", "kms:Decrypt", sqs, warrantCtx(nil)), nil},
		{req("Warrant's context through DynamoDB", "kms:GenerateDataKey", ddb, warrantCtx(nil)), nil},
		{req("the table key, directly", "kms:Decrypt", "", tableCtx), nil},
		{req("the table key through DynamoDB", "kms:Decrypt", ddb, tableCtx), all},
		{req("another table's key through DynamoDB", "kms:Decrypt", ddb, map[string]string{"aws:dynamodb:tableName": "other"}), nil},
		{req("a table key made by a caller", "kms:GenerateDataKey", ddb, tableCtx), nil},
		{req("a send to WorkerQueue", "kms:GenerateDataKey", sqs, queueCtx("WorkerQueue")), senders},
		{req("a send to or receive from WorkerQueue, the key checked", "kms:Decrypt", sqs, queueCtx("WorkerQueue")), senders},
		{req("a WorkerQueue message, directly", "kms:Decrypt", "", queueCtx("WorkerQueue")), nil},
		{req("a send to WorkerDeadLetterQueue (SQS redrives; nobody sends)", "kms:GenerateDataKey", sqs, queueCtx("WorkerDeadLetterQueue")), nil},
		{req("a failed batch to StreamDeadLetterQueue", "kms:GenerateDataKey", sqs, queueCtx("StreamDeadLetterQueue")), []string{"StreamReduceFunction"}},
		{req("StreamDeadLetterQueue's key checked", "kms:Decrypt", sqs, queueCtx("StreamDeadLetterQueue")), []string{"StreamReduceFunction"}},
		{req("a send to NotificationDeadLetterQueue (EventBridge's)", "kms:GenerateDataKey", sqs, queueCtx("NotificationDeadLetterQueue")), nil},
		{req("a checkpoint written", "kms:GenerateDataKey", s3, map[string]string{"aws:s3:arn": "getatt:CheckpointBucket.Arn"}), []string{"SweeperFunction"}},
		{req("a checkpoint read back", "kms:Decrypt", s3, map[string]string{"aws:s3:arn": "getatt:CheckpointBucket.Arn"}), []string{"SweeperFunction"}},
		{req("an object's own key (no bucket key)", "kms:Decrypt", s3, map[string]string{"aws:s3:arn": "arn:aws:s3:::bucket/checkpoints/f/1.json"}), nil},
		{req("a log group's data, through Logs", "kms:Decrypt", "logs.us-east-1.amazonaws.com",
			map[string]string{"aws:logs:arn": "arn:aws:logs:us-east-1:123456789012:log-group:/warrant/warrant-prod/invoke"}), nil},
		{req("Encrypt with Warrant's context", "kms:Encrypt", "", warrantCtx(nil)), nil},
		{req("a data key without plaintext", "kms:GenerateDataKeyWithoutPlaintext", "", warrantCtx(nil)), nil},
		{req("a re-encryption", "kms:ReEncryptFrom", "", warrantCtx(nil)), nil},
	}
}

// TestDataKeyGrants evaluates KMS requests on the firm's key against every
// role: what pkg/seal asks (recorded from its KMS keyring) is allowed to
// exactly the content functions, GenerateDataKey to invoke alone; what each
// service asks on a role's behalf is allowed only through that service and
// for that role's own resource; nothing else is allowed, so stream-reduce
// and the sweeper can use the key only through a service. It also checks
// that every statement on the key is one of the classified uses.
func TestDataKeyGrants(t *testing.T) {
	raw := rawTemplate(t)
	generate, open := sealRequests(t)
	for _, r := range []kmsRequest{generate, open} {
		if len(r.context) != 2 || r.context[seal.ContextFirm] == "" || r.context[seal.ContextRun] == "" {
			t.Errorf("%s with encryption context %v, want exactly %s and %s (what the roles' condition names)", r.name, r.context, seal.ContextFirm, seal.ContextRun)
		}
	}
	for _, c := range roleRequests(t) {
		for _, fnID := range keys(functionPackages) {
			want := slices.Contains(c.allowed, fnID)
			if got := roleAllows(t, raw, fnID, c.req); got != want {
				t.Errorf("%s: %s (%s via %q, context %v): allowed %v, want %v", fnID, c.req.name, c.req.action, c.req.via, c.req.context, got, want)
			}
		}
	}

	// Structurally: each statement on the key is content use or one
	// service's use; no function but invoke may GenerateDataKey outside a
	// service; stream-reduce and the sweeper have only service uses; the
	// functions with content use are exactly those told DATA_KEY.
	for _, fnID := range keys(functionPackages) {
		_, stmts := roleStatements(t, raw, fnID)
		hasContent := false
		for _, st := range stmts {
			if !slices.ContainsFunc(st.resources, func(r any) bool { return reflect.DeepEqual(r, dataKeyInUse) }) {
				continue
			}
			if len(st.resources) != 1 || st.when != "" {
				t.Errorf("%s: statement %q on the firm's key also names %v (when %q); give each use its own, unconditional statement", fnID, st.sid, st.resources, st.when)
			}
			use := dataKeyUse(st)
			switch {
			case use == "content":
				hasContent = true
				if fnID == "StreamReduceFunction" || fnID == "SweeperFunction" {
					t.Errorf("%s: statement %q grants %v for content; it never reads content", fnID, st.sid, st.actions)
				}
				if slices.Contains(st.actions, "kms:GenerateDataKey") && fnID != "InvokeFunction" {
					t.Errorf("%s: statement %q may GenerateDataKey for content; only invoke starts runs", fnID, st.sid)
				}
			case strings.HasPrefix(use, "via "):
			default:
				t.Errorf("%s: statement %q on the firm's key is %s: neither content use nor one service's", fnID, st.sid, use)
			}
		}
		told := get(resourcesOf(raw)[fnID], "Properties", "Environment", "Variables", "DATA_KEY") != nil
		if hasContent != told {
			t.Errorf("%s: content use of the key %v, but DATA_KEY set %v", fnID, hasContent, told)
		}
	}
}

// servicePrincipalRequests are the requests AWS services make as
// themselves (not for a role) on the firm's key, and whether DataKey's
// policy must allow each; stack is the stack name they were evaluated for.
func servicePrincipalRequests(t *testing.T, raw object, stack string) []struct {
	principal string
	req       kmsRequest
	allowed   bool
} {
	params := map[string]string{"AWS::StackName": stack}
	logArn := func(group string) string { return "arn:aws:logs:us-east-1:123456789012:log-group:" + group }
	topicName := str(evalIntrinsic(t, raw, get(resourcesOf(raw)["NotificationTopic"], "Properties", "TopicName"), params))
	dlqName := str(evalIntrinsic(t, raw, get(resourcesOf(raw)["NotificationDeadLetterQueue"], "Properties", "QueueName"), params))
	if topicName == "" || dlqName == "" {
		t.Fatalf("NotificationTopic's TopicName %q or NotificationDeadLetterQueue's QueueName %q is not fixed: the key policy cannot name them", topicName, dlqName)
	}
	if len(dlqName) > 80 {
		t.Errorf("NotificationDeadLetterQueue's name %q is longer than SQS's 80 characters", dlqName)
	}
	var out []struct {
		principal string
		req       kmsRequest
		allowed   bool
	}
	add := func(principal string, allowed bool, r kmsRequest) {
		out = append(out, struct {
			principal string
			req       kmsRequest
			allowed   bool
		}{principal, r, allowed})
	}
	logs := "logs.us-east-1.amazonaws.com"
	for id, g := range ofType(raw, "AWS::Logs::LogGroup") {
		group := str(evalIntrinsic(t, raw, get(g, "Properties", "LogGroupName"), params))
		for _, a := range []string{"kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey", "kms:ReEncryptFrom"} {
			add(logs, true, kmsRequest{name: id + " (" + group + ")", action: a, context: map[string]string{"aws:logs:arn": logArn(group)}})
		}
	}
	add(logs, false, kmsRequest{name: "another stack's log group", action: "kms:Decrypt", context: map[string]string{"aws:logs:arn": logArn("/warrant/" + stack + "-other/invoke")}})
	add(logs, false, kmsRequest{name: "a Lambda default log group", action: "kms:Decrypt", context: map[string]string{"aws:logs:arn": logArn("/aws/lambda/" + stack + "-InvokeFunction")}})
	add(logs, false, kmsRequest{name: "Warrant's context", action: "kms:Decrypt", context: map[string]string{seal.ContextFirm: "f", seal.ContextRun: "r"}})
	events := "events.amazonaws.com"
	topic := map[string]string{"aws:sns:topicArn": "arn:aws:sns:us-east-1:123456789012:" + topicName}
	dlq := map[string]string{"aws:sqs:arn": "arn:aws:sqs:us-east-1:123456789012:" + dlqName}
	for _, a := range []string{"kms:GenerateDataKey", "kms:Decrypt"} {
		add(events, true, kmsRequest{name: "a publish to the notification topic", action: a, context: topic})
		add(events, true, kmsRequest{name: "an undelivered event to the rule's dead-letter queue", action: a, context: dlq})
		add(events, false, kmsRequest{name: "another topic", action: a, context: map[string]string{"aws:sns:topicArn": "arn:aws:sns:us-east-1:123456789012:other"}})
		add(events, false, kmsRequest{name: "WorkerQueue", action: a, context: map[string]string{"aws:sqs:arn": "arn:aws:sqs:us-east-1:123456789012:warrant-prod-WorkerQueue-1"}})
		add(events, false, kmsRequest{name: "Warrant's context", action: a, context: map[string]string{seal.ContextFirm: "f", seal.ContextRun: "r"}})
	}
	add("dynamodb.amazonaws.com", false, kmsRequest{name: "DynamoDB as itself (it uses the grants it creates)", action: "kms:Decrypt", context: map[string]string{"aws:dynamodb:tableName": "t"}})
	add("sqs.amazonaws.com", false, kmsRequest{name: "SQS as itself (it acts for its callers)", action: "kms:GenerateDataKey", context: dlq})
	return out
}

// keyPolicyAllows reports whether a statement of stmts (evaluated) lets the
// service principal make req.
func keyPolicyAllows(t *testing.T, stmts []any, principal string, req kmsRequest) bool {
	t.Helper()
	for _, st := range stmts {
		if get(st, "Effect") != "Allow" || !slices.ContainsFunc(list(get(st, "Principal", "Service")), func(p any) bool { return p == principal }) {
			continue
		}
		if !slices.ContainsFunc(list(get(st, "Action")), func(a any) bool { return actionMatches(str(a), req.action) }) {
			continue
		}
		if iamConditionHolds(t, get(st, "Condition"), req) {
			return true
		}
	}
	return false
}

// TestDataKeyPolicy: DataKey's policy lets the account administer it (its
// IAM policies then grant the roles' uses) and lets exactly two services use
// it as themselves: CloudWatch Logs for the stack's log groups, each under
// its own ARN, and EventBridge for the notification topic and the rule's
// dead-letter queue. DynamoDB, SQS and S3 act for the roles and need nothing
// of their own here.
func TestDataKeyPolicy(t *testing.T) {
	raw := rawTemplate(t)
	key := mustResource(t, raw, "DataKey", "AWS::KMS::Key")
	params := map[string]string{"AWS::StackName": "warrant-prod"}
	stmts := list(evalIntrinsic(t, raw, get(key, "Properties", "KeyPolicy", "Statement"), params))
	root := object{"AWS": "arn:aws:iam::123456789012:root"}
	admin := false
	for _, st := range stmts {
		if get(st, "Effect") != "Allow" {
			continue
		}
		p := get(st, "Principal")
		if get(p, "AWS") != nil {
			if !reflect.DeepEqual(p, root) {
				t.Errorf("DataKey: statement %v names %v; only this account is named, the roles get their uses from IAM", get(st, "Sid"), p)
			}
			admin = admin || get(st, "Action") == "kms:*" && get(st, "Resource") == "*" && get(st, "Condition") == nil
			continue
		}
		svc := list(get(p, "Service"))
		if len(svc) != 1 || (svc[0] != "logs.us-east-1.amazonaws.com" && svc[0] != "events.amazonaws.com") {
			t.Errorf("DataKey: statement %v lets %v in; only CloudWatch Logs (this Region's) and EventBridge use the key as themselves", get(st, "Sid"), p)
		}
		if get(st, "Condition") == nil {
			t.Errorf("DataKey: statement %v lets %v use the key without a condition", get(st, "Sid"), svc)
		}
	}
	if !admin {
		t.Errorf("DataKey: no statement lets the account administer the key: %v", stmts)
	}
	for _, c := range servicePrincipalRequests(t, raw, "warrant-prod") {
		if got := keyPolicyAllows(t, stmts, c.principal, c.req); got != c.allowed {
			t.Errorf("DataKey: %s, %s for %s (context %v): allowed %v, want %v", c.principal, c.req.action, c.req.name, c.req.context, got, c.allowed)
		}
	}
}
