package lambdatarget

import (
	"context"
	"fmt"

	"github.com/seed-f6d3920e/warrant/pkg/remote"
)

// fail builds a failed Call's error (remote.Error). Its text names the
// system, the function and what failed in the target's own words (an HTTP
// status, a Lambda error code, a network error); never the input, the
// function's answer, or Lambda's error message (which may quote the
// payload): cause, the SDK's error (may be nil), only tells whether the
// context ended.
func (t *Target) fail(ctx context.Context, class error, what string, cause error) error {
	text := fmt.Sprintf("lambda target %q: invoke %s: %s", t.name, t.function, what)
	if ce := remote.CtxErr(ctx, cause); ce != nil {
		text += " (" + ce.Error() + ")"
	}
	return remote.NewError(ctx, class, text, cause, nil)
}
