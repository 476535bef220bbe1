// Command localapi runs Warrant's whole stack on loopback, without Docker or
// an AWS account: DynamoDB (minidyn, in this process, or DYNAMODB_ENDPOINT),
// Bedrock (the scripted fake, or real Bedrock with MODEL_BACKEND=bedrock),
// each function of template.yaml built as its Lambda bootstrap and run under
// its own Lambda Runtime Interface Emulator, the template's HTTP API routes
// on -addr (default 127.0.0.1:3000), a stream pump delivering new ledger
// lines to stream-reduce as DynamoDB stream events, the template's queues
// (a fake SQS; each SQS event's function, the worker, gets their messages
// as SQS events) and a timer calling each scheduled function (the sweeper).
// The firm's systems of the demo run beside it: the reference tools'
// server (cmd/toolserver: MCP at /mcp, HTTPS-style at /https/, on
// -tools-addr) and their Lambda function (cmd/toolfn, and any -function
// NAME=PKG) on a local Lambda Invoke API the functions reach as
// AWS_ENDPOINT_URL_LAMBDA.
//
// Requests carry no JWT locally: the claims API Gateway's authorizer would
// pass come from the X-Dev-Firm, X-Dev-User, X-Dev-Roles and X-Dev-Name headers (LOCAL
// ONLY; see docs/LOCAL.md).
//
// Usage:
//
//	localapi [-addr 127.0.0.1:3000] [-log-dir DIR] [-template template.yaml] [-demo [-headless]]
//	localapi -invoke FN -event FILE      one function, one event, print the response
//	localapi -rehearsal STANDUP.json -demo -headless
//	                                     the functions against a stand-up in moto, each with
//	                                     its own role's credentials (docs/DEPLOY.md, Deploy rehearsal)
//
// Ctrl-C (or SIGTERM) stops every process it started, by PID, and exits 0.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/internal/proc"
	"github.com/seed-f6d3920e/warrant/internal/rie"
	"github.com/seed-f6d3920e/warrant/internal/walkthrough"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type options struct {
	addr, logDir, template string
	demo, headless         bool
	invoke, event          string
	raw                    bool
	streamSource           string
	integrationTimeout     time.Duration
	visibilityTimeout      time.Duration
	sweepEvery             time.Duration
	retentionDay           time.Duration
	modelLatency           time.Duration
	clientTimeout          time.Duration
	modelScript            string
	toolsAddr              string
	functions              functionFlags
	rehearsal              string
}

// functionFlags are -function NAME=PKG flags: the firm's own Lambda
// functions to serve locally, by name.
type functionFlags map[string]string

func (f functionFlags) String() string {
	parts := make([]string, 0, len(f))
	for _, n := range slices.Sorted(maps.Keys(f)) {
		parts = append(parts, n+"="+f[n])
	}
	return strings.Join(parts, ",")
}

