package deploy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/seed-f6d3920e/warrant/internal/proc"
	"github.com/seed-f6d3920e/warrant/pkg/anchor"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
)

// rehearsal is what deploy/rehearsal/standup.py prints.
type rehearsal struct {
	Endpoint  string `json:"endpoint"`
	Admin     creds  `json:"admin"`
	Functions map[string]struct {
		Name        string            `json:"name"`
		Role        string            `json:"role"`
		RoleName    string            `json:"role_name"`
		Environment map[string]string `json:"environment"`
		Credentials creds             `json:"credentials"`
	} `json:"functions"`
	SetupSeconds float64 `json:"setup_seconds"`
}

type creds struct {
	AccessKeyID     string `json:"AccessKeyId"`
	SecretAccessKey string `json:"SecretAccessKey"`
	SessionToken    string `json:"SessionToken"`
}

// TestDeployRehearsal (issue 28, items 1, 2 and 4 for a sample): the
// translated template stood up in moto by deploy/rehearsal/standup.py, with
// moto's IAM enforcement on and every call authorized against the resource
// it names (deploy/rehearsal/moto_iam.py). Every resource a function's
// environment names exists as declared; each function, with its own role's
// credentials and the AWS SDK the functions use, may make a call its role
// allows and is denied one it does not; and with the statement that allowed
// a call removed from the role, that exact call is denied. `make
// deploy-rehearsal` runs this test alone.
func TestDeployRehearsal(t *testing.T) {
	if testing.Short() {
		t.Skip("stands the stack up in moto; skipped with -short")
	}
	python := requirePython(t, "moto", "boto3", "werkzeug", "samtranslator")
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	translated := filepath.Join(dir, "translated.json")
	runPython(t, root, python, "deploy/translate.py", "template.yaml", "--out", translated)

	decisions := filepath.Join(dir, "decisions.jsonl")
	endpoint := startMotoIAM(t, root, python, decisions)
	state := filepath.Join(dir, "standup.json")
	start := time.Now()
	runPython(t, root, python, "deploy/rehearsal/standup.py", "--endpoint", endpoint, "--translated", translated,
		"--samconfig", "samconfig.toml", "--out", state)
	t.Logf("standup: %s", time.Since(start).Round(time.Millisecond))
	var r rehearsal
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	want := []string{"ApproveFunction", "InvokeFunction", "ResumeFunction", "RunsFunction", "StreamReduceFunction", "SweeperFunction", "WorkerFunction"}
	var got []string
	for f := range r.Functions {
		got = append(got, f)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("standup gave functions %v, want %v", got, want)
	}

	admin := newClients(r.Endpoint, r.Admin)
	t.Run("environment", func(t *testing.T) { checkEnvironment(t, r, admin) })

	fn := func(name string) (*clients, map[string]string) {
		f := r.Functions[name]
		return newClients(r.Endpoint, f.Credentials), f.Environment
	}
	runs, runsEnv := fn("RunsFunction")
	reduce, reduceEnv := fn("StreamReduceFunction")
	sweeper, sweeperEnv := fn("SweeperFunction")
	invoke, invokeEnv := fn("InvokeFunction")
	approve, approveEnv := fn("ApproveFunction")
	table := runsEnv["TABLE_NAME"]
	tableArn := "arn:aws:dynamodb:us-east-1:123456789012:table/" + table
	receiptKey := strings.TrimPrefix(reduceEnv["RECEIPT_KEY"], "kms:")
	ledgerKey := strings.TrimPrefix(approveEnv["LEDGER_KEY"], "kms:")
	bucket := sweeperEnv["CHECKPOINT_BUCKET"]
	checkpoint := anchor.CheckpointKey("rehearsal-firm", 1)
	busArn := "arn:aws:events:us-east-1:123456789012:event-bus/" + reduceEnv["EVENT_BUS_NAME"]
	queueArn := queueArnOf(t, admin, invokeEnv["QUEUE_URL"])

	getItem := func(c *clients) error {
		_, err := c.ddb.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table),
			Key: map[string]ddbtypes.AttributeValue{"PK": &ddbtypes.AttributeValueMemberS{Value: "FIRM#rehearsal"}, "SK": &ddbtypes.AttributeValueMemberS{Value: "SETTINGS"}}})
		return err
	}
	putItem := func(c *clients) error {
		_, err := c.ddb.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table),
			Item: map[string]ddbtypes.AttributeValue{"PK": &ddbtypes.AttributeValueMemberS{Value: "FIRM#rehearsal"}, "SK": &ddbtypes.AttributeValueMemberS{Value: "REHEARSAL"}}})
		return err
	}
	queryLeases := func(c *clients) error {
		_, err := c.ddb.Query(t.Context(), &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("GSI2"),
			KeyConditionExpression:    aws.String("GSI2PK = :p"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": &ddbtypes.AttributeValueMemberS{Value: "LEASE"}}})
		return err
	}
	sign := func(c *clients) error {
		_, err := c.kms.Sign(t.Context(), &kms.SignInput{KeyId: aws.String(receiptKey), Message: make([]byte, 32),
			MessageType: kmstypes.MessageTypeDigest, SigningAlgorithm: kmstypes.SigningAlgorithmSpecEcdsaSha256})
		return err
	}
	mac := func(c *clients) error {
		_, err := c.kms.GenerateMac(t.Context(), &kms.GenerateMacInput{KeyId: aws.String(ledgerKey), Message: []byte("head"),
			MacAlgorithm: kmstypes.MacAlgorithmSpecHmacSha256})
		return err
	}
	n := int64(0)
	putCheckpoint := func(c *clients) error {
		n++ // each put a new number: the sink writes a number once
		return (&anchor.S3Sink{Client: c.s3, Bucket: bucket}).PutCheckpoint(t.Context(), "rehearsal-firm", n, evidence.Signed{Body: "{}", Signature: "rehearsal"})
	}
	send := func(c *clients) error {
		_, err := c.sqs.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(invokeEnv["QUEUE_URL"]), MessageBody: aws.String("{}")})
		return err
	}
	publish := func(c *clients) error {
		out, err := c.eb.PutEvents(t.Context(), &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
			EventBusName: aws.String(reduceEnv["EVENT_BUS_NAME"]), Source: aws.String("io.warrant"), DetailType: aws.String("warrant.pending"), Detail: aws.String("{}")}}})
		if err == nil && out.FailedEntryCount != 0 {
			err = fmt.Errorf("%d entries failed", out.FailedEntryCount)
		}
		return err
	}

	log := decisionLog(decisions)
	cases := []struct {
		allowed, denied  string // the functions
		ac, dc           *clients
		action, resource string
		call             func(*clients) error
	}{
		{"SweeperFunction", "RunsFunction", sweeper, runs, "dynamodb:Query", tableArn + "/index/GSI2", queryLeases},
		{"InvokeFunction", "RunsFunction", invoke, runs, "dynamodb:PutItem", tableArn, putItem},
		{"StreamReduceFunction", "RunsFunction", reduce, runs, "kms:Sign", "arn:aws:kms:us-east-1:123456789012:key/" + keyID(receiptKey), sign},
		{"ApproveFunction", "RunsFunction", approve, runs, "kms:GenerateMac", "arn:aws:kms:us-east-1:123456789012:key/" + keyID(ledgerKey), mac},
		{"SweeperFunction", "StreamReduceFunction", sweeper, reduce, "s3:PutObject", "arn:aws:s3:::" + bucket + "/" + checkpoint, nil},
		{"InvokeFunction", "RunsFunction", invoke, runs, "sqs:SendMessage", queueArn, send},
		{"StreamReduceFunction", "RunsFunction", reduce, runs, "events:PutEvents", busArn, publish},
	}
	for _, c := range cases {
		call := c.call
		resource := c.resource
		if call == nil { // the checkpoint: each put names its own key
			call = putCheckpoint
		}
		t.Run(c.action, func(t *testing.T) {
			if err := call(c.ac); err != nil {
				t.Fatalf("%s: %s on %s: %v, want allowed (its role allows it)", c.allowed, c.action, resource, err)
			}
			if c.action == "s3:PutObject" {
				resource = "arn:aws:s3:::" + bucket + "/" + anchor.CheckpointKey("rehearsal-firm", n)
				checkLocked(t, admin, bucket, anchor.CheckpointKey("rehearsal-firm", n))
			}
			log.must(t, r.Functions[c.allowed].RoleName, c.action, resource, "allowed")
			err := call(c.dc)
			if c.action == "s3:PutObject" {
				resource = "arn:aws:s3:::" + bucket + "/" + anchor.CheckpointKey("rehearsal-firm", n)
			}
			if !accessDenied(err) {
				t.Fatalf("%s: %s on %s: %v, want AccessDenied (its role does not allow it)", c.denied, c.action, resource, err)
			}
			log.must(t, r.Functions[c.denied].RoleName, c.action, resource, "denied")
		})
	}

	// The removal proof: the same call, allowed, then denied once the one
	// statement that allowed it is gone from its role.
	removals := []struct {
		function, sid, action, resource string
		c                               *clients
		call                            func(*clients) error
	}{
		{"RunsFunction", "ReadRunItems", "dynamodb:GetItem", tableArn, runs, getItem},
		{"StreamReduceFunction", "SignWithReceiptKey", "kms:Sign", "arn:aws:kms:us-east-1:123456789012:key/" + keyID(receiptKey), reduce, sign},
	}
	for _, m := range removals {
		t.Run("without "+m.function+":"+m.sid, func(t *testing.T) {
			if err := m.call(m.c); err != nil {
				t.Fatalf("%s: %s on %s before the removal: %v", m.function, m.action, m.resource, err)
			}
			runPython(t, root, python, "deploy/rehearsal/standup.py", "--state", state, "--without", m.function+":"+m.sid)
			err := m.call(m.c)
			if !accessDenied(err) {
				t.Fatalf("%s without statement %s: %s on %s answered %v, want AccessDenied", m.function, m.sid, m.action, m.resource, err)
			}
			log.must(t, r.Functions[m.function].RoleName, m.action, m.resource, "denied")
			t.Logf("%s without statement %s: %s on %s is denied", m.function, m.sid, m.action, m.resource)
		})
	}
}

