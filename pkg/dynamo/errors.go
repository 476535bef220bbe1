package dynamo

import (
	"errors"
	"fmt"
)

// The store's typed outcomes. Match them with errors.Is: the concrete error
// also wraps the SDK error it came from (when there is one), so
// pkg/failure still sees, for example, a TransactionCanceledException.
var (
	ErrNotFound           = errors.New("dynamo: not found")
	ErrRunExists          = errors.New("dynamo: run already exists")
	ErrSeqTaken           = errors.New("dynamo: ledger seq already taken")
	ErrRunNotInState      = errors.New("dynamo: run is not in the required state")
	ErrWarrantExists      = errors.New("dynamo: approval id already exists")
	ErrWarrantNotPending  = errors.New("dynamo: warrant is not pending")
	ErrHashMismatch       = errors.New("dynamo: tool input hash does not match the warrant")
	ErrWarrantExpired     = errors.New("dynamo: warrant expired")
	ErrWarrantConsumed    = errors.New("dynamo: warrant already consumed")
	ErrWarrantNotDecided  = errors.New("dynamo: warrant is not decided")
	ErrEffectClaimed      = errors.New("dynamo: effect already claimed")
	ErrNotClaimOwner      = errors.New("dynamo: not the owner of a live effect claim")
	ErrProjectionConflict = errors.New("dynamo: projection was updated by another writer")
)

// SeqTakenError says which ledger seq another writer already holds. It
// matches ErrSeqTaken.
type SeqTakenError struct {
	Seq int64
	Err error // the SDK error, if any
}

func (e *SeqTakenError) Error() string {
	return fmt.Sprintf("%v: seq %d", ErrSeqTaken, e.Seq)
}

// Is makes errors.Is(err, ErrSeqTaken) true.
func (e *SeqTakenError) Is(target error) bool { return target == ErrSeqTaken }

// Unwrap returns the SDK error.
func (e *SeqTakenError) Unwrap() error { return e.Err }

// storeError is a sentinel with detail and the SDK error that caused it.
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
