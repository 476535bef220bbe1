package main

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/truora/minidyn/server"

	"github.com/seed-f6d3920e/warrant/internal/lambdalocal"
	"github.com/seed-f6d3920e/warrant/internal/rie"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/config"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/eventbus/eventbustest"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/sqs/sqstest"
	"github.com/seed-f6d3920e/warrant/pkg/timestamp"
	"github.com/seed-f6d3920e/warrant/pkg/timestamp/openssltsa"
)

// DefaultModelID is the model the local stack's functions are configured
// with (the template's ModelId default; the fake Bedrock answers any id).
const DefaultModelID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

// StackConfig says what to run.
type StackConfig struct {
	TemplatePath string
	LogDir       string
	Progress     io.Writer // start-up lines; default os.Stderr
	// DynamoEndpoint is another DynamoDB endpoint (DYNAMODB_ENDPOINT); empty
	// runs minidyn in this process.
	DynamoEndpoint string
	TableName      string
	// ModelBackend "bedrock" calls real Bedrock with the caller's AWS
	// configuration; anything else runs the fake with the demo script.
	ModelBackend string
	ModelID      string
	// Only, when set, runs just these functions (folder names or logical ids).
	Only []string
	// LedgerKey is the functions' LEDGER_KEY (the key that signs ledger
	// heads). Empty: a fresh local HMAC key for this start, written to
	// <LogDir>/ledger.key for `warrant ledger verify --key @FILE`.
	LedgerKey string
	// ReceiptKey is the functions' RECEIPT_KEY (the P-256 key receipts
	// and checkpoints are signed with). Empty: a fresh local key for this
	// start, written to <LogDir>/receipt.key, its public half to
	// <LogDir>/receipt-public.pem for `warrant evidence verify --public-key`.
	ReceiptKey string
	// DataKey is the content functions' DATA_KEY (the key each run's data
	// key is made and opened under, pkg/seal). Empty: a fresh local
	// aes:<64 hex> master key for this start, written to <LogDir>/data.key
	// (0600); on AWS it is the firm's KMS key and never leaves KMS.
	DataKey string
	// DeskURL is the desk's URL the notifications link to (default
	// http://127.0.0.1:3000/desk; serve sets the gateway's).
	DeskURL string
	// ModelLatency is how long the fake model takes for each turn (0: it
	// answers at once); the runs that outlive an API call, on demand.
	ModelLatency time.Duration
	// VisibilityTimeout is every local queue's visibility timeout (the
	// template's, 3600 s for the worker queue, is far too long to wait for a
	// redelivery locally); 0 keeps the template's.
	VisibilityTimeout time.Duration
	// ModelScript is a scripted model's file (bedrocktest.ParseScript) the
	// fake answers from instead of the demo's.
	ModelScript string
	// ToolsAddr is where the reference tools' MCP server (cmd/toolserver)
	// listens: a loopback address (port 0: any free one).
	ToolsAddr string
	// Functions are the firm's own Lambda functions to serve beside the
	// reference tools' (warrant-reference-tools, cmd/toolfn): name -> Go
	// package, each built and run under an emulator behind the local Lambda
	// Invoke API, which the functions reach as AWS_ENDPOINT_URL_LAMBDA.
	Functions map[string]string
	// ToolCatalog, Agents and ToolPolicy are the functions' TOOL_CATALOG,
	// AGENTS and TOOL_POLICY ("file:PATH", relative to where localapi
	// runs, or "ssm:..."). An empty ToolCatalog is the local catalog: the
	// reference tools on the reference MCP server.
	ToolCatalog, Agents, ToolPolicy string
	// RetentionDay is how long a day of a retention lasts for the local
	// sweeper (RETENTION_DAY, LOCAL ONLY): seconds, as its schedules run
	// faster, so a matter's retention_days 1 passes while you watch. Zero:
	// 24 hours.
	RetentionDay time.Duration
	// Rehearsal, when set, runs the functions against a stand-up in moto
	// (deploy/rehearsal/standup.py's output, localapi -rehearsal): each
	// with exactly its stand-up environment and its own role's
	// credentials, the queue, the stream, the bus, the keys and the
	// checkpoint bucket moto's (see rehearsal.go), Bedrock the fake. The
	// table is the stand-up's; TableName, the keys, DynamoEndpoint,
	// ModelBackend, RetentionDay and the tool documents are not used. The
	// firm's systems (the reference tools) run beside it, outside moto.
	Rehearsal *Rehearsal
}