// checkEnvironment: every resource a function's environment names exists in
// moto, as the template declares it. An environment value naming a resource
// of a kind not checked here fails the test, so a new one is not skipped.
func checkEnvironment(t *testing.T, r rehearsal, admin *clients) {
	ctx := t.Context()
	for name, f := range r.Functions {
		for k, v := range f.Environment {
			switch k {
			case "TABLE_NAME":
				out, err := admin.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(v)})
				if err != nil {
					t.Errorf("%s %s=%s: %v", name, k, v, err)
					continue
				}
				d := out.Table
				var idx []string
				for _, g := range d.GlobalSecondaryIndexes {
					idx = append(idx, aws.ToString(g.IndexName))
				}
				slices.Sort(idx)
				if !slices.Equal(idx, []string{"GSI1", "GSI2"}) || d.StreamSpecification == nil || !aws.ToBool(d.StreamSpecification.StreamEnabled) ||
					d.StreamSpecification.StreamViewType != ddbtypes.StreamViewTypeNewImage || d.SSEDescription == nil || d.SSEDescription.SSEType != ddbtypes.SSETypeKms {
					t.Errorf("%s %s=%s: indexes %v, stream %+v, encryption %+v; want GSI1, GSI2, a NEW_IMAGE stream, KMS", name, k, v, idx, d.StreamSpecification, d.SSEDescription)
				}
				pitr, err := admin.ddb.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String(v)})
				if err != nil || pitr.ContinuousBackupsDescription.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus != ddbtypes.PointInTimeRecoveryStatusEnabled {
					t.Errorf("%s %s=%s: point-in-time recovery not enabled (%v)", name, k, v, err)
				}
				ttl, err := admin.ddb.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(v)})
				if err != nil || ttl.TimeToLiveDescription == nil || aws.ToString(ttl.TimeToLiveDescription.AttributeName) != dynamo.AttrTTL ||
					ttl.TimeToLiveDescription.TimeToLiveStatus != ddbtypes.TimeToLiveStatusEnabled {
					t.Errorf("%s %s=%s: time to live %+v (%v); want %s enabled", name, k, v, ttl, err, dynamo.AttrTTL)
				}
			case "QUEUE_URL":
				out, err := admin.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(v),
					AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
				if err != nil {
					t.Errorf("%s %s=%s: %v", name, k, v, err)
					continue
				}
				if out.Attributes["VisibilityTimeout"] != "3600" || !strings.Contains(out.Attributes["RedrivePolicy"], `"maxReceiveCount": 3`) ||
					out.Attributes["KmsMasterKeyId"] == "" {
					t.Errorf("%s %s=%s: attributes %v; want the worker queue's timeout, redrive and key", name, k, v, out.Attributes)
				}
			case "CHECKPOINT_BUCKET":
				out, err := admin.s3.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String(v)})
				if err != nil {
					t.Errorf("%s %s=%s: %v", name, k, v, err)
					continue
				}
				c := out.ObjectLockConfiguration
				if c == nil || c.ObjectLockEnabled != "Enabled" || c.Rule == nil || c.Rule.DefaultRetention == nil ||
					c.Rule.DefaultRetention.Mode != "GOVERNANCE" || aws.ToInt32(c.Rule.DefaultRetention.Days) != 365 {
					t.Errorf("%s %s=%s: object lock %+v; want enabled, GOVERNANCE for 365 days (the defaults)", name, k, v, c)
				}
			case "LEDGER_KEY", "RECEIPT_KEY", "DATA_KEY":
				want := map[string][2]string{
					"LEDGER_KEY":  {"HMAC_256", "GENERATE_VERIFY_MAC"},
					"RECEIPT_KEY": {"ECC_NIST_P256", "SIGN_VERIFY"},
					"DATA_KEY":    {"SYMMETRIC_DEFAULT", "ENCRYPT_DECRYPT"},
				}[k]
				spec, usage := want[0], want[1]
				out, err := admin.kms.DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: aws.String(strings.TrimPrefix(v, "kms:"))})
				if err != nil {
					t.Errorf("%s %s=%s: %v", name, k, v, err)
					continue
				}
				if string(out.KeyMetadata.KeySpec) != spec || string(out.KeyMetadata.KeyUsage) != usage {
					t.Errorf("%s %s=%s: %s %s, want %s %s", name, k, v, out.KeyMetadata.KeySpec, out.KeyMetadata.KeyUsage, spec, usage)
				}
			case "EVENT_BUS_NAME":
				if _, err := admin.eb.DescribeEventBus(ctx, &eventbridge.DescribeEventBusInput{Name: aws.String(v)}); err != nil {
					t.Errorf("%s %s=%s: %v", name, k, v, err)
				}
			case "DESK_URL":
				// The HTTP API's id in the URL; its stage and routes are not stood up.
				if !strings.HasPrefix(v, "https://") || !strings.HasSuffix(v, ".execute-api.us-east-1.amazonaws.com/dev/desk") {
					t.Errorf("%s %s=%s: not the API's desk URL", name, k, v)
				}
			default:
				if strings.Contains(v, "arn:") || strings.Contains(v, r.Endpoint) {
					t.Errorf("%s %s=%s names a resource this test does not check", name, k, v)
				}
			}
		}
	}
}