func (f functionFlags) Set(v string) error {
	name, pkg, ok := strings.Cut(v, "=")
	if !ok || name == "" || pkg == "" {
		return errors.New("want NAME=PKG (a Lambda function's name, a Go package directory)")
	}
	if _, dup := f[name]; dup {
		return fmt.Errorf("function %s named twice", name)
	}
	f[name] = pkg
	return nil
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("localapi", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := options{functions: functionFlags{}}
	fs.StringVar(&o.addr, "addr", "127.0.0.1:3000", "`ADDR` the HTTP API listens on")
	fs.StringVar(&o.logDir, "log-dir", "", "`DIR` for logs, builds and pids (default .localapi/<start time>)")
	fs.StringVar(&o.template, "template", "template.yaml", "the SAM `FILE` whose functions and routes to run")
	fs.BoolVar(&o.demo, "demo", false, "run the walkthrough (cmd/demo) once the stack is up, then keep serving")
	fs.BoolVar(&o.headless, "headless", false, "with -demo: exit when the walkthrough ends, with its status")
	fs.StringVar(&o.invoke, "invoke", "", "run only function `FN` (folder or logical id), send it -event, print the response, exit")
	fs.StringVar(&o.event, "event", "", "with -invoke: the event `FILE` (e.g. events/invoke.json)")
	fs.BoolVar(&o.raw, "raw", false, "with -invoke: print the response payload exactly as the function returned it")
	fs.StringVar(&o.streamSource, "stream-source", "auto", "how new ledger lines reach stream-reduce: `auto` (the table's DynamoDB stream when the endpoint has one, else query), streams, or query (poll the touched run partitions)")
	fs.DurationVar(&o.integrationTimeout, "integration-timeout", 30*time.Second, "API Gateway's integration timeout (503 after it)")
	fs.DurationVar(&o.visibilityTimeout, "visibility-timeout", 30*time.Second, "the local queues' visibility timeout: a message whose delivery failed comes back after it (0 keeps the template's, 3600s for the worker queue)")
	fs.DurationVar(&o.sweepEvery, "sweep-every", 5*time.Second, "the local period of a rate(1 minute) schedule (the sweeper); longer rates in proportion; 0 turns the schedules off")
	fs.DurationVar(&o.retentionDay, "retention-day", 2*time.Second, "how long a day of a retention lasts for the local sweeper (a matter's retention_days 1 passes in `D`); 0: 24 hours")
	fs.StringVar(&o.modelScript, "model-script", "", "the fake model answers from the JSON script `FILE` (its turns in order; see docs/LOCAL.md) instead of the demo's")
	fs.StringVar(&o.toolsAddr, "tools-addr", "127.0.0.1:3001", "`ADDR` the reference tools' server listens on (MCP at /mcp, HTTPS-style at /https/; the local catalog names it)")
	fs.Var(o.functions, "function", "`NAME=PKG`: serve the Go package PKG as the Lambda function NAME on the local Lambda API, beside the reference tools' warrant-reference-tools (repeatable; a catalog names it by any ARN ending in :function:NAME)")
	fs.DurationVar(&o.modelLatency, "model-latency", 0, "how long the fake model takes for each turn (a slow model; runs outlive API calls)")
	fs.StringVar(&o.rehearsal, "rehearsal", "", "run the functions against the stand-up in moto that `FILE` describes (deploy/rehearsal/standup.py's output): each with its stand-up environment and its own role's credentials (docs/DEPLOY.md, Deploy rehearsal)")
	fs.DurationVar(&o.clientTimeout, "client-timeout", 0, "with -demo: bound every HTTP call of the walkthrough to `D`, following runs by polling instead of ?wait (default: 120s, ?wait=20)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage:
  localapi [-addr 127.0.0.1:3000] [-log-dir DIR] [-template template.yaml] [-demo [-headless]]
        the whole stack on loopback; Ctrl-C stops it
  localapi -invoke FN -event FILE [-raw]
        one function under its emulator, one event, print the response
  localapi -rehearsal STANDUP.json [-demo [-headless]]
        the functions against deploy/rehearsal/standup.py's stand-up in moto, each with exactly its
        stand-up environment and its own role's credentials (docs/DEPLOY.md, Deploy rehearsal)

queues: the template's SQS queues run in a fake SQS (AWS_ENDPOINT_URL_SQS); the worker gets their messages
as SQS events; scheduled functions (the sweeper) are called every -sweep-every.

environment: DYNAMODB_ENDPOINT (another DynamoDB), TABLE_NAME (default warrant-local),
MODEL_BACKEND=bedrock (real Bedrock with your AWS configuration), MODEL_ID,
TOOL_CATALOG, AGENTS and TOOL_POLICY (file:PATH: the functions' tool catalog, agents and risk policy;
default: the reference tools on the local MCP server, the matter assistant, the embedded policy),
LEDGER_KEY (hmac:<hex>; default a fresh key per start, saved as <log dir>/ledger.key),
RECEIPT_KEY (p256:<hex>; default a fresh key per start, saved as <log dir>/receipt.key, its public
key as <log dir>/receipt-public.pem), DATA_KEY (aes:<64 hex>; default a fresh key per start, saved as
<log dir>/data.key).
Dev identity headers (LOCAL ONLY): X-Dev-Firm, X-Dev-User, X-Dev-Roles, X-Dev-Name. See docs/LOCAL.md.

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "localapi: unexpected arguments %v\n", fs.Args())
		return 2
	}
	if o.headless && !o.demo {
		fmt.Fprintln(stderr, "localapi: -headless needs -demo")
		return 2
	}
	if (o.invoke == "") != (o.event == "") {
		fmt.Fprintln(stderr, "localapi: -invoke FN and -event FILE go together")
		return 2
	}
	if o.visibilityTimeout < 0 || o.sweepEvery < 0 || o.modelLatency < 0 || o.clientTimeout < 0 || o.retentionDay < 0 {
		fmt.Fprintln(stderr, "localapi: -visibility-timeout, -sweep-every, -retention-day, -model-latency and -client-timeout cannot be negative")
		return 2
	}
	if o.streamSource != "auto" && o.streamSource != "streams" && o.streamSource != "query" {
		fmt.Fprintf(stderr, "localapi: -stream-source must be auto, streams or query, not %q\n", o.streamSource)
		return 2
	}
	if o.rehearsal != "" && (o.invoke != "" || o.modelScript != "" || len(o.functions) > 0) {
		fmt.Fprintln(stderr, "localapi: -rehearsal runs the stack with the demo's model only: not with -invoke, -model-script or -function")
		return 2
	}
	if o.invoke != "" {
		return invokeOnce(o, stdout, stderr)
	}
	return serve(o, stdout, stderr)
}

