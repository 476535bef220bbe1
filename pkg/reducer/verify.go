package reducer

import (
	"fmt"
	"io"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// Verify reads an NDJSON ledger export from r and folds it from the zero
// state: every line is parsed and chain-checked by contracts.ReadLedger and
// applied with Apply, so an export passes only if the ledger it came from
// could have been written. It is what `warrant ledger verify` runs.
//
// A bad line is a *contracts.LineError naming the line number (wrapping
// Apply's *RuleError when the reducer refused it), and the state returned is
// as of the line before. A ledger with no line is an error wrapping
// ErrNotStarted, and no *contracts.LineError.
func Verify(r io.Reader) (RunState, error) {
	var state RunState
	err := contracts.ReadLedger(r, func(l contracts.Line) error {
		next, err := Apply(state, l)
		state = next
		return err
	})
	if err != nil {
		return state, err
	}
	if state.LastSeq == 0 {
		return state, fmt.Errorf("%w: the ledger has no lines", ErrNotStarted)
	}
	return state, nil
}
