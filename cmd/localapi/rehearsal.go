package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/truora/minidyn/server"

	"github.com/seed-f6d3920e/warrant/internal/walkthrough"
	"github.com/seed-f6d3920e/warrant/pkg/anchor"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/sqs/sqstest"
)

// The deploy rehearsal (issue 28): the local stack's functions run under
// their emulators as `make run` runs them, but against the template's
// resources stood up in moto (deploy/rehearsal/standup.py, with moto's IAM
// enforcement on, deploy/rehearsal/moto_iam.py), each with its stand-up
// environment and nothing else but the endpoints and its own role's
// credentials. What AWS does with a function's execution role (the event
// source mappings' polling) is done here with that role's credentials too.
// Bedrock stays on the fake: moto has no runtime for it.

// Rehearsal is what deploy/rehearsal/standup.py writes: the endpoint, an
// administrator's key, the resources stood up and, per function (logical
// id), its resolved environment and its role's assumed credentials.
type Rehearsal struct {
	Endpoint  string                       `json:"endpoint"`
	Region    string                       `json:"region"`
	Account   string                       `json:"account"`
	Admin     RehearsalCreds               `json:"admin"`
	Functions map[string]RehearsalFunction `json:"functions"`
	Resources map[string]struct {
		Type  string         `json:"type"`
		Ref   string         `json:"ref"`
		Attrs map[string]any `json:"attrs"`
	} `json:"resources"`
	Omitted []map[string]string `json:"omitted"`
}

// RehearsalFunction is one function of a stand-up.
type RehearsalFunction struct {
	Name        string            `json:"name"`
	Role        string            `json:"role"`
	RoleName    string            `json:"role_name"`
	Environment map[string]string `json:"environment"`
	Credentials RehearsalCreds    `json:"credentials"`
}

// RehearsalCreds is an access key (with a session token for an assumed
// role).
type RehearsalCreds struct {
	AccessKeyID     string `json:"AccessKeyId"`
	SecretAccessKey string `json:"SecretAccessKey"`
	SessionToken    string `json:"SessionToken"`
}

// ReadRehearsal reads a stand-up's document.
func ReadRehearsal(path string) (*Rehearsal, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-rehearsal: %w", err)
	}
	var r Rehearsal
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("-rehearsal %s: %w", path, err)
	}
	if r.Endpoint == "" || len(r.Functions) == 0 {
		return nil, fmt.Errorf("-rehearsal %s: no endpoint or no functions (is it deploy/rehearsal/standup.py's output?)", path)
	}
	if r.Region == "" {
		r.Region = "us-east-1"
	}
	if r.Account == "" {
		r.Account = "123456789012" // moto's
	}
	return &r, nil
}

// tableName is the table every function's TABLE_NAME names.
func (r *Rehearsal) tableName() (string, error) {
	var name string
	for id, f := range r.Functions {
		t := f.Environment["TABLE_NAME"]
		if t == "" || (name != "" && t != name) {
			return "", fmt.Errorf("rehearsal: function %s has TABLE_NAME %q, not the one table of the others (%q)", id, t, name)
		}
		name = t
	}
	return name, nil
}

// streamARN is the table's stream as stood up (what the template's event
// source mapping reads: !GetAtt Table.StreamArn).
func (r *Rehearsal) streamARN(table string) string {
	for _, res := range r.Resources {
		if res.Type == "AWS::DynamoDB::Table" && res.Ref == table {
			s, _ := res.Attrs["StreamArn"].(string)
			return s
		}
	}
	return ""
}

// locals are the stand-up's physical ids and attributes as the template's
// intrinsics name them, so the template loads with them; the functions'
// environment is then the stand-up's own (rehearsalEnv).
func (r *Rehearsal) locals(base Locals) Locals {
	l := maps.Clone(base)
	for id, res := range r.Resources {
		l["!Ref "+id] = res.Ref
		for k, v := range res.Attrs {
			if s, ok := v.(string); ok {
				l["!GetAtt "+id+"."+k] = s
			}
		}
	}
	for _, f := range r.Functions {
		maps.Copy(l, f.Environment)
	}
	return l
}

func (c RehearsalCreds) provider() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)
}

func (c RehearsalCreds) env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + c.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + c.SecretAccessKey, "AWS_SESSION_TOKEN=" + c.SessionToken}
}

