package handlers

import (
	"context"
	"encoding/json"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"
	"github.com/seed-f6d3920e/warrant/pkg/notify"

	"github.com/seed-f6d3920e/warrant"
)

// SweepBrain is the brain as the sweeper uses it (*agent.Brain).
type SweepBrain interface {
	Sweep(ctx context.Context, firm, run string) (agent.SweepAction, error)
}

// LeaseIndex finds runs whose lease passed (pkg/dynamo's Store, by GSI2:
// never a table scan), at most limit, the limit shared among the index's
// shards so that no shard's backlog starves the others.
type LeaseIndex interface {
	ExpiredLeases(ctx context.Context, now time.Time, limit int) ([]warrant.RunRef, error)
}

// ReservationSweeper finds and releases the budget reservations of lost
// workers (pkg/dynamo's Store, by GSI2: never a table scan).
type ReservationSweeper interface {
	ExpiredReservations(ctx context.Context, before time.Time, limit int) ([]warrant.Reservation, error)
	ReleaseReservation(ctx context.Context, r warrant.Reservation, expiredBefore time.Time) (bool, error)
}

// Sweeper is the scheduled function (every minute) that leaves no run stuck
// and no budget held by a lost worker. It first releases the firm budget
// reservations whose worker's lease passed (each given back whole, once: a
// worker that settles it after all finds it gone and charges its cost
// directly), so a restarted run's new reservations do not wait on its lost
// worker's. Then it lists the runs whose lease passed and settles each
// (agent.Brain.Sweep):
// a held run whose warrant expired fails with warrant_expired; a running run
// whose worker was lost with an effect in flight fails with
// effect_outcome_unknown and the effect is flagged for reconciliation; one
// with nothing irreversible pending is handed to a new worker (reason
// restarted), at most agent.Config.MaxRestarts times, then fails with
// worker_lost. A run a worker gave back after a store or model fault is
// found the same way once its backoff (its pickup lease) passed; the worker
// that meets a model fault after the restarts are spent fails the run with
// the model's kind.
//
// The schedule's event carries nothing the sweeper reads. A pass stops
// taking new runs when less than Reserve of its deadline is left; the next
// pass goes on. It answers with the counts of what it did (and logs them, no
// content); it returns an error only when the lease index cannot be read.
type Sweeper struct {
	Brain SweepBrain
	Index LeaseIndex
	// Budgets releases lost workers' reservations (nil: none to sweep).
	Budgets ReservationSweeper
	Queue   Enqueuer
	// Evidence signs a checkpoint of every firm log that grew since its
	// last one, after the runs are settled (nil: no checkpoints).
	Evidence *Evidence
	// Notify announces the pending warrants an hour from expiry
	// (warrant.expiring), found in Expiring (nil: none).
	Notify   *Notifier
	Expiring ExpiringIndex
	// Retention finds the finished runs whose retention is due to be
	// looked at, and the confirmed destruction orders not yet done; Shred
	// destroys (nil: no retention pass). Neither opens a key.
	Retention RetentionIndex
	Shred     Shredder
	// Reduce catches up, in the retention pass, a finished run whose
	// projection (and so its receipts and notices) lags its ledger past
	// ReduceGrace: a stream record the mapping gave up on, the last of its
	// run, is brought by nothing else. The sweeper's own destructions are
	// caught up at once, so the pass's checkpoint covers their receipts
	// (nil: left to the stream).
	Reduce Reducer
	Logger *failure.Logger
	Now    func() time.Time
	Limit  int           // runs per pass (default 500)
	Grace  time.Duration // how long past its lease a run is left alone (default 30 s)
	// Reserve is the time a pass keeps for the run in hand (default 20 s).
	Reserve time.Duration
}