// checkLocked: the checkpoint the sweeper wrote is under the bucket's
// default retention (the sweeper sends none of its own).
func checkLocked(t *testing.T, admin *clients, bucket, key string) {
	t.Helper()
	out, err := admin.s3.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("head %s: %v", key, err)
	}
	if out.ObjectLockMode != "GOVERNANCE" || out.ObjectLockRetainUntilDate == nil || !out.ObjectLockRetainUntilDate.After(time.Now().AddDate(0, 11, 0)) {
		t.Errorf("checkpoint %s: lock %q until %v, want GOVERNANCE for a year", key, out.ObjectLockMode, out.ObjectLockRetainUntilDate)
	}
}

type clients struct {
	ddb *dynamodb.Client
	kms *kms.Client
	s3  *s3.Client
	sqs *sqs.Client
	eb  *eventbridge.Client
}

// newClients: the SDK's clients on moto with these credentials, without
// retries, so a denial answers at once and counts nothing twice.
func newClients(endpoint string, c creds) *clients {
	cfg := aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken),
		// The SDK's standard retries: a connection moto's server closed
		// under load is retried, as the functions' clients retry it; an
		// AccessDenied is not retryable, so a denial is answered at once.
		Retryer: func() aws.Retryer { return retry.NewStandard() },
	}
	ep := aws.String(endpoint)
	return &clients{
		ddb: dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = ep }),
		kms: kms.NewFromConfig(cfg, func(o *kms.Options) { o.BaseEndpoint = ep }),
		s3:  s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint = ep; o.UsePathStyle = true }),
		sqs: sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = ep }),
		eb:  eventbridge.NewFromConfig(cfg, func(o *eventbridge.Options) { o.BaseEndpoint = ep }),
	}
}

