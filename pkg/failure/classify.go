package failure

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

type verdict struct {
	kind      Kind
	retryable bool
	after     time.Duration
}

func defaultVerdict(k Kind) verdict {
	s := specOf(k)
	if !k.Valid() {
		k = KindInternal
	}
	return verdict{kind: k, retryable: s.retryable, after: s.retryAfter}
}

// Classify maps err to a kind and a retry policy. The first Kinder in err's
// chain (errors.As order) whose kind is valid decides the kind; failing that
// context.DeadlineExceeded is timeout and context.Canceled is canceled;
// anything else is internal. The retry policy is that of the first Retrier in
// the chain stating the decided kind, else the kind's default: so
// Wrap(KindModelError, "", <a Transient model_error>) stays retryable.
// retryAfter is zero when retryable is false.
func Classify(err error) (kind Kind, retryable bool, retryAfter time.Duration) {
	v := classify(err)
	return v.kind, v.retryable, v.after
}

// Settled reports whether Classify decides err without an adapter's help:
// it states a kind, or it is a context error (timeout, canceled). An adapter
// leaves such an error as it is.
func Settled(err error) bool {
	var k Kinder
	return err == nil || errors.As(err, &k) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

func classify(err error) verdict {
	var kind Kind
	find(err, func(e error) bool {
		k, ok := as[Kinder](e)
		if ok && k.FailureKind().Valid() {
			kind = k.FailureKind()
		}
		return kind != ""
	})
	switch {
	case kind != "":
	case err == nil:
		return defaultVerdict(KindInternal)
	case errors.Is(err, context.DeadlineExceeded):
		return defaultVerdict(KindTimeout)
	case errors.Is(err, context.Canceled):
		return defaultVerdict(KindCanceled)
	default:
		return defaultVerdict(KindInternal)
	}
	v := defaultVerdict(kind)
	find(err, func(e error) bool {
		r, ok := as[Retrier](e)
		if !ok || r.FailureKind() != kind {
			return false
		}
		v.retryable, v.after = r.RetryPolicy()
		if !v.retryable {
			v.after = 0
		}
		return true
	})
	return v
}

// as reports whether e itself (not its chain) is, or by its As method
// converts to, a T.
func as[T any](e error) (T, bool) {
	if t, ok := e.(T); ok {
		return t, true
	}
	var t T
	if x, ok := e.(interface{ As(any) bool }); ok && x.As(&t) {
		return t, true
	}
	return t, false
}

// find visits err's chain in the order errors.As does (depth first through
// joined errors) until visit returns true.
func find(err error, visit func(error) bool) bool {
	for err != nil {
		if visit(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if find(e, visit) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// classified is a dependency's error with the kind its adapter gave it.
type classified struct {
	kind      Kind
	retryable bool
	after     time.Duration
	err       error
}

// Classified marks cause, an error from a dependency, as kind with the
// kind's default retry policy. It is for the adapter that knows what its
// dependency's errors mean (pkg/dynamo knows a ThrottlingException is
// store_throttled). The result says exactly what cause says (its Error() is
// cause's) and unwraps to cause, so errors.Is/As still see the cause.
// Classified(kind, nil) is nil.
func Classified(kind Kind, cause error) error {
	if cause == nil {
		return nil
	}
	v := defaultVerdict(kind)
	return &classified{kind: kind, retryable: v.retryable, after: v.after, err: cause}
}

// Transient is Classified for a transient failure of a kind that is not
// retryable in general: a brief Bedrock outage is a model_error, but unlike a
// broken model it is worth retrying after `after` (which should be
// positive; Retry-After is never below one second).
func Transient(kind Kind, after time.Duration, cause error) error {
	if cause == nil {
		return nil
	}
	return &classified{kind: kind, retryable: true, after: after, err: cause}
}

func (e *classified) Error() string     { return e.err.Error() }
func (e *classified) Unwrap() error     { return e.err }
func (e *classified) FailureKind() Kind { return e.kind }
func (e *classified) RetryPolicy() (bool, time.Duration) {
	return e.retryable, e.after
}

// apiError is the part of smithy.APIError DebugRef uses, declared here so
// this package does not depend on smithy-go: every AWS SDK API error (modeled
// exceptions and smithy.GenericAPIError alike) has both methods.
type apiError interface {
	ErrorCode() string
	ErrorMessage() string
}

// DebugRef is the internal_debug_ref of err: the first 16 hex digits of
// sha256(class + "\n" + message). For an API error anywhere in the chain
// (anything with ErrorCode() and ErrorMessage() methods, as every AWS SDK
// API error has) class is its ErrorCode() and message its ErrorMessage();
// otherwise class is the %T of the innermost error (first branch of a joined
// error) and message its Error(). A debug build can print the same pair next
// to the hash, so an operator can correlate without raw text ever reaching
// production logs.
func DebugRef(err error) string {
	if err == nil {
		return ""
	}
	var class, msg string
	var api apiError
	if errors.As(err, &api) {
		class, msg = api.ErrorCode(), api.ErrorMessage()
	} else {
		inner := innermost(err)
		class, msg = fmt.Sprintf("%T", inner), inner.Error()
	}
	sum := sha256.Sum256([]byte(class + "\n" + msg))
	return hex.EncodeToString(sum[:8])
}

func innermost(err error) error {
	for {
		var next error
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		case interface{ Unwrap() []error }:
			if errs := u.Unwrap(); len(errs) > 0 {
				next = errs[0]
			}
		}
		if next == nil {
			return err
		}
		err = next
	}
}
