package mcp

import (
	"context"
	"fmt"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/remote"
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

// fail builds a failed Call's or Tools' error (remote.Error): what says
// what failed, cause (may be nil) why; every token and secret the target
// holds is cut out.
func (t *Target) fail(ctx context.Context, class error, what string, cause error) error {
	text := fmt.Sprintf("mcp server %q: %s", t.name, what)
	if cause != nil {
		text += ": " + cause.Error()
	}
	return remote.NewError(ctx, class, text, cause, t.auth)
}
