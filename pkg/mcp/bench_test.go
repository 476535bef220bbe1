package mcp_test

import (
	"context"
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed-f6d3920e/warrant/pkg/mcp"
)

// BenchmarkCall is one tools/call over loopback through the Target beside
// the same call made directly with the SDK's client, on a stateful
// (2025-11-25) and a stateless (2026-07-28) server: the difference is the
// target's own work (pin check from its cached list, the probe, _meta, the
// result's encoding).
func BenchmarkCall(b *testing.B) {
	const input = `{"matter_id":"matter-1","pages":12,"title":"Motion to compel"}`
	for _, f := range flavors[:2] {
		srv := newServer(b, f.o)
		b.Run(f.name+"/target", func(b *testing.B) {
			tg := newTarget(b, mcp.Config{URL: srv.URL})
			c := call("file_motion", motionSchema, input)
			ctx := context.Background()
			if _, err := tg.Call(ctx, c); err != nil { // session and list in hand
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tg.Call(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(f.name+"/sdk", func(b *testing.B) {
			client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
			ctx := context.Background()
			cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			params := &sdk.CallToolParams{Name: "file_motion", Arguments: json.RawMessage(input)}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cs.CallTool(ctx, params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
