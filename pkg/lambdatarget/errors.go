package lambdatarget

import (
	"context"
	"fmt"

	"github.com/seed-f6d3920e/warrant/pkg/remote"
)

// targetError is a failed Call. Its text names the system, the function and
// what failed in the target's own words (an HTTP status, a Lambda error
// code, a network error); never the input, the function's answer, or
// Lambda's error message (which may quote the payload). It unwraps to its
// class (ErrTargetUnreachable or ErrTargetOutcomeUnknown) and to the
// context's error when the context ended, never to the SDK's error.
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

// fail builds a targetError: what says what failed; cause, the SDK's error
// (may be nil), only tells whether the context ended.
func (t *Target) fail(ctx context.Context, class error, what string, cause error) error {
	e := &targetError{text: fmt.Sprintf("lambda target %q: invoke %s: %s", t.name, t.function, what), class: class, ctx: remote.CtxErr(ctx, cause)}
	if e.ctx != nil {
		e.text += " (" + e.ctx.Error() + ")"
	}
	return e
}
