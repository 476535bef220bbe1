package deploy

// The evidence anyone can check (issue 20): the receipt key that signs
// receipts and firm-log checkpoints, who may use it, and the Object Lock
// bucket the sweeper keeps each checkpoint in. Which functions hold which
// grant exactly is TestIAMLeastPrivilege's; these tests evaluate what the
// grants name and check the key and the bucket themselves.

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/anchor"
	"github.com/seed-f6d3920e/warrant/pkg/config"
)

const (
	ownReceiptKey = "arn:aws:kms:us-east-1:123456789012:key/5b2f8c1e-4a7d-4e3b-9c6f-0d1e2f3a4b5c"
	oldReceiptKey = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	// A P-256 public key, the standard base64 of its DER SubjectPublicKeyInfo.
	oldReceiptSPKI = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEntgHM8aOooQ1WMgaV2VPY2RYYqkNbigMJJOkg4+ajDQHOrMqORGA0A6wiV2Li34fwSxHScmckcxwsfPs4XMp7A=="
)

// receiptKeyInUse is how the template names the key that signs now: the
// ReceiptKey it created, or the key ReceiptKeyArn names.
var receiptKeyInUse = object{"Fn::If": []any{"CreateReceiptKey",
	object{"Fn::GetAtt": []any{"ReceiptKey", "Arn"}}, object{"Ref": "ReceiptKeyArn"}}}

// wantReceiptEnv is each receipt variable as the template must set it (on
// exactly the functions config.FunctionVars lists it for).
var wantReceiptEnv = map[string]any{
	"RECEIPT_KEY": object{"Fn::If": []any{"CreateReceiptKey",
		object{"Fn::Sub": "kms:${ReceiptKey.Arn}"}, object{"Fn::Sub": "kms:${ReceiptKeyArn}"}}},
	"RECEIPT_RETIRED_KEYS": object{"Fn::If": []any{"HasRetiredReceiptKeys",
		object{"Ref": "RetiredReceiptKeys"}, object{"Ref": "AWS::NoValue"}}},
	"CHECKPOINT_BUCKET": object{"Ref": "CheckpointBucket"},
	"CHECKPOINT_ORIGIN_PREFIX": object{"Fn::If": []any{"HasCheckpointOriginPrefix",
		object{"Ref": "CheckpointOriginPrefix"}, object{"Ref": "AWS::NoValue"}}},
	"TIMESTAMP_AUTHORITY_URL": object{"Fn::If": []any{"HasTimestampAuthority",
		object{"Ref": "TimestampAuthorityUrl"}, object{"Ref": "AWS::NoValue"}}},
	"TIMESTAMP_AUTHORITY_CERTIFICATE": object{"Fn::If": []any{"HasTimestampAuthority",
		object{"Ref": "TimestampAuthorityCertificate"}, object{"Ref": "AWS::NoValue"}}},
	"WITNESSES": object{"Fn::If": []any{"HasWitnesses", object{"Ref": "Witnesses"}, object{"Ref": "AWS::NoValue"}}},
}