// SweepReport counts what one pass did.
type SweepReport struct {
	// ExpiredReservations were listed; Released were given back (the
	// others were settled or released meanwhile).
	ExpiredReservations int `json:"expired_reservations"`
	Released            int `json:"reservations_released"`
	Expired             int `json:"expired_leases"`
	Restarted           int `json:"restarted"`
	WorkerLost          int `json:"worker_lost"`
	OutcomeUnknown      int `json:"effect_outcome_unknown"`
	WarrantExpired      int `json:"warrant_expired"`
	Unchanged           int `json:"unchanged"`
	Errors              int `json:"errors"`
	Deferred            int `json:"deferred"`
	// Checkpoints were signed; CheckpointErrors could not be (logged, and
	// tried again on the next pass).
	Checkpoints      int `json:"checkpoints"`
	CheckpointErrors int `json:"checkpoint_errors"`
	// Timestamps and Cosignatures were obtained for firms' latest
	// checkpoints; AttestErrors are the attempts that failed (logged, and
	// asked again on the next pass; the checkpoints stand).
	Timestamps   int `json:"timestamps"`
	Cosignatures int `json:"cosignatures"`
	AttestErrors int `json:"attest_errors"`
	// ExpiringNotices were sent (warrant.expiring); NoticeErrors could not
	// be (tried again on the next pass).
	ExpiringNotices int `json:"expiring_notices"`
	NoticeErrors    int `json:"notice_errors"`
	// The retention pass: runs whose content was destroyed (their
	// retention passed), kept because their matter is on hold, looked at
	// and not due (or with no retention); and destruction orders carried
	// out to the end. RetentionErrors are retried on the next pass.
	ContentDestroyed int `json:"content_destroyed"`
	RetentionHeld    int `json:"retention_held"`
	RetentionWaiting int `json:"retention_waiting"`
	OrdersDone       int `json:"destruction_orders_done"`
	RetentionErrors  int `json:"retention_errors"`
	// Finished runs whose projection lagged their ledger: caught up by
	// the sweeper (their stream record was lost), or left to the stream
	// for its grace (looked at again when it ends).
	ProjectionsCaughtUp int `json:"projections_caught_up"`
	ProjectionsWaiting  int `json:"projections_waiting"`
}

// RetentionIndex finds finished runs due a retention look and confirmed
// destruction orders (pkg/dynamo's Store, by GSI2: never a scan).
type RetentionIndex interface {
	RetentionDue(ctx context.Context, now time.Time, limit int) ([]warrant.RunRef, error)
	DestructionOrders(ctx context.Context, limit int) ([]warrant.DestructionOrder, error)
	RetainUntil(ctx context.Context, firm, run string, next time.Time) error
}

// Reducer catches a run's projection up with its ledger (*StreamReduce).
type Reducer interface {
	CatchUp(ctx context.Context, firm, run string, now time.Time, grace time.Duration) (caughtUp bool, lookAgain time.Time, err error)
}

// Shredder destroys finished runs' content (*agent.Shredder).
type Shredder interface {
	Retain(ctx context.Context, firm, run string, lookBy time.Time) (agent.RetainAction, error)
	CarryOut(ctx context.Context, o warrant.DestructionOrder, deadline time.Time) (agent.OrderResult, error)
}