// Stack is the running local stack: DynamoDB, Bedrock and one emulator per
// function.
type Stack struct {
	cfg      StackConfig
	Template *Template
	Region   string

	ddbURL string
	ddbSrv *http.Server
	// systemsURL is the firm's systems' own DynamoDB in a rehearsal
	// (systemsDDB); "": the stack's.
	systemsURL string
	DDB        *dynamodb.Client
	Streams    *dynamodbstreams.Client
	model      *bedrocktest.Server
	tools      *toolServer
	lambdas    *lambdalocal.Endpoint // the firm's functions (cmd/toolfn and Functions)
	fnLog      *os.File
	// toolEnv is the functions' TOOL_CATALOG, AGENTS and TOOL_POLICY.
	toolEnv []string
	// agents are the keys of the agents the functions run (AGENTS).
	agents []string
	// checkpoints is the directory the sweeper keeps each checkpoint in
	// (CHECKPOINT_DIR), outside the table, as the bucket does on AWS;
	// tempCheckpoints: made for this stack (no LogDir), removed at Stop.
	checkpoints     string
	tempCheckpoints bool
	// tsa is the time-stamping authority on loopback (openssl ts -reply)
	// the sweeper timestamps each latest checkpoint at, as a public one on
	// AWS (TIMESTAMP_AUTHORITY_URL); nil without openssl.
	tsa *openssltsa.TSA
	// witness is the witness on loopback the sweeper submits checkpoints
	// to (WITNESSES); nil when the receipt key is not local.
	witness *localWitness

	// SQS serves the template's queues (sqstest), each named by its logical
	// id: <SQS.URL>/000000000000/WorkerQueue.
	SQS *sqstest.Server
	// Bus is the fake EventBridge the notifications go to; each event is
	// printed on the progress writer (what the stack would send).
	Bus    *eventbustest.Server
	Queues map[string]*sqstest.Queue // by logical id

	queueLogMu sync.Mutex
	queueLog   io.Writer // sends and dead letters, once serve sets it

	Emulators map[string]*rie.Emulator // by function folder name

	pidsMu   sync.Mutex
	pidsSeen []string
}

func (c StackConfig) progress() io.Writer {
	if c.Progress == nil {
		return os.Stderr
	}
	return c.Progress
}

func (s *Stack) say(format string, args ...any) {
	fmt.Fprintf(s.cfg.progress(), format+"\n", args...)
}

