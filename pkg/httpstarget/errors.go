package httpstarget

import (
	"context"
	"fmt"

	"github.com/seed-f6d3920e/warrant/pkg/remote"
)

// fail builds a failed Call's error (remote.Error): what says what failed,
// cause (may be nil) why, in the network's words, never the response body;
// every token and secret the target holds is cut out.
func (t *Target) fail(ctx context.Context, class error, what string, cause error) error {
	text := fmt.Sprintf("https server %q: %s", t.name, what)
	if cause != nil {
		text += ": " + cause.Error()
	}
	return remote.NewError(ctx, class, text, cause, t.auth)
}
