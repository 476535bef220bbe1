package handlers_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/seed-f6d3920e/warrant/internal/lambdalocal"
	"github.com/seed-f6d3920e/warrant/internal/rie"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/httpstarget"
	"github.com/seed-f6d3920e/warrant/pkg/lambdatarget"
	"github.com/seed-f6d3920e/warrant/pkg/mcp"
	"github.com/seed-f6d3920e/warrant/pkg/remote"
	"github.com/seed-f6d3920e/warrant/pkg/tools"
	"github.com/seed-f6d3920e/warrant/pkg/tools/httpserver"
	"github.com/seed-f6d3920e/warrant/pkg/tools/mcpserver"
	"github.com/seed-f6d3920e/warrant/pkg/tools/serve"
)

// referenceServer starts the reference tools on loopback as the firm's
// system of the given kind (an MCP server, or an HTTPS endpoint whose 4xx
// answers are final) over the stack's table, written with a DynamoDB client
// of its own (the firm's system is not the functions' process: a fault
// injected into their client does not reach it), its handler wrapped by
// wrap (nil: as it is), and returns the catalog that names it and the
// functions' way to reach it (pkg/mcp or pkg/httpstarget, as wire.Load
// builds them).
func referenceServer(t *testing.T, ep *dynamotest.Endpoint, table string, now func() time.Time, system string, wrap func(http.Handler) http.Handler) (*catalog.Catalog, func(catalog.Server) (agent.Target, error)) {
	t.Helper()
	if wrap == nil {
		wrap = passThrough
	}
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(ep.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	reference := tools.Reference(dynamo.New(client, table, dynamo.WithClock(now)), now)
	var server catalog.Server
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	switch system {
	case catalog.TargetMCP:
		srv, err := mcpserver.New(reference, mcpserver.Options{})
		if err != nil {
			t.Fatal(err)
		}
		mux.Handle("/mcp", wrap(mcpserver.Handler(srv)))
		server = catalog.Server{Name: "reference", Kind: catalog.TargetMCP, URL: hs.URL + "/mcp", Auth: catalog.Auth{Kind: catalog.AuthNone}}
	case catalog.TargetHTTPS:
		set, err := serve.New(reference)
		if err != nil {
			t.Fatal(err)
		}
		mux.Handle("/https/", wrap(http.StripPrefix("/https", httpserver.Handler(set, nil))))
		server = catalog.Server{Name: "reference", Kind: catalog.TargetHTTPS, URL: hs.URL + "/https/", Auth: catalog.Auth{Kind: catalog.AuthNone}, FinalClientErrors: true}
	case catalog.TargetLambda:
		// cmd/toolfn under the emulator, behind lambdalocal's Invoke API,
		// behind wrap: the functions reach it with the Lambda SDK.
		fns, err := lambdalocal.Start(context.Background(), lambdalocal.Options{
			Functions: map[string]string{referenceFunction: toolfnBootstrap(t)},
			Timeout:   30 * time.Second,
			Env: []string{"TABLE_NAME=" + table, "AWS_ENDPOINT_URL_DYNAMODB=" + ep.URL, "AWS_REGION=us-east-1",
				"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_EC2_METADATA_DISABLED=true"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fns.Stop() })
		u, _ := url.Parse(fns.URL())
		mux.Handle("/", wrap(httputil.NewSingleHostReverseProxy(u)))
		server = catalog.Server{Name: "reference", Kind: catalog.TargetLambda, Function: "arn:aws:lambda:us-east-1:000000000000:function:" + referenceFunction}
	default:
		t.Fatalf("no reference system of kind %q", system)
	}
	doc, err := catalog.OnServer(server)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	return cat, func(s catalog.Server) (agent.Target, error) {
		switch s.Kind {
		case catalog.TargetHTTPS:
			return httpstarget.New(httpstarget.Config{Name: s.Name, URL: s.URL, Auth: remote.Auth{Kind: remote.AuthNone}, FinalClientErrors: s.FinalClientErrors})
		case catalog.TargetLambda:
			client := lambda.New(lambda.Options{Region: "us-east-1", BaseEndpoint: aws.String(hs.URL),
				Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
			return lambdatarget.New(lambdatarget.Config{Name: s.Name, Function: s.Function, Client: client})
		}
		tg, err := mcp.New(mcp.Config{Name: s.Name, URL: s.URL, Auth: mcp.Auth{Kind: mcp.AuthNone}, OnServerRequest: func(string) {}})
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { tg.Close() })
		return tg, nil
	}
}

func passThrough(h http.Handler) http.Handler { return h }

// referenceFunction is the reference tools' Lambda function's name.
const referenceFunction = "warrant-reference-tools"

var toolfn struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// toolfnBootstrap is cmd/toolfn built as a bootstrap, once for the test
// binary (TestMain removes it).
func toolfnBootstrap(t *testing.T) string {
	t.Helper()
	toolfn.once.Do(func() {
		if toolfn.dir, toolfn.err = os.MkdirTemp("", "handlers-toolfn-"); toolfn.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		toolfn.path, toolfn.err = rie.Build(ctx, "github.com/seed-f6d3920e/warrant/cmd/toolfn", toolfn.dir)
	})
	if toolfn.err != nil {
		t.Fatal(toolfn.err)
	}
	return toolfn.path
}
