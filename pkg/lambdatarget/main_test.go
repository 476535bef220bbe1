package lambdatarget_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/seed-f6d3920e/warrant/internal/lambdalocal"
	"github.com/seed-f6d3920e/warrant/internal/rie"
	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/lambdatarget"
)

var _ agent.Target = (*lambdatarget.Target)(nil)

// bootstrap is the test function (internal/lambdalocal/testdata/toolfn),
// built once.
var bootstrap string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "lambdatarget-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if bootstrap, err = rie.Build(ctx, "github.com/seed-f6d3920e/warrant/internal/lambdalocal/testdata/toolfn", dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// fnTool is the test function's name on an endpoint.
const fnTool = "tool"

// local is an endpoint serving the test function as fnTool, each request
// faulted as fault says (nil: none), and the file where the function
// records each run. It is stopped when the test ends.
type local struct {
	*lambdalocal.Endpoint
	effects string
}

func startLocal(t *testing.T, opts lambdalocal.Options) *local {
	t.Helper()
	l := &local{effects: filepath.Join(t.TempDir(), "effects")}
	opts.Functions = map[string]string{fnTool: bootstrap}
	opts.Env = append(opts.Env, "TOOLFN_EFFECTS="+l.effects)
	ep, err := lambdalocal.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ep.Stop(); err != nil {
			t.Error(err)
		}
	})
	l.Endpoint = ep
	return l
}

// runs counts the runs of the effect ref the function recorded.
func (l *local) runs(t *testing.T, ref string) int {
	t.Helper()
	b, err := os.ReadFile(l.effects)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Fields(string(b)) {
		if line == ref {
			n++
		}
	}
	return n
}

// client is an SDK client for a Lambda endpoint at url, configured to
// retry up to five times: the target must override that.
func client(url string) *lambda.Client {
	return lambda.New(lambda.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(url),
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		RetryMaxAttempts: 5,
	})
}

// arn is the ARN of a function of the local endpoint.
func arn(name string) string { return "arn:aws:lambda:us-east-1:123456789012:function:" + name }

func newTarget(t *testing.T, url, function string) *lambdatarget.Target {
	t.Helper()
	tg, err := lambdatarget.New(lambdatarget.Config{Name: "firm-fns", Function: function, Client: client(url), RetryDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// canary is in every input and every answer the tests make the function
// give; no error text may hold it.
const canary = "CANARY-7f3a"

// callFor is a call whose input asks the test function to do something.
func callFor(ref, input string) agent.TargetCall {
	return agent.TargetCall{
		Tool:      "file_motion",
		Input:     json.RawMessage(input),
		EffectRef: ref,
		FirmID:    "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b",
		RunID:     "5d6e7f80-1a2b-4c3d-8e9f-0a1b2c3d4e5f",
		MatterID:  "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99",
		// A Lambda function publishes no schema; the pin is the catalog's.
		SchemaSHA256: strings.Repeat("ab", 32),
	}
}

// noContent fails the test if err's text holds the canary.
func noContent(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), canary) {
		t.Fatalf("the error text holds input or output: %v", err)
	}
}
