package failure

import "time"

// Kinder lets another package's typed error declare its kind without
// depending on *Error; Classify finds it in the error's chain.
type Kinder interface {
	FailureKind() Kind
}

// Retrier is a Kinder that also states its retry policy, for an error whose
// policy is not its kind's default (see Transient). retryable false means
// after is ignored. Classify uses the policy of the first Retrier in the
// chain that states the kind Classify decided; an error declaring a kind
// without a policy gets the kind's default.
type Retrier interface {
	Kinder
	RetryPolicy() (retryable bool, after time.Duration)
}

// Error states a precise kind for a failure. Msg is shown to API clients as
// the problem detail, so it must hold only safe text (field names, ids);
// Err is the cause, kept for errors.Is/As and never shown.
type Error struct {
	Kind Kind
	Msg  string
	Err  error
}

// New returns an *Error without a cause.
func New(kind Kind, userMsg string) *Error { return &Error{Kind: kind, Msg: userMsg} }

// Wrap returns an *Error carrying cause for errors.Is/As.
func Wrap(kind Kind, userMsg string, cause error) *Error {
	return &Error{Kind: kind, Msg: userMsg, Err: cause}
}

// Error deliberately leaves out the cause: Error() strings end up in log
// lines, in Lambda's errorMessage and in fmt.Errorf chains, and the cause
// may carry privileged text. Reach the cause with errors.Unwrap/As instead.
func (e *Error) Error() string {
	if e.Msg == "" {
		return string(e.Kind)
	}
	return string(e.Kind) + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) FailureKind() Kind { return e.Kind }
