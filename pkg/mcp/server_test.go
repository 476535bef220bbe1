package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed-f6d3920e/warrant/pkg/mcp"
)

// The MCP servers the tests call: built with the Go SDK, on loopback.

const (
	motionSchema = `{"type":"object","properties":{"matter_id":{"type":"string"},"title":{"type":"string"},"pages":{"type":"integer"}},"required":["matter_id","title"]}`
	anySchema    = `{"type":"object"}`
)

// seenCall is what a tool handler received.
type seenCall struct {
	Tool string
	Args json.RawMessage
	Meta map[string]any
}

type serverOptions struct {
	// versions narrows the protocol versions the server speaks (empty:
	// all the SDK's, so the client and server agree on 2026-07-28).
	versions []string
	// stateless: the SDK's Stateless option (no Mcp-Session-Id).
	stateless bool
	// token, when set, is the bearer token every request must carry.
	token string
	// ignoreCaps makes the server act as if the client had declared
	// elicitation and sampling (a server that ignores capabilities).
	ignoreCaps bool
}

// testServer is one MCP server and its record of what reached it.
type testServer struct {
	*httptest.Server
	mcp *sdk.Server

	mu       sync.Mutex
	calls    []seenCall
	requests []*http.Request // every HTTP request, body read off
	// callVersions: each tools/call request's Mcp-Protocol-Version.
	callVersions []string
	// callArrivals counts the tools/call requests that arrived, by tool,
	// whether or not the tool ran.
	callArrivals map[string]int
	token        string

	sessions atomic.Int32 // notifications/initialized received
	refusals []error      // what the server's own requests got back
	release  chan struct{}
	once     sync.Once

	// stream is the SDK's Streamable HTTP handler; newStream makes another,
	// with no sessions (forget).
	stream    http.Handler
	newStream func() http.Handler

	// huge gets how many bytes of its answer huge_json or huge_sse wrote
	// before it was done or the client went away.
	huge chan int64
}

// hugeAnswer is the size of huge_json's and huge_sse's answers: 96 MiB,
// the answer that once took a worker 2.2 GiB to read.
const hugeAnswer = 96 << 20

// writeHuge answers a tools/call whose id is id with a text block of
// hugeAnswer bytes, as JSON or as one SSE event, and returns how much of it
// was written before the client stopped reading.
func writeHuge(w http.ResponseWriter, id json.RawMessage, sse bool) int64 {
	head := `{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"`
	tail := `"}]}}`
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
		head, tail = "event: message\ndata: "+head, tail+"\n\n"
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	chunk := []byte(strings.Repeat("x", 64<<10))
	n, err := io.WriteString(w, head)
	total := int64(n)
	for err == nil && total < hugeAnswer {
		n, err = w.Write(chunk)
		total += int64(n)
	}
	if err == nil {
		n, _ = io.WriteString(w, tail)
		total += int64(n)
	}
	return total
}

// forget makes the server forget its sessions, as a restart does: a
// request on one is answered 404.
func (s *testServer) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stream = s.newStream()
}

// unblock ends every slow call, now and later.
func (s *testServer) unblock() { s.once.Do(func() { close(s.release) }) }

func (s *testServer) record(tool string, req *sdk.CallToolRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, seenCall{Tool: tool, Args: append(json.RawMessage(nil), req.Params.Arguments...), Meta: req.Params.Meta})
}

func (s *testServer) seen(tool string) []seenCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []seenCall
	for _, c := range s.calls {
		if c.Tool == tool {
			out = append(out, c)
		}
	}
	return out
}

// arrivals is how many tools/call requests for tool arrived.
func (s *testServer) arrivals(tool string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.callArrivals[tool]
}

func (s *testServer) setToken(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = tok
}

func text(t string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: t}}}
}

// addTool adds a raw tool whose handler records the call and then runs h.
func (s *testServer) addTool(name, schema string, annotations *sdk.ToolAnnotations, h sdk.ToolHandler) {
	s.mcp.AddTool(&sdk.Tool{Name: name, Description: "the " + name + " tool", InputSchema: json.RawMessage(schema), Annotations: annotations},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			s.record(name, req)
			return h(ctx, req)
		})
}

