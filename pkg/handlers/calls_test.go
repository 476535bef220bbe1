package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/internal/awscalls"
	"github.com/seed-f6d3920e/warrant/internal/wire"
	"github.com/seed-f6d3920e/warrant/pkg/anchor"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
	"github.com/seed-f6d3920e/warrant/pkg/sqs"
)

var updateCalls = flag.Bool("update-calls", false, "rewrite docs/DEPLOY.md's table of the functions' calls from TestRolesCoverCalls")

// stackFunctions are the functions of the test stack, by their template
// names (<name>Function, <name>Role).
var stackFunctions = []string{"Invoke", "Approve", "Resume", "Runs", "Worker", "Sweeper", "StreamReduce"}

// iamReport is deploy/iamcheck.py's output.
type iamReport struct {
	Functions map[string]struct {
		Role  string `json:"role"`
		Calls []struct {
			Action        string   `json:"action"`
			Resource      string   `json:"resource"`
			Operations    []string `json:"operations"`
			AllowedBy     string   `json:"allowed_by"`
			AlsoAllowedBy []string `json:"also_allowed_by"`
			NotEvaluated  []string `json:"conditions_not_evaluated"`
		} `json:"calls"`
		Denied  []deniedCall `json:"denied"`
		Unused  []string     `json:"unused"`
		Removal []struct {
			Statement string       `json:"statement"`
			Denied    []deniedCall `json:"denied"`
		} `json:"removal"`
		Redundant []string `json:"redundant"`
	} `json:"functions"`
}

type deniedCall struct {
	Action     string   `json:"action"`
	Resource   string   `json:"resource"`
	Operations []string `json:"operations"`
}

// denial is how the check names a call a role does not allow.
func denial(function, role string, d deniedCall) string {
	return fmt.Sprintf("%s (%s) is not allowed %s on %s", function, role, d.Action, d.Resource)
}