func queueArnOf(t *testing.T, admin *clients, url string) string {
	out, err := admin.sqs.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Attributes["QueueArn"]
}

func keyID(arn string) string { return arn[strings.LastIndex(arn, "/")+1:] }

// accessDenied: moto's 403. Its denial is an XML error even for the JSON
// protocols, which the SDK may not decode into a code, so the status
// decides; the decision log then says which call it was.
func accessDenied(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) && strings.Contains(ae.ErrorCode(), "AccessDenied") {
		return true
	}
	var re *awshttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == 403
}

// decisionLog reads moto_iam.py's decisions file.
type decisionLog string

type decision struct {
	Role, Action, Resource, Decision string
}

// must fails the test unless moto decided this: role, action, resource.
func (p decisionLog) must(t *testing.T, role, action, resource, want string) {
	t.Helper()
	f, err := os.Open(string(p))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var d decision
		if json.Unmarshal(sc.Bytes(), &d) == nil && d.Role == role && d.Action == action && d.Resource == resource && d.Decision == want {
			return
		}
	}
	t.Errorf("moto's decisions hold no %s for role %s, %s on %s", want, role, action, resource)
}

// requirePython: a python3 that imports every module named; skips the test
// without one, fails it under CI=true.
func requirePython(t *testing.T, modules ...string) string {
	t.Helper()
	python := os.Getenv("PYTHON")
	if python == "" {
		python = "python3"
	}
	out, err := exec.Command(python, "-c", "import "+strings.Join(modules, ", ")).CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("%s with %s: %v\n%s", python, strings.Join(modules, ", "), err, out)
		if os.Getenv("CI") == "true" {
			t.Fatalf("required in CI: %s", msg)
		}
		t.Skip(msg)
	}
	return python
}

