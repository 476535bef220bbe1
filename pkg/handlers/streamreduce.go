package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"

	"github.com/seed-f6d3920e/warrant"
)

// ProjectionStore is what the reducer needs of the store. ParseRunKey reads
// a record's partition key the way the store wrote it (no key format is
// re-parsed here).
type ProjectionStore interface {
	reducer.Source
	GetRun(ctx context.Context, firm, run string) (warrant.Run, error)
	UpdateProjection(ctx context.Context, firm, run string, prevSeq int64, p warrant.Projection) error
	ParseRunKey(pk string) (firm, run string, ok bool)
}

// StreamReduce folds new ledger lines into each run's projection. Streams
// order records per item only and deliver at least once, so a record is a
// trigger, not data: for each run in the batch it reads the ledger from the
// projection's last_seq + 1 (consistent), folds with the shared reducer and
// writes the projection conditioned on the previous last_seq. Work per batch is
// O(new lines). A batch delivered twice or shuffled gives the same projection.
//
// Answers: BatchItemFailures naming the records of runs whose projection could
// not be advanced (store errors, a ledger that does not verify), so only those
// are retried. A line of an unknown type or schema halts that run's projection:
// it is recorded on the run with a failure envelope and is not reported as a
// failure, so one new event type cannot block the shard until records expire.
type StreamReduce struct {
	Store ProjectionStore
	// Keys verifies each run's signed ledger head before its new lines are
	// folded (nil: the head's seq and hash are checked, not its MAC).
	Keys   reducer.HeadVerifier
	Logger *failure.Logger
	// Evidence issues the receipts of the new lines (executed effects,
	// reconciliations, the line that ends the run) before the projection
	// moves past them, so a receipt that could not be signed or logged is
	// retried with its record (nil: no receipts).
	Evidence *Evidence
	// Notify publishes the notifications the new lines call for (a
	// warrant waits or was decided, the run ended, an effect's outcome is
	// unknown), after their receipts and before the projection moves past
	// them (nil: none).
	Notify *Notifier
}

// Handle is the Lambda handler.
func (h *StreamReduce) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	type runKey struct{ firm, run string }
	records := map[runKey][]string{}
	var order []runKey
	var resp events.DynamoDBEventResponse
	for _, r := range ev.Records {
		pk := r.Change.Keys["PK"].String()
		firm, run, ok := h.Store.ParseRunKey(pk)
		if !ok {
			continue // not a run partition: nothing to project
		}
		k := runKey{firm, run}
		if _, seen := records[k]; !seen {
			order = append(order, k)
		}
		records[k] = append(records[k], r.Change.SequenceNumber)
	}
	sort.Slice(order, func(i, j int) bool { return order[i].run < order[j].run })
	for _, k := range order {
		if err := h.project(ctx, k.firm, k.run); err != nil {
			h.Logger.Log(ctx, failure.Build(err, failure.StageProjection, "stream-reduce", failure.Identity{RunID: k.run, FirmID: k.firm}))
			for _, seq := range records[k] {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: seq})
			}
		}
	}
	return resp, nil
}

// ReduceGrace is how long a finished run's projection may lag its ledger
// before the sweeper catches it up itself: the stream mapping's five
// retries, with their backoff, fit well inside it, so a run the sweeper
// projects is one whose record the mapping gave up on (or never got).
const ReduceGrace = 5 * time.Minute

// CatchUp is the stream-reduce of a run whose record did not come: when
// the run's projection is behind its ledger's signed head it folds the
// lines after it, issues their receipts and notices and moves the
// projection, exactly as a delivered record would (so the stream and the
// sweeper may both do it: receipts and the projection's compare-and-set
// keep the first). Within grace (if any) of the run's last write it leaves
// the run to the stream and answers when to look again, unless the run's
// content was destroyed. caughtUp says a projection was moved.
func (h *StreamReduce) CatchUp(ctx context.Context, firm, run string, now time.Time, grace time.Duration) (caughtUp bool, lookAgain time.Time, err error) {
	item, err := h.Store.GetRun(ctx, firm, run)
	if err != nil {
		return false, time.Time{}, err
	}
	if item.Projection.LastSeq >= item.Head.Seq || item.Projection.Halted != "" {
		return false, time.Time{}, nil // current, or stopped at a line it cannot fold (logged when it stopped)
	}
	// A destroyed run's lag is caught up at once: the destruction's
	// certificate (its receipt under a checkpoint) is what the firm hands
	// its client, and it must not wait out the grace on a record the
	// stream may have given up on (or a catch-up that failed once). The
	// stream and the sweeper may both fold it; the first receipt stays.
	if grace > 0 && item.ContentDestroyedAt.IsZero() {
		if t := item.UpdatedAt.Add(grace); now.Before(t) {
			return false, t, nil
		}
	}
	if err := h.project(ctx, firm, run); err != nil {
		return false, time.Time{}, err
	}
	return true, time.Time{}, nil
}