// TestRolesCoverCalls walks the demo (invoke, the worker, held on the
// filing's warrant, the pending list, approved with counsel's edit,
// resumed, stream-reduce, a sweep, the evidence) on a stack whose functions
// record every AWS call they make, and checks each against the function's
// role in the translated template with moto's IAM evaluator
// (deploy/iamcheck.py). A call the role does not allow fails, naming the
// function, the action and the resource; so does a statement whose removal
// denies nothing the walk needs without being reported redundant. The
// tables in docs/DEPLOY.md ("What each function calls") are this check's
// output (-update-calls rewrites them).
func TestRolesCoverCalls(t *testing.T) {
	py := pythonWith(t, "moto", "samtranslator")
	rec := &awscalls.Recorder{}
	m := newMotoAWS(t)
	s := newStack(t, stackOptions{calls: rec, aws: m})
	h := s.startHeld(t)
	if len(listApprovals(t, s)) == 0 {
		t.Fatal("the held run's warrant is not pending")
	}
	if resp := s.call(approveEdited(t, h, filingEdit(fixMatter, "Amended Motion to Compel"))); resp.StatusCode != 200 {
		t.Fatalf("approve edited: %d %s", resp.StatusCode, resp.Body)
	}
	if v := decode[handlers.RunView](t, s.call(resumeReq(t, h))); v.Status != "completed" {
		t.Fatalf("resume: %+v", v)
	}
	if rep := s.settle(h.runID); rep.Checkpoints != 1 {
		t.Fatalf("sweep: %+v, want one checkpoint", rep)
	}
	s.bundle(h.runID, nil)
	s.trusted()

	dir := t.TempDir()
	transformed := filepath.Join(dir, "transformed.json")
	run(t, py, filepath.Join("..", "..", "deploy", "translate.py"), filepath.Join("..", "..", "template.yaml"), "--out", transformed)
	rep := iamCheck(t, py, dir, transformed, s, m, rec.Calls())
	for _, fn := range stackFunctions {
		if _, ok := rep.Functions[fn]; !ok {
			t.Errorf("%s made no AWS call on the walk: the stack did not record it", fn)
		}
	}
	for fn, r := range rep.Functions {
		for _, d := range r.Denied {
			t.Errorf("%s (by %s)", denial(fn, r.Role, d), strings.Join(d.Operations, ", "))
		}
		// Each statement a call needed is needed: without it, some call
		// of the walk is denied, and the check names it; or it is reported
		// redundant (another statement allows each of its calls).
		for _, rm := range r.Removal {
			if len(rm.Denied) == 0 {
				if !slices.Contains(r.Redundant, rm.Statement) {
					t.Errorf("%s: without %s nothing is denied, yet it is not reported redundant", fn, rm.Statement)
				}
				t.Logf("%s: statement %s is redundant: another statement allows every call it allows", fn, rm.Statement)
				continue
			}
			d := rm.Denied[0]
			if msg := denial(fn, r.Role, deniedCall{Action: d.Action, Resource: d.Resource}); !strings.Contains(msg, fn) ||
				!strings.Contains(msg, d.Action) || !strings.Contains(msg, d.Resource) {
				t.Errorf("without %s: %q does not name the function, the action and the resource", rm.Statement, msg)
			}
		}
	}
	// The removal, end to end: the template without StreamReduceRole's
	// statement that lets it update projections, checked again, denies
	// a call of the walk and names it.
	cut := filepath.Join(dir, "cut.json")
	withoutStatement(t, transformed, cut, "StreamReduceRole", "Projection")
	cutRep := iamCheck(t, py, dir, cut, s, m, rec.Calls())
	if r := cutRep.Functions["StreamReduce"]; len(r.Denied) == 0 {
		t.Error("without StreamReduceRole's Projection statement, no call of the walk is denied")
	} else if msg := denial("StreamReduce", r.Role, r.Denied[0]); !strings.Contains(msg, "StreamReduce") ||
		!strings.Contains(msg, "dynamodb:") || !strings.Contains(msg, ":table/") {
		t.Errorf("the denial %q does not name the function, the action and the resource", msg)
	}

	doc := callsTables(rep)
	path := filepath.Join("..", "..", "docs", "DEPLOY.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- calls:begin (TestRolesCoverCalls -update-calls writes this) -->\n", "<!-- calls:end -->"
	i, j := bytes.Index(raw, []byte(begin)), bytes.Index(raw, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("docs/DEPLOY.md has no %q ... %q section", strings.TrimSpace(begin), end)
	}
	if got := string(raw[i+len(begin) : j]); got != doc {
		if !*updateCalls {
			t.Errorf("docs/DEPLOY.md's tables of the functions' calls are not what the check finds (go test ./pkg/handlers -run TestRolesCoverCalls -update-calls); the check finds:\n%s", doc)
			return
		}
		out := slices.Concat(raw[:i+len(begin)], []byte(doc), raw[j:])
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// iamCheck runs deploy/iamcheck.py on calls against the translated template.
// The stack's table, bus, keys, bucket and queue are the template's.
func iamCheck(t *testing.T, py, dir, transformed string, s *stack, m *motoAWS, calls []awscalls.Call) iamReport {
	t.Helper()
	names := m.names()
	names[s.table], names["warrant-test-notifications"] = "Table", "NotificationBus"
	in, err := json.Marshal(map[string]any{"names": names, "calls": calls})
	if err != nil {
		t.Fatal(err)
	}
	callsPath := filepath.Join(dir, "calls.json")
	if err := os.WriteFile(callsPath, in, 0o600); err != nil {
		t.Fatal(err)
	}
	out := run(t, py, filepath.Join("..", "..", "deploy", "iamcheck.py"), transformed, callsPath,
		"--samconfig", filepath.Join("..", "..", "samconfig.toml"))
	var rep iamReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("iamcheck output: %v\n%s", err, out)
	}
	return rep
}

// withoutStatement copies the translated template at from to to, role's
// statement sid removed.
func withoutStatement(t *testing.T, from, to, role, sid string) {
	t.Helper()
	raw, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	var tpl map[string]any
	if err := json.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	removed := false
	props := tpl["Resources"].(map[string]any)[role].(map[string]any)["Properties"].(map[string]any)
	for _, p := range props["Policies"].([]any) {
		doc := p.(map[string]any)["PolicyDocument"].(map[string]any)
		doc["Statement"] = slices.DeleteFunc(doc["Statement"].([]any), func(st any) bool {
			m, ok := st.(map[string]any)
			if ok && m["Sid"] == sid {
				removed = true
			}
			return ok && m["Sid"] == sid
		})
	}
	if !removed {
		t.Fatalf("%s has no statement %s", role, sid)
	}
	out, _ := json.Marshal(tpl)
	if err := os.WriteFile(to, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// callsTables is docs/DEPLOY.md's tables: per function, each call, the
// statement that allows it and the conditions the evaluator did not.
func callsTables(rep iamReport) string {
	var b strings.Builder
	for _, fn := range stackFunctions {
		r, ok := rep.Functions[fn]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "\n#### %s (%s)\n\n", fn, r.Role)
		b.WriteString("| Action | Resource | Made by | Allowed by | Conditions not evaluated |\n| --- | --- | --- | --- | --- |\n")
		for _, c := range r.Calls {
			by := strings.Join(append([]string{c.AllowedBy}, c.AlsoAllowedBy...), ", ")
			conds := "none"
			if len(c.NotEvaluated) > 0 {
				conds = strings.Join(c.NotEvaluated, ", ")
			}
			fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s |\n", c.Action, c.Resource, strings.Join(c.Operations, ", "), by, conds)
		}
		for _, d := range r.Denied {
			fmt.Fprintf(&b, "| `%s` | `%s` | %s | **denied** | |\n", d.Action, d.Resource, strings.Join(d.Operations, ", "))
		}
		unused := "none"
		if len(r.Unused) > 0 {
			unused = strings.Join(r.Unused, ", ")
		}
		fmt.Fprintf(&b, "\nStatements no call of the walk needed: %s.\n", unused)
		if len(r.Redundant) > 0 {
			fmt.Fprintf(&b, "Redundant (another statement allows each of their calls): %s.\n", strings.Join(r.Redundant, ", "))
		}
	}
	b.WriteString("\n")
	return b.String()
}

// pythonWith is python3 if it imports each module; else the test is
// skipped (failed when CI=true: CI installs them).
func pythonWith(t *testing.T, modules ...string) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import "+strings.Join(modules, ", ")).Run()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 with %v is required in CI: %v", modules, err)
		}
		t.Skipf("python3 with %v: %v", modules, err)
	}
	return py
}