// retention carries on the confirmed destruction orders, then looks at the
// finished runs whose retention is due: each either loses its content
// (its retention passed and its matter is not on hold) or waits. It runs
// after the runs are settled and before the checkpoints, so that a
// checkpoint commits to the destruction receipts too. A failure is logged
// (no content) and counted; the next pass goes on.
func (h *Sweeper) retention(ctx context.Context, now time.Time, limit int, reserve time.Duration, rep *SweepReport) {
	if h.Retention == nil || h.Shred == nil {
		return
	}
	var deadline time.Time
	if d, ok := ctx.Deadline(); ok {
		deadline = d.Add(-reserve)
	}
	orders, err := h.Retention.DestructionOrders(ctx, limit)
	if err != nil {
		rep.RetentionErrors++
		h.log(ctx, err, failure.Identity{})
	}
	for _, o := range orders {
		res, err := h.Shred.CarryOut(ctx, o, deadline)
		rep.ContentDestroyed += len(res.Destroyed)
		for _, run := range res.Destroyed {
			h.catchUpNow(ctx, o.FirmID, run, now, rep)
		}
		if err != nil {
			rep.RetentionErrors++
			h.log(ctx, err, failure.Identity{FirmID: o.FirmID})
			continue
		}
		if res.Done {
			rep.OrdersDone++
		}
	}
	refs, err := h.Retention.RetentionDue(ctx, now, limit)
	if err != nil {
		rep.RetentionErrors++
		h.log(ctx, err, failure.Identity{})
		return
	}
	for i, ref := range refs {
		if !deadline.IsZero() && time.Now().After(deadline) {
			rep.Deferred += len(refs) - i
			return
		}
		id := failure.Identity{FirmID: ref.FirmID, RunID: ref.RunID}
		// A projection behind the ledger within the stream's grace asks
		// for a look once the grace is over; it never postpones a
		// retention that falls due sooner, and a run due now is destroyed
		// now (the destruction's catch-up folds what the stream has not
		// brought yet).
		var lookBy time.Time
		if h.Reduce != nil {
			caughtUp, later, err := h.Reduce.CatchUp(ctx, ref.FirmID, ref.RunID, now, ReduceGrace)
			if err != nil {
				// Left due: the next pass tries again before the retention.
				rep.RetentionErrors++
				h.log(ctx, err, id)
				continue
			}
			if caughtUp {
				rep.ProjectionsCaughtUp++
			}
			lookBy = later
		}
		action, err := h.Shred.Retain(ctx, ref.FirmID, ref.RunID, lookBy)
		if err == nil && action != agent.RetainDestroyed && !lookBy.IsZero() {
			rep.ProjectionsWaiting++
		}
		switch {
		case err != nil:
			rep.RetentionErrors++
			h.log(ctx, err, id)
		case action == agent.RetainDestroyed:
			rep.ContentDestroyed++
			h.catchUpNow(ctx, ref.FirmID, ref.RunID, now, rep)
		case action == agent.RetainHeld:
			rep.RetentionHeld++
		case action == agent.RetainNotDue, action == agent.RetainKept:
			rep.RetentionWaiting++
		}
	}
}

// catchUpNow projects a run whose content this pass destroyed, so that
// the pass's checkpoint commits to the destruction's receipt whatever
// becomes of the line's stream record. A failure is logged and counted:
// the run waits in its retention shard (DestroyContent), where the next
// pass catches it up.
func (h *Sweeper) catchUpNow(ctx context.Context, firm, run string, now time.Time, rep *SweepReport) {
	if h.Reduce == nil {
		return
	}
	caughtUp, _, err := h.Reduce.CatchUp(ctx, firm, run, now, 0)
	switch {
	case err != nil:
		rep.RetentionErrors++
		h.log(ctx, err, failure.Identity{FirmID: firm, RunID: run})
	case caughtUp:
		rep.ProjectionsCaughtUp++
	}
}

// ExpiringIndex finds the pending warrants an hour (or less) from expiry
// (pkg/dynamo's Store, by GSI2), and takes one out once announced.
type ExpiringIndex interface {
	ExpiringWarrants(ctx context.Context, now time.Time, limit int) ([]warrant.Warrant, error)
	ExpiryNoticed(ctx context.Context, firm, run, approval string, stillPending bool) error
	PendingWarrants(ctx context.Context, limit int) ([]warrant.Warrant, error)
}

