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
// (events?head=true) must end exactly at it: its last line is the head's
// seq with the head's hash (no line missing before it, none after it); its
// MAC is checked only by VerifySigned. It is what `warrant ledger verify` runs.
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
	head, err := contracts.ReadExport(r, func(l contracts.Line) error {
		next, err := Apply(state, l)
		if err != nil {
			return err
		}
		state = next
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
	if head.FirmID != state.FirmID || head.RunID != state.RunID {
		return state, head, &contracts.LineError{LineNo: head.LineNo(), Err: fmt.Errorf("%w: the head names another run", errHeadMismatch)}
	}
	// The ledger is what the head signed, no more and no less: a line past
	// it was never signed, and one missing before it was cut.
	switch {
	case state.LastSeq > head.Seq:
		return state, head, &contracts.LineError{LineNo: head.LineNo(),
			Err: headMismatch(errPastHead, "the ledger runs to seq %d, its signed head is seq %d", state.LastSeq, head.Seq)}
	case state.LastSeq < head.Seq || state.HeadHash != head.Hash:
		return state, head, &contracts.LineError{LineNo: head.LineNo(),
			Err: headMismatch(errHeadMismatch, "the ledger does not end at seq %d with the head's hash", head.Seq)}
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
