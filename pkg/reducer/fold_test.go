package reducer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// ledgerSource serves lines from memory, as the store would.
type ledgerSource []contracts.Line

func (s ledgerSource) ReadLedger(_ context.Context, _, _ string, after int64, _ int) ([]warrant.LedgerItem, bool, error) {
	var out []warrant.LedgerItem
	for _, l := range s {
		if l.Seq > after {
			out = append(out, warrant.LedgerItem{Seq: l.Seq, Raw: l.Raw})
		}
	}
	return out, false, nil
}

// verifierFunc is a HeadVerifier made of a function.
type verifierFunc func(seq int64, hash, mac, keyID string) error

func (f verifierFunc) VerifyHead(_ context.Context, _, _ string, seq int64, hash, mac, keyID string) error {
	return f(seq, hash, mac, keyID)
}

func kindOf(err error) failure.Kind { k, _, _ := failure.Classify(err); return k }

// A fold held to the run's signed head refuses a ledger rewritten and
// re-chained (every line's own hash and link valid), one cut short, and a
// head whose MAC does not verify (issue 11, item 2).
func TestFoldHoldsTheLedgerToItsSignedHead(t *testing.T) {
	events := []contracts.Event{started("1.00"), toolTurn(1, "Filing.", filing), filing.requested(1), filing.blocked()}
	lines := buildLines(t, fixedChain(runID), events...)
	head := warrant.LedgerHead{Seq: lines[3].Seq, Hash: lines[3].Hash, MAC: "mac", KeyID: "k"}
	ok := verifierFunc(func(seq int64, hash, mac, keyID string) error { return nil })
	ctx := context.Background()

	f, err := reducer.Fold(ctx, ledgerSource(lines), firmID, runID, reducer.FoldOptions{Head: &head, Keys: ok})
	if err != nil || f.State.LastSeq != 4 {
		t.Fatalf("the true ledger: %+v, %v", f.State, err)
	}
	// Lines added after the head was read are fine.
	more := append(append([]contracts.Line{}, lines[:3]...), buildLines(t, fixedChain(runID), events...)[3:]...)
	if _, err := reducer.Fold(ctx, ledgerSource(more), firmID, runID, reducer.FoldOptions{Head: &warrant.LedgerHead{Seq: 3, Hash: lines[2].Hash}}); err != nil {
		t.Fatalf("a head before the last line: %v", err)
	}

	// The filing's input rewritten and every line after it re-chained.
	edited := filing
	edited.input = []byte(`{"matter_id":"` + matterID + `","court":"SF Superior","title":"Motion to dismiss"}`)
	forged := buildLines(t, fixedChain(runID), started("1.00"), toolTurn(1, "Filing.", edited), edited.requested(1), edited.blocked())
	if _, err := reducer.ReduceAgentRun(forged); err != nil {
		t.Fatalf("the forgery must be a valid chain on its own: %v", err)
	}
	for name, tc := range map[string]struct {
		src  ledgerSource
		opt  reducer.FoldOptions
		kind failure.Kind
	}{
		"rewritten and re-chained": {forged, reducer.FoldOptions{Head: &head, Keys: ok}, failure.KindLedgerCorrupt},
		"cut short":                {lines[:3], reducer.FoldOptions{Head: &head, Keys: ok}, failure.KindLedgerCorrupt},
		"head does not verify": {lines, reducer.FoldOptions{Head: &head, Keys: verifierFunc(func(int64, string, string, string) error {
			return failure.New(failure.KindLedgerCorrupt, "bad mac")
		})}, failure.KindLedgerCorrupt},
		"head behind the projection":         {lines, reducer.FoldOptions{From: mustFold(t, lines), Head: &warrant.LedgerHead{Seq: 2, Hash: lines[1].Hash}}, failure.KindLedgerCorrupt},
		"head at the projection, other hash": {lines, reducer.FoldOptions{From: mustFold(t, lines), Head: &warrant.LedgerHead{Seq: 4, Hash: lines[2].Hash}}, failure.KindLedgerCorrupt},
	} {
		if _, err := reducer.Fold(ctx, tc.src, firmID, runID, tc.opt); err == nil || kindOf(err) != tc.kind {
			t.Errorf("%s: %v, want %s", name, err, tc.kind)
		}
	}
	outage := errors.New("kms unreachable")
	if _, err := reducer.Fold(ctx, ledgerSource(lines), firmID, runID, reducer.FoldOptions{Head: &head,
		Keys: verifierFunc(func(int64, string, string, string) error { return outage })}); !errors.Is(err, outage) {
		t.Errorf("a verifier's own failure is passed on: %v", err)
	}
}

func mustFold(t *testing.T, lines []contracts.Line) reducer.RunState {
	t.Helper()
	st, err := reducer.ReduceAgentRun(lines)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