// run runs a command and returns its standard output; a failure fails
// the test with its standard error.
func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// motoAWS is what a recording stack reaches on moto_server rather than in
// process: the ledger key (HMAC_256) and the firm's data key, the
// checkpoint bucket and the worker queue. The receipt key stays local:
// moto signs a DIGEST message hashed again, so its receipts would not
// verify (pkg/anchor's TestKMSSignerOnMoto).
type motoAWS struct {
	url                                         string
	ledgerKey, dataKey, bucket, queueURL, queue string
}

func newMotoAWS(t *testing.T) *motoAWS {
	t.Helper()
	m := &motoAWS{url: dynamotest.Moto(t).URL}
	ctx := t.Context()
	k := m.kms(nil)
	for _, key := range []struct {
		arn   *string
		spec  kmstypes.KeySpec
		usage kmstypes.KeyUsageType
	}{{&m.ledgerKey, kmstypes.KeySpecHmac256, kmstypes.KeyUsageTypeGenerateVerifyMac},
		{&m.dataKey, kmstypes.KeySpecSymmetricDefault, kmstypes.KeyUsageTypeEncryptDecrypt}} {
		out, err := k.CreateKey(ctx, &kms.CreateKeyInput{KeySpec: key.spec, KeyUsage: key.usage})
		if err != nil {
			t.Fatalf("moto CreateKey %s: %v", key.spec, err)
		}
		*key.arn = aws.ToString(out.KeyMetadata.Arn)
	}
	suffix := strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	m.bucket, m.queue = "warrant-test-checkpoints-"+suffix, "warrant-test-worker-"+suffix
	if _, err := m.s3(nil).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(m.bucket)}); err != nil {
		t.Fatalf("moto CreateBucket: %v", err)
	}
	q, err := m.sqs(nil).CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(m.queue)})
	if err != nil {
		t.Fatalf("moto CreateQueue: %v", err)
	}
	m.queueURL = aws.ToString(q.QueueUrl)
	t.Cleanup(func() {
		_, _ = m.sqs(nil).DeleteQueue(context.Background(), &awssqs.DeleteQueueInput{QueueUrl: q.QueueUrl})
	})
	return m
}