// StartStack brings the stack up. On error everything already started is
// stopped again.
func StartStack(ctx context.Context, cfg StackConfig) (_ *Stack, err error) {
	if cfg.TableName == "" {
		cfg.TableName = "warrant-local"
	}
	if cfg.ModelID == "" {
		cfg.ModelID = DefaultModelID
	}
	r := cfg.Rehearsal
	if r != nil {
		// The stand-up's table and keys: the walk reads the one and
		// verifies with the other, as an operator would.
		if cfg.TableName, err = r.tableName(); err != nil {
			return nil, err
		}
		approve, err := r.function("ApproveFunction")
		if err != nil {
			return nil, err
		}
		cfg.LedgerKey, cfg.ReceiptKey, cfg.DataKey = approve.Environment["LEDGER_KEY"], "", approve.Environment["DATA_KEY"]
		cfg.RetentionDay, cfg.DynamoEndpoint = 0, r.Endpoint
		// Bedrock stays on the fake: moto has no runtime for it, and the
		// rehearsal calls no real AWS.
		cfg.ModelBackend = ""
	}
	// The functions' documents first: a mistake in one stops the stack
	// before anything is built or started, naming its place.
	agents, err := checkConfiguration(cfg)
	if err != nil {
		return nil, err
	}
	s := &Stack{cfg: cfg, Emulators: map[string]*rie.Emulator{}, Region: envOr("AWS_REGION", envOr("AWS_DEFAULT_REGION", "us-east-1")), agents: agents}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if r != nil {
		s.Region = r.Region
		if err = s.startRehearsal(ctx); err != nil {
			return nil, err
		}
		return s, nil
	}
	if cfg.LedgerKey == "" {
		if cfg.LedgerKey, err = newLedgerKey(cfg.LogDir); err != nil {
			return nil, err
		}
		s.cfg.LedgerKey = cfg.LedgerKey
	}
	if cfg.ReceiptKey == "" {
		if cfg.ReceiptKey, err = newReceiptKey(cfg.LogDir); err != nil {
			return nil, err
		}
		s.cfg.ReceiptKey = cfg.ReceiptKey
	}
	if cfg.DataKey == "" {
		if cfg.DataKey, err = newDataKey(cfg.LogDir); err != nil {
			return nil, err
		}
		s.cfg.DataKey = cfg.DataKey
	}
	// The checkpoints are kept outside the table as on AWS, in a directory
	// standing in for the checkpoint bucket (there is no S3 here).
	if cfg.LogDir != "" {
		if s.checkpoints, err = filepath.Abs(filepath.Join(cfg.LogDir, "checkpoints")); err != nil {
			return nil, err
		}
	} else {
		if s.checkpoints, err = os.MkdirTemp("", "warrant-checkpoints-"); err != nil {
			return nil, err
		}
		s.tempCheckpoints = true
	}
	// SQS first: the functions' environment names the queues' URLs.
	if cfg.DeskURL == "" {
		cfg.DeskURL = "http://127.0.0.1:3000/desk"
	}
	// The notifications: a fake EventBridge that prints what it is sent.
	s.Bus = eventbustest.New()
	s.Bus.Out = &eventPrinter{s: s}
	locals := Locals{"TABLE_NAME": cfg.TableName, "MODEL_ID": cfg.ModelID, "LEDGER_KEY": cfg.LedgerKey,
		"RECEIPT_KEY": cfg.ReceiptKey, "RECEIPT_RETIRED_KEYS": "", "CHECKPOINT_BUCKET": "", "DATA_KEY": cfg.DataKey,
		"EVENT_BUS_NAME": "warrant-local-notifications", "DESK_URL": cfg.DeskURL}
	// A real TSA on loopback stands in for the firm's public one: its
	// files (tsa-ca.pem, for warrant evidence verify --tsa-cert and
	// openssl ts -verify) sit beside the checkpoints.
	if s.tsa, err = startTSA(filepath.Join(s.checkpoints, "tsa")); err != nil {
		s.say("timestamps: off (%v)", err)
	} else {
		locals["TIMESTAMP_AUTHORITY_URL"], locals["TIMESTAMP_AUTHORITY_CERTIFICATE"] = s.tsa.URL, string(s.tsa.CACertPEM)
		s.say("timestamps: a TSA on %s (openssl ts -reply), its CA in %s", s.tsa.URL, s.tsa.CAFile)
	}
	// A witness on loopback stands in for the client's or insurer's: the
	// sweeper submits each latest checkpoint to it (WITNESSES).
	if s.witness, err = startWitness(filepath.Join(s.checkpoints, "witness"), cfg.ReceiptKey); err != nil {
		s.say("witness: off (%v)", err)
	} else {
		locals["WITNESSES"] = s.witness.witnesses()
		s.say("witness: %s on %s, its verifier key in %s", s.witness.Key.Name, s.witness.URL, s.witness.VKeyFile)
	}
	if err := s.startQueues(locals); err != nil {
		return nil, err
	}
	tpl, err := LoadTemplate(cfg.TemplatePath, locals)
	if err != nil {
		return nil, err
	}
	s.Template = tpl
	funcs, err := s.selected()
	if err != nil {
		return nil, err
	}

	// DynamoDB.
	if cfg.DynamoEndpoint != "" {
		s.ddbURL = cfg.DynamoEndpoint
		s.DDB = dynamoClient(s.ddbURL, s.Region, awsHosted(cfg.DynamoEndpoint))
		s.Streams = streamsClient(s.ddbURL, s.Region, awsHosted(cfg.DynamoEndpoint))
		s.say("dynamodb: %s (DYNAMODB_ENDPOINT)", s.ddbURL)
	} else {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("dynamodb: %w", err)
		}
		s.ddbSrv = &http.Server{Handler: server.NewServer(), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = s.ddbSrv.Serve(ln) }()
		s.ddbURL = "http://" + ln.Addr().String()
		s.DDB = dynamoClient(s.ddbURL, s.Region, false)
		s.say("dynamodb: minidyn on %s", ln.Addr())
	}
	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err = dynamo.CreateTable(tctx, s.DDB, cfg.TableName)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("dynamodb: %w", err)
	}
	s.say("dynamodb: table %s", cfg.TableName)
	// The reference tools stand in for the firm's own systems, which keep
	// their own records (what a filing or an e-mail said) in their own
	// store, not in Warrant's table: a table of their own here.
	tctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	err = dynamo.CreateTable(tctx, s.DDB, s.SystemsTable())
	cancel()
	if err != nil {
		return nil, fmt.Errorf("dynamodb: %w", err)
	}
	s.say("dynamodb: table %s (the reference tools' own records, as a firm's systems keep theirs)", s.SystemsTable())
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	wrote, err := seed(sctx, s.DDB, cfg.TableName)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("dynamodb: seeding the dev firm: %w", err)
	}
	for _, w := range wrote {
		s.say("dynamodb: seeded %s", w)
	}
	if err = s.startFunctionsOf(ctx, funcs); err != nil {
		return nil, err
	}
	return s, nil
}

