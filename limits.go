package warrant

import (
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// Counter is one count over a window that an effect's claim adds to, in
// the claim's own write (a limit of the risk policy: at most Max calls per
// run, matter or firm per hour or day). Only a claim that is written
// counts; a claim refused for any reason counts nothing.
type Counter struct {
	// Limit is the policy's limit id; Per is its scope ("run", "matter"
	// or "firm") and Scope the id of the run, matter or firm counted.
	Limit, Per, Scope string
	// Window is the start of the window counted (UTC, on the hour or the
	// day).
	Window time.Time
	// Max is the bound: a claim that finds the count at Max is refused
	// (*LimitReachedError) and nothing of it is written. 0: no bound, the
	// call is counted only (a call counsel signed).
	Max int64
	// Expires is when the store may forget the counter, some time after
	// its window ended.
	Expires time.Time
}

// Key names the counter among the firm's: limit, scope and window.
func (c Counter) Key() string {
	return c.Limit + "#" + c.Per + "#" + c.Scope + "#" + c.Window.UTC().Format(time.RFC3339)
}

// ErrLimitReached: a claim found a counter of the risk policy's limits at
// its bound; nothing was written. The brain decides the call again with
// the limit reached (denied, or held for counsel).
var ErrLimitReached = failure.New(failure.KindPolicyDenied, "a limit of the risk policy is reached")

// LimitReachedError names the limit whose counter refused a claim. It
// matches ErrLimitReached.
type LimitReachedError struct {
	Limit string
	Err   error // the store's cause, if any
}

func (e *LimitReachedError) Error() string { return ErrLimitReached.Error() + ": " + e.Limit }

// Unwrap returns the sentinel and the store's cause.
func (e *LimitReachedError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrLimitReached}
	}
	return []error{ErrLimitReached, e.Err}
}
