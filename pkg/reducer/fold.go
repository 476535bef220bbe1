package reducer

import (
	"context"
	"errors"
	"fmt"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// Source reads a run's stored ledger: the lines after afterSeq in seq order,
// all of them when limit <= 0 (pkg/dynamo's Store is one, reading
// consistently).
type Source interface {
	ReadLedger(ctx context.Context, firm, run string, afterSeq int64, limit int) ([]warrant.LedgerItem, bool, error)
}

// FoldOptions say where a fold starts and what it keeps.
type FoldOptions struct {
	// From is the state to continue from (a stored projection); the zero
	// state folds from line 1.
	From RunState
	// HaltOnUnknown stops at the first line of an unknown type or schema
	// version instead of failing, and reports it in Folded.Halt: the stream
	// reducer must not block a shard on an event a newer writer added.
	HaltOnUnknown bool
	// KeepLines returns every parsed line (a resume rebuilds the transcript
	// from them).
	KeepLines bool
}

// Folded is the outcome of a Fold.
type Folded struct {
	State RunState
	// Last is the last line folded (the chain head a writer appends after);
	// zero when the fold read no new line.
	Last contracts.Line
	// Lines are the lines read, when FoldOptions.KeepLines.
	Lines []contracts.Line
	// Halt is why the fold stopped early (an unknown event at HaltSeq);
	// nil when it read to the end.
	Halt    error
	HaltSeq int64
}

// Fold reads a run's ledger after opt.From, parses every line
// (contracts.ParseEventLine re-checks each line's hash and shape) and applies
// it (chain links, lifecycle, money). It is the one read-parse-fold of the
// service: run views, invoke replays, resume, counsel's decision and the
// stream reducer all use it, so they cannot disagree about a ledger.
//
// Errors: the source's own errors as they are; a run with no ledger at all
// is warrant.ErrNotFound; a line that does not parse or fold is a
// failure of kind ledger_corrupt whose cause names the seq and the rule.
func Fold(ctx context.Context, src Source, firm, run string, opt FoldOptions) (Folded, error) {
	items, _, err := src.ReadLedger(ctx, firm, run, opt.From.LastSeq, 0)
	if err != nil {
		return Folded{}, err
	}
	if len(items) == 0 && opt.From.LastSeq == 0 {
		return Folded{}, failure.Wrap(failure.KindNotFound, "run not found", warrant.ErrNotFound)
	}
	out := Folded{State: opt.From}
	if opt.KeepLines {
		out.Lines = make([]contracts.Line, 0, len(items))
	}
	for _, it := range items {
		l, err := contracts.ParseEventLine(it.Raw)
		if opt.HaltOnUnknown && errors.Is(err, contracts.ErrUnknownEvent) {
			out.Halt, out.HaltSeq = err, it.Seq
			return out, nil
		}
		if err != nil {
			return out, failure.Wrap(failure.KindLedgerCorrupt, "the run's ledger does not parse",
				fmt.Errorf("seq %d: %w", it.Seq, err))
		}
		next, err := Apply(out.State, l)
		if err != nil {
			return out, failure.Wrap(failure.KindLedgerCorrupt, "the run's ledger does not verify", err)
		}
		out.State, out.Last = next, l
		if opt.KeepLines {
			out.Lines = append(out.Lines, l)
		}
	}
	return out, nil
}