func newServer(t testing.TB, o serverOptions) *testServer {
	t.Helper()
	s := &testServer{token: o.token, release: make(chan struct{}), callArrivals: map[string]int{}, huge: make(chan int64, 1)}
	s.mcp = sdk.NewServer(&sdk.Implementation{Name: "docs", Version: "1"}, &sdk.ServerOptions{
		SupportedProtocolVersions: o.versions,
		InitializedHandler:        func(context.Context, *sdk.InitializedRequest) { s.sessions.Add(1) },
	})
	if o.ignoreCaps {
		s.mcp.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
			return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
				if p, ok := req.GetParams().(*sdk.InitializeParams); ok && p != nil {
					if p.Capabilities == nil {
						p.Capabilities = &sdk.ClientCapabilities{}
					}
					p.Capabilities.Elicitation = &sdk.ElicitationCapabilities{}
					p.Capabilities.Sampling = &sdk.SamplingCapabilities{}
				}
				return next(ctx, method, req)
			}
		})
	}
	s.addTool("file_motion", motionSchema, &sdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: new(bool)}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text("filed"), nil
	})
	s.addTool("search", anySchema, nil, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{
			Content:           []sdk.Content{&sdk.TextContent{Text: `{"hits":2}`}},
			StructuredContent: map[string]any{"hits": 2, "ids": []string{"d-1", "d-2"}},
		}, nil
	})
	s.addTool("bad_date", anySchema, nil, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		res := text("invalid date: must be in the future")
		res.IsError = true
		return res, nil
	})
	s.addTool("scan", anySchema, nil, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.TextContent{Text: "page 1"},
			&sdk.ImageContent{Data: []byte("png"), MIMEType: "image/png"},
		}}, nil
	})
	// slow waits for the test's release, or for the client to go away.
	s.addTool("slow", anySchema, nil, func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		select {
		case <-s.release:
		case <-ctx.Done():
		}
		return text("done late"), nil
	})
	// The next ones are answered by handle, around the SDK: after_NNN runs
	// and is then answered HTTP NNN, as a gateway may answer after the
	// server behind it acted.
	for _, name := range []string{"drop", "gateway", "forbidden", "send_email", "session_gone", "huge_json", "huge_sse",
		"after_302", "after_303", "after_401", "after_404", "after_409", "after_422", "after_429"} {
		s.addTool(name, anySchema, nil, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text("sent"), nil
		})
	}
	s.addTool("invalid_params", anySchema, nil, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "pages must be positive"}
	})
	s.addTool("internal_error", anySchema, nil, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return nil, errors.New("the filing system failed half way")
	})
	// rpc_internal_error and rpc_server_error act, then answer a JSON-RPC
	// error with the code in their name's place: -32603 (internal error)
	// and -32000 (the first of the implementation's server errors). The
	// SDK sends a *jsonrpc.Error's code as it is (a plain Go error, as
	// internal_error's, goes as code 0).
	for name, code := range map[string]int64{"rpc_internal_error": jsonrpc.CodeInternalError, "rpc_server_error": -32000} {
		s.addTool(name, anySchema, nil, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: code, Message: "the filing system failed after filing"}
		})
	}
	// whoami echoes the Authorization header it was sent, as a careless
	// server does: in a text block, in JSON inside one (escaped), and as
	// a member's name and value of its structured content (when the
	// input asks for it).
	s.addTool("whoami", anySchema, nil, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		auth := req.Extra.Header.Get("Authorization")
		escaped := strings.NewReplacer("-", `\u002d`, "/", `\/`).Replace(auth)
		res := text("you sent " + auth)
		res.Content = append(res.Content, &sdk.TextContent{Text: `{"echo":"` + escaped + `"}`})
		if strings.Contains(string(req.Params.Arguments), "structured") {
			res.StructuredContent = map[string]any{"echo": auth, auth: true, "filed": true}
		}
		return res, nil
	})
	// asks makes each request a server can make of its client, then
	// carries on (legacy protocol: requests on the call's stream).
	s.addTool("asks", anySchema, nil, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		_, e1 := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "confirm the filing?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`)})
		_, e2 := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 10, Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "summarize"}}}})
		_, e3 := req.Session.ListRoots(ctx, nil)
		s.mu.Lock()
		s.refusals = append(s.refusals, e1, e2, e3)
		s.mu.Unlock()
		return text("carried on"), nil
	})
	// asks_again asks the 2026-07-28 way: an input_required result.
	s.addTool("asks_again", anySchema, nil, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{
			"confirm": &sdk.ElicitParams{Message: "confirm the filing?"},
			"think":   &sdk.CreateMessageParams{MaxTokens: 10, Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "summarize"}}}},
		}}, nil
	})

	s.newStream = func() http.Handler {
		return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.mcp }, &sdk.StreamableHTTPOptions{Stateless: o.stateless})
	}
	s.stream = s.newStream()
	s.Server = httptest.NewServer(s.handle(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		h := s.stream
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})))
	t.Cleanup(func() {
		s.unblock() // a slow call still running ends, so the server can close
		s.Server.CloseClientConnections()
		s.Server.Close()
	})
	return s
}