// newLogDir makes the default log folder, .localapi/<start time>.
func newLogDir(dir, suffix string) (string, error) {
	if dir == "" {
		base := filepath.Join(".localapi", time.Now().Format("20060102-150405")+suffix)
		dir = base
		for i := 2; ; i++ {
			if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
				break
			}
			dir = base + "-" + strconv.Itoa(i)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Abs(dir)
}

func stackConfig(o options, logDir string, progress io.Writer) StackConfig {
	return StackConfig{
		TemplatePath:   o.template,
		LogDir:         logDir,
		Progress:       progress,
		DynamoEndpoint: os.Getenv("DYNAMODB_ENDPOINT"),
		TableName:      os.Getenv("TABLE_NAME"),
		ModelBackend:   os.Getenv("MODEL_BACKEND"),
		ModelID:        os.Getenv("MODEL_ID"),
		LedgerKey:      os.Getenv("LEDGER_KEY"),
		ReceiptKey:     os.Getenv("RECEIPT_KEY"),
		DataKey:        os.Getenv("DATA_KEY"),

		VisibilityTimeout: o.visibilityTimeout,
		RetentionDay:      o.retentionDay,
		ModelLatency:      o.modelLatency,
		ModelScript:       o.modelScript,
		ToolsAddr:         o.toolsAddr,
		Functions:         o.functions,
		ToolCatalog:       os.Getenv("TOOL_CATALOG"),
		Agents:            os.Getenv("AGENTS"),
		ToolPolicy:        os.Getenv("TOOL_POLICY"),
	}
}

func listenError(addr string, err error) string {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Sprintf("localapi: %s is already in use (another localapi?); stop it or pass -addr 127.0.0.1:PORT", addr)
	}
	return fmt.Sprintf("localapi: cannot listen on %s: %v", addr, err)
}

func serve(o options, stdout, stderr io.Writer) int {
	t0 := time.Now()
	// The port first: a taken port fails in a second, before any build.
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		fmt.Fprintln(stderr, listenError(o.addr, err))
		return 1
	}
	defer ln.Close()
	logDir, err := newLogDir(o.logDir, "")
	if err != nil {
		fmt.Fprintf(stderr, "localapi: log dir: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "logs: %s\n", logDir)

	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	cfg := stackConfig(o, logDir, stderr)
	cfg.DeskURL = "http://" + ln.Addr().String() + "/desk"
	if o.rehearsal != "" {
		if cfg.Rehearsal, err = ReadRehearsal(o.rehearsal); err != nil {
			fmt.Fprintf(stderr, "localapi: %v\n", err)
			return 1
		}
	}
	st, err := StartStack(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "localapi: interrupted during start-up; stopped")
			return 0
		}
		fmt.Fprintf(stderr, "localapi: %s\n", startError(err))
		return 1
	}
	code := serveStack(ctx, stopSignals, o, st, ln, logDir, t0, stdout, stderr)
	if err := st.Stop(); err != nil {
		fmt.Fprintf(stderr, "localapi: stop: %v\n", err)
		return 1
	}
	if left := stillRunning(logDir); len(left) > 0 {
		fmt.Fprintf(stderr, "localapi: processes still running after stop: %v\n", left)
		return 1
	}
	fmt.Fprintf(stderr, "localapi: stopped; every process it started has exited (see %s)\n", filepath.Join(logDir, "pids"))
	return code
}

