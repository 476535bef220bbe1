package handlers_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/mcp"
	"github.com/seed-f6d3920e/warrant/pkg/tools"
	"github.com/seed-f6d3920e/warrant/pkg/tools/mcpserver"
)

// referenceServer starts the reference tools' MCP server on loopback over
// the stack's table, written with a DynamoDB client of its own (the firm's
// system is not the functions' process: a fault injected into their
// client does not reach it), wrapped by wrap, and returns the catalog that
// names it and the functions' way to reach it (pkg/mcp, as wire.Load
// builds it).
func referenceServer(t *testing.T, ep *dynamotest.Endpoint, table string, now func() time.Time, wrap func(http.Handler) http.Handler) (*catalog.Catalog, func(catalog.Server) (agent.Target, error)) {
	t.Helper()
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(ep.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	srv, err := mcpserver.New(tools.Reference(dynamo.New(client, table, dynamo.WithClock(now)), now), mcpserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(wrap(mcpserver.Handler(srv)))
	t.Cleanup(hs.Close)
	doc, err := catalog.OnServer(catalog.Server{Name: "reference", Kind: catalog.TargetMCP, URL: hs.URL + "/mcp", Auth: catalog.Auth{Kind: catalog.AuthNone}})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	return cat, func(s catalog.Server) (agent.Target, error) {
		tg, err := mcp.New(mcp.Config{Name: s.Name, URL: s.URL, Auth: mcp.Auth{Kind: mcp.AuthNone}, OnServerRequest: func(string) {}})
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { tg.Close() })
		return tg, nil
	}
}

func passThrough(h http.Handler) http.Handler { return h }
