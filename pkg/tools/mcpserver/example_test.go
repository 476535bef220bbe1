package mcpserver_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed-f6d3920e/warrant/pkg/tools"
	"github.com/seed-f6d3920e/warrant/pkg/tools/mcpserver"
)

// Serve the reference tools on loopback and list them with the SDK's client.
// (cmd/toolserver does the same with the functions' table as the outbox.)
func Example() {
	srv, err := mcpserver.New(tools.Reference(nil, nil), mcpserver.Options{Annotations: mcpserver.ReferenceAnnotations()})
	if err != nil {
		log.Fatal(err)
	}
	ts := httptest.NewServer(mcpserver.Handler(srv))
	defer ts.Close()

	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(tool.Name, tool.Annotations.ReadOnlyHint)
	}
	// Output:
	// delete_matter_document false
	// draft_document false
	// file_court_document false
	// get_matter_summary true
	// search_matter_documents true
	// send_client_email false
}
