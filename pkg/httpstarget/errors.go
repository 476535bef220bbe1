package httpstarget

import (
	"context"
	"fmt"

	"github.com/seed-f6d3920e/warrant/pkg/remote"
)

// targetError is a failed Call. Its text is the only place the network's
// words appear (never the response body), with every token and secret the
// target holds cut out; it unwraps to its class (ErrTargetUnreachable or
// ErrTargetOutcomeUnknown) and to the context's error when the context
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
	text := fmt.Sprintf("https server %q: %s", t.name, what)
	if cause != nil {
		text += ": " + cause.Error()
	}
	return &targetError{text: remote.Redact(text, t.auth), class: class, ctx: remote.CtxErr(ctx, cause)}
}