// selected are the template's functions the stack runs (StackConfig.Only).
func (s *Stack) selected() ([]*Function, error) {
	tpl := s.Template
	if len(s.cfg.Only) == 0 {
		return tpl.Functions, nil
	}
	var funcs []*Function
	for _, name := range s.cfg.Only {
		f := tpl.Function(name)
		if f == nil {
			var all []string
			for _, f := range tpl.Functions {
				all = append(all, f.Name)
			}
			return nil, fmt.Errorf("no function %q in %s (functions: %s)", name, s.cfg.TemplatePath, strings.Join(all, ", "))
		}
		funcs = append(funcs, f)
	}
	return funcs, nil
}

// startFunctionsOf starts Bedrock (the fake, unless real Bedrock), builds
// the functions and starts one emulator each, with the reference tools'
// server and the firm's functions (in a rehearsal, startRehearsalSystems).
func (s *Stack) startFunctionsOf(ctx context.Context, funcs []*Function) (err error) {
	cfg := s.cfg
	// Bedrock.
	if s.realBedrock() {
		s.say("bedrock: real Bedrock (MODEL_BACKEND=bedrock, region %s, model %s)", s.Region, cfg.ModelID)
	} else {
		script, name := bedrocktest.DemoScript(), "demo script"
		if cfg.ModelScript != "" {
			doc, err := os.ReadFile(cfg.ModelScript)
			if err != nil {
				return fmt.Errorf("bedrock: -model-script: %w", err)
			}
			if script, err = bedrocktest.ParseScript(doc); err != nil {
				return fmt.Errorf("bedrock: -model-script %s: %w", cfg.ModelScript, err)
			}
			name = "script " + cfg.ModelScript
		}
		s.model, err = bedrocktest.NewOn("127.0.0.1:0", script.WithDelay(cfg.ModelLatency))
		if err != nil {
			return fmt.Errorf("bedrock: %w", err)
		}
		latency := ""
		if cfg.ModelLatency > 0 {
			latency = fmt.Sprintf(", %s per turn", cfg.ModelLatency)
		}
		s.say("bedrock: fake on %s (%s%s)", strings.TrimPrefix(s.model.URL(), "http://"), name, latency)
	}

	// Lambdas (and the reference tools' MCP server): build, then one
	// emulator each.
	t0 := time.Now()
	bins, err := buildAll(ctx, funcs, filepath.Join(cfg.LogDir, "build"), moduleRoot(cfg.TemplatePath))
	if err != nil {
		return err
	}
	if cfg.Rehearsal == nil {
		if err := s.startTools(ctx, bins["toolserver"]); err != nil {
			return err
		}
		if err := s.startFunctions(ctx, bins["toolfn"]); err != nil {
			return err
		}
	} else if err := s.startRehearsalSystems(ctx, bins); err != nil {
		return err
	}
	// The emulator builds (once, into the Go build cache) after the
	// functions, not beside them: on an empty cache the two builds would
	// compile the same standard packages at once; one after the other, the
	// emulator's reuses them (BENCHMARKS.md, make run).
	if _, err := rie.Binary(ctx); err != nil {
		return err
	}
	names := make([]string, len(funcs))
	for i, f := range funcs {
		names[i] = f.Name
	}
	s.say("build: %s in %.1fs", strings.Join(names, ", "), time.Since(t0).Seconds())
	for _, f := range funcs {
		e, err := rie.Start(ctx, rie.Options{
			Name:      f.Name,
			Bootstrap: bins[f.Name],
			Env:       s.functionEnv(f),
			LogPath:   filepath.Join(cfg.LogDir, f.Name+".log"),
			Timeout:   f.Timeout,
		})
		if err != nil {
			return fmt.Errorf("lambda %s: %w", f.Name, err)
		}
		s.Emulators[f.Name] = e
		s.say("lambda %s: emulator on %s (pid %d, log %s)", f.Name, e.Addr(), e.PID(), filepath.Join(cfg.LogDir, f.Name+".log"))
	}
	s.WritePIDs()
	return nil
}

