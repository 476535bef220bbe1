package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/seed-f6d3920e/warrant"
)

// ToolChangedError refuses a call to a tool that the server no longer
// offers as the catalog pinned it: it lists the tool with another input
// schema, or not at all. Nothing was sent. It matches
// warrant.ErrTargetUnreachable.
type ToolChangedError struct {
	Server, Tool string
	// Pinned is the catalog's pin of the tool's input schema.
	Pinned string
	// Current is the server's schema hash now; empty when it does not list
	// the tool (or lists it twice, or with a schema that is not JSON).
	Current string
}

func (e *ToolChangedError) Error() string {
	if e.Current == "" {
		return fmt.Sprintf("mcp server %q changed tool %q: it no longer offers it as pinned (pinned schema %s); refused, nothing sent", e.Server, e.Tool, e.Pinned)
	}
	return fmt.Sprintf("mcp server %q changed tool %q: its input schema is now %s, the catalog pinned %s; refused, nothing sent", e.Server, e.Tool, e.Current, e.Pinned)
}

func (e *ToolChangedError) Unwrap() error { return warrant.ErrTargetUnreachable }

// targetError is a failed Call or Tools. Its text is the only place the
// network's or the server's own words appear, with every token and secret
// the target holds cut out; it unwraps to its class (ErrTargetUnreachable
// or ErrTargetOutcomeUnknown) and to the context's error when the context
// ended, never to the raw cause.
type targetError struct {
	text  string
	class error
	ctx   error
}

func (e *targetError) Error() string { return e.text }

func (e *targetError) Unwrap() []error {
	if e.ctx == nil {
		return []error{e.class}
	}
	return []error{e.class, e.ctx}
}

// fail builds a targetError: what says what failed, cause (may be nil) why.
func (t *Target) fail(ctx context.Context, class error, what string, cause error) error {
	text := fmt.Sprintf("mcp server %q: %s", t.name, what)
	if cause != nil {
		text += ": " + cause.Error()
	}
	return &targetError{text: t.redact(text), class: class, ctx: ctxErr(ctx, cause)}
}

// ctxErr is the context's error when the failure was the context's.
func ctxErr(ctx context.Context, cause error) error {
	switch {
	case errors.Is(cause, context.DeadlineExceeded):
		return context.DeadlineExceeded
	case errors.Is(cause, context.Canceled):
		return context.Canceled
	}
	return ctx.Err()
}

// redact cuts every token and secret the target has held out of s: a
// server may echo the Authorization header in its error text.
func (t *Target) redact(s string) string {
	if t.auth == nil {
		return s
	}
	for _, secret := range t.auth.known() {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return s
}