// project advances one run's projection, retrying a lost optimistic race.
func (h *StreamReduce) project(ctx context.Context, firm, run string) error {
	for attempt := 0; ; attempt++ {
		err := h.projectOnce(ctx, firm, run)
		if !errors.Is(err, warrant.ErrProjectionConflict) || attempt == 3 {
			return err
		}
	}
}

func (h *StreamReduce) projectOnce(ctx context.Context, firm, run string) error {
	item, err := h.Store.GetRun(ctx, firm, run)
	if err != nil {
		return err
	}
	var st reducer.RunState
	if len(item.Projection.State) > 0 {
		if err := json.Unmarshal(item.Projection.State, &st); err != nil {
			return fmt.Errorf("stored projection: %w", err)
		}
	}
	prev := item.Projection.LastSeq
	if st.LastSeq != prev {
		return fmt.Errorf("stored projection is inconsistent: state seq %d, last_seq %d", st.LastSeq, prev)
	}
	folded, err := reducer.Fold(ctx, h.Store, firm, run, reducer.FoldOptions{From: st, HaltOnUnknown: true, Keys: h.Keys, KeepLines: h.Evidence != nil || h.Notify != nil})
	if err != nil {
		return err
	}
	if err := h.issueReceipts(ctx, firm, run, prev, folded); err != nil {
		return err
	}
	if err := h.Notify.linesEvents(ctx, firm, st, foldedLines(folded)); err != nil {
		return err
	}
	st = folded.State
	halted := ""
	if folded.Halt != nil {
		halted = fmt.Sprintf("unknown event at seq %d", folded.HaltSeq)
		h.Logger.Log(ctx, failure.Build(failure.Wrap(failure.KindUnknownEvent, "", folded.Halt), failure.StageReduce, "stream-reduce",
			failure.Identity{RunID: run, FirmID: firm}))
	}
	if st.LastSeq == prev && halted == item.Projection.Halted {
		return nil // a duplicate delivery: nothing new
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return h.Store.UpdateProjection(ctx, firm, run, prev, warrant.Projection{LastSeq: st.LastSeq, Status: st.Status, State: raw, Halted: halted})
}

// issueReceipts issues the receipts the newly folded lines call for. A
// receipt derives from the whole ledger (the warrant an effect ran under was
// decided lines before), so the ledger is read again from line 1, only when a
// new line calls for one: O(run) once per effect and per run end.
func (h *StreamReduce) issueReceipts(ctx context.Context, firm, run string, prev int64, folded reducer.Folded) error {
	if h.Evidence == nil || len(folded.Lines) == 0 || (!slices.ContainsFunc(folded.Lines, evidence.NeedsReceipt) && !folded.State.Status.Terminal()) {
		return nil
	}
	whole, err := reducer.Fold(ctx, h.Store, firm, run, reducer.FoldOptions{HaltOnUnknown: true, Keys: h.Keys, KeepLines: true})
	if err != nil {
		return err
	}
	lines := whole.Lines
	if n := int(folded.State.LastSeq); n < len(lines) {
		lines = lines[:n] // what this fold folded, and no further
	}
	_, err = h.Evidence.IssueReceipts(ctx, firm, run, lines, prev)
	return err
}

// foldedLines are the lines a fold folded (not those past a halt).
func foldedLines(f reducer.Folded) []contracts.Line {
	var out []contracts.Line
	for _, l := range f.Lines {
		if l.Seq <= f.State.LastSeq {
			out = append(out, l)
		}
	}
	return out
}
