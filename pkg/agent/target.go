package agent

import (
	"context"
	"encoding/json"
)

// Target runs the calls of catalog tools on the system that serves them:
// the firm's MCP server (pkg/mcp), and beside it Lambda functions and HTTPS
// endpoints. The brain decides, claims and records every call; a target
// only carries one call to its system and brings the answer back. It is
// safe for concurrent use.
//
// Call's errors say how far the call got, and the brain acts on that alone:
//
//   - an error matching warrant.ErrTargetUnreachable: the call never left
//     Warrant (connection refused, a token that could not be had, a tool
//     the server no longer offers as pinned): nothing happened, a read may
//     be tried again and an effect is answered as failed;
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
	// another schema is refused (ErrTargetUnreachable), never called.
	SchemaSHA256 string
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
