package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/net/http2"

	"github.com/seed-f6d3920e/warrant/pkg/mcp"
	"github.com/seed-f6d3920e/warrant/pkg/remote/remotetest"
)

// bound is how long a call that a transport keeps sending again is given
// before the test counts what arrived; a call sent once ends long before.
const bound = 5 * time.Second

// rpcMethod is a JSON-RPC message's method ("" for a response).
func rpcMethod(body []byte) string {
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	return msg.Method
}

// h2Server is an MCP server (the SDK's, stateless, answering in JSON, at
// the protocol versions given) behind an HTTP/2 server whose tools/call
// answers are faulted as fault says; calls counts the tools/call requests
// that arrived whole.
func h2Server(t *testing.T, versions []string, fault func(body []byte) remotetest.Fault) (srv *remotetest.Server, calls *atomic.Int32) {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "docs", Version: "1"}, &sdk.ServerOptions{SupportedProtocolVersions: versions})
	s.AddTool(&sdk.Tool{Name: "file_motion", InputSchema: json.RawMessage(motionSchema)}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text("filed"), nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	calls = &atomic.Int32{}
	srv = remotetest.NewServer(h, func(_ *http.Request, body []byte) remotetest.Fault {
		if rpcMethod(body) != "tools/call" {
			return remotetest.Serve
		}
		calls.Add(1)
		return fault(body)
	})
	t.Cleanup(srv.Close)
	return srv, calls
}

// Issue 25 A: an HTTP/2 MCP server that reads the whole tools/call and then
// resets its stream (REFUSED_STREAM, PROTOCOL_ERROR) or sends GOAWAY
// receives it exactly once, and the call's outcome is unknown, whether the
// firm's client is net/http's or golang.org/x/net/http2's. (net/http's
// HTTP/2 client sent the SDK's request again, its body being rewindable,
// for as long as the context lived.)
func TestHTTP2FaultSentOnce(t *testing.T) {
	for _, v := range []struct {
		name     string
		versions []string
	}{{"2026-07-28", nil}, {"2025-06-18", []string{"2025-06-18"}}} {
		for _, fault := range []remotetest.Fault{remotetest.RefusedStream, remotetest.ProtocolError, remotetest.GoAway} {
			for _, base := range []string{"net/http", "x/net/http2"} {
				t.Run(fmt.Sprintf("%s/%s/%s", v.name, fault, base), func(t *testing.T) {
					srv, calls := h2Server(t, v.versions, func([]byte) remotetest.Fault { return fault })
					hc := srv.Client()
					if base == "x/net/http2" {
						hc = &http.Client{Transport: &http2.Transport{TLSClientConfig: srv.TLSConfig()}}
					}
					tg := newTarget(t, mcp.Config{URL: srv.URL, HTTPClient: hc})
					ctx, cancel := context.WithTimeout(context.Background(), bound)
					defer cancel()
					_, err := tg.Call(ctx, call("file_motion", motionSchema, `{"matter_id":"m","title":"t"}`))
					if n := calls.Load(); n != 1 {
						t.Fatalf("the tools/call arrived %d times, want once (err %v)", n, err)
					}
					wantClass(t, err, "unknown")
					if ctx.Err() != nil {
						t.Fatalf("the call ended with its context (%v), not with the fault", err)
					}
				})
			}
		}
	}
}
