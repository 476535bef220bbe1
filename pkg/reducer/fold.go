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

// HeadVerifier checks the MAC of a run's signed ledger head (pkg/anchor's
// Keyring is one).
type HeadVerifier interface {
	VerifyHead(ctx context.Context, firm, run string, seq int64, hash, mac, keyID string) error
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
	// Head is the run's signed head as the run item holds it (read before
	// the ledger). The fold then requires the line at Head.Seq to have
	// Head.Hash and every line up to it to be there, and, with Keys, the
	// head's MAC to verify: a ledger rewritten and re-chained by someone with
	// table access, or cut short, does not fold.
	Head *warrant.LedgerHead
	Keys HeadVerifier
}

var errHeadMismatch = errors.New("reducer: the ledger does not match the run's signed head")

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
	if h := opt.Head; h != nil && opt.Keys != nil {
		if err := opt.Keys.VerifyHead(ctx, firm, run, h.Seq, h.Hash, h.MAC, h.KeyID); err != nil {
			return Folded{}, err
		}
	}
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
		if h := opt.Head; h != nil && l.Seq == h.Seq && l.Hash != h.Hash {
			return out, headMismatch("seq %d has another hash than the signed head", h.Seq)
		}
		out.State, out.Last = next, l
		if opt.KeepLines {
			out.Lines = append(out.Lines, l)
		}
	}
	if err := checkHead(opt, out.State); err != nil {
		return out, err
	}
	return out, nil
}

func headMismatch(format string, args ...any) error {
	return failure.Wrap(failure.KindLedgerCorrupt, "the run's ledger does not match its signed head",
		fmt.Errorf("%w: "+format, append([]any{errHeadMismatch}, args...)...))
}

// checkHead holds a fold that read to the ledger's end to the signed head.
// The head was read before the ledger, so lines may have been added since;
// none may be missing up to it, and a head at the seq the fold started from
// must carry that state's hash.
func checkHead(opt FoldOptions, st RunState) error {
	h := opt.Head
	switch {
	case h == nil:
		return nil
	case st.LastSeq < h.Seq:
		return headMismatch("the signed head is seq %d, the ledger ends at %d", h.Seq, st.LastSeq)
	case h.Seq < opt.From.LastSeq:
		return headMismatch("the signed head (seq %d) is behind a state already folded to %d", h.Seq, opt.From.LastSeq)
	case h.Seq == opt.From.LastSeq && h.Seq > 0 && h.Hash != opt.From.HeadHash:
		return headMismatch("seq %d has another hash than the signed head", h.Seq)
	}
	return nil
}