func serveStack(ctx context.Context, stopSignals func(), o options, st *Stack, ln net.Listener, logDir string, t0 time.Time, stdout, stderr io.Writer) int {
	accessLog, err := os.OpenFile(filepath.Join(logDir, "api.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(stderr, "localapi: %v\n", err)
		return 1
	}
	defer accessLog.Close()
	streamLog, err := os.OpenFile(filepath.Join(logDir, "stream.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(stderr, "localapi: %v\n", err)
		return 1
	}
	defer streamLog.Close()
	queueLog, err := os.OpenFile(filepath.Join(logDir, "queue.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(stderr, "localapi: %v\n", err)
		return 1
	}
	defer queueLog.Close()
	queueOut := &syncWriter{w: queueLog}
	st.SetQueueLog(queueOut)
	defer st.SetQueueLog(nil)
	errLog := &syncWriter{w: io.MultiWriter(stderr, accessLog)}

	feedCtx, stopFeed := context.WithCancel(context.Background())
	var feed Feed
	var feedDone sync.WaitGroup
	defer func() { stopFeed(); feedDone.Wait() }()
	for _, f := range st.Template.Functions {
		if !f.Stream || st.Emulators[f.Name] == nil {
			continue
		}
		d := &Deliverer{Reducer: st.Emulators[f.Name], Log: streamLog, ErrLog: &syncWriter{w: io.MultiWriter(stderr, streamLog)}, Delivered: st.WritePIDs}
		feed = chooseFeed(ctx, o.streamSource, st, f, d, stderr)
		if feed == nil {
			return 1
		}
		feedDone.Go(func() { feed.Run(feedCtx) })
		break
	}

	// The queues' event source mappings and the schedules.
	queueErr := &syncWriter{w: stderr} // failures: in queue.log and again on stderr
	for _, f := range st.Template.Functions {
		emu := st.Emulators[f.Name]
		if emu == nil {
			continue
		}
		for _, ev := range f.Queues {
			if st.cfg.Rehearsal != nil {
				sf, err := st.rehearsalQueueFeed(f, ev)
				if err != nil {
					fmt.Fprintf(stderr, "localapi: %v\n", err)
					return 1
				}
				sf.Fn, sf.Log, sf.ErrLog = emu, queueOut, queueErr
				sf.Delivered = func(bodies []string) {
					st.WritePIDs()
					if feed != nil {
						feed.Kick()
					}
				}
				fmt.Fprintf(stderr, "queue: %s (moto) -> lambda %s, received and deleted as its role (batch %d; log %s)\n", sf.QueueURL, f.Name, min(ev.BatchSize, 10), filepath.Join(logDir, "queue.log"))
				feedDone.Go(func() { sf.Run(feedCtx) })
				continue
			}
			qf := &QueueFeed{Queue: st.Queues[ev.Queue], Event: ev, Fn: emu, Region: st.Region, Log: queueOut, ErrLog: queueErr,
				Delivered: func(bodies []string) {
					st.WritePIDs()
					if feed == nil {
						return
					}
					for _, b := range bodies {
						if firm, run := runOf(b); run != "" {
							feed.Track(firm, run)
						}
					}
					feed.Kick()
				}}
			fmt.Fprintf(stderr, "queue: %s -> lambda %s (batch %d, one invocation at a time; log %s)\n", ev.Queue, f.Name, min(ev.BatchSize, 10), filepath.Join(logDir, "queue.log"))
			feedDone.Go(func() { qf.Run(feedCtx) })
		}
		for _, sc := range f.Schedules {
			every := localEvery(sc, o.sweepEvery)
			if every == 0 {
				fmt.Fprintf(stderr, "schedule: %s%s (%s) -> lambda %s: not run locally (%s)\n", f.LogicalID, sc.Name, sc.Expression, f.Name, notScheduledWhy(sc, o.sweepEvery))
				continue
			}
			tm := &Timer{Fn: f, Schedule: sc, Emulator: emu, Every: every, Region: st.Region, Log: queueOut, ErrLog: queueErr,
				Delivered: func() {
					st.WritePIDs()
					if feed != nil {
						feed.Kick()
					}
				}}
			fmt.Fprintf(stderr, "schedule: %s (%s) -> lambda %s every %s locally (-sweep-every)\n", tm.scheduleName(), sc.Expression, f.Name, every)
			feedDone.Go(func() { tm.Run(feedCtx) })
		}
	}

	claims := map[string][2]string{}
	for _, f := range st.Template.Functions {
		c := [2]string{"firm_id", "roles"}
		for _, kv := range f.Env {
			if v, ok := strings.CutPrefix(kv, "FIRM_CLAIM="); ok && v != "" {
				c[0] = v
			}
			if v, ok := strings.CutPrefix(kv, "ROLES_CLAIM="); ok && v != "" {
				c[1] = v
			}
		}
		claims[f.Name] = c
	}
	gw := &Gateway{
		Routes: st.Template.Routes, Emulators: st.Emulators, Claims: claims,
		IntegrationTimeout: o.integrationTimeout, AccessLog: accessLog, ErrorLog: errLog,
		DevDesk: DevDeskConfig(),
		Invoked: func(fn, firm string, req *events.APIGatewayV2HTTPRequest, resp *events.APIGatewayV2HTTPResponse) {
			st.WritePIDs()
			if feed == nil {
				return
			}
			if run := req.PathParameters["run_id"]; run != "" {
				feed.Track(firm, run)
			}
			if resp != nil && !resp.IsBase64Encoded && strings.Contains(resp.Headers["Content-Type"], "json") {
				var v struct {
					RunID string `json:"run_id"`
				}
				if json.Unmarshal([]byte(resp.Body), &v) == nil && v.RunID != "" {
					feed.Track(firm, v.RunID)
				}
			}
			feed.Kick()
		},
	}
	srv := &http.Server{Handler: gw, ReadHeaderTimeout: 10 * time.Second}
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(stderr, "api: %s (ready in %.1fs)\n", base, time.Since(t0).Seconds())
	for _, r := range routeList(st.Template.Routes) {
		fmt.Fprintf(stderr, "  %s\n", r)
	}
	fmt.Fprintf(stderr, "desk: %s/desk (the counsel's desk; local sign-in as Counsel or Associate)\n", base)
	if !o.headless {
		fmt.Fprint(stderr, curlExamples(base, st.Agents()))
	}

	demoDone := make(chan int, 1)
	if o.demo {
		go func() {
			fmt.Fprintln(stdout)
			wc := walkthrough.Config{BaseURL: base, LogDir: logDir, Out: stdout, LedgerKey: st.LedgerKey(), RawItems: st.RawItems,
				RawTable: st.RawTable, RetentionDay: o.retentionDay, KMS: st.RehearsalKMS(), TSACerts: st.TSACerts(), Witnesses: st.WitnessKeys()}
			if st.cfg.Rehearsal != nil {
				wc.RetentionDay = 0
				wc.LeftOut = map[string]string{walkthrough.StepRetention: "a retention day is 24 hours on AWS: RETENTION_DAY, the local stack's short day, " +
					"is refused with CHECKPOINT_BUCKET (pkg/config), and the rehearsal's sweeper has the stand-up's environment"}
				// A liveness bound: against moto, under enforcement, on a
				// loaded machine, a run takes longer than on minidyn.
				wc.RunWait, wc.ProjectionWait = 3*time.Minute, 2*time.Minute
			}
			if o.clientTimeout > 0 {
				wc.Client = &http.Client{Timeout: o.clientTimeout}
				wc.Poll = o.clientTimeout / 4
				wc.RunWait = 3 * time.Minute
			}
			err := walkthrough.Run(ctx, wc)
			code := 0
			if err != nil {
				code = 1
				if !o.headless && ctx.Err() == nil {
					fmt.Fprintln(stderr, "localapi: the demo failed; the stack stays up for a look (Ctrl-C stops it)")
				}
			}
			demoDone <- code
		}()
	}

	code := 0
	func() {
		for {
			select {
			case <-ctx.Done():
				fmt.Fprintln(stderr, "\nlocalapi: stopping")
				return
			case err := <-srvErr:
				fmt.Fprintf(stderr, "localapi: http server: %v\n", err)
				code = 1
				return
			case c := <-demoDone:
				if o.headless {
					code = c
					return
				}
				if c == 0 {
					fmt.Fprintf(stderr, "\nlocalapi: still serving on %s (Ctrl-C stops it)\n", base)
				}
			}
		}
	}()
	stopSignals() // a second Ctrl-C now kills at once (the emulators die with us)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	if o.demo && !o.headless {
		select { // a walkthrough still running ends with ctx
		case <-demoDone:
		case <-time.After(5 * time.Second):
		}
	}
	return code
}

// chooseFeed picks how ledger lines reach stream-reduce; nil after an
// error it has reported.
func chooseFeed(ctx context.Context, source string, st *Stack, f *Function, d *Deliverer, stderr io.Writer) Feed {
	if r := st.cfg.Rehearsal; r != nil {
		arn := r.streamARN(st.TableName())
		if arn == "" {
			fmt.Fprintf(stderr, "localapi: -rehearsal: the stand-up's table %s has no stream\n", st.TableName())
			return nil
		}
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		tail, err := OpenStreamTail(tctx, st.Streams, arn, f.BatchSize, d)
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "localapi: -rehearsal: %v\n", err)
			return nil
		}
		fmt.Fprintf(stderr, "stream: reading %s (moto) from LATEST as lambda %s's role -> lambda %s\n", arn, f.Name, f.Name)
		return tail
	}
	if source != "query" && st.ddbSrv == nil {
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		tail, err := NewStreamTail(tctx, st.DDB, st.Streams, st.TableName(), f.BatchSize, d)
		cancel()
		if err == nil {
			fmt.Fprintf(stderr, "stream: reading %s from LATEST -> lambda %s\n", tail.StreamARN, f.Name)
			return tail
		}
		if source == "streams" {
			fmt.Fprintf(stderr, "localapi: -stream-source streams: %v\n", err)
			return nil
		}
		fmt.Fprintf(stderr, "stream: no DynamoDB stream at %s (%v); polling run partitions instead\n", st.DDBURL(), firstLine(err))
	} else if source == "streams" {
		fmt.Fprintln(stderr, "localapi: -stream-source streams: minidyn has no streams; set DYNAMODB_ENDPOINT to an endpoint with streams (moto, DynamoDB Local)")
		return nil
	}
	fmt.Fprintf(stderr, "stream: polling the run partitions the API touches (Query above a per-run high-water mark, never Scan) -> lambda %s\n", f.Name)
	return NewPump(st.DDB, st.TableName(), st.Region, f.BatchSize, d)
}