// names maps the moto resources' names to the template's resources, for
// deploy/iamcheck.py.
func (m *motoAWS) names() map[string]string {
	id := func(arn string) string { return arn[strings.LastIndex(arn, "/")+1:] }
	return map[string]string{id(m.ledgerKey): "LedgerKey", id(m.dataKey): "DataKey", m.bucket: "CheckpointBucket", m.queue: "WorkerQueue"}
}

func (m *motoAWS) options(rec func(*middleware.Stack) error) (string, aws.CredentialsProvider, []func(*middleware.Stack) error) {
	var opts []func(*middleware.Stack) error
	if rec != nil {
		opts = append(opts, rec)
	}
	return "us-east-1", credentials.NewStaticCredentialsProvider("test", "test", ""), opts
}

func (m *motoAWS) kms(rec func(*middleware.Stack) error) *kms.Client {
	region, creds, opts := m.options(rec)
	return kms.New(kms.Options{Region: region, BaseEndpoint: aws.String(m.url), Credentials: creds, APIOptions: opts})
}

func (m *motoAWS) s3(rec func(*middleware.Stack) error) *s3.Client {
	region, creds, opts := m.options(rec)
	return s3.New(s3.Options{Region: region, BaseEndpoint: aws.String(m.url), Credentials: creds, APIOptions: opts, UsePathStyle: true,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired})
}

func (m *motoAWS) sqs(rec func(*middleware.Stack) error) *awssqs.Client {
	region, creds, opts := m.options(rec)
	return awssqs.New(awssqs.Options{Region: region, BaseEndpoint: aws.String(m.url), Credentials: creds, APIOptions: opts})
}

// own is d with the keys, the checkpoint bucket and the queue reached
// through function's own clients (rec records them), as wire.Load builds
// them from "kms:<ARN>" keys, CHECKPOINT_BUCKET and QUEUE_URL.
func (m *motoAWS) own(t *testing.T, d wire.Deps, rec func(*middleware.Stack) error) wire.Deps {
	t.Helper()
	k := m.kms(rec)
	key, err := anchor.Parse("kms:"+m.ledgerKey, func() anchor.KMSClient { return k })
	if err != nil {
		t.Fatal(err)
	}
	d.Keys = anchor.NewKeyring(key)
	if d.DataKeys != nil {
		if d.DataKeys, err = wire.DataKeys("kms:"+m.dataKey, func() seal.KMSClient { return k }); err != nil {
			t.Fatal(err)
		}
	}
	if d.Evidence != nil {
		ev := *d.Evidence
		ev.Sink = &anchor.S3Sink{Client: m.s3(rec), Bucket: m.bucket}
		d.Evidence = &ev
	}
	if d.Queue != nil {
		d.Queue = teeQueue{sqs.New(m.sqs(rec), m.queueURL), d.Queue}
	}
	return d
}

// teeQueue sends each message to the SQS queue (the call the role must
// allow) and to the stack's memQueue, which delivers it to the worker.
type teeQueue struct{ sqs, mem handlers.Enqueuer }

func (q teeQueue) Enqueue(ctx context.Context, msg contracts.WorkerMessage) error {
	if err := q.sqs.Enqueue(ctx, msg); err != nil {
		return err
	}
	return q.mem.Enqueue(ctx, msg)
}