func (s *Stack) realBedrock() bool { return strings.EqualFold(s.cfg.ModelBackend, "bedrock") }

// awsHosted reports whether an endpoint is AWS's own (a real table), which
// needs the caller's credentials.
func awsHosted(endpoint string) bool {
	return strings.Contains(endpoint, ".amazonaws.com")
}

// passAWS is the caller's AWS configuration, passed to the functions when
// they call real AWS (Bedrock, or a real table). Unset variables are passed
// empty, which the SDK reads as unset: the emulator's fake credentials and
// /dev/null config files are not used then.
var passAWS = []string{
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
	"AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_DEFAULT_REGION",
	"AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_SESSION_NAME",
}

// functionEnv is what a function's emulator gets beyond rie's minimal
// environment: the template's variables and the endpoints.
func (s *Stack) functionEnv(f *Function) []string {
	if s.cfg.Rehearsal != nil {
		return s.rehearsalEnv(f)
	}
	env := slices.Clone(f.Env)
	env = append(env, "AWS_REGION="+s.Region, "AWS_ENDPOINT_URL_DYNAMODB="+s.ddbURL, "AWS_ENDPOINT_URL_SQS="+s.SQS.URL)
	if s.Bus != nil {
		env = append(env, "AWS_ENDPOINT_URL_EVENTBRIDGE="+s.Bus.URL())
	}
	if s.model != nil {
		env = append(env, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME="+s.model.URL())
	}
	if s.lambdas != nil {
		env = append(env, "AWS_ENDPOINT_URL_LAMBDA="+s.lambdas.URL())
	}
	env = append(env, s.toolEnv...)
	env = append(env, "CHECKPOINT_DIR="+s.checkpoints)
	if s.cfg.RetentionDay > 0 && slices.Contains(config.FunctionVars[f.Name], "RETENTION_DAY") {
		env = append(env, "RETENTION_DAY="+s.cfg.RetentionDay.String())
	}
	if s.realBedrock() || awsHosted(s.ddbURL) {
		for _, k := range passAWS {
			env = append(env, k+"="+os.Getenv(k))
		}
		env = append(env, "AWS_EC2_METADATA_DISABLED=false")
	}
	return env
}

// startQueues serves the template's queues on a free loopback port and
// adds their URLs and ARNs to locals ("!Ref WorkerQueue", "!GetAtt
// WorkerQueue.Arn", ...). A queue keeps its redrive policy; its visibility
// timeout is cfg.VisibilityTimeout unless that is 0.
func (s *Stack) startQueues(locals Locals) error {
	tq, err := ReadQueues(s.cfg.TemplatePath)
	if err != nil {
		return err
	}
	s.Queues = map[string]*sqstest.Queue{}
	var build func(id string, depth int) (*sqstest.Queue, error)
	build = func(id string, depth int) (*sqstest.Queue, error) {
		if q := s.Queues[id]; q != nil {
			return q, nil
		}
		t := tq[id]
		if depth > len(tq) {
			return nil, fmt.Errorf("template %s: the redrive policies of %s loop", s.cfg.TemplatePath, id)
		}
		opts := sqstest.Options{Name: id, Region: s.Region, VisibilityTimeout: t.VisibilityTimeout,
			MaxReceiveCount: t.MaxReceiveCount, OnSend: func(m sqstest.Message) { s.logSend(id, m) }, OnDeadLetter: s.logDeadLetter}
		if s.cfg.VisibilityTimeout > 0 {
			opts.VisibilityTimeout = s.cfg.VisibilityTimeout
		}
		if opts.VisibilityTimeout <= 0 {
			opts.VisibilityTimeout = time.Nanosecond // SQS's 0: visible again at once
		}
		if t.DeadLetter != "" {
			dlq, err := build(t.DeadLetter, depth+1)
			if err != nil {
				return nil, err
			}
			opts.DeadLetter = dlq
		}
		q := sqstest.NewQueue(opts)
		s.Queues[id] = q
		return q, nil
	}
	ids := slices.Sorted(maps.Keys(tq))
	for _, id := range ids {
		if _, err := build(id, 0); err != nil {
			return err
		}
	}
	if s.SQS, err = sqstest.Start("127.0.0.1:0"); err != nil {
		return fmt.Errorf("sqs: %w", err)
	}
	for _, id := range ids {
		q := s.Queues[id]
		s.SQS.Add(q)
		url := s.SQS.QueueURL(q)
		locals["!Ref "+id] = url
		locals["!GetAtt "+id+".Arn"] = q.ARN()
		locals["!GetAtt "+id+".QueueName"] = q.Name()
		locals["!GetAtt "+id+".QueueUrl"] = url
	}
	var desc []string
	for _, id := range ids {
		q := s.Queues[id]
		d := fmt.Sprintf("%s (visibility %s", id, q.VisibilityTimeout())
		if q.DeadLetter() != nil {
			d += fmt.Sprintf(", to %s after %d receives", q.DeadLetter().Name(), q.MaxReceiveCount())
		}
		desc = append(desc, d+")")
	}
	if len(desc) == 0 {
		desc = []string{"no queues in the template"}
	}
	s.say("sqs: fake on %s: %s", strings.TrimPrefix(s.SQS.URL, "http://"), strings.Join(desc, ", "))
	return nil
}

// SetQueueLog sends the queues' own lines (messages sent, dead letters) to w.
func (s *Stack) SetQueueLog(w io.Writer) {
	s.queueLogMu.Lock()
	s.queueLog = w
	s.queueLogMu.Unlock()
}

func (s *Stack) queueLine(format string, args ...any) {
	s.queueLogMu.Lock()
	w := s.queueLog
	s.queueLogMu.Unlock()
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}

func (s *Stack) logSend(queue string, m sqstest.Message) {
	s.queueLine("%s queue %s: message %s%s sent (%d bytes)\n", time.Now().Format(time.RFC3339Nano), queue, m.ID, describeBody(m.Body), len(m.Body))
}

// logDeadLetter reports a message moved to a dead-letter queue, in the
// queue log and on the progress writer (stderr): a run's step was given up.
func (s *Stack) logDeadLetter(m sqstest.Message) {
	dlq := "its dead-letter queue"
	if q := s.Queues[m.DeadLetterSource]; q != nil && q.DeadLetter() != nil {
		dlq = q.DeadLetter().Name()
	}
	line := fmt.Sprintf("queue %s: message %s%s was received %d times without success: moved to %s\n",
		m.DeadLetterSource, m.ID, describeBody(m.Body), m.ReceiveCount, dlq)
	s.queueLine("%s %s", time.Now().Format(time.RFC3339Nano), line)
	fmt.Fprint(s.cfg.progress(), line)
}

// Agents are the keys of the agents the functions run (AGENTS, else the
// embedded matter assistant), sorted; none when AGENTS names an SSM
// parameter, which the functions read.
func (s *Stack) Agents() []string { return slices.Clone(s.agents) }

// LedgerKey is the functions' LEDGER_KEY: a local HMAC key. Local only; on
// AWS the key is in KMS and never leaves it.
func (s *Stack) LedgerKey() string { return s.cfg.LedgerKey }

// newLedgerKey makes a local HMAC ledger key and keeps it in logDir (0600).
func newLedgerKey(logDir string) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	key := "hmac:" + hex.EncodeToString(b[:])
	if logDir != "" {
		if err := os.WriteFile(filepath.Join(logDir, "ledger.key"), []byte(key+"\n"), 0o600); err != nil {
			return "", err
		}
	}
	return key, nil
}