// pendingAge writes, per firm with pending warrants, how many wait and how
// long the oldest has waited (EMF: PendingWarrants, OldestPendingWarrantSeconds),
// and takes expired ones out of the index.
func (h *Sweeper) pendingAge(ctx context.Context, now time.Time, limit int) {
	if h.Expiring == nil || h.Logger == nil {
		return
	}
	ws, err := h.Expiring.PendingWarrants(ctx, limit)
	if err != nil {
		h.log(ctx, err, failure.Identity{})
		return
	}
	type firmAge struct {
		n      int
		oldest time.Duration
	}
	byFirm := map[string]*firmAge{}
	for _, w := range ws {
		if w.Status != warrant.WarrantPending || !w.ExpiresAt.After(now) {
			_ = h.Expiring.ExpiryNoticed(ctx, w.FirmID, w.RunID, w.ApprovalID, false)
			continue
		}
		a := byFirm[w.FirmID]
		if a == nil {
			a = &firmAge{}
			byFirm[w.FirmID] = a
		}
		a.n++
		a.oldest = max(a.oldest, now.Sub(w.RequestedAt))
	}
	for firm, a := range byFirm {
		h.Logger.Metric(ctx, "PendingWarrants", "Count", float64(a.n), map[string]string{"firm_id": firm})
		h.Logger.Metric(ctx, "OldestPendingWarrantSeconds", "Seconds", a.oldest.Seconds(), map[string]string{"firm_id": firm})
	}
}

// noticeExpiring announces each pending warrant about to expire, once: the
// event first, then the warrant leaves the index (a crash between the two
// announces it again, under the same event id). A warrant decided or
// already expired leaves the index unannounced.
func (h *Sweeper) noticeExpiring(ctx context.Context, now time.Time, limit int, rep *SweepReport) {
	if h.Notify == nil || h.Expiring == nil {
		return
	}
	ws, err := h.Expiring.ExpiringWarrants(ctx, now, limit)
	if err != nil {
		rep.NoticeErrors++
		h.log(ctx, err, failure.Identity{})
		return
	}
	for _, w := range ws {
		id := failure.Identity{FirmID: w.FirmID, RunID: w.RunID}
		pending := w.Status == warrant.WarrantPending && w.ExpiresAt.After(now)
		if pending {
			ev := notify.Expiring(h.Notify.DeskURL, notify.ExpiringWarrant{FirmID: w.FirmID, RunID: w.RunID, ApprovalID: w.ApprovalID,
				MatterID: w.MatterID, MatterName: h.Notify.matterName(ctx, w.FirmID, w.MatterID), ToolName: w.ToolName, RiskTier: w.RiskTier,
				RequestedBy: w.RequestedBy, RequestedByName: w.RequestedByName, ExpiresAt: contracts.FormatTime(w.ExpiresAt),
				At: contracts.FormatTime(now)})
			if err := h.Notify.Bus.Publish(ctx, []notify.Event{ev}); err != nil {
				rep.NoticeErrors++
				h.log(ctx, err, id)
				continue
			}
			rep.ExpiringNotices++
			h.Logger.Metric(ctx, "WarrantsExpiringUnanswered", "Count", 1, map[string]string{"firm_id": w.FirmID})
		}
		if err := h.Expiring.ExpiryNoticed(ctx, w.FirmID, w.RunID, w.ApprovalID, pending); err != nil {
			rep.NoticeErrors++
			h.log(ctx, err, id)
		}
	}
}

