package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/mcp"
)

// rawServer is an MCP server written as plain JSON-RPC over HTTP (no SDK),
// for listings the SDK's server would not give: it answers server/discover
// with method not found (so the client falls back to initialize),
// initialize with 2025-11-25 and no session, tools/list with tools as
// given, and every tools/call with a text result, counting them.
type rawServer struct {
	*httptest.Server
	tools []map[string]any

	mu    sync.Mutex
	calls map[string]int // tools/call received, by tool name
}

func newRawServer(t *testing.T, tools ...map[string]any) *rawServer {
	t.Helper()
	s := &rawServer{tools: tools, calls: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *rawServer) called(tool string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[tool]
}

func (s *rawServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "no stream here", http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		http.Error(w, "not JSON-RPC", http.StatusBadRequest)
		return
	}
	if msg.ID == nil { // a notification
		w.WriteHeader(http.StatusAccepted)
		return
	}
	answer := map[string]any{"jsonrpc": "2.0", "id": msg.ID}
	switch msg.Method {
	case "initialize":
		answer["result"] = map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "raw", "version": "1"}}
	case "tools/list":
		answer["result"] = map[string]any{"tools": s.tools}
	case "tools/call":
		s.mu.Lock()
		s.calls[msg.Params.Name]++
		s.mu.Unlock()
		answer["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": "filed"}}}
	default:
		answer["error"] = map[string]any{"code": -32601, "message": "method not found: " + msg.Method}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}

// Issue 31 item 3: a server that lists one tool name twice offers no one
// tool by it, whichever schema comes last. Here the pinned schema is listed
// last (the one a map keyed by name would keep): the call, effect or read,
// is refused as changed before anything is sent (no tools/call reaches the
// server), CheckPin refuses it too, and Tools shows that name without a
// schema or a pin.
//
// Checked: with listTools letting a name listed twice keep its last entry's
// pin (the loop that clears it removed), this fails with "the call to a
// name listed twice: <nil>, want a ToolChangedError".
func TestToolListedTwiceHasNoPin(t *testing.T) {
	tool := func(name, schema string) map[string]any {
		return map[string]any{"name": name, "description": "the " + name + " tool", "inputSchema": json.RawMessage(schema)}
	}
	srv := newRawServer(t, tool("file_motion", motionSchemaChanged), tool("search", anySchema), tool("file_motion", motionSchema))
	tg := newTarget(t, mcp.Config{URL: srv.URL})
	ctx := context.Background()

	// The server is one the client speaks to: a tool it lists once is called.
	if _, err := tg.Call(ctx, call("search", anySchema, `{}`)); err != nil {
		t.Fatalf("a tool listed once: %v", err)
	}
	read := call("file_motion", motionSchema, `{"matter_id":"m","title":"t"}`)
	effect := read
	effect.Effect = true
	for _, c := range []agent.TargetCall{effect, read} {
		_, err := tg.Call(ctx, c)
		var changed *agent.ToolChangedError
		if !errors.As(err, &changed) || changed.Tool != "file_motion" || changed.Pinned != pin(t, motionSchema) || changed.Current != "" {
			t.Fatalf("the call to a name listed twice: %v, want a ToolChangedError with no current schema", err)
		}
		wantClass(t, err, "unreachable")
	}
	var changed *agent.ToolChangedError
	if err := tg.CheckPin(ctx, effect); !errors.As(err, &changed) {
		t.Fatalf("CheckPin of a name listed twice: %v, want a ToolChangedError", err)
	}
	if n := srv.called("file_motion"); n != 0 {
		t.Fatalf("%d tools/call reached the server for the name listed twice, want none", n)
	}
	tools, err := tg.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, rt := range tools {
		switch rt.Name {
		case "file_motion":
			found = true
			if rt.SchemaSHA256 != "" || rt.InputSchema != nil {
				t.Errorf("Tools lists file_motion with the pin %q (schema %s), want none", rt.SchemaSHA256, rt.InputSchema)
			}
		case "search":
			if rt.SchemaSHA256 != pin(t, anySchema) {
				t.Errorf("Tools lists search with the pin %q, want its schema's", rt.SchemaSHA256)
			}
		}
	}
	if !found {
		t.Errorf("Tools = %+v, want file_motion listed (without a pin)", tools)
	}
}
