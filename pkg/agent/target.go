package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/seed-f6d3920e/warrant"
)

// Target runs the calls of catalog tools on the system that serves them:
// the firm's MCP server (pkg/mcp), and beside it Lambda functions and HTTPS
// endpoints. The brain decides, claims and records every call; a target
// only carries one call to its system and brings the answer back. It is
// safe for concurrent use.
//
// Call's errors say how far the call got, and the brain acts on that alone:
//
//   - a *ToolChangedError: the system no longer offers the tool as the
//     catalog pinned it, and the call was not sent; the run ends
//     tool_changed (it matches warrant.ErrTargetUnreachable too);
//   - an error matching warrant.ErrTargetUnreachable: the call never left
//     Warrant (connection refused, a token that could not be had):
//     nothing happened, a read may be tried again and an effect is
//     answered as failed;
//   - an error matching warrant.ErrTargetOutcomeUnknown: the call left and
//     no answer proves it did not run (a timeout, a reset, a 5xx, a
//     redirect or a 4xx after the request was sent, an answer too large to
//     read): an effect may have happened, so it is never tried again and
//     ends effect_outcome_unknown for counsel to reconcile; a read may be
//     tried again;
//   - any other error: as unknown, the safe reading.
//
// A target sends a call once: neither it nor its HTTP client sends it again
// once its request may have left (only a call that surely never left may be
// tried again by the target). An answer after the request left is "did not
// run" only when it proves so (for an HTTPS endpoint, a 4xx its catalog
// entry says is final: a TargetResult with IsError).
//
// A tool that answered with its own error (MCP's isError) is not an error
// of Call: it is a TargetResult with IsError. Errors and results may carry
// the target's raw text; the brain logs only a sanitized envelope of them
// and never shows them to the model or the ledger as they are.
type Target interface {
	Call(ctx context.Context, c TargetCall) (TargetResult, error)
}

// PinChecker is a Target whose system publishes its tools' input schemas
// (an MCP server's tools/list), so the brain can ask, without calling the
// tool, whether the tool is still as the catalog pinned it: before counsel
// is asked to sign a call, and again before a signed call runs. An HTTPS
// endpoint or a Lambda function publishes none (the catalog's schema is the
// tool's own), so their targets do not implement it.
//
// CheckPin reads c's Tool, SchemaSHA256 and run ids (a per-firm system's
// credentials are the firm's), never its Input, and sends no call. It asks
// the system now, never trusting a list it kept: nil when the system offers
// the tool with the pinned schema, a *ToolChangedError when it offers it
// with another or not at all, and any other error (matching
// warrant.ErrTargetUnreachable) when the system could not be asked.
type PinChecker interface {
	CheckPin(ctx context.Context, c TargetCall) error
}

// ToolChangedError refuses a call to a tool its system no longer offers as
// the catalog pinned it: it lists the tool with another input schema, or
// not at all. Nothing was sent. It matches warrant.ErrTargetUnreachable.
type ToolChangedError struct {
	// Server is the system's name in the catalog; Tool the tool's name on
	// the system.
	Server, Tool string
	// Pinned is the catalog's pin of the tool's input schema.
	Pinned string
	// Current is the system's schema hash now; empty when it does not list
	// the tool (or lists it twice, or with a schema that is not JSON).
	Current string
}

func (e *ToolChangedError) Error() string {
	if e.Current == "" {
		return fmt.Sprintf("server %q changed tool %q: it no longer offers it as pinned (pinned schema %s); refused, nothing sent", e.Server, e.Tool, e.Pinned)
	}
	return fmt.Sprintf("server %q changed tool %q: its input schema is now %s, the catalog pinned %s; refused, nothing sent", e.Server, e.Tool, e.Current, e.Pinned)
}

func (e *ToolChangedError) Unwrap() error { return warrant.ErrTargetUnreachable }

// TargetCall is one call as a target sends it.
type TargetCall struct {
	// Tool is the tool's name on its system (the catalog may show the
	// model another).
	Tool string
	// Input is the call's canonical JSON object: exactly the bytes counsel
	// signed when the call needed a warrant.
	Input json.RawMessage
	// SchemaSHA256 is the catalog's pin of the tool's input schema (hex
	// SHA-256 of its RFC 8785 form): a system that offers the tool with
	// another schema is refused (ToolChangedError), never called.
	SchemaSHA256 string
	// Effect: the call may change something (its catalog class is not
	// read). A target that checks the pin against a list of the system's
	// tools checks an effect's against a list made for this call, never
	// one it kept; a read's may be a kept one.
	Effect bool
	// EffectRef is the effect's id, fixed when it was claimed: the
	// downstream idempotency key, passed as the system allows (MCP:
	// _meta "io.warrant/effect_ref").
	EffectRef string
	// FirmID, RunID and MatterID name the run the call is made for (MCP:
	// _meta "io.warrant/firm_id", "io.warrant/run_id",
	// "io.warrant/matter_id").
	FirmID, RunID, MatterID string
}

// TargetResult is what the system answered.
type TargetResult struct {
	// Content is the answer as one JSON value: the tool's structured
	// content when it gave one, else its content blocks.
	Content json.RawMessage
	// IsError: the tool itself reported an error (the model is told so,
	// sanitized).
	IsError bool
}

// MetaEffectRef and the other _meta keys a target passes the call's ids
// under (MCP's reserved-prefix convention: a reverse-DNS prefix of ours).
const (
	MetaEffectRef = "io.warrant/effect_ref"
	MetaFirmID    = "io.warrant/firm_id"
	MetaRunID     = "io.warrant/run_id"
	MetaMatterID  = "io.warrant/matter_id"
)