// Handle is the Lambda handler.
func (h *Sweeper) Handle(ctx context.Context, _ json.RawMessage) (SweepReport, error) {
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	limit, grace, reserve := h.Limit, h.Grace, h.Reserve
	if limit <= 0 {
		limit = 500
	}
	if grace <= 0 {
		grace = 30 * time.Second
	}
	if reserve <= 0 {
		reserve = 20 * time.Second
	}
	var rep SweepReport
	// A lease (and a reservation, which ends with its worker's lease) is
	// left alone for a grace period past its end: a worker's lease is its
	// Lambda deadline, and clocks differ by a little.
	cutoff := now().Add(-grace)
	h.releaseReservations(ctx, cutoff, limit, reserve, &rep)
	refs, err := h.Index.ExpiredLeases(ctx, cutoff, limit)
	if err != nil {
		h.log(ctx, err, failure.Identity{})
		return rep, err
	}
	rep.Expired = len(refs)
	for i, ref := range refs {
		if d, ok := ctx.Deadline(); ok && time.Until(d) < reserve {
			rep.Deferred = len(refs) - i
			break
		}
		id := failure.Identity{FirmID: ref.FirmID, RunID: ref.RunID}
		action, err := h.Brain.Sweep(ctx, ref.FirmID, ref.RunID)
		if err != nil {
			rep.Errors++
			h.log(ctx, err, id)
			continue
		}
		switch action {
		case agent.SweepRestarted:
			rep.Restarted++
			// The run waits for a worker until its new pickup deadline; if
			// this message is lost too, the next pass restarts it again.
			handOver(ctx, h.Queue, h.responder(), contracts.WorkerMessage{Reason: contracts.ReasonRestarted}, id)
		case agent.SweepWorkerLost:
			rep.WorkerLost++
		case agent.SweepOutcomeUnknown:
			rep.OutcomeUnknown++
		case agent.SweepWarrantExpired:
			rep.WarrantExpired++
		default:
			rep.Unchanged++
		}
	}
	h.retention(ctx, now(), limit, reserve, &rep)
	h.noticeExpiring(ctx, now(), limit, &rep)
	h.pendingAge(ctx, now(), limit)
	if h.Evidence != nil {
		// A firm log's checkpoint commits to the receipts of the runs just
		// settled too.
		p, err := h.Evidence.CheckpointDue(ctx, limit)
		if err != nil {
			h.log(ctx, err, failure.Identity{})
			p.Failed++
		}
		rep.Checkpoints, rep.CheckpointErrors = p.Made, p.Failed
		rep.Timestamps, rep.Cosignatures, rep.AttestErrors = p.Timestamps, p.Cosignatures, p.Unattested
	}
	if h.Logger != nil {
		h.Logger.Info(ctx, "sweep", "checkpoints", rep.Checkpoints, "checkpoint_errors", rep.CheckpointErrors,
			"timestamps", rep.Timestamps, "cosignatures", rep.Cosignatures, "attest_errors", rep.AttestErrors,
			"expiring_notices", rep.ExpiringNotices, "notice_errors", rep.NoticeErrors, "expired_reservations", rep.ExpiredReservations, "reservations_released", rep.Released,
			"expired_leases", rep.Expired, "restarted", rep.Restarted, "worker_lost", rep.WorkerLost,
			"effect_outcome_unknown", rep.OutcomeUnknown, "warrant_expired", rep.WarrantExpired, "unchanged", rep.Unchanged,
			"errors", rep.Errors, "deferred", rep.Deferred, "content_destroyed", rep.ContentDestroyed, "retention_held", rep.RetentionHeld,
			"retention_waiting", rep.RetentionWaiting, "destruction_orders_done", rep.OrdersDone, "retention_errors", rep.RetentionErrors,
			"projections_caught_up", rep.ProjectionsCaughtUp, "projections_waiting", rep.ProjectionsWaiting)
	}
	return rep, nil
}

// releaseReservations gives back the reservations that expired before
// cutoff. A failure is logged and counted; the runs are swept regardless.
func (h *Sweeper) releaseReservations(ctx context.Context, cutoff time.Time, limit int, reserve time.Duration, rep *SweepReport) {
	if h.Budgets == nil {
		return
	}
	refs, err := h.Budgets.ExpiredReservations(ctx, cutoff, limit)
	if err != nil {
		rep.Errors++
		h.log(ctx, err, failure.Identity{})
		return
	}
	rep.ExpiredReservations = len(refs)
	for i, r := range refs {
		if d, ok := ctx.Deadline(); ok && time.Until(d) < reserve {
			rep.Deferred += len(refs) - i
			return
		}
		ok, err := h.Budgets.ReleaseReservation(ctx, r, cutoff)
		if err != nil {
			rep.Errors++
			h.log(ctx, err, failure.Identity{FirmID: r.FirmID, RunID: r.RunID})
			continue
		}
		if ok {
			rep.Released++
		}
	}
}

func (h *Sweeper) responder() httpapi.Responder {
	return httpapi.Responder{Logger: h.Logger, Component: "sweeper"}
}

func (h *Sweeper) log(ctx context.Context, err error, id failure.Identity) {
	if h.Logger != nil {
		h.Logger.Log(ctx, failure.Build(err, failure.StageSweep, "sweeper", id))
	}
}
