package dynamo

import (
	"fmt"

	"github.com/seed-f6d3920e/warrant"
)

// The store's typed errors are the sentinels of package warrant (the domain),
// which carry their failure kinds: errors.Is(err, warrant.ErrSeqTaken) and
// failure.Classify see through the detail and the SDK cause added here.

// SeqTakenError says which ledger seq another writer already holds. It
// matches warrant.ErrSeqTaken.
type SeqTakenError struct {
	Seq int64
	Err error // the SDK error, if any
}

func (e *SeqTakenError) Error() string {
	return fmt.Sprintf("%v: seq %d", warrant.ErrSeqTaken, e.Seq)
}

// Unwrap returns the sentinel (so errors.Is and the failure kind see it
// first) and the SDK error.
func (e *SeqTakenError) Unwrap() []error {
	if e.Err == nil {
		return []error{warrant.ErrSeqTaken}
	}
	return []error{warrant.ErrSeqTaken, e.Err}
}

// storeError is a warrant sentinel with detail and the SDK error that caused
// it.
type storeError struct {
	kind   error
	detail string
	cause  error
}

func (e *storeError) Error() string {
	if e.detail == "" {
		return e.kind.Error()
	}
	return e.kind.Error() + ": " + e.detail
}

func (e *storeError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

func fail(kind, cause error, format string, args ...any) error {
	return &storeError{kind: kind, detail: fmt.Sprintf(format, args...), cause: cause}
}

// invalid reports a caller bug: the store refuses to write what it cannot
// vouch for. It matches none of the sentinels.
func invalid(op, format string, args ...any) error {
	return fmt.Errorf("dynamo: %s: invalid input: %s", op, fmt.Sprintf(format, args...))
}