// TestReceiptKey: ReceiptKeyArn takes a key ARN (empty: the stack creates
// ReceiptKey, ECC_NIST_P256 / SIGN_VERIFY, administered by the account and
// retained, since the receipts it signed outlive the stack and a rotation);
// RetiredReceiptKeys takes kms:<key ARN> and spki:<base64> entries; the
// functions that sign or serve evidence get the key in use, the retired keys
// and (the sweeper) the bucket; the outputs name the key in use and the
// bucket.
func TestReceiptKey(t *testing.T) {
	raw := rawTemplate(t)
	for name, typ := range map[string]string{"ReceiptKeyArn": "String", "RetiredReceiptKeys": "String",
		"TimestampAuthorityUrl": "String", "TimestampAuthorityCertificate": "String", "Witnesses": "String"} {
		p, _ := get(raw, "Parameters", name).(object)
		if p == nil || p["Type"] != typ || p["Default"] != "" {
			t.Fatalf("parameter %s: %v; want a %s, empty by default", name, p, typ)
		}
	}
	keyPattern := regexp.MustCompile(str(get(raw, "Parameters", "ReceiptKeyArn", "AllowedPattern")))
	for k, ok := range map[string]bool{
		"":            true,
		ownReceiptKey: true,
		"arn:aws:kms:eu-west-1:123456789012:key/mrk-1234abcd12ab34cd56ef1234567890ab": true,
		"arn:aws:kms:us-east-1:123456789012:alias/warrant-receipts":                   false,
		"arn:aws:kms:us-east-1:123456789012:key/*":                                    false,
		"kms:" + ownReceiptKey:                 false,
		"5b2f8c1e-4a7d-4e3b-9c6f-0d1e2f3a4b5c": false,
	} {
		if keyPattern.MatchString(k) != ok {
			t.Errorf("ReceiptKeyArn %q: admitted %v, want %v", k, !ok, ok)
		}
	}
	retiredPattern := regexp.MustCompile(str(get(raw, "Parameters", "RetiredReceiptKeys", "AllowedPattern")))
	for k, ok := range map[string]bool{
		"":                       true,
		"kms:" + oldReceiptKey:   true,
		"spki:" + oldReceiptSPKI: true,
		"kms:" + oldReceiptKey + ",spki:" + oldReceiptSPKI: true,
		"spki:" + oldReceiptSPKI + ",kms:" + ownReceiptKey: true,
		oldReceiptKey: false, // the prefix says how to read it
		"kms:" + oldReceiptKey + ", spki:" + oldReceiptSPKI:                       false,
		"kms:" + oldReceiptKey + ",":                                              false,
		"kms:arn:aws:kms:us-east-1:123456789012:alias/old":                        false,
		"kms:arn:aws:kms:us-east-1:123456789012:key/*":                            false,
		"p256:307702010104":                                                       false, // a private key
		"spki:not base64!":                                                        false,
		"kms:" + oldReceiptKey + ",kms:" + oldReceiptKey + ",x:" + oldReceiptSPKI: false,
	} {
		if retiredPattern.MatchString(k) != ok {
			t.Errorf("RetiredReceiptKeys %q: admitted %v, want %v", k, !ok, ok)
		}
	}
	for _, c := range []struct {
		params          map[string]string
		create, retired bool
		wantKey         any
	}{
		{nil, true, false, object{"Fn::GetAtt": []any{"ReceiptKey", "Arn"}}},
		{map[string]string{"ReceiptKeyArn": ownReceiptKey, "RetiredReceiptKeys": "kms:" + oldReceiptKey}, false, true, ownReceiptKey},
	} {
		holds := func(cond string) bool { return evalIntrinsic(t, raw, object{"Condition": cond}, c.params).(bool) }
		if holds("CreateReceiptKey") != c.create || holds("HasRetiredReceiptKeys") != c.retired {
			t.Errorf("%v: CreateReceiptKey %v, HasRetiredReceiptKeys %v; want %v, %v", c.params, holds("CreateReceiptKey"), holds("HasRetiredReceiptKeys"), c.create, c.retired)
		}
		if got := evalIntrinsic(t, raw, receiptKeyInUse, c.params); !reflect.DeepEqual(got, c.wantKey) {
			t.Errorf("%v: the key in use evaluates to %v, want %v", c.params, got, c.wantKey)
		}
	}

	key := mustResource(t, raw, "ReceiptKey", "AWS::KMS::Key")
	p, _ := key["Properties"].(object)
	if key["Condition"] != "CreateReceiptKey" {
		t.Errorf("ReceiptKey: Condition %v, want CreateReceiptKey (created only when ReceiptKeyArn is empty)", key["Condition"])
	}
	if p["KeySpec"] != "ECC_NIST_P256" || p["KeyUsage"] != "SIGN_VERIFY" {
		t.Errorf("ReceiptKey: KeySpec %v, KeyUsage %v; want ECC_NIST_P256, SIGN_VERIFY (ECDSA P-256 receipts anyone can check)", p["KeySpec"], p["KeyUsage"])
	}
	if key["DeletionPolicy"] != "Retain" || key["UpdateReplacePolicy"] != "Retain" {
		t.Errorf("ReceiptKey: DeletionPolicy %v, UpdateReplacePolicy %v; want Retain: old receipts must stay verifiable", key["DeletionPolicy"], key["UpdateReplacePolicy"])
	}
	if p["EnableKeyRotation"] == true {
		t.Error("ReceiptKey: EnableKeyRotation; KMS rotates no asymmetric key (rotate with ReceiptKeyArn and RetiredReceiptKeys)")
	}
	root := object{"AWS": object{"Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"}}
	stmts := list(get(p, "KeyPolicy", "Statement"))
	admin := false
	for _, st := range stmts {
		if get(st, "Effect") == "Allow" && !reflect.DeepEqual(get(st, "Principal"), root) {
			t.Errorf("ReceiptKey: key policy allows %v; only the account (root) is named, the roles get their grants from IAM", get(st, "Principal"))
		}
		admin = admin || get(st, "Effect") == "Allow" && get(st, "Action") == "kms:*" && get(st, "Resource") == "*"
	}
	if !admin {
		t.Errorf("ReceiptKey: no key policy statement lets the account administer the key: %v", stmts)
	}

	// The environment: the key in use (kms:<ARN>), the retired keys when
	// named, the bucket; on exactly the functions that read them.
	if g, _ := get(raw, "Globals", "Function", "Environment", "Variables").(object); g != nil {
		for name := range wantReceiptEnv {
			if _, ok := g[name]; ok {
				t.Errorf("Globals sets %s; only the functions that read it may have it", name)
			}
		}
	}
	for _, fnID := range keys(functionPackages) {
		vars, _ := get(resourcesOf(raw)[fnID], "Properties", "Environment", "Variables").(object)
		for _, name := range keys(wantReceiptEnv) {
			v, set := vars[name]
			reads := slices.Contains(config.FunctionVars[functionPackages[fnID]], name)
			switch {
			case reads && !reflect.DeepEqual(v, wantReceiptEnv[name]):
				t.Errorf("%s: %s is %v, want %v", fnID, name, v, wantReceiptEnv[name])
			case !reads && set:
				t.Errorf("%s: sets %s, which it does not read", fnID, name)
			}
		}
	}
	for _, name := range []string{"RECEIPT_KEY", "RECEIPT_RETIRED_KEYS", "CHECKPOINT_ORIGIN_PREFIX"} {
		for _, pkg := range []string{"stream-reduce", "sweeper", "runs"} {
			if !slices.Contains(config.FunctionVars[pkg], name) {
				t.Errorf("config.FunctionVars[%q] lacks %s: stream-reduce signs receipts, the sweeper checkpoints, runs serves them", pkg, name)
			}
		}
	}
	// Only the sweeper asks the TSA (issue 30 item 3); the URL's pattern
	// takes https only.
	for _, name := range []string{"TIMESTAMP_AUTHORITY_URL", "TIMESTAMP_AUTHORITY_CERTIFICATE", "WITNESSES"} {
		for pkg, vars := range config.FunctionVars {
			if slices.Contains(vars, name) != (pkg == "sweeper") {
				t.Errorf("config.FunctionVars[%q]: reads %s %v, want only the sweeper", pkg, name, slices.Contains(vars, name))
			}
		}
	}
	tsaURL := regexp.MustCompile(str(get(raw, "Parameters", "TimestampAuthorityUrl", "AllowedPattern")))
	for v, ok := range map[string]bool{"": true, "https://freetsa.org/tsr": true, "http://freetsa.org/tsr": false, "freetsa.org": false} {
		if tsaURL.MatchString(v) != ok {
			t.Errorf("TimestampAuthorityUrl %q: allowed %v, want %v", v, !ok, ok)
		}
	}
	if !slices.Contains(config.FunctionVars["sweeper"], "CHECKPOINT_BUCKET") {
		t.Error(`config.FunctionVars["sweeper"] lacks CHECKPOINT_BUCKET: the sweeper keeps the checkpoints in the bucket`)
	}
	env := templateEnv(raw, "StreamReduceFunction")
	if !strings.HasPrefix(env["RECEIPT_KEY"], "kms:") {
		t.Errorf("RECEIPT_KEY with the defaults is %q, want kms:<the created key's ARN>", env["RECEIPT_KEY"])
	}

	outputs := map[string]any{"ReceiptKeyArn": receiptKeyInUse, "CheckpointBucketName": object{"Ref": "CheckpointBucket"}}
	for name, want := range outputs {
		if got := get(raw, "Outputs", name, "Value"); !reflect.DeepEqual(got, want) {
			t.Errorf("output %s is %v, want %v", name, got, want)
		}
	}
}

