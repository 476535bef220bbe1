package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/tools"
	"github.com/seed-f6d3920e/warrant/pkg/tools/serve"
)

// The _meta keys of a tools/call that carry the effect and the run it is
// made for. They are pkg/agent's Meta* keys (a test holds them equal): the
// server does not link the brain that calls it.
const (
	MetaEffectRef = "io.warrant/effect_ref"
	MetaFirmID    = "io.warrant/firm_id"
	MetaRunID     = "io.warrant/run_id"
	MetaMatterID  = "io.warrant/matter_id"
)

// Name is the server's name in its initialize answer.
const Name = "warrant-reference-tools"

// The texts of the tool errors a call can be answered with. They are fixed:
// nothing of an error's own text (which may carry AWS's) reaches the caller.
const (
	TextNoScope      = "refused: the call names no effect and run (_meta io.warrant/effect_ref, io.warrant/firm_id, io.warrant/run_id and io.warrant/matter_id, each a lowercase UUID); nothing was done"
	TextInvalidInput = serve.TextInvalidInput
	TextOutOfScope   = serve.TextOutOfScope
	TextNotInMatter  = serve.TextNotInMatter
	TextFailed       = serve.TextFailed
	TextAmbiguous    = serve.TextAmbiguous
)

// Options configure New.
type Options struct {
	// Annotations are the behavior hints tools/list gives, by tool name
	// (ReferenceAnnotations for the reference set). A tool with no entry
	// gives none, and a client assumes the specification's defaults: it may
	// write, destructively, to an open world.
	Annotations map[string]mcp.ToolAnnotations
	// Logger gets one line per call: the tool, its outcome and the run's
	// ids, never its input or its result; a failed tool as a failure
	// envelope (fixed texts only). Nil: no log.
	Logger *failure.Logger
	// Version is the server's version in its initialize answer (default
	// "dev").
	Version string
}

// New returns an MCP server offering exactly ts. Each tool is listed with its
// name, description and input schema as pkg/tools has them (the schema's
// bytes, so its RFC 8785 form, and the SHA-256 a client pins, are the
// tool's), with opts' annotations.
//
// A tools/call:
//   - without _meta io.warrant/effect_ref, firm_id, run_id and matter_id,
//     each a canonical lowercase UUID, is answered isError TextNoScope and
//     the tool is not run;
//   - whose arguments are not one JSON object that the tool's schema accepts
//     (formats asserted), or have a duplicate key or a number a double cannot
//     hold, is answered isError TextInvalidInput with where the arguments
//     fail (JSON pointers, schema keywords, never a value), as the
//     specification says (input validation errors are tool execution
//     errors), and the tool is not run;
//   - otherwise runs the tool's Execute with the effect_ref and with the
//     scope in its context (tools.NewContext), on the arguments' RFC 8785
//     form. Its JSON object result is answered as structuredContent and as
//     one text block holding the same JSON; its error as isError with a
//     fixed text (TextOutOfScope, TextNotInMatter, TextFailed).
//
// An unknown tool is a protocol error (JSON-RPC invalid params), as the
// specification says. New fails on a tool whose schema does not compile or
// is not an object schema, and on a name offered twice.
func New(ts []tools.Tool, opts Options) (*mcp.Server, error) {
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Version: version}, &mcp.ServerOptions{
		// Tools only: the set never changes while the server runs, and it
		// logs nothing to its clients.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	set, err := serve.New(ts)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: %w", err)
	}
	for _, t := range set.List() {
		def := &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.Schema}
		if a, ok := opts.Annotations[t.Name]; ok {
			def.Annotations = &a
		}
		h := handler{set: set, name: t.Name, log: opts.Logger}
		s.AddTool(def, h.call)
	}
	return s, nil
}

