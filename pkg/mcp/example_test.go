package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/mcp"
)

func Example() {
	// A firm's document system as an MCP server (here on loopback, so auth
	// none; a remote one takes bearer or oauth_client_credentials).
	schema := json.RawMessage(`{"type":"object","properties":{"matter_id":{"type":"string"},"query":{"type":"string"}}}`)
	server := sdk.NewServer(&sdk.Implementation{Name: "docs", Version: "1"}, nil)
	server.AddTool(&sdk.Tool{Name: "search_documents", InputSchema: schema},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "2 documents"}}}, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil))
	defer ts.Close()

	target, err := mcp.New(mcp.Config{Name: "docs", URL: ts.URL, Auth: mcp.Auth{Kind: mcp.AuthNone}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer target.Close()

	// The catalog pins the schema it was written against.
	pin, _ := mcp.SchemaHash(schema)
	res, err := target.Call(context.Background(), agent.TargetCall{
		Tool:         "search_documents",
		Input:        json.RawMessage(`{"matter_id":"m-1","query":"lease"}`),
		SchemaSHA256: pin,
		EffectRef:    "eff-1", FirmID: "firm-1", RunID: "run-1", MatterID: "m-1",
	})
	fmt.Println(string(res.Content), res.IsError, err)
	// Output: ["2 documents"] false <nil>
}
