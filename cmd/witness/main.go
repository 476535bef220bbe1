// Command witness is a witness of Warrant's firm logs (pkg/witness;
// c2sp.org/tlog-witness): it keeps the last checkpoint it cosigned per log,
// refuses one that does not extend it, and cosigns one that does.
//
//	witness keygen -name NAME -key FILE   make a key; print its vkey for verifiers
//	witness vkey -key FILE                print the vkey of a key
//	witness serve [flags]                 serve POST /add-checkpoint
//
// serve runs an HTTP server anywhere, keeping its state in a directory; when
// AWS_LAMBDA_RUNTIME_API is set it runs as a Lambda function behind API
// Gateway (HTTP API) or a function URL instead, keeping its state in a
// DynamoDB table (docs/EVIDENCE.md, "A witness").
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/seed-f6d3920e/warrant/pkg/secrets"
	"github.com/seed-f6d3920e/warrant/pkg/witness"
)

const usage = `usage:
  witness keygen -name NAME -key FILE
        make a witness key named NAME (a schema-less URL, e.g. witness.example.com/w1):
        write the private key to FILE (mode 0600; an existing FILE is refused) and
        print the verifier key (vkey) to hand to verifiers (warrant evidence verify
        --witness VKEY) and to the firm (WITNESSES)
  witness vkey -key FILE
        print the vkey of the key in FILE
  witness serve [-config FILE] [-key FILE] [-state DIR] [-listen ADDR] [-prefix PATH]
        serve POST PATH/add-checkpoint and GET PATH/<origin hash>/checkpoint
        (c2sp.org/tlog-witness). Flags default to the environment: WITNESS_CONFIG
        (a file, or the JSON itself: {"logs": [{"vkey": "<the firm log's note vkey>"}]}),
        WITNESS_KEY_FILE, WITNESS_STATE_DIR, WITNESS_LISTEN (default 127.0.0.1:8090),
        WITNESS_PREFIX. Under Lambda (AWS_LAMBDA_RUNTIME_API set) the state is the
        DynamoDB table WITNESS_TABLE and the key the Secrets Manager secret
        WITNESS_KEY_SECRET (or WITNESS_KEY_FILE)
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 && os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" {
		args = []string{"serve"} // Lambda runs the bootstrap with no arguments
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "keygen":
		err = keygen(args[1:], stdout)
	case "vkey":
		err = vkey(args[1:], stdout)
	case "serve":
		err = serve(args[1:], stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		err = usageError(fmt.Sprintf("unknown command %q", args[0]))
	}
	var ue usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "witness: %s\n%s", ue, usage)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "witness: %v\n", err)
		return 1
	}
	return 0
}

type usageError string

func (u usageError) Error() string { return string(u) }

func flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return usageError(err.Error())
	}
	if fs.NArg() > 0 {
		return usageError(fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	return nil
}

func keygen(args []string, stdout io.Writer) error {
	fs := flags("keygen")
	name := fs.String("name", "", "the witness's `NAME`")
	file := fs.String("key", "", "the `FILE` to write the private key to")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *name == "" || *file == "" {
		return usageError("keygen needs -name NAME and -key FILE")
	}
	skey, vkey, err := witness.GenerateKey(*name)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(*file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, skey); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, vkey)
	return err
}

func vkey(args []string, stdout io.Writer) error {
	fs := flags("vkey")
	file := fs.String("key", "", "the private key `FILE`")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *file == "" {
		return usageError("vkey needs -key FILE")
	}
	b, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	v, err := witness.VerifierKeyOf(string(b))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, v)
	return err
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// serveConfig is what serve runs with.
type serveConfig struct {
	config, keyFile, stateDir, listen, prefix string
	lambda                                    bool
}

func serve(args []string, stderr io.Writer) error {
	fs := flags("serve")
	var c serveConfig
	fs.StringVar(&c.config, "config", os.Getenv("WITNESS_CONFIG"), "the configuration `FILE` (or JSON)")
	fs.StringVar(&c.keyFile, "key", os.Getenv("WITNESS_KEY_FILE"), "the private key `FILE`")
	fs.StringVar(&c.stateDir, "state", os.Getenv("WITNESS_STATE_DIR"), "the state `DIR`ectory")
	fs.StringVar(&c.listen, "listen", env("WITNESS_LISTEN", "127.0.0.1:8090"), "the `ADDR`ess to listen on")
	fs.StringVar(&c.prefix, "prefix", os.Getenv("WITNESS_PREFIX"), "the submission `PATH` prefix")
	if err := parse(fs, args); err != nil {
		return err
	}
	c.lambda = os.Getenv("AWS_LAMBDA_RUNTIME_API") != ""
	logger := slog.New(slog.NewJSONHandler(stderr, nil))
	ctx := context.Background()
	w, err := build(ctx, c)
	if err != nil {
		return err
	}
	h := w.Handler(c.prefix, logger)
	if c.lambda {
		lambda.Start(LambdaHandler(h))
		return nil
	}
	srv := &http.Server{Addr: c.listen, Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: time.Minute}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-stop
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	logger.Info("witness serving", "name", w.Name(), "vkey", w.VerifierKey(), "listen", c.listen)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// build makes the witness c describes: its configuration, its key (a file,
// or under Lambda a Secrets Manager secret) and its store (a directory, or
// under Lambda a DynamoDB table).
func build(ctx context.Context, c serveConfig) (*witness.Witness, error) {
	if c.config == "" {
		return nil, usageError("serve needs -config FILE (or WITNESS_CONFIG)")
	}
	raw := []byte(c.config)
	if !strings.HasPrefix(strings.TrimSpace(c.config), "{") {
		b, err := os.ReadFile(c.config)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	cfg, err := witness.ParseConfig(raw)
	if err != nil {
		return nil, err
	}
	var skey string
	var store witness.Store
	if c.lambda {
		awsCfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, err
		}
		table := os.Getenv("WITNESS_TABLE")
		if table == "" {
			return nil, errors.New("under Lambda, WITNESS_TABLE names the witness's DynamoDB table")
		}
		store = witness.DynamoStore{Client: dynamodb.NewFromConfig(awsCfg), Table: table}
		if id := os.Getenv("WITNESS_KEY_SECRET"); id != "" && c.keyFile == "" {
			m := &secrets.Manager{Client: secretsmanager.NewFromConfig(awsCfg)}
			if skey, err = m.GetSecret(ctx, id); err != nil {
				return nil, err
			}
		}
	} else {
		if c.stateDir == "" {
			return nil, usageError("serve needs -state DIR (or WITNESS_STATE_DIR)")
		}
		if store, err = witness.NewDirStore(c.stateDir); err != nil {
			return nil, err
		}
	}
	if skey == "" {
		if c.keyFile == "" {
			return nil, usageError("serve needs -key FILE (or WITNESS_KEY_FILE; under Lambda, WITNESS_KEY_SECRET)")
		}
		b, err := os.ReadFile(c.keyFile)
		if err != nil {
			return nil, err
		}
		skey = string(b)
	}
	return witness.New(cfg, skey, store)
}

// LambdaHandler serves h to API Gateway HTTP API and function URL events
// (payload format 2.0).
func LambdaHandler(h http.Handler) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		body := []byte(ev.Body)
		if ev.IsBase64Encoded {
			b, err := base64.StdEncoding.DecodeString(ev.Body)
			if err != nil {
				return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusBadRequest, Body: "the body is not base64\n"}, nil
			}
			body = b
		}
		path := ev.RawPath
		if path == "" {
			path = ev.RequestContext.HTTP.Path
		}
		req, err := http.NewRequestWithContext(ctx, ev.RequestContext.HTTP.Method, path, bytes.NewReader(body))
		if err != nil {
			return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusBadRequest, Body: "malformed request\n"}, nil
		}
		for k, v := range ev.Headers {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		headers := map[string]string{}
		for k := range rec.Header() {
			headers[k] = rec.Header().Get(k)
		}
		return events.APIGatewayV2HTTPResponse{StatusCode: rec.Code, Headers: headers, Body: rec.Body.String()}, nil
	}
}
