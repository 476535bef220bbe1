package warrant

import (
	"context"
	"time"
)

// RunStatus is where a run is in its life cycle. The same type is stored on
// the run item, folded by the reducer and shown in run views. The zero value
// ("") is a run whose first ledger line has not been applied yet.
type RunStatus string

// Run statuses (closed).
const (
	RunRunning   RunStatus = "running"
	RunHeld      RunStatus = "held"
	RunCompleted RunStatus = "completed"
	RunFailed    RunStatus = "failed"
	// RunAborted is the reducer's own verdict (the cost cap was crossed), as
	// opposed to RunFailed, which the brain wrote.
	RunAborted RunStatus = "aborted"
)

// Terminal reports whether the run is over; a terminal run accepts no line.
func (s RunStatus) Terminal() bool {
	return s == RunCompleted || s == RunFailed || s == RunAborted
}

// Run is the run item: who started which agent on which matter, and where it
// stands. Status and HeldOn are the store's guard for holds and releases; the
// ledger is the record, and Projection is the stream reducer's fold of it.
type Run struct {
	FirmID, RunID, MatterID, UserID, AgentKey, ModelID, PromptVersion, CorrelationID, CostCapUSD string
	Status                                                                                       RunStatus
	HeldOn                                                                                       string // approval id the run is held on
	CreatedAt, UpdatedAt                                                                         time.Time
	Projection                                                                                   Projection
	// Head is the ledger's signed head, moved in the transaction of every
	// append.
	Head LedgerHead
	// Lease says who may work on the run and until when: a worker while it
	// runs a step, nobody while the run waits for a worker (Owner empty, Until
	// the pickup deadline) or for counsel (Until the warrant's expiry). A lease
	// that passed is what the sweeper looks for.
	Lease Lease
	// Restarts counts the sweeper's hand-overs of a run whose worker was
	// lost with nothing pending.
	Restarts int
	// DataKey is the run's data key as stored: wrapped under the firm's
	// key (pkg/seal), the only form of it that is kept. Empty: the run's
	// content is in the clear (a run from before sealing, or a deployment
	// without a data key), or it was destroyed (ContentDestroyedAt).
	DataKey []byte
	// ContentDestroyedAt is when the run's content was destroyed: its
	// wrapped data key removed, in the transaction that stored its
	// content.destroyed line (zero: not destroyed). Nothing of the run is
	// written in the clear after it.
	ContentDestroyedAt time.Time
	// EndedAt is when the run finished (zero: it has not, or it finished
	// before runs recorded it); a retention counts from it.
	EndedAt time.Time
}

// BackupWindow is how long a backup of the table can still hold an item
// after it changed: DynamoDB's point-in-time recovery keeps 35 days. A
// run's content destroyed at t is unrecoverable everywhere from t plus
// this window, which its content.destroyed line states (backups_until). A
// deployment that keeps backups of the table longer states its own.
const BackupWindow = 35 * 24 * time.Hour

// RunRef names a run.
type RunRef struct{ FirmID, RunID string }

// Lease is a run's current lease.
type Lease struct {
	Owner string // empty: no worker holds it
	Until time.Time
	// Epoch counts the leases a worker took (AcquireRun): with Owner, the
	// fencing token of the worker that holds the run.
	Epoch int64
}

// Fence is a worker's lease as it took it: the run's lease owner and epoch.
// Every write a worker makes to its run (lines, the run's end, claims,
// holds, settlements) is conditioned on the run still being running under
// exactly this lease, so a worker that outlived its lease (a stalled or
// partitioned Lambda, a clock that disagrees) writes nothing once another
// worker or the sweeper took the run over: the store answers ErrLeaseHeld.
type Fence struct {
	Owner string
	Epoch int64
}

type fenceKey struct{}

// NewFenceContext returns ctx carrying a worker's fence; the store
// conditions the run writes made under it on the fence (pkg/dynamo). The
// API's writers (a new run, counsel's decision, a resume, a
// reconciliation) and the sweeper hold no lease and carry none: their
// writes have conditions of their own.
func NewFenceContext(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

// FenceFromContext is the fence ctx carries, if any.
func FenceFromContext(ctx context.Context) (Fence, bool) {
	f, ok := ctx.Value(fenceKey{}).(Fence)
	return f, ok && f.Owner != ""
}

// LedgerHead is a run's last ledger line (its seq and hash) with the MAC the
// store's key made over them, bound to the firm and the run. A reader that
// holds the key can tell a ledger rewritten and re-chained by someone with
// table access: its head would not verify.
type LedgerHead struct {
	Seq   int64
	Hash  string
	MAC   string // hex; empty when the store signs no heads
	KeyID string
}

// Projection is the reducer's view of the run, kept on the run item.
type Projection struct {
	LastSeq   int64
	Status    RunStatus
	State     []byte // the reducer's RunState as JSON, opaque to the store
	Halted    string // why the projection stopped, e.g. an unknown event
	UpdatedAt time.Time
}

// LedgerItem is one stored ledger line: its seq and its exact bytes.
type LedgerItem struct {
	Seq int64
	Raw []byte
}
