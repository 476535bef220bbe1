package reducer_test

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// TestSealedLedgerFoldsWithoutTheKey: every golden scenario, its content
// sealed (schema 2) and read back without the key as stream-reduce and the
// sweeper read it, folds to the state its plain ledger folds to; only the
// final text, which is content, is not in the state. Audit (hashes and
// ids) agrees; Rederive, which needs the inputs, refuses rather than
// re-deciding on empty ones.
func TestSealedLedgerFoldsWithoutTheKey(t *testing.T) {
	ring, err := seal.NewLocalKeyring(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			key, _, err := ring.NewRunKey(context.Background(), firmID, runID)
			if err != nil {
				t.Fatal(err)
			}
			plain := buildLines(t, fixedChain(runID), sc.events()...)
			c := fixedChain(runID)
			c.Sealer = key
			sealed := buildLines(t, c, sc.events()...)
			var read []contracts.Line
			if err := contracts.ReadLedger(bytes.NewReader(ndjson(sealed)), func(l contracts.Line) error {
				read = append(read, l)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			want, err := reducer.ReduceAgentRun(plain)
			if err != nil {
				t.Fatal(err)
			}
			got, err := reducer.ReduceAgentRun(read)
			if err != nil {
				t.Fatalf("fold of the sealed ledger: %v", err)
			}
			if got.HeadHash == want.HeadHash {
				t.Fatal("the sealed ledger has the plain one's head: nothing was sealed")
			}
			want.HeadHash, want.FinalText = got.HeadHash, ""
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("sealed fold:\n got %+v\nwant %+v", got, want)
			}
			pa, perr := reducer.Audit(plain)
			sa, serr := reducer.Audit(read)
			if (perr == nil) != (serr == nil) || !reflect.DeepEqual(pa, sa) {
				t.Fatalf("audit of the sealed ledger = %v, %v; of the plain one %v, %v", sa, serr, pa, perr)
			}
			policy, err := toolpolicy.Embedded()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := reducer.Rederive(read, policy); !errors.Is(err, contracts.ErrNotOpened) {
				t.Fatalf("Rederive on sealed lines = %v, want ErrNotOpened", err)
			}
		})
	}
}