// DataKey is the content functions' DATA_KEY: a local AES-256 master key
// (aes:<64 hex>). Local only; on AWS the firm's key is in KMS.
func (s *Stack) DataKey() string { return s.cfg.DataKey }

// newDataKey makes a local data master key, "aes:" and 64 hex digits (what
// pkg/seal.ParseKeySpec reads as a LocalKeyring's key), and keeps it in
// logDir as data.key (0600), like the ledger key.
func newDataKey(logDir string) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	key := "aes:" + hex.EncodeToString(b[:])
	if logDir != "" {
		if err := os.WriteFile(filepath.Join(logDir, "data.key"), []byte(key+"\n"), 0o600); err != nil {
			return "", err
		}
	}
	return key, nil
}

// ReceiptKey is the functions' RECEIPT_KEY: a local P-256 key. Local only;
// on AWS the key is in KMS and never leaves it.
func (s *Stack) ReceiptKey() string { return s.cfg.ReceiptKey }

// newReceiptKey makes a local P-256 receipt key and keeps it in logDir
// (receipt.key, 0600) with its public half (receipt-public.pem).
func newReceiptKey(logDir string) (string, error) {
	k, err := evidence.GenerateP256()
	if err != nil {
		return "", err
	}
	if logDir != "" {
		if err := os.WriteFile(filepath.Join(logDir, "receipt.key"), []byte(k.Spec()+"\n"), 0o600); err != nil {
			return "", err
		}
		pub, err := evidence.NewPublicKey(k.Public())
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(logDir, "receipt-public.pem"), []byte(pub.PEM()), 0o644); err != nil {
			return "", err
		}
	}
	return k.Spec(), nil
}