func runPython(t *testing.T, dir, python string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AWS_DEFAULT_REGION=us-east-1")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", python, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// startMotoIAM starts deploy/rehearsal/moto_iam.py on a free loopback port
// and waits (up to two minutes: a loaded machine imports moto slowly) for it
// to say it is ready; the test's cleanup stops it and its process group.
func startMotoIAM(t *testing.T, root, python, decisions string) string {
	t.Helper()
	return startMotoIAMLog(t, root, python, decisions, filepath.Join(t.TempDir(), "moto.log"))
}

// startMotoIAMLog is startMotoIAM with moto's log (its stderr: a line per
// request, with its status) at logPath.
func startMotoIAMLog(t *testing.T, root, python, decisions, logPath string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(python, "deploy/rehearsal/moto_iam.py", "--port", strconv.Itoa(port), "--decisions", decisions)
	cmd.Dir = root
	cmd.Stderr = logf
	cmd.SysProcAttr = proc.Group()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		proc.KillGroup(cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			proc.KillGroup(cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if url, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
				ready <- url
			}
		}
	}()
	select {
	case url := <-ready:
		return url
	case <-done:
		b, _ := os.ReadFile(logPath)
		t.Fatalf("moto_iam.py exited at start:\n%s", b)
	case <-time.After(2 * time.Minute):
		b, _ := os.ReadFile(logPath)
		t.Fatalf("moto_iam.py not ready within two minutes:\n%s", b)
	}
	return ""
}

// TestMakeDeployRehearsal: DEPLOY.md's "Deploy rehearsal" runs `make
// deploy-rehearsal`, and that target runs TestDeployRehearsal, so the
// command the document gives is the test above.
func TestMakeDeployRehearsal(t *testing.T) {
	if got := shCommands(section(t, deployDoc, "Deploy rehearsal")); !slices.Equal(got, []string{"make deploy-rehearsal"}) {
		t.Errorf("DEPLOY.md's Deploy rehearsal gives %q, want make deploy-rehearsal", got)
	}
	b, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	_, recipe, ok := strings.Cut(string(b), "\ndeploy-rehearsal:\n")
	recipe, _, _ = strings.Cut(recipe, "\n\n")
	want := "\t$(GO) test ./deploy -run TestDeployRehearsal -count=1"
	if !ok || strings.TrimRight(recipe, "\n") != want {
		t.Fatalf("the Makefile's deploy-rehearsal target:\n%s\nwant\n%s", recipe, want)
	}
}