// TestReceiptKeyGrants: stream-reduce and the sweeper may kms:Sign with the
// receipt key in use only (the created key by default, exactly ReceiptKeyArn
// otherwise), only a SHA-256 digest with ECDSA_SHA_256 (what the code
// signs); they and runs may read its public key. A retired key given as
// kms:<ARN> is read for its public half only, and only when the stack names
// retired keys: on this account's and Region's ECC_NIST_P256 signing keys.
// That no other function signs is TestIAMLeastPrivilege's.
func TestReceiptKeyGrants(t *testing.T) {
	raw := rawTemplate(t)
	wantSign := object{"StringEquals": object{"kms:MessageType": "DIGEST", "kms:SigningAlgorithm": "ECDSA_SHA_256"}}
	wantRetired := object{"StringEquals": object{"kms:KeySpec": "ECC_NIST_P256", "kms:KeyUsage": "SIGN_VERIFY"}}
	params := map[string]string{"ReceiptKeyArn": ownReceiptKey, "RetiredReceiptKeys": "kms:" + oldReceiptKey + ",spki:" + oldReceiptSPKI}
	for fnID, signs := range map[string]bool{"StreamReduceFunction": true, "SweeperFunction": true, "RunsFunction": false} {
		_, stmts := roleStatements(t, raw, fnID)
		found := map[string]int{}
		for _, st := range stmts {
			for _, a := range st.actions {
				if a != "kms:Sign" && a != "kms:GetPublicKey" {
					continue
				}
				if len(st.actions) != 1 {
					t.Errorf("%s: %s shares statement %q with %v; give it its own", fnID, a, st.sid, st.actions)
				}
				if st.when == "HasRetiredReceiptKeys" {
					found["retired "+a]++
					if a != "kms:GetPublicKey" {
						t.Errorf("%s: %s on the retired keys; they are only read", fnID, a)
					}
					if got := flat(evalIntrinsic(t, raw, st.resources, params)); !reflect.DeepEqual(got, []string{"arn:aws:kms:us-east-1:123456789012:key/*"}) {
						t.Errorf("%s: the retired keys' kms:GetPublicKey on %v, want this account's and Region's keys", fnID, got)
					}
					if !reflect.DeepEqual(st.conditions, wantRetired) {
						t.Errorf("%s: the retired keys' kms:GetPublicKey under %v, want %v", fnID, st.conditions, wantRetired)
					}
					continue
				}
				found[a]++
				if st.when != "" || len(st.resources) != 1 || !reflect.DeepEqual(st.resources[0], receiptKeyInUse) {
					t.Errorf("%s: %s on %v (when %q), want the receipt key in use, %v", fnID, a, st.resources, st.when, receiptKeyInUse)
				}
				if got := evalIntrinsic(t, raw, st.resources, params); !reflect.DeepEqual(got, []any{ownReceiptKey}) {
					t.Errorf("%s: with ReceiptKeyArn set, %s on %v, want exactly [%s]", fnID, a, got, ownReceiptKey)
				}
				switch {
				case a == "kms:Sign" && !reflect.DeepEqual(st.conditions, wantSign):
					t.Errorf("%s: kms:Sign under %v, want %v", fnID, st.conditions, wantSign)
				case a == "kms:GetPublicKey" && st.conditions != nil:
					t.Errorf("%s: kms:GetPublicKey under %v, want no condition", fnID, st.conditions)
				}
			}
		}
		want := map[string]int{"kms:GetPublicKey": 1, "retired kms:GetPublicKey": 1}
		if signs {
			want["kms:Sign"] = 1
		}
		if !reflect.DeepEqual(found, want) {
			t.Errorf("%s: receipt key grants %v, want %v", fnID, found, want)
		}
	}
}