// function is the stand-up's function of logical id id.
func (r *Rehearsal) function(id string) (RehearsalFunction, error) {
	f, ok := r.Functions[id]
	if !ok {
		return f, fmt.Errorf("rehearsal: the stand-up has no function %s (functions: %s)", id, strings.Join(slices.Sorted(maps.Keys(r.Functions)), ", "))
	}
	return f, nil
}

// rehearsalEnv is a function's environment in the rehearsal: exactly its
// stand-up environment, the region, moto as every service's endpoint
// (AWS_ENDPOINT_URL) but Bedrock's (the fake) and Lambda's (the firm's
// functions, when served), and its own role's credentials. Nothing of the
// host's AWS settings: the emulator's minimal environment has none, and
// its fake key is replaced here.
func (s *Stack) rehearsalEnv(f *Function) []string {
	rf := s.cfg.Rehearsal.Functions[f.LogicalID]
	var env []string
	for _, k := range slices.Sorted(maps.Keys(rf.Environment)) {
		env = append(env, k+"="+rf.Environment[k])
	}
	env = append(env, "AWS_REGION="+s.Region, "AWS_ENDPOINT_URL="+s.cfg.Rehearsal.Endpoint)
	env = append(env, rf.Credentials.env()...)
	if s.model != nil {
		env = append(env, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME="+s.model.URL())
	}
	if s.lambdas != nil {
		env = append(env, "AWS_ENDPOINT_URL_LAMBDA="+s.lambdas.URL())
	}
	return env
}

// rehearsalClients are the stack's own clients on moto: DynamoDB as the
// administrator (the seed, and the walk's raw reads, as an operator would
// read the table), the Streams API as stream-reduce (its event source
// mapping polls with its role, as on AWS).
func (s *Stack) rehearsalClients() error {
	r := s.cfg.Rehearsal
	reduce, err := r.function("StreamReduceFunction")
	if err != nil {
		return err
	}
	ep := aws.String(r.Endpoint)
	s.DDB = dynamodb.New(dynamodb.Options{Region: s.Region, BaseEndpoint: ep, Credentials: r.Admin.provider()})
	s.Streams = dynamodbstreams.New(dynamodbstreams.Options{Region: s.Region, BaseEndpoint: ep, Credentials: reduce.Credentials.provider()})
	s.ddbURL = r.Endpoint
	return nil
}

// RehearsalKMS is a KMS client on moto as the administrator: the operator
// who verifies an exported ledger's signed head (`warrant ledger verify
// --key kms:...` with the operator's credentials). Nil off the rehearsal.
func (s *Stack) RehearsalKMS() func() anchor.KMSClient {
	r := s.cfg.Rehearsal
	if r == nil {
		return nil
	}
	return func() anchor.KMSClient {
		return kms.New(kms.Options{Region: s.Region, BaseEndpoint: aws.String(r.Endpoint), Credentials: r.Admin.provider()})
	}
}

// SQSFeed is the worker queue's event source mapping in the rehearsal: it
// long-polls the queue in moto with the function's own credentials (on AWS
// the mapping polls with the function's execution role, so its
// ReceiveMessage and DeleteMessage are the role's), invokes the function
// with one batch at a time and deletes the messages that succeeded; the
// others stay, for the queue's visibility timeout and redrive policy.
type SQSFeed struct {
	Client   *sqs.Client
	QueueURL string
	QueueARN string
	Event    QueueEvent
	Fn       Invoker
	Region   string
	Log      io.Writer
	ErrLog   io.Writer
	// Delivered is called after each invocation with the batch's bodies.
	Delivered func(bodies []string)
}

// Run delivers until ctx ends.
func (f *SQSFeed) Run(ctx context.Context) {
	for ctx.Err() == nil {
		out, err := f.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(f.QueueURL),
			MaxNumberOfMessages:         int32(min(max(f.Event.BatchSize, 1), 10)),
			WaitTimeSeconds:             int32(longPoll / time.Second),
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"}})
		if err != nil {
			if ctx.Err() == nil {
				f.problem(fmt.Sprintf("queue %s: receive: %v", f.QueueURL, firstLine(err)))
				select { // not a busy loop on a refusal
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		if len(out.Messages) > 0 {
			f.deliver(ctx, out.Messages)
		}
	}
}

func (f *SQSFeed) deliver(ctx context.Context, msgs []sqstypes.Message) {
	records := make([]SQSRecord, len(msgs))
	bodies := make([]string, len(msgs))
	ids := make([]sqstest.Message, len(msgs)) // what QueueFeed.failures reads: the ids
	for i, m := range msgs {
		attrs := map[string]events.SQSMessageAttribute{}
		for k, a := range m.MessageAttributes {
			attrs[k] = events.SQSMessageAttribute{DataType: aws.ToString(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue,
				StringListValues: []string{}, BinaryListValues: [][]byte{}}
		}
		records[i] = SQSRecord{MessageID: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
			Attributes: m.Attributes, MessageAttributes: attrs, MD5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
			MD5OfBody: aws.ToString(m.MD5OfBody), EventSource: "aws:sqs", EventSourceARN: f.QueueARN, AWSRegion: f.Region}
		bodies[i] = aws.ToString(m.Body)
		ids[i] = sqstest.Message{ID: aws.ToString(m.MessageId)}
	}
	inv, err := invokeBatch(ctx, f.Fn, records, bodies, f.Delivered)
	if err != nil {
		f.problem(fmt.Sprintf("queue %s: %v", f.QueueURL, err))
		return
	}
	took := inv.took
	if ctx.Err() != nil {
		return
	}
	failed, why := (&QueueFeed{Event: f.Event}).failures(inv.out, inv.err, ids)
	for i, m := range msgs {
		what := fmt.Sprintf("queue %s: message %s%s -> %s", f.QueueURL, aws.ToString(m.MessageId), describeBody(bodies[i]), f.Fn.Name())
		if failed[aws.ToString(m.MessageId)] {
			f.problem(fmt.Sprintf("%s failed in %s: %s; it comes back after the queue's visibility timeout", what, took, why))
			continue
		}
		if _, err := f.Client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(f.QueueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
			f.problem(fmt.Sprintf("%s ok in %s, but the delete failed: %v", what, took, firstLine(err)))
			continue
		}
		fmt.Fprintf(f.Log, "%s %s ok in %s; deleted\n", time.Now().Format(time.RFC3339Nano), what, took)
	}
}

func (f *SQSFeed) problem(line string) {
	fmt.Fprintf(f.Log, "%s %s\n", time.Now().Format(time.RFC3339Nano), line)
	fmt.Fprintln(f.ErrLog, line)
}

// rehearsalQueueFeed is the SQS feed of function f's event ev, polling
// with f's credentials.
func (s *Stack) rehearsalQueueFeed(f *Function, ev QueueEvent) (*SQSFeed, error) {
	r := s.cfg.Rehearsal
	rf, err := r.function(f.LogicalID)
	if err != nil {
		return nil, err
	}
	res, ok := r.Resources[ev.Queue]
	if !ok || res.Type != "AWS::SQS::Queue" {
		return nil, fmt.Errorf("rehearsal: %s's event %s names queue %s, which the stand-up has not", f.LogicalID, ev.Name, ev.Queue)
	}
	arn, _ := res.Attrs["Arn"].(string)
	if arn == "" {
		return nil, errors.New("rehearsal: queue " + ev.Queue + " has no Arn in the stand-up")
	}
	return &SQSFeed{
		Client:   sqs.New(sqs.Options{Region: s.Region, BaseEndpoint: aws.String(r.Endpoint), Credentials: rf.Credentials.provider()}),
		QueueURL: res.Ref, QueueARN: arn, Event: ev, Region: s.Region,
	}, nil
}

// startRehearsal is StartStack on a stand-up: the template read with the
// stand-up's ids, every function checked to be in it, the dev firm seeded
// into its table (as the administrator), then the fake Bedrock and the
// functions.
func (s *Stack) startRehearsal(ctx context.Context) error {
	r := s.cfg.Rehearsal
	s.say("rehearsal: the stand-up in moto at %s; each function with its stand-up environment and its own role's credentials", r.Endpoint)
	for _, o := range r.Omitted {
		s.say("rehearsal: not stood up as written: %s", omittedLine(o))
	}
	s.say("rehearsal: Bedrock stays on the fake (moto has no runtime for it): the worker's bedrock:InvokeModel is not authorized here")
	tpl, err := LoadTemplate(s.cfg.TemplatePath, r.locals(Locals{"MODEL_ID": s.cfg.ModelID, "RECEIPT_RETIRED_KEYS": "", "DESK_URL": s.cfg.DeskURL}))
	if err != nil {
		return err
	}
	s.Template = tpl
	funcs, err := s.selected()
	if err != nil {
		return err
	}
	for _, f := range funcs {
		rf, err := r.function(f.LogicalID)
		if err != nil {
			return err
		}
		s.say("rehearsal: lambda %s as role %s", f.Name, rf.RoleName)
	}
	if err := s.rehearsalClients(); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	wrote, err := seed(sctx, s.DDB, s.cfg.TableName)
	cancel()
	if err != nil {
		return fmt.Errorf("dynamodb: seeding the dev firm: %w", err)
	}
	for _, w := range wrote {
		s.say("dynamodb: seeded %s (as the administrator)", w)
	}
	return s.startFunctionsOf(ctx, funcs)
}

// omittedLine is one of the stand-up's omissions, for the progress lines.
func omittedLine(o map[string]string) string {
	what := o["resource"]
	for _, k := range []string{"target", "policy"} {
		if o[k] != "" {
			what += " " + k + " " + o[k]
		}
	}
	return what + ": " + o["why"]
}

// startRehearsalSystems starts the firm's systems of the demo beside the
// rehearsal, as `make run` does (the reference tools' MCP server, its
// HTTPS endpoint and its Lambda function, over a minidyn table of their
// own), and, when the functions read their tool catalog from SSM
// (TOOL_CATALOG ssm:NAME, the template's ToolCatalogParameter), puts the
// rehearsal's catalog there as the administrator: the firm's operator
// publishing its catalog before the functions start.
func (s *Stack) startRehearsalSystems(ctx context.Context, bins map[string]string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("dynamodb: %w", err)
	}
	s.ddbSrv = &http.Server{Handler: server.NewServer(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.ddbSrv.Serve(ln) }()
	s.systemsURL = "http://" + ln.Addr().String()
	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err = dynamo.CreateTable(tctx, dynamoClient(s.systemsURL, s.Region, false), s.SystemsTable())
	cancel()
	if err != nil {
		return fmt.Errorf("dynamodb: %w", err)
	}
	s.say("dynamodb: table %s on minidyn %s (the firm's systems' own records, outside the deployment)", s.SystemsTable(), ln.Addr())
	addr := s.cfg.ToolsAddr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if s.tools, err = s.startToolServer(ctx, bins["toolserver"], addr); err != nil {
		return err
	}
	if err := s.startFunctions(ctx, bins["toolfn"]); err != nil {
		return err
	}
	var param string
	for _, f := range s.cfg.Rehearsal.Functions {
		if p, ok := strings.CutPrefix(f.Environment["TOOL_CATALOG"], "ssm:"); ok {
			param = p
		}
	}
	if param == "" {
		s.say("rehearsal: the functions name no tool catalog in SSM: they run the embedded catalog's builtin tools")
		return nil
	}
	fn := fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", s.Region, s.cfg.Rehearsal.Account, ReferenceFunction)
	doc, err := rehearsalCatalog(s.tools.URL, strings.TrimSuffix(s.tools.URL, "mcp")+"https/", fn)
	if err != nil {
		return err
	}
	r := s.cfg.Rehearsal
	client := ssm.New(ssm.Options{Region: s.Region, BaseEndpoint: aws.String(r.Endpoint), Credentials: r.Admin.provider()})
	tctx, cancel = context.WithTimeout(ctx, 30*time.Second)
	_, err = client.PutParameter(tctx, &ssm.PutParameterInput{Name: aws.String(param), Value: aws.String(string(doc)),
		Type: ssmtypes.ParameterTypeString, Tier: ssmtypes.ParameterTierAdvanced, Overwrite: aws.Bool(true)})
	cancel()
	if err != nil {
		return fmt.Errorf("rehearsal: the tool catalog into SSM %s: %w", param, err)
	}
	s.say("rehearsal: tool catalog in SSM %s (as the administrator): %s on the firm's HTTPS endpoint, %s on its Lambda function %s, the others on its MCP server",
		param, walkthrough.FilingTool, walkthrough.EmailTool, fn)
	return nil
}
