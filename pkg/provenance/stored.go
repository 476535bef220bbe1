package provenance

import (
	"errors"
	"fmt"
	"slices"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// Store is findings as the ledger records them (tool.requested's
// provenance, contracts.ProvenanceFinding): the pointer, the kind and the
// origins, never the value. Why a value could not be read is left out: the
// reason may describe the value, and the audit's own trace says it again.
func Store(findings []Finding) []contracts.ProvenanceFinding {
	if len(findings) == 0 {
		return nil
	}
	out := make([]contracts.ProvenanceFinding, len(findings))
	n := 0
	for _, f := range findings {
		n += len(f.Origins)
	}
	origins := make([]contracts.ProvenanceOrigin, 0, n) // one array for all
	for i, f := range findings {
		out[i] = contracts.ProvenanceFinding{Pointer: f.Pointer, Kind: string(f.Kind), Unreadable: f.Unreadable != ""}
		if len(f.Origins) > 0 {
			start := len(origins)
			for _, o := range f.Origins {
				origins = append(origins, contracts.ProvenanceOrigin{Source: string(o.Source), Seq: o.Seq, Tool: o.Tool})
			}
			out[i].Origins = origins[start:len(origins):len(origins)]
		}
	}
	return out
}

// ErrMismatch is matched by every disagreement Recheck finds.
var ErrMismatch = errors.New("provenance: the recorded provenance does not match the run")

// Recheck holds a recorded provenance to a fresh trace of the same call
// over the same run (sources rebuilt from the ledger up to the call's
// line), in its recorded form (Store): the same findings in the same
// order, each with the same pointer, kind, readability and origins. The
// error names the first finding that differs, by index and pointer.
func Recheck(recorded, fresh []contracts.ProvenanceFinding) error {
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
		case r.Unreadable != f.Unreadable:
			return fmt.Errorf("%w: finding %d (%s) differs in whether it could be read", ErrMismatch, i, r.Pointer)
		case !slices.Equal(r.Origins, f.Origins):
			return fmt.Errorf("%w: finding %d (%s) has other origins than the run shows", ErrMismatch, i, r.Pointer)
		}
	}
	return nil
}
