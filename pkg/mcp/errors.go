package mcp

import (
	"context"
	"fmt"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/remote"
)

// ToolChangedError refuses a call to a tool that the server no longer
// offers as the catalog pinned it: it lists the tool with another input
// schema, or not at all. Nothing was sent. It is the brain's own type
// (agent.ToolChangedError), so the brain reads its hashes and ends the run
// tool_changed; it matches warrant.ErrTargetUnreachable.
type ToolChangedError = agent.ToolChangedError

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