// TestCheckpointBucket: the one bucket of the stack keeps the sweeper's
// checkpoints write-once (Object Lock, versioning, a default retention
// from CheckpointRetentionMode and CheckpointRetentionDays), private,
// encrypted, TLS only, and outlives the stack; the sweeper writes under
// the prefix its code writes to, and only it writes there.
func TestCheckpointBucket(t *testing.T) {
	raw := rawTemplate(t)
	if b := ofType(raw, "AWS::S3::Bucket"); !reflect.DeepEqual(keys(b), []string{"CheckpointBucket"}) {
		t.Errorf("buckets %v, want CheckpointBucket only", keys(b))
	}
	b := mustResource(t, raw, "CheckpointBucket", "AWS::S3::Bucket")
	p, _ := b["Properties"].(object)
	if b["DeletionPolicy"] != "Retain" || b["UpdateReplacePolicy"] != "Retain" {
		t.Errorf("CheckpointBucket: DeletionPolicy %v, UpdateReplacePolicy %v; want Retain", b["DeletionPolicy"], b["UpdateReplacePolicy"])
	}
	if b["Condition"] != nil {
		t.Errorf("CheckpointBucket: Condition %v; the sweeper always writes checkpoints", b["Condition"])
	}
	if p["ObjectLockEnabled"] != true || get(p, "ObjectLockConfiguration", "ObjectLockEnabled") != "Enabled" {
		t.Errorf("CheckpointBucket: ObjectLockEnabled %v, ObjectLockConfiguration.ObjectLockEnabled %v; want true, Enabled",
			p["ObjectLockEnabled"], get(p, "ObjectLockConfiguration", "ObjectLockEnabled"))
	}
	wantRetention := object{"Mode": object{"Ref": "CheckpointRetentionMode"}, "Days": object{"Ref": "CheckpointRetentionDays"}}
	if got := get(p, "ObjectLockConfiguration", "Rule", "DefaultRetention"); !reflect.DeepEqual(got, wantRetention) {
		t.Errorf("CheckpointBucket: DefaultRetention %v, want %v", got, wantRetention)
	}
	if got := get(p, "VersioningConfiguration", "Status"); got != "Enabled" {
		t.Errorf("CheckpointBucket: versioning %v, want Enabled (Object Lock locks versions)", got)
	}
	mode, _ := get(raw, "Parameters", "CheckpointRetentionMode").(object)
	if mode == nil || mode["Type"] != "String" || mode["Default"] != "GOVERNANCE" ||
		fmt.Sprint(mode["AllowedValues"]) != "[GOVERNANCE COMPLIANCE]" {
		t.Errorf("parameter CheckpointRetentionMode %v; want a String, GOVERNANCE or COMPLIANCE, GOVERNANCE by default", mode)
	}
	days, _ := get(raw, "Parameters", "CheckpointRetentionDays").(object)
	if days == nil || days["Type"] != "Number" || fmt.Sprint(days["MinValue"]) != "1" || fmt.Sprint(days["Default"]) != "365" {
		t.Errorf("parameter CheckpointRetentionDays %v; want a Number, at least 1, 365 by default", days)
	}

	for _, block := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
		if get(p, "PublicAccessBlockConfiguration", block) != true {
			t.Errorf("CheckpointBucket: PublicAccessBlockConfiguration.%s is %v, want true", block, get(p, "PublicAccessBlockConfiguration", block))
		}
	}
	sse := list(get(p, "BucketEncryption", "ServerSideEncryptionConfiguration"))
	if len(sse) == 0 || !slices.Contains([]any{"AES256", "aws:kms", "aws:kms:dsse"}, get(sse[0], "ServerSideEncryptionByDefault", "SSEAlgorithm")) {
		t.Errorf("CheckpointBucket: BucketEncryption %v, want a default server-side encryption", get(p, "BucketEncryption"))
	}
	if got := list(get(p, "OwnershipControls", "Rules")); len(got) != 1 || get(got[0], "ObjectOwnership") != "BucketOwnerEnforced" {
		t.Errorf("CheckpointBucket: OwnershipControls %v, want BucketOwnerEnforced (no ACLs)", got)
	}

	// A bucket policy refuses every request without TLS, on the bucket and
	// its objects.
	bucketArn := object{"Fn::GetAtt": []any{"CheckpointBucket", "Arn"}}
	objectsArn := object{"Fn::Sub": "${CheckpointBucket.Arn}/*"}
	tlsOnly, writeOnce := false, false
	for _, pol := range ofType(raw, "AWS::S3::BucketPolicy") {
		if refOf(get(pol, "Properties", "Bucket")) != "CheckpointBucket" {
			continue
		}
		for _, st := range list(get(pol, "Properties", "PolicyDocument", "Statement")) {
			res := list(get(st, "Resource"))
			// Issue 25 C: a put that could replace a checkpoint (no
			// If-None-Match) is denied to everyone.
			if get(st, "Effect") == "Deny" && get(st, "Principal") == "*" && fmt.Sprint(get(st, "Action")) == "s3:PutObject" &&
				fmt.Sprint(get(st, "Condition", "Null", "s3:if-none-match")) == "true" &&
				reflect.DeepEqual(get(st, "Resource"), object{"Fn::Sub": "${CheckpointBucket.Arn}/checkpoints/*"}) {
				writeOnce = true
			}
			if get(st, "Effect") == "Deny" && get(st, "Principal") == "*" && slices.Contains(list(get(st, "Action")), any("s3:*")) &&
				fmt.Sprint(get(st, "Condition", "Bool", "aws:SecureTransport")) == "false" &&
				slices.ContainsFunc(res, func(r any) bool { return reflect.DeepEqual(r, bucketArn) }) &&
				slices.ContainsFunc(res, func(r any) bool { return reflect.DeepEqual(r, objectsArn) }) {
				tlsOnly = true
			}
		}
	}
	if !tlsOnly {
		t.Error("CheckpointBucket: no bucket policy denies s3:* on the bucket and its objects when aws:SecureTransport is false")
	}
	if !writeOnce {
		t.Error("CheckpointBucket: no bucket policy denies s3:PutObject on checkpoints/* without If-None-Match (a checkpoint is written once)")
	}

	// The sweeper's grant is the prefix the code writes each checkpoint
	// under; no other role may touch the bucket.
	const prefix = "checkpoints/"
	if k := anchor.CheckpointKey("0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b", 1); !strings.HasPrefix(k, prefix) {
		t.Errorf("the sweeper writes checkpoints at %s, outside the %s its role may write", k, prefix)
	}
	for _, fnID := range keys(functionPackages) {
		_, stmts := roleStatements(t, raw, fnID)
		var got []string
		for _, st := range stmts {
			for _, a := range st.actions {
				mentions := strings.Contains(fmt.Sprint(st.resources), "CheckpointBucket")
				if !strings.HasPrefix(strings.ToLower(a), "s3:") && !mentions {
					continue
				}
				for _, r := range st.resources {
					got = append(got, a+" on "+resourceKey(r)+st.when)
				}
			}
		}
		var want []string
		if fnID == "SweeperFunction" {
			want = []string{"s3:PutObject on sub:${CheckpointBucket.Arn}/" + prefix + "*", "s3:GetObject on sub:${CheckpointBucket.Arn}/" + prefix + "*",
				"s3:ListBucket on CheckpointBucket.Arn"}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: on the checkpoint bucket %v, want %v (only the sweeper writes new checkpoints, and reads them back)", fnID, got, want)
		}
	}
}