// Handler serves s over Streamable HTTP at every path. It is stateless (no
// Mcp-Session-Id; GET and DELETE are 405): a call is one POST answered with
// one JSON body, and the server never sends requests of its own. The SDK
// refuses a loopback request whose Host is not a loopback name (DNS
// rebinding); a browser's cross-origin request is refused too.
func Handler(s *mcp.Server) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	return http.NewCrossOriginProtection().Handler(h)
}

// ReferenceAnnotations are the reference tools' hints, honest to what each
// does to the fixture matter and the world. Warrant never trusts a server's
// hints (its catalog and policy decide); they are for other clients.
// Recording an effect is additive: no reference tool but the deletion
// destroys anything, though an e-mail or a filing cannot be taken back,
// which no hint says.
func ReferenceAnnotations() map[string]mcp.ToolAnnotations {
	no, yes := false, true
	return map[string]mcp.ToolAnnotations{
		"search_matter_documents": {Title: "Search the matter's documents", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no},
		"get_matter_summary":      {Title: "Read the matter summary", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no},
		"draft_document":          {Title: "Save a draft", DestructiveHint: &no, OpenWorldHint: &no},
		"send_client_email":       {Title: "E-mail the client", DestructiveHint: &no, OpenWorldHint: &yes},
		"file_court_document":     {Title: "File with the court", DestructiveHint: &no, OpenWorldHint: &yes},
		"delete_matter_document":  {Title: "Delete a matter document", DestructiveHint: &yes, OpenWorldHint: &no},
	}
}

type handler struct {
	set  *serve.Tools
	name string
	log  *failure.Logger
}

// call is the tool's tools/call handler. A refusal (no run in _meta,
// invalid arguments, another matter) is an isError result: the tool did not
// act. A failure of the tool's own system is a protocol error (internal
// error): whether it acted is unknown.
func (h handler) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	effectRef, scope, ok := fromMeta(req.Params.Meta)
	if !ok {
		h.info(ctx, "refused_no_scope", tools.Scope{})
		return toolError(TextNoScope), nil
	}
	o := h.set.Run(ctx, h.name, effectRef, scope, req.Params.Arguments)
	switch o.Kind {
	case serve.Refused:
		h.info(ctx, o.Log, scope)
		return toolError(o.Text), nil
	case serve.Failed:
		// The tool's own system failed (its outbox write): the effect may
		// have been recorded before the answer was lost. An isError result
		// would tell the client it did not act; a protocol error tells it
		// nothing, so an effect ends effect_outcome_unknown for counsel,
		// never taken as not done.
		h.failed(ctx, o.Err, scope)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: TextFailed}
	}
	h.info(ctx, "ok", scope)
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(o.Result)}},
		StructuredContent: json.RawMessage(o.Result),
	}, nil
}

// fromMeta reads the effect and the run from a call's _meta: all four, each
// a canonical lowercase UUID, or nothing.
func fromMeta(meta mcp.Meta) (effectRef string, s tools.Scope, ok bool) {
	get := func(key string) string { v, _ := meta[key].(string); return v }
	effectRef = get(MetaEffectRef)
	s, ok = serve.Scope(effectRef, get(MetaFirmID), get(MetaRunID), get(MetaMatterID))
	if !ok {
		return "", tools.Scope{}, false
	}
	return effectRef, s, true
}

func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func (h handler) info(ctx context.Context, outcome string, s tools.Scope) {
	if h.log == nil {
		return
	}
	h.log.Info(ctx, "tool call", "tool", h.name, "outcome", outcome, "firm_id", s.FirmID, "run_id", s.RunID, "matter_id", s.MatterID)
}

// failed logs a tool's own failure as an envelope: its kind from the
// adapter's classification (a store's throttling, say), its texts fixed.
func (h handler) failed(ctx context.Context, err error, s tools.Scope) {
	if h.log == nil {
		return
	}
	h.log.Log(ctx, failure.Build(err, failure.StageToolExecute, Name+"/"+h.name,
		failure.Identity{FirmID: s.FirmID, RunID: s.RunID, MatterID: s.MatterID}))
}