// eventPrinter prints each notification the functions send, one line on
// the progress writer: "event <type> <bus> <detail>" (ids, names, links:
// never content).
type eventPrinter struct{ s *Stack }

func (p *eventPrinter) Write(b []byte) (int, error) {
	p.s.say("%s", strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// DDBURL is the DynamoDB endpoint the functions use.
func (s *Stack) DDBURL() string { return s.ddbURL }

// TableName is the local table.
func (s *Stack) TableName() string { return s.cfg.TableName }

// SystemsTable is where the reference tools (the stand-ins for the firm's
// systems) keep their own records of what they were sent.
func (s *Stack) SystemsTable() string { return s.cfg.TableName + "-firm-systems" }

// RawItems is every item of a run's partition in Warrant's table as
// stored, each item's attribute values as text (walkthrough.Config.RawItems).
func (s *Stack) RawItems(ctx context.Context, firm, run string) ([]string, error) {
	var out []string
	p := dynamodb.NewQueryPaginator(s.DDB, &dynamodb.QueryInput{TableName: aws.String(s.cfg.TableName),
		KeyConditionExpression:    aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: dynamo.RunKey(firm, run)}}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			out = append(out, dynamo.ItemText(it))
		}
	}
	return out, nil
}

// RawTable reads every item of the table as stored, each as its attribute
// values in text (dynamo.ItemText): what a scan by an operator or a backup
// would hold.
func (s *Stack) RawTable(ctx context.Context) ([]string, error) {
	var out []string
	p := dynamodb.NewScanPaginator(s.DDB, &dynamodb.ScanInput{TableName: aws.String(s.cfg.TableName)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			out = append(out, dynamo.ItemText(it))
		}
	}
	return out, nil
}

// WritePIDs records every process the stack started (emulators and the
// bootstraps seen under them) in <log-dir>/pids, one "PID ROLE:NAME" a line.
// A PID, once listed, stays listed.
func (s *Stack) WritePIDs() {
	s.pidsMu.Lock()
	defer s.pidsMu.Unlock()
	changed := false
	add := func(line string) {
		if !slices.Contains(s.pidsSeen, line) {
			s.pidsSeen = append(s.pidsSeen, line)
			changed = true
		}
	}
	names := make([]string, 0, len(s.Emulators))
	for n := range s.Emulators {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		e := s.Emulators[n]
		add(fmt.Sprintf("%d emulator:%s", e.PID(), n))
		for _, p := range e.BootstrapPIDs() {
			add(fmt.Sprintf("%d bootstrap:%s", p, n))
		}
	}
	if s.tools != nil && s.tools.cmd.Process != nil {
		add(fmt.Sprintf("%d toolserver:reference", s.tools.cmd.Process.Pid))
	}
	if s.lambdas != nil {
		pids := s.lambdas.PIDs()
		for _, n := range slices.Sorted(maps.Keys(pids)) {
			for i, p := range pids[n] {
				role := "function-bootstrap"
				if i == 0 {
					role = "function-emulator"
				}
				add(fmt.Sprintf("%d %s:%s", p, role, n))
			}
		}
	}
	if !changed || s.cfg.LogDir == "" {
		return
	}
	body := strings.Join(s.pidsSeen, "\n") + "\n"
	tmp := filepath.Join(s.cfg.LogDir, "pids.tmp")
	if os.WriteFile(tmp, []byte(body), 0o644) == nil {
		_ = os.Rename(tmp, filepath.Join(s.cfg.LogDir, "pids"))
	}
}