// handle records every request, counts each tools/call, checks the token,
// and plays the faults of drop (the tool runs, then the connection is cut),
// after_NNN (the tool runs, then HTTP NNN), gateway (a 502 after the call
// arrived), forbidden (a 403), session_gone (a 404, the tool not run) and
// send_email (a token echoed back in a 401's JSON-RPC error).
func (s *testServer) handle(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.mu.Lock()
		s.requests = append(s.requests, r.Clone(context.Background()))
		token := s.token
		s.mu.Unlock()

		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method == "tools/call" {
			s.mu.Lock()
			s.callArrivals[msg.Params.Name]++
			s.mu.Unlock()
		}
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			// A careless server echoes what it was sent.
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{
				"code": -32001, "message": "invalid token: " + r.Header.Get("Authorization"),
			}})
			return
		}
		if msg.Method != "tools/call" {
			h.ServeHTTP(w, r)
			return
		}
		s.mu.Lock()
		s.callVersions = append(s.callVersions, r.Header.Get("Mcp-Protocol-Version"))
		s.mu.Unlock()
		if status, ok := strings.CutPrefix(msg.Params.Name, "after_"); ok {
			h.ServeHTTP(httptest.NewRecorder(), r) // the tool runs; its answer goes nowhere
			code, _ := strconv.Atoi(status)
			if code/100 == 3 {
				w.Header().Set("Location", "/filings/f-1")
			}
			w.WriteHeader(code)
			return
		}
		switch msg.Params.Name {
		case "huge_json", "huge_sse":
			s.huge <- writeHuge(w, msg.ID, msg.Params.Name == "huge_sse")
		case "session_gone":
			// A server that forgot the session answers before running it;
			// the client cannot tell this 404 from a gateway's after a run.
			http.Error(w, "session not found", http.StatusNotFound)
		case "drop":
			h.ServeHTTP(httptest.NewRecorder(), r) // the tool runs; its answer goes nowhere
			panic(http.ErrAbortHandler)
		case "gateway":
			http.Error(w, "upstream timed out", http.StatusBadGateway)
		case "forbidden":
			http.Error(w, "not for you", http.StatusForbidden)
		default:
			h.ServeHTTP(w, r)
		}
	})
}

// fakeSecrets is a Secrets double: get answers by id; reads counts calls.
type fakeSecrets struct {
	get   func(ctx context.Context, id string) (string, error)
	reads atomic.Int32
}

func (f *fakeSecrets) GetSecret(ctx context.Context, id string) (string, error) {
	f.reads.Add(1)
	return f.get(ctx, id)
}

var _ mcp.Secrets = (*fakeSecrets)(nil)
