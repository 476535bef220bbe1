package failure_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// apiErr has the methods every AWS SDK API error has, which is all DebugRef
// looks for; the AWS code tables themselves are tested in the adapters
// (pkg/dynamo, pkg/bedrock) that own them.
type apiErr struct{ code, msg string }

func (e apiErr) Error() string        { return "api error " + e.code + ": " + e.msg }
func (e apiErr) ErrorCode() string    { return e.code }
func (e apiErr) ErrorMessage() string { return e.msg }

func code(c string) error { return apiErr{code: c, msg: "m"} }

type docketError struct{ kind failure.Kind }

func (e docketError) Error() string {
	return "docket"
}

func (e docketError) FailureKind() failure.Kind {
	return e.kind
}

// policyError is a Retrier with any policy.
type policyError struct {
	kind      failure.Kind
	retryable bool
	after     time.Duration
}

func (e policyError) Error() string                      { return "policy" }
func (e policyError) FailureKind() failure.Kind          { return e.kind }
func (e policyError) RetryPolicy() (bool, time.Duration) { return e.retryable, e.after }

// asKinder is not a Kinder but converts to one through an As method, as
// errors.As allows.
type asKinder struct{ kind failure.Kind }

func (e asKinder) Error() string { return "as" }
func (e asKinder) As(target any) bool {
	if k, ok := target.(*failure.Kinder); ok {
		*k = docketError{e.kind}
		return true
	}
	return false
}

func TestClassify(t *testing.T) {
	const s5, s1, s2 = 5 * time.Second, time.Second, 2 * time.Second
	cause := errors.New("cause")
	tests := []struct {
		name      string
		err       error
		kind      failure.Kind
		retryable bool
		after     time.Duration
	}{
		{"nil", nil, failure.KindInternal, false, 0},
		{"plain", errors.New("boom"), failure.KindInternal, false, 0},
		{"api error alone is not classified", code("ThrottlingException"), failure.KindInternal, false, 0},
		{"failure.Error", failure.New(failure.KindNotFound, "run_id"), failure.KindNotFound, false, 0},
		{"wrapped failure.Error", fmt.Errorf("load: %w", failure.New(failure.KindExpired, "")), failure.KindExpired, false, 0},
		{"Kinder", fmt.Errorf("x: %w", docketError{failure.KindToolError}), failure.KindToolError, false, 0},
		{"Kinder through As", fmt.Errorf("x: %w", asKinder{failure.KindToolError}), failure.KindToolError, false, 0},
		{"invalid Kinder falls through", fmt.Errorf("%w: %w", docketError{"bogus"}, context.DeadlineExceeded), failure.KindTimeout, true, s1},
		{"invalid Kinder skipped for a later valid one", fmt.Errorf("%w: %w", docketError{"bogus"}, failure.Classified(failure.KindStoreThrottled, cause)), failure.KindStoreThrottled, true, s1},
		{"first valid Kinder wins", errors.Join(docketError{failure.KindToolError}, failure.New(failure.KindNotFound, "")), failure.KindToolError, false, 0},

		{"Classified uses the kind's default", failure.Classified(failure.KindStoreUnavailable, cause), failure.KindStoreUnavailable, true, s2},
		{"Classified not retryable", fmt.Errorf("op: %w", failure.Classified(failure.KindStoreConflict, cause)), failure.KindStoreConflict, false, 0},
		{"Transient", fmt.Errorf("op: %w", failure.Transient(failure.KindModelError, s5, cause)), failure.KindModelError, true, s5},
		{"Classified invalid kind falls through", failure.Classified("bogus", context.Canceled), failure.KindCanceled, false, 0},
		{"Retrier not retryable has no delay", policyError{failure.KindStoreThrottled, false, s5}, failure.KindStoreThrottled, false, 0},

		{"declared kind beats cause", failure.Wrap(failure.KindToolError, "", failure.Classified(failure.KindModelThrottled, cause)), failure.KindToolError, false, 0},
		{"declared kind keeps cause retryability", failure.Wrap(failure.KindModelError, "", failure.Transient(failure.KindModelError, s5, cause)), failure.KindModelError, true, s5},
		{"declared kind ignores policy of another kind", failure.Wrap(failure.KindModelError, "", failure.Transient(failure.KindStoreUnavailable, s5, cause)), failure.KindModelError, false, 0},
		{"policy of the kind found past another", failure.Wrap(failure.KindModelError, "", fmt.Errorf("%w, %w",
			policyError{failure.KindStoreUnavailable, true, s1}, failure.Transient(failure.KindModelError, s5, cause))), failure.KindModelError, true, s5},
		{"kind beats context", failure.Classified(failure.KindStoreUnavailable, context.DeadlineExceeded), failure.KindStoreUnavailable, true, s2},

		{"deadline", context.DeadlineExceeded, failure.KindTimeout, true, s1},
		{"wrapped deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), failure.KindTimeout, true, s1},
		{"canceled", context.Canceled, failure.KindCanceled, false, 0},
		{"wrapped canceled", fmt.Errorf("operation error: %w", fmt.Errorf("canceled: %w", context.Canceled)), failure.KindCanceled, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, retryable, after := failure.Classify(tt.err)
			if kind != tt.kind || retryable != tt.retryable || after != tt.after {
				t.Errorf("Classify = (%s, %v, %v), want (%s, %v, %v)", kind, retryable, after, tt.kind, tt.retryable, tt.after)
			}
		})
	}
}

// A classified error must say no more than its cause: its Error() ends up in
// logs and fmt.Errorf chains like the cause's would have.
func TestClassifiedIsTransparent(t *testing.T) {
	cause := apiErr{"ConditionalCheckFailedException", "cc"}
	for _, err := range []error{
		failure.Classified(failure.KindStoreConflict, cause),
		failure.Transient(failure.KindModelError, time.Second, cause),
	} {
		if err.Error() != cause.Error() {
			t.Errorf("Error() = %q, want the cause's %q", err, cause)
		}
		var got apiErr
		if !errors.As(err, &got) || got != cause || !errors.Is(err, cause) || errors.Unwrap(err) != cause {
			t.Errorf("cause not reachable through %#v", err)
		}
		if failure.DebugRef(err) != failure.DebugRef(cause) {
			t.Error("classifying changed the debug ref")
		}
		var r failure.Retrier
		if !errors.As(err, &r) {
			t.Errorf("%T is not a Retrier", err)
		}
	}
	if failure.Classified(failure.KindStoreConflict, nil) != nil || failure.Transient(failure.KindModelError, time.Second, nil) != nil {
		t.Error("classifying nil is not nil")
	}
}

func TestErrorHidesCause(t *testing.T) {
	cause := errors.New("privileged detail")
	e := failure.Wrap(failure.KindToolError, "tool lookup_docket failed", cause)
	if got, want := e.Error(), "tool_error: tool lookup_docket failed"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, cause) {
		t.Error("cause not reachable with errors.Is")
	}
	if got := failure.New(failure.KindInternal, "").Error(); got != "internal" {
		t.Errorf("Error() without Msg = %q", got)
	}
}
