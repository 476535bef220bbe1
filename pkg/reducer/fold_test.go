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

// ledgerSource serves lines from memory, as the store would, with the run
// item's head at its last line unless head says otherwise.
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

func (s ledgerSource) GetRun(context.Context, string, string) (warrant.Run, error) {
	if len(s) == 0 {
		return warrant.Run{}, warrant.ErrNotFound
	}
	last := s[len(s)-1]
	return warrant.Run{Head: warrant.LedgerHead{Seq: last.Seq, Hash: last.Hash, MAC: "mac", KeyID: "k"}}, nil
}

// headedSource is a ledger whose run item holds heads[i] at the i-th read
// (the last one from then on), and whose stored lines grow to grow[i] lines
// at the i-th ledger read: a writer appending while the fold reads.
type headedSource struct {
	lines       []contracts.Line
	heads       []warrant.LedgerHead
	grow        []int
	reads, runs int
}

func (s *headedSource) ReadLedger(ctx context.Context, firm, run string, after int64, limit int) ([]warrant.LedgerItem, bool, error) {
	n := len(s.lines)
	if len(s.grow) > 0 {
		n = s.grow[min(s.reads, len(s.grow)-1)]
	}
	s.reads++
	return ledgerSource(s.lines[:n]).ReadLedger(ctx, firm, run, after, limit)
}

func (s *headedSource) GetRun(context.Context, string, string) (warrant.Run, error) {
	h := s.heads[min(s.runs, len(s.heads)-1)]
	s.runs++
	return warrant.Run{Head: h}, nil
}

func headAt(l contracts.Line) warrant.LedgerHead {
	return warrant.LedgerHead{Seq: l.Seq, Hash: l.Hash, MAC: "mac", KeyID: "k"}
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

	f, err := reducer.Fold(ctx, ledgerSource(lines), firmID, runID, reducer.FoldOptions{Keys: ok})
	if err != nil || f.State.LastSeq != 4 || f.Run.Head.Seq != 4 {
		t.Fatalf("the true ledger: %+v, %v", f.State, err)
	}
	// A writer appends while the fold reads: the head read after the
	// lines is ahead of them, so the fold reads on to it.
	moving := &headedSource{lines: lines, grow: []int{3, 4}, heads: []warrant.LedgerHead{head}}
	if f, err := reducer.Fold(ctx, moving, firmID, runID, reducer.FoldOptions{Keys: ok}); err != nil || f.State.LastSeq != 4 || moving.reads != 2 {
		t.Fatalf("a head that moved while the lines were read: %+v, %v (%d reads)", f.State, err, moving.reads)
	}
	// A line visible before the head that covers it (the two are one
	// transaction, a reader may see one first): the fold reads the run
	// item again rather than refusing at once.
	late := &headedSource{lines: lines, heads: []warrant.LedgerHead{headAt(lines[2]), head}}
	if f, err := reducer.Fold(ctx, late, firmID, runID, reducer.FoldOptions{Keys: ok}); err != nil || f.State.LastSeq != 4 {
		t.Fatalf("a head read before its line became visible: %+v, %v", f.State, err)
	}
	// The filing's input rewritten and every line after it re-chained.
	edited := filing
	edited.input = []byte(`{"matter_id":"` + matterID + `","court":"SF Superior","title":"Motion to dismiss"}`)
	forged := buildLines(t, fixedChain(runID), started("1.00"), toolTurn(1, "Filing.", edited), edited.requested(1), edited.blocked())
	if _, err := reducer.ReduceAgentRun(forged); err != nil {
		t.Fatalf("the forgery must be a valid chain on its own: %v", err)
	}
	// Issue 17, item 1: lines appended after the signed head (each valid
	// and chained) are never folded.
	past := buildLines(t, fixedChain(runID), append(events, &contracts.ApprovalDecided{ApprovalRequestID: approvalID, Decision: warrant.DecisionApproved,
		DecidedBy: counselID, ToolInputHash: filing.hash()})...)
	// A writer that never stops: the fold gives up, retryably.
	busy := &headedSource{lines: past, grow: []int{1, 2, 3, 4},
		heads: []warrant.LedgerHead{headAt(past[1]), headAt(past[2]), headAt(past[3]), headAt(past[4])}}
	if _, err := reducer.Fold(ctx, busy, firmID, runID, reducer.FoldOptions{Keys: ok}); kindOf(err) != failure.KindStoreConflict {
		t.Fatalf("a ledger that kept moving: %v, want store_conflict", err)
	}
	for name, tc := range map[string]struct {
		src  reducer.Source
		opt  reducer.FoldOptions
		kind failure.Kind
	}{
		"rewritten and re-chained":   {&headedSource{lines: forged, heads: []warrant.LedgerHead{head}}, reducer.FoldOptions{Keys: ok}, failure.KindLedgerCorrupt},
		"cut short":                  {&headedSource{lines: lines[:3], heads: []warrant.LedgerHead{head}}, reducer.FoldOptions{Keys: ok}, failure.KindLedgerCorrupt},
		"unsigned lines past head":   {&headedSource{lines: past, heads: []warrant.LedgerHead{head}}, reducer.FoldOptions{Keys: ok}, failure.KindLedgerCorrupt},
		"a projection past the head": {&headedSource{lines: past, heads: []warrant.LedgerHead{head}}, reducer.FoldOptions{From: mustFold(t, past), Keys: ok}, failure.KindLedgerCorrupt},
		"head does not verify": {ledgerSource(lines), reducer.FoldOptions{Keys: verifierFunc(func(int64, string, string, string) error {
			return failure.New(failure.KindLedgerCorrupt, "bad mac")
		})}, failure.KindLedgerCorrupt},
		"head behind the projection":         {&headedSource{lines: lines, heads: []warrant.LedgerHead{headAt(lines[1])}}, reducer.FoldOptions{From: mustFold(t, lines)}, failure.KindLedgerCorrupt},
		"head at the projection, other hash": {&headedSource{lines: lines, heads: []warrant.LedgerHead{{Seq: 4, Hash: lines[2].Hash}}}, reducer.FoldOptions{From: mustFold(t, lines)}, failure.KindLedgerCorrupt},
	} {
		if _, err := reducer.Fold(ctx, tc.src, firmID, runID, tc.opt); err == nil || kindOf(err) != tc.kind {
			t.Errorf("%s: %v, want %s", name, err, tc.kind)
		}
	}
	outage := errors.New("kms unreachable")
	if _, err := reducer.Fold(ctx, ledgerSource(lines), firmID, runID, reducer.FoldOptions{
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