// Stop stops every emulator (and its bootstrap), the fake Bedrock and the
// embedded DynamoDB. It waits for the processes to exit.
func (s *Stack) Stop() error {
	s.WritePIDs() // the bootstraps seen last, before they are gone
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, e := range s.Emulators {
		wg.Go(func() {
			if err := e.Stop(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	s.tools.stop()
	if s.lambdas != nil {
		if err := s.lambdas.Stop(); err != nil {
			errs = append(errs, err)
		}
		s.fnLog.Close()
	}
	if s.model != nil {
		s.model.Close()
	}
	if s.SQS != nil {
		s.SQS.Close()
	}
	if s.Bus != nil {
		s.Bus.Close()
	}
	if s.tsa != nil {
		if err := s.tsa.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.witness != nil {
		if err := s.witness.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.tempCheckpoints {
		// The files are read-only; the directory is not.
		if err := os.RemoveAll(s.checkpoints); err != nil {
			errs = append(errs, err)
		}
	}
	if s.ddbSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = s.ddbSrv.Shutdown(ctx)
		cancel()
	}
	return errors.Join(errs...)
}

// TSACerts are the certificates of the stack's TSA (its CA's), nil when it
// runs none.
func (s *Stack) TSACerts() []*x509.Certificate {
	if s.tsa == nil {
		return nil
	}
	certs, _ := timestamp.ParseCertificates(s.tsa.CACertPEM) // made by openssltsa: always one
	return certs
}

// WitnessKeys are the keys of the stack's witness, nil when it runs none.
func (s *Stack) WitnessKeys() []evidence.WitnessKey {
	if s.witness == nil {
		return nil
	}
	return []evidence.WitnessKey{s.witness.Key}
}

// startTSA starts the time-stamping authority on loopback in dir.
func startTSA(dir string) (*openssltsa.TSA, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return openssltsa.Start(dir)
}

// buildAll builds the functions' bootstraps into dir/<name>/bootstrap with
// one `go build` into the module's .localapi/bin (where `make localapi`
// built them already, so an unchanged one is not even linked again). A failure is one line naming the function, with the full
// compiler output in dir/build.log.
func buildAll(ctx context.Context, funcs []*Function, dir, module string) (map[string]string, error) {
	pkgs := map[string]string{"toolserver": filepath.Join(module, "cmd", "toolserver"), "toolfn": filepath.Join(module, "cmd", "toolfn")}
	byDir := map[string]string{}
	for _, f := range funcs {
		pkgs[f.Name] = f.Dir
		byDir[f.Dir] = f.Name
	}
	out, err := rie.BuildAllShared(ctx, pkgs, dir, filepath.Join(module, ".localapi", "bin"))
	if err == nil {
		return out, nil
	}
	var be *rie.BuildError
	if !errors.As(err, &be) {
		return nil, err
	}
	logPath := filepath.Join(dir, "build.log")
	_ = os.MkdirAll(dir, 0o755)
	_ = os.WriteFile(logPath, []byte(be.Output), 0o644)
	what := be.Pkg
	if i := strings.Index(what, "/functions/"); i >= 0 {
		what = what[i+1:] // github.com/.../functions/invoke -> functions/invoke
	}
	if n, ok := byDir[be.Pkg]; ok {
		what = "functions/" + n
	}
	return nil, fmt.Errorf("build %s failed: %s (full output: %s)", what, be.FirstLine(), logPath)
}

// dynamoClient is the local stack's own client (table setup, the stream
// pump): static test credentials unless the endpoint is AWS's own.
func dynamoClient(url, region string, realCreds bool) *dynamodb.Client {
	opts := dynamodb.Options{
		Region:       region,
		BaseEndpoint: aws.String(url),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	}
	if realCreds {
		if cfg, err := loadAWSConfig(region); err == nil {
			return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(url) })
		}
	}
	return dynamodb.New(opts)
}

// streamsClient reads the table's stream on the same endpoint (moto and
// DynamoDB Local serve both APIs on one port). On AWS the Streams API has
// its own endpoint, streams.dynamodb.<region>.amazonaws.com.
func streamsClient(url, region string, realCreds bool) *dynamodbstreams.Client {
	if realCreds {
		if cfg, err := loadAWSConfig(region); err == nil {
			return dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) {
				if !strings.Contains(url, "://dynamodb.") {
					o.BaseEndpoint = aws.String(url)
				}
			})
		}
	}
	return dynamodbstreams.New(dynamodbstreams.Options{Region: region, BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
}

func loadAWSConfig(region string) (aws.Config, error) {
	return awsconfig.LoadDefaultConfig(context.Background(), awsconfig.WithRegion(region))
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
