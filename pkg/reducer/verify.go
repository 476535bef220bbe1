package reducer

import (
	"context"
	"fmt"
	"io"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// Verify reads an NDJSON ledger export from r and folds it from the zero
// state: every line is parsed and chain-checked by contracts.ReadExport and
// applied with Apply, so an export passes only if the ledger it came from
// could have been written. An export that ends with the run's signed head
// (events?head=true) must match it: the line at the head's seq carries its
// hash, and no line up to it is missing; its MAC is checked only by
// VerifySigned. It is what `warrant ledger verify` runs.
//
// A bad line is a *contracts.LineError naming the line number (wrapping
// Apply's *RuleError when the reducer refused it), and the state returned is
// as of the line before. A ledger with no line is an error wrapping
// ErrNotStarted, and no *contracts.LineError.
func Verify(r io.Reader) (RunState, error) {
	st, _, err := verify(context.Background(), r, nil, false)
	return st, err
}

// VerifySigned is Verify for an export that must end with the run's signed
// head, whose MAC keys verify: a ledger a table writer rewrote and
// re-chained, or cut short, does not pass, however valid each line is.
func VerifySigned(ctx context.Context, r io.Reader, keys HeadVerifier) (RunState, *contracts.HeadLine, error) {
	return verify(ctx, r, keys, true)
}

func verify(ctx context.Context, r io.Reader, keys HeadVerifier, signed bool) (RunState, *contracts.HeadLine, error) {
	var state RunState
	var atHead *contracts.Line
	var lines []contracts.Line // seq and hash of each: the head line comes last
	head, err := contracts.ReadExport(r, func(l contracts.Line) error {
		next, err := Apply(state, l)
		if err != nil {
			return err
		}
		state = next
		lines = append(lines, contracts.Line{Seq: l.Seq, Hash: l.Hash})
		return nil
	})
	if err != nil {
		return state, head, err
	}
	if state.LastSeq == 0 {
		return state, head, fmt.Errorf("%w: the ledger has no lines", ErrNotStarted)
	}
	if head == nil {
		if signed {
			return state, nil, failure.New(failure.KindLedgerCorrupt, "the export carries no signed ledger head (events?head=true)")
		}
		return state, nil, nil
	}
	for i := range lines {
		if lines[i].Seq == head.Seq {
			atHead = &lines[i]
		}
	}
	if head.FirmID != state.FirmID || head.RunID != state.RunID {
		return state, head, &contracts.LineError{LineNo: head.LineNo(), Err: fmt.Errorf("%w: the head names another run", errHeadMismatch)}
	}
	if atHead == nil || atHead.Hash != head.Hash {
		return state, head, &contracts.LineError{LineNo: head.LineNo(),
			Err: headMismatch("the ledger does not reach seq %d with the head's hash", head.Seq)}
	}
	if signed {
		if keys == nil {
			return state, head, fmt.Errorf("reducer: VerifySigned needs the ledger key")
		}
		if err := keys.VerifyHead(ctx, head.FirmID, head.RunID, head.Seq, head.Hash, head.MAC, head.KeyID); err != nil {
			return state, head, &contracts.LineError{LineNo: head.LineNo(), Err: err}
		}
	}
	return state, head, nil
}
