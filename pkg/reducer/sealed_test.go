package reducer_test

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// TestSealedLedgerFoldsWithoutTheKey: every golden scenario, its content
// sealed (schema 2) and read back without the key as stream-reduce and the
// sweeper read it, folds to the state its plain ledger folds to; only the
// final text, which is content, is not in the state. Audit (hashes and
// ids) agrees; Rederive, which needs the inputs, reports every decision as
// recorded and sealed rather than re-deciding on empty inputs, and
// re-derives them all once the lines are opened.
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
			plainDecisions, perr := reducer.Rederive(plain, policy)
			sealedDecisions, serr := reducer.Rederive(read, policy)
			if (perr == nil) != (serr == nil) || len(plainDecisions) != len(sealedDecisions) {
				t.Fatalf("Rederive: sealed %d, %v; plain %d, %v", len(sealedDecisions), serr, len(plainDecisions), perr)
			}
			for i, d := range sealedDecisions {
				p := plainDecisions[i]
				if !d.Sealed || p.Sealed || d.Seq != p.Seq || d.InputSHA256 != p.InputSHA256 || d.RiskTier != p.RiskTier || d.Action != p.Action ||
					!slices.Equal(d.FiredRules, p.FiredRules) {
					t.Fatalf("sealed decision %+v, plain %+v", d, p)
				}
			}
			var opened []contracts.Line
			for _, l := range read {
				o, err := contracts.OpenLine(l, key)
				if err != nil {
					t.Fatal(err)
				}
				opened = append(opened, o)
			}
			again, err := reducer.Rederive(opened, policy)
			if (err == nil) != (perr == nil) || !reflect.DeepEqual(again, plainDecisions) {
				t.Fatalf("Rederive of the opened lines %+v, %v; plain %+v, %v", again, err, plainDecisions, perr)
			}
		})
	}
}

// TestFoldOpensSealedContent: Fold with FoldOptions.Open opens a sealed
// ledger once it verified to its head and folds it again with its content:
// every golden scenario's state, lines and events are the plain ledger's
// (but for the stored form's hashes); without an opener it stays sealed;
// a plain ledger never asks for one; a key of another run is
// ledger_corrupt, and the opener's own error is returned as it is.
func TestFoldOpensSealedContent(t *testing.T) {
	ring, err := seal.NewLocalKeyring(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			key, _, err := ring.NewRunKey(ctx, firmID, runID)
			if err != nil {
				t.Fatal(err)
			}
			plain := buildLines(t, fixedChain(runID), sc.events()...)
			c := fixedChain(runID)
			c.Sealer = key
			sealed := buildLines(t, c, sc.events()...)
			want, err := reducer.Fold(ctx, ledgerSource(plain), firmID, runID, reducer.FoldOptions{KeepLines: true})
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			open := func(o contracts.Opener, err error) func(context.Context, warrant.Run) (contracts.Opener, error) {
				return func(context.Context, warrant.Run) (contracts.Opener, error) { calls++; return o, err }
			}

			got, err := reducer.Fold(ctx, ledgerSource(sealed), firmID, runID, reducer.FoldOptions{KeepLines: true, Open: open(key, nil)})
			if err != nil {
				t.Fatalf("fold with the key: %v", err)
			}
			if calls != 1 || got.Opener != contracts.Opener(key) {
				t.Fatalf("Open called %d times, Opener %v; want once, the key", calls, got.Opener)
			}
			if got.State.HeadHash != sealed[len(sealed)-1].Hash || got.Last.Hash != sealed[len(sealed)-1].Hash {
				t.Fatal("the opened fold does not end at the stored head")
			}
			w := want.State
			w.HeadHash = got.State.HeadHash
			if !reflect.DeepEqual(got.State, w) {
				t.Fatalf("opened fold:\n got %+v\nwant %+v", got.State, w)
			}
			for i, l := range got.Lines {
				if l.Sealed || l.SchemaVersion != contracts.SchemaVersionSealed || l.Hash != sealed[i].Hash || !bytes.Equal(l.Raw, sealed[i].Raw) {
					t.Fatalf("line %d: sealed %v, schema %s; want opened, stored form kept", l.Seq, l.Sealed, l.SchemaVersion)
				}
				if !reflect.DeepEqual(l.Event, want.Lines[i].Event) {
					t.Fatalf("line %d opens to %+v, want %+v", l.Seq, l.Event, want.Lines[i].Event)
				}
			}

			calls = 0
			closed, err := reducer.Fold(ctx, ledgerSource(sealed), firmID, runID, reducer.FoldOptions{Open: open(nil, nil)})
			stored, perr := contracts.ParseEventLine(sealed[len(sealed)-1].Raw)
			if err != nil || perr != nil || calls != 1 || closed.Opener != nil || closed.Last.Sealed != stored.Sealed || closed.State.FinalText != "" {
				t.Fatalf("fold with no opener: %v, %d calls, opener %v, last sealed %v", err, calls, closed.Opener, closed.Last.Sealed)
			}

			calls = 0
			if _, err := reducer.Fold(ctx, ledgerSource(plain), firmID, runID, reducer.FoldOptions{Open: open(key, nil)}); err != nil || calls != 0 {
				t.Fatalf("plain ledger: %v, Open called %d times", err, calls)
			}

			other, _, err := ring.NewRunKey(ctx, firmID, "6f1d2c3b-4a59-4e8d-9c7b-1a2b3c4d5e6f")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := reducer.Fold(ctx, ledgerSource(sealed), firmID, runID, reducer.FoldOptions{Open: open(other, nil)}); kindOf(err) != failure.KindLedgerCorrupt {
				t.Fatalf("another run's key: %v, want ledger_corrupt", err)
			}
			if _, err := reducer.Fold(ctx, ledgerSource(sealed), firmID, runID, reducer.FoldOptions{Open: open(nil, seal.ErrKeyUnavailable)}); !errors.Is(err, seal.ErrKeyUnavailable) {
				t.Fatalf("opener's error: %v", err)
			}
		})
	}
}