// notScheduledWhy says why localEvery is 0 for s.
func notScheduledWhy(s Schedule, sweepEvery time.Duration) string {
	switch {
	case s.Disabled:
		return "disabled in the template"
	case sweepEvery == 0:
		return "-sweep-every 0"
	default:
		return "only rate(...) schedules run locally; invoke it with -invoke"
	}
}

// stillRunning lists the PIDs in <log-dir>/pids that are alive.
func stillRunning(logDir string) []int {
	b, err := os.ReadFile(filepath.Join(logDir, "pids"))
	if err != nil {
		return nil
	}
	var left []int
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if pid, err := strconv.Atoi(f[0]); err == nil && proc.Alive(pid) {
			left = append(left, pid)
		}
	}
	return left
}

// invokeOnce starts DynamoDB, Bedrock and one function's emulator, sends it
// the event and prints the response payload.
func invokeOnce(o options, stdout, stderr io.Writer) int {
	payload, err := os.ReadFile(o.event)
	if err != nil {
		fmt.Fprintf(stderr, "localapi: %v\n", err)
		return 1
	}
	if !json.Valid(payload) {
		fmt.Fprintf(stderr, "localapi: %s is not JSON\n", o.event)
		return 1
	}
	logDir, err := newLogDir(o.logDir, "-invoke")
	if err != nil {
		fmt.Fprintf(stderr, "localapi: log dir: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "logs: %s\n", logDir)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := stackConfig(o, logDir, stderr)
	cfg.Only = []string{o.invoke}
	st, err := StartStack(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "localapi: %s\n", startError(err))
		return 1
	}
	defer func() {
		if err := st.Stop(); err != nil {
			fmt.Fprintf(stderr, "localapi: stop: %v\n", err)
		}
	}()
	var emu *rie.Emulator
	for _, e := range st.Emulators {
		emu = e
	}
	t0 := time.Now()
	out, err := emu.Invoke(ctx, payload)
	if err != nil {
		fmt.Fprintf(stderr, "localapi: %s: %v\nlog: %s\n", emu.Name(), err, filepath.Join(logDir, emu.Name()+".log"))
		return 1
	}
	fmt.Fprintf(stderr, "%s: answered in %s (log %s)\n", emu.Name(), time.Since(t0).Round(time.Millisecond), filepath.Join(logDir, emu.Name()+".log"))
	var pretty any
	if !o.raw && json.Unmarshal(out, &pretty) == nil {
		// An API Gateway response's JSON body is shown as JSON, not a string.
		if m, ok := pretty.(map[string]any); ok {
			if b, ok := m["body"].(string); ok && json.Valid([]byte(b)) && strings.HasPrefix(strings.TrimSpace(b), "{") {
				var body any
				_ = json.Unmarshal([]byte(b), &body)
				m["body"] = body
			}
		}
		if b, err := json.MarshalIndent(pretty, "", "  "); err == nil {
			out = b
		}
	}
	fmt.Fprintf(stdout, "%s\n", out)
	return 0
}

// startError is what localapi prints of a start-up that failed: the first
// line, or every fault of a configuration the functions would refuse.
func startError(err error) string {
	var ce *ConfigError
	if errors.As(err, &ce) {
		return ce.Error()
	}
	return firstLine(err)
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// curlExamples are the "Try it" lines: a run of one of the stack's agents
// (agents: the matter assistant when it is one of them, else the first),
// followed to its warrant, signed, resumed and read. No agents known (AGENTS
// in SSM): the request says <agent_key>.
func curlExamples(base string, agents []string) string {
	agent, which := "<agent_key>", "this stack's agents are in AGENTS (an SSM parameter)"
	if len(agents) > 0 {
		agent, which = agents[0], "this stack's agents (AGENTS): "+strings.Join(agents, ", ")
		if slices.Contains(agents, "matter_assistant") {
			agent = "matter_assistant"
		}
	}
	return fmt.Sprintf(`
Try it (dev identity headers are LOCAL ONLY; defaults: firm %[2]s, user %[3]s, roles %[4]s):

  # %[6]s
  # start a run of %[7]s as an associate: 202 running; the worker takes it from the queue
  curl -s -X POST %[1]s/v1/runs -H 'Content-Type: application/json' -H 'X-Dev-Roles: associate' \
    -d '{"agent_key":"%[7]s","matter_id":"3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99","counsel_message":"Please file the motion to compel discovery."}'
  RUN=<run_id>

  # follow it until it stops running: held, with the warrant to sign in pending_approval
  curl -s "%[1]s/v1/runs/$RUN?wait=20"
  APPROVAL=<pending_approval.approval_request_id>; HASH=<pending_approval.tool_input_hash>

  # counsel signs the warrant, bound to the hash shown
  curl -s -X POST %[1]s/v1/runs/$RUN/approvals/$APPROVAL -H 'Content-Type: application/json' \
    -H 'X-Dev-User: %[5]s' -H 'X-Dev-Roles: counsel' \
    -d '{"decision":"approve","tool_input_hash":"'$HASH'"}'

  # resume: 202; the worker files once and the run completes
  curl -s -X POST %[1]s/v1/runs/$RUN/resume -H 'Content-Type: application/json' -d '{"approval_request_id":"'$APPROVAL'"}'
  curl -s "%[1]s/v1/runs/$RUN?wait=20"

  # read the run, its ledger (NDJSON), the firm's pending warrants, its model budget this month
  curl -s %[1]s/v1/runs/$RUN
  curl -s %[1]s/v1/runs/$RUN/events
  curl -s '%[1]s/v1/approvals?status=pending'
  curl -s %[1]s/v1/budget

`, base, DevFirm, DevUser, DevRoles, walkthrough.Counsel, which, agent)
}
