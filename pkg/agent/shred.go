package agent

import (
	"context"
	"errors"
	"time"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// ShredStore is what destroying runs' content needs of the store
// (pkg/dynamo's Store). None of it opens a key: destruction never reads
// content.
type ShredStore interface {
	reducer.Source
	GetRun(ctx context.Context, firm, run string) (warrant.Run, error)
	GetFirmSettings(ctx context.Context, firm string) (warrant.FirmSettings, error)
	GetMatter(ctx context.Context, firm, matter string) (warrant.Matter, error)
	GetHold(ctx context.Context, firm, matter string) (warrant.Hold, error)
	DestroyContent(ctx context.Context, firm, run string, line contracts.Line) error
	RetainUntil(ctx context.Context, firm, run string, next time.Time) error
	RunsOfMatter(ctx context.Context, firm, matter string) ([]warrant.Run, error)
	FinishDestruction(ctx context.Context, o warrant.DestructionOrder) error
}

// Shredder destroys finished runs' content by destroying their data keys
// (crypto-shredding, pkg/dynamo's DestroyContent): each run's
// content.destroyed line extends its ledger in the transaction that
// removes its key, checked against a legal hold on its matter. It never
// opens a key, so the functions that run it (the sweeper, approve) need
// no kms:Decrypt for it.
type Shredder struct {
	Store ShredStore
	// Heads verifies the run's signed ledger head before the line extends
	// it (nil: seq and hash only).
	Heads reducer.HeadVerifier
	Now   func() time.Time // nil: time.Now
	// Day is how long a day of a retention lasts (default 24 hours; the
	// local stack's is seconds, as its schedules are).
	Day time.Duration
	// Recheck is the longest a finished run waits before its retention is
	// read again (default a week of Days): a retention set or shortened
	// after a run ended reaches it within this.
	Recheck time.Duration
}

func (sh Shredder) now() time.Time {
	if sh.Now == nil {
		return time.Now().UTC()
	}
	return sh.Now().UTC()
}

func (sh Shredder) day() time.Duration {
	if sh.Day <= 0 {
		return 24 * time.Hour
	}
	return sh.Day
}

func (sh Shredder) recheck() time.Duration {
	if sh.Recheck <= 0 {
		return 7 * sh.day()
	}
	return sh.Recheck
}

// shredAttempts bounds Destroy's folds when a line came first (an effect
// reconciled on the finished run meanwhile).
const shredAttempts = 3

// Destroy destroys the content of one finished run of the firm for why
// (its reason and who or which rule; the matter and backups_until are
// filled in here), after folding its ledger against its signed head. It
// returns the line's event. Refusals are DestroyContent's: the matter on
// hold (warrant.ErrMatterOnHold), already destroyed
// (warrant.ErrContentDestroyed), not ended (warrant.ErrRunNotInState), no
// key of its own (warrant.ErrContentNotSealed), no such run.
func (sh Shredder) Destroy(ctx context.Context, firm, run string, why contracts.ContentDestroyed) (contracts.ContentDestroyed, error) {
	for attempt := 1; ; attempt++ {
		folded, err := reducer.Fold(ctx, sh.Store, firm, run, reducer.FoldOptions{Keys: sh.Heads})
		if err != nil {
			return why, err
		}
		if !folded.Run.ContentDestroyedAt.IsZero() || folded.State.ContentDestroyed != nil {
			return why, warrant.ErrContentDestroyed
		}
		chain := contracts.ChainAfter(folded.Last)
		now := sh.now()
		chain.Now = func() time.Time { return now }
		why.MatterID = folded.Run.MatterID
		// A second past the window, in the line's own precision (whole
		// seconds at least): never earlier than the window allows.
		why.BackupsUntil = contracts.FormatTime(now.Add(warrant.BackupWindow + time.Second))
		line, err := chain.Next(&why)
		if err != nil {
			return why, err
		}
		err = sh.Store.DestroyContent(ctx, firm, run, line)
		if errors.Is(err, warrant.ErrSeqTaken) && attempt < shredAttempts {
			continue
		}
		return why, err
	}
}

// RetainAction is what a retention look did to a run.
type RetainAction string

const (
	// RetainDestroyed: the retention passed; the content was destroyed.
	RetainDestroyed RetainAction = "destroyed"
	// RetainNotDue: the retention has not passed; looked at again when it
	// does (or within Recheck).
	RetainNotDue RetainAction = "not_due"
	// RetainKept: no retention applies (neither the matter nor the firm
	// names one); looked at again within Recheck.
	RetainKept RetainAction = "kept"
	// RetainHeld: the matter is on hold; looked at again within Recheck.
	RetainHeld RetainAction = "held"
	// RetainNothing: nothing to destroy (no key of its own, or already
	// destroyed); the run leaves the retention shards.
	RetainNothing RetainAction = "nothing"
)

// Retain looks at one finished run's retention: the matter's, else the
// firm's, read now (so a retention lengthened or removed since the run
// ended is honoured). Past it, and with the matter not on hold, the run's
// content is destroyed (reason retention); otherwise the run waits until
// it falls due, at most Recheck. A non-zero lookBy is the latest the run
// is looked at again if it is not destroyed now (the sweeper's catch-up of
// a projection still in flight), whatever the retention says.
func (sh Shredder) Retain(ctx context.Context, firm, runID string, lookBy time.Time) (RetainAction, error) {
	now := sh.now()
	run, err := sh.Store.GetRun(ctx, firm, runID)
	if err != nil {
		return "", err
	}
	if !run.Status.Terminal() {
		return "", warrant.ErrRunNotInState
	}
	if len(run.DataKey) == 0 || !run.ContentDestroyedAt.IsZero() {
		return RetainNothing, sh.Store.RetainUntil(ctx, firm, runID, lookBy)
	}
	later := earliest(now.Add(sh.recheck()), lookBy)
	fs, err := sh.Store.GetFirmSettings(ctx, firm)
	if err != nil {
		return "", err
	}
	var m warrant.Matter
	if run.MatterID != "" {
		if m, err = sh.Store.GetMatter(ctx, firm, run.MatterID); err != nil && !errors.Is(err, warrant.ErrNotFound) {
			return "", err
		}
	}
	days, source, ok := warrant.Retention(fs, m)
	if !ok {
		return RetainKept, sh.Store.RetainUntil(ctx, firm, runID, later)
	}
	ended := run.EndedAt
	if ended.IsZero() {
		ended = run.UpdatedAt
	}
	if due := ended.Add(time.Duration(days) * sh.day()); now.Before(due) {
		return RetainNotDue, sh.Store.RetainUntil(ctx, firm, runID, minTime(due, later))
	}
	if run.MatterID != "" {
		if _, err := sh.Store.GetHold(ctx, firm, run.MatterID); err == nil {
			return RetainHeld, sh.Store.RetainUntil(ctx, firm, runID, later)
		} else if !errors.Is(err, warrant.ErrNotFound) {
			return "", err
		}
	}
	_, err = sh.Destroy(ctx, firm, runID, contracts.ContentDestroyed{Reason: contracts.DestroyedRetention, RetentionDays: days, RetentionSource: source})
	switch {
	case errors.Is(err, warrant.ErrMatterOnHold):
		// Placed between the read and the destruction: the hold won.
		return RetainHeld, sh.Store.RetainUntil(ctx, firm, runID, later)
	case errors.Is(err, warrant.ErrContentDestroyed), errors.Is(err, warrant.ErrContentNotSealed):
		return RetainNothing, sh.Store.RetainUntil(ctx, firm, runID, lookBy)
	case err != nil:
		return "", err
	}
	return RetainDestroyed, nil
}

// earliest is the earlier of a and a non-zero b.
func earliest(a, b time.Time) time.Time {
	if !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// OrderResult is what carrying out a destruction order did.
type OrderResult struct {
	// Destroyed are the runs whose content this call destroyed; Already
	// those destroyed before it; Unsealed those with no key of their own
	// (their content is in the clear: nothing to destroy by key).
	Destroyed, Already, Unsealed []string
	// NotEnded are runs of the matter still running or held: an order
	// covers the runs that ended, and these are left as they are.
	NotEnded []string
	// Done is set when every ended run was dealt with and the order is
	// marked done; otherwise the sweeper goes on with it.
	Done bool
}

// CarryOut destroys the content of every ended run of the order's matter
// (reason instruction: its requester and confirmer), until deadline (zero:
// none), and marks the order done when none is left. A hold placed
// meanwhile stops it (warrant.ErrMatterOnHold): the order stays
// confirmed, and the runs not yet destroyed keep their content while the
// hold lasts.
func (sh Shredder) CarryOut(ctx context.Context, o warrant.DestructionOrder, deadline time.Time) (OrderResult, error) {
	var res OrderResult
	if o.Status != warrant.OrderConfirmed {
		return res, warrant.ErrNoOrder
	}
	runs, err := sh.Store.RunsOfMatter(ctx, o.FirmID, o.MatterID)
	if err != nil {
		return res, err
	}
	why := contracts.ContentDestroyed{Reason: contracts.DestroyedInstruction, RequestedBy: o.RequestedBy, ConfirmedBy: o.ConfirmedBy}
	for _, r := range runs {
		switch {
		case !r.ContentDestroyedAt.IsZero():
			res.Already = append(res.Already, r.RunID)
			continue
		case !r.Status.Terminal():
			res.NotEnded = append(res.NotEnded, r.RunID)
			continue
		case len(r.DataKey) == 0:
			res.Unsealed = append(res.Unsealed, r.RunID)
			continue
		case !deadline.IsZero() && !sh.now().Before(deadline):
			return res, nil
		}
		_, err := sh.Destroy(ctx, o.FirmID, r.RunID, why)
		switch {
		case err == nil:
			res.Destroyed = append(res.Destroyed, r.RunID)
		case errors.Is(err, warrant.ErrContentDestroyed):
			res.Already = append(res.Already, r.RunID)
		case errors.Is(err, warrant.ErrContentNotSealed):
			res.Unsealed = append(res.Unsealed, r.RunID)
		case errors.Is(err, warrant.ErrRunNotInState):
			res.NotEnded = append(res.NotEnded, r.RunID)
		default:
			return res, err
		}
	}
	if err := sh.Store.FinishDestruction(ctx, o); err != nil {
		return res, err
	}
	res.Done = true
	return res, nil
}
