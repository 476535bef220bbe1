package reducer

import (
	"context"
	"errors"
	"fmt"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// Source reads a run's stored ledger and its run item, both consistently
// (pkg/dynamo's Store is one): the lines after afterSeq in seq order, all
// of them when limit <= 0, and the run item whose Head is the ledger's
// signed head.
type Source interface {
	ReadLedger(ctx context.Context, firm, run string, afterSeq int64, limit int) ([]warrant.LedgerItem, bool, error)
	GetRun(ctx context.Context, firm, run string) (warrant.Run, error)
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
	// HaltOnUnknown stops folding at the first line of an unknown type or
	// schema version instead of failing, and reports it in Folded.Halt: the
	// stream reducer must not block a shard on an event a newer writer
	// added. The lines after it are still followed, by their headers, to
	// the signed head.
	HaltOnUnknown bool
	// KeepLines returns every parsed line (a resume rebuilds the transcript
	// from them).
	KeepLines bool
	// Keys verifies the signed head's MAC (nil: its seq and hash are still
	// held to, not its MAC).
	Keys HeadVerifier
	// Open, when set, gives the opener of the run's sealed content (schema
	// 2 lines, issue 26) from its run item (its wrapped data key): called
	// once, after the lines verified to the signed head, and only when a
	// line read is sealed. Each sealed line is opened (its digests
	// re-checked on the plaintext) and the lines are folded again, so the
	// state, Last and Lines carry the content. A nil opener leaves the
	// lines sealed (a reader that may not or cannot open them: the state
	// then has no content, e.g. no final_text). Its error is returned as it
	// is; a line that does not open under it is ledger_corrupt.
	Open func(ctx context.Context, r warrant.Run) (contracts.Opener, error)
}

var (
	errHeadMismatch = errors.New("reducer: the ledger does not match the run's signed head")
	errPastHead     = errors.New("reducer: the ledger has lines past the run's signed head")
)

// foldRounds bounds how often a fold reads on after a head that moved
// while it read (a writer appending concurrently).
const foldRounds = 4

// Folded is the outcome of a Fold.
type Folded struct {
	State RunState
	// Last is the last line folded (the chain head a writer appends after);
	// zero when the fold read no new line.
	Last contracts.Line
	// Lines are the lines read, when FoldOptions.KeepLines.
	Lines []contracts.Line
	// Run is the run item as read after the lines: its Head is the line the
	// fold ended at, and what a caller acts on (status, lease, held_on) is
	// as of that read.
	Run warrant.Run
	// Halt is why the fold stopped early (an unknown event at HaltSeq);
	// nil when it read to the end.
	Halt    error
	HaltSeq int64
	// Opener is what FoldOptions.Open gave (nil when not called or when it
	// gave none): a writer seals the lines it appends with the same key.
	Opener contracts.Opener
	// applied are the lines applied after From, kept for Open's re-fold.
	applied []contracts.Line
	// sealed counts the sealed lines among them.
	sealed int
}

// Fold reads a run's ledger after opt.From, parses every line
// (contracts.ParseEventLine re-checks each line's hash and shape) and applies
// it (chain links, lifecycle, money). It is the one read-parse-fold of the
// service: run views, invoke replays, resume, counsel's decision, the
// worker, the sweeper and the stream reducer all use it, so they cannot
// disagree about a ledger.
//
// A fold ends exactly at the run's signed head. The run item is read after
// the lines: the line at the head's seq must carry the head's hash, no line
// up to it may be missing, and no line may lie past it (a table writer
// without the ledger key can add lines, never sign them). A head that moved
// on while the lines were read is a concurrent append: the fold reads on,
// a few rounds at most (then store_conflict, retryable), and never trusts
// a line the head does not cover.
//
// Errors: the source's own errors as they are; a run with no run item or no
// ledger at all is warrant.ErrNotFound; a line that does not parse or fold,
// or a ledger that does not end at its verified head, is a failure of kind
// ledger_corrupt whose cause names the seq and the rule.
func Fold(ctx context.Context, src Source, firm, run string, opt FoldOptions) (Folded, error) {
	out := Folded{State: opt.From}
	// tip is the last line followed, by its header when the fold halted
	// before it: what the head must match.
	tip := contracts.Line{Seq: opt.From.LastSeq, Hash: opt.From.HeadHash, RunID: opt.From.RunID, FirmID: opt.From.FirmID}
	if opt.KeepLines {
		out.Lines = []contracts.Line{}
	}
	for round := 1; ; round++ {
		items, _, err := src.ReadLedger(ctx, firm, run, tip.Seq, 0)
		if err != nil {
			return out, err
		}
		if len(items) == 0 && tip.Seq == 0 {
			return out, failure.Wrap(failure.KindNotFound, "run not found", warrant.ErrNotFound)
		}
		for _, it := range items {
			if tip, err = out.fold(it, tip, opt); err != nil {
				return out, err
			}
		}
		r, err := src.GetRun(ctx, firm, run)
		if err != nil {
			return out, err
		}
		out.Run = r
		h := r.Head
		switch {
		case h.Seq == tip.Seq:
			if h.Hash != tip.Hash {
				return out, headMismatch(errHeadMismatch, "seq %d has another hash than the signed head", h.Seq)
			}
			if opt.Keys != nil {
				if err := opt.Keys.VerifyHead(ctx, firm, run, h.Seq, h.Hash, h.MAC, h.KeyID); err != nil {
					return out, err
				}
			}
			return out, out.open(ctx, opt)
		case h.Seq < opt.From.LastSeq:
			return out, headMismatch(errHeadMismatch, "the signed head (seq %d) is behind a state already folded to %d", h.Seq, opt.From.LastSeq)
		case h.Seq > tip.Seq && len(items) == 0 && round > 1:
			// The head covers lines a second read still does not find:
			// the ledger was cut short.
			return out, headMismatch(errHeadMismatch, "the signed head is seq %d, the ledger ends at %d", h.Seq, tip.Seq)
		case round == foldRounds && h.Seq > tip.Seq:
			return out, failure.New(failure.KindStoreConflict, "the run's ledger kept moving while it was read; try again")
		case round == foldRounds:
			// Read after the lines, the head must cover them: an append
			// moves both in one transaction. Lines it still does not
			// cover after every round were never signed.
			return out, headMismatch(errPastHead, "the ledger runs to seq %d, its signed head is seq %d", tip.Seq, h.Seq)
		}
	}
}

// fold applies one stored line after tip and returns the new tip. After a
// halt the lines are followed by their headers only (own hash and link).
func (out *Folded) fold(it warrant.LedgerItem, tip contracts.Line, opt FoldOptions) (contracts.Line, error) {
	if out.Halt == nil {
		l, err := contracts.ParseEventLine(it.Raw)
		if opt.HaltOnUnknown && errors.Is(err, contracts.ErrUnknownEvent) {
			out.Halt, out.HaltSeq = err, it.Seq
		} else {
			if err != nil {
				return tip, failure.Wrap(failure.KindLedgerCorrupt, "the run's ledger does not parse",
					fmt.Errorf("seq %d: %w", it.Seq, err))
			}
			next, err := Apply(out.State, l)
			if err != nil {
				return tip, failure.Wrap(failure.KindLedgerCorrupt, "the run's ledger does not verify", err)
			}
			out.State, out.Last = next, l
			if opt.KeepLines {
				out.Lines = append(out.Lines, l)
			}
			if opt.Open != nil {
				out.applied = append(out.applied, l)
				if l.Sealed {
					out.sealed++
				}
			}
			return l, nil
		}
	}
	l, err := contracts.ParseLineHeader(it.Raw)
	if err == nil {
		err = contracts.CheckLink(tip.Seq, tip.Hash, tip.RunID, tip.FirmID, l)
	}
	if err != nil {
		return tip, failure.Wrap(failure.KindLedgerCorrupt, "the run's ledger does not verify", fmt.Errorf("seq %d: %w", it.Seq, err))
	}
	return l, nil
}

// open opens the sealed lines folded (FoldOptions.Open) and folds them
// again from opt.From with their content. Nothing to open, or no opener
// given, leaves the fold as it is.
func (out *Folded) open(ctx context.Context, opt FoldOptions) error {
	applied := out.applied
	out.applied = nil
	if opt.Open == nil || out.sealed == 0 {
		return nil
	}
	o, err := opt.Open(ctx, out.Run)
	if err != nil || o == nil {
		return err
	}
	st := opt.From
	for i, l := range applied {
		if l.Sealed {
			if l, err = contracts.OpenLine(l, o); err != nil {
				return failure.Wrap(failure.KindLedgerCorrupt, "the run's content does not open under its key", err)
			}
			applied[i] = l
		}
		if st, err = Apply(st, l); err != nil {
			return failure.Wrap(failure.KindLedgerCorrupt, "the run's ledger does not verify", err)
		}
	}
	out.State, out.Last, out.Opener = st, applied[len(applied)-1], o
	if opt.KeepLines {
		out.Lines = applied
	}
	return nil
}

func headMismatch(sentinel error, format string, args ...any) error {
	return failure.Wrap(failure.KindLedgerCorrupt, "the run's ledger does not match its signed head",
		fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...))
}
