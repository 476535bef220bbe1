package provenance

import (
	"errors"
	"fmt"
	"slices"
)

// Stored is a finding as the ledger records it (in tool.requested, in the
// clear): the pointer, the kind and the origins, never the value. With the
// call's input and the run's ledger, an audit traces the call again and
// holds the record to it (Recheck).
type Stored struct {
	Pointer    string   `json:"pointer"`
	Kind       Kind     `json:"kind"`
	Unreadable bool     `json:"unreadable,omitempty"`
	Origins    []Origin `json:"origins,omitempty"`
}

// Store is findings' recorded form. Why a value could not be read is left
// out: the reason may describe the value, and the audit's own trace says it
// again.
func Store(findings []Finding) []Stored {
	if len(findings) == 0 {
		return nil
	}
	out := make([]Stored, len(findings))
	for i, f := range findings {
		out[i] = Stored{Pointer: f.Pointer, Kind: f.Kind, Unreadable: f.Unreadable != "", Origins: slices.Clone(f.Origins)}
	}
	return out
}

// ErrMismatch is matched by every disagreement Recheck finds.
var ErrMismatch = errors.New("provenance: the recorded provenance does not match the run")

// Recheck holds a recorded provenance to a fresh Trace of the same call
// over the same run (sources rebuilt from the ledger up to the call's
// line): the same findings in the same order, each with the same pointer,
// kind, readability and origins. The error names the first finding that
// differs, by index and pointer.
func Recheck(recorded []Stored, fresh []Finding) error {
	if len(recorded) != len(fresh) {
		return fmt.Errorf("%w: %d findings recorded, %d traced", ErrMismatch, len(recorded), len(fresh))
	}
	for i, r := range recorded {
		f := fresh[i]
		switch {
		case r.Pointer != f.Pointer:
			return fmt.Errorf("%w: finding %d is at %s, traced at %s", ErrMismatch, i, r.Pointer, f.Pointer)
		case r.Kind != f.Kind:
			return fmt.Errorf("%w: finding %d (%s) is recorded as %s, declared %s", ErrMismatch, i, r.Pointer, r.Kind, f.Kind)
		case r.Unreadable != (f.Unreadable != ""):
			return fmt.Errorf("%w: finding %d (%s) differs in whether it could be read", ErrMismatch, i, r.Pointer)
		case !slices.Equal(r.Origins, f.Origins):
			return fmt.Errorf("%w: finding %d (%s) has other origins than the run shows", ErrMismatch, i, r.Pointer)
		}
	}
	return nil
}
