package evidence_test

import (
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/evidence"
)

// TestVerifyRefusesASegmentThatStartsAfterTheRun: a run started before
// starts were anchored (no start receipt in the log) executed a filing and
// has not ended. Its bundle's log segment starts just after the filing's
// entry, and leaves its receipt out: with the segment's start unchecked, the
// filing would read as a receipt still on its way (the checkpoint is less
// than Skew after it) and the bundle would verify. The segment starts at an
// entry appended after the run started, so entries of the run may lie
// before it: refused. The segment from entry 1 verifies.
//
// Checked: with the segment-start check disabled in VerifyWith (the
// condition `at.After(started.Add(-Skew))` dropped, or the whole `if
// b.Log.From != 1` block skipped), "a segment after the filing's entry"
// fails (VerifyWith answers nil, the filing "awaits a checkpoint"); with it
// back it passes. Issue 31 item 5. (TestVerifyUnanchoredStart, an ended
// run, fails under both too; this case is the one whose receipt can hide as
// pending.)
func TestVerifyRefusesASegmentThatStartsAfterTheRun(t *testing.T) {
	k, pub := newKey(t)
	keys := evidence.KeySet{}.Add(pub)
	lines := filingLedger(t, false)
	rs := derive(t, lines)
	if len(rs) != 2 || rs[0].Kind != evidence.KindStart || rs[1].Seq != fxSeqEffect {
		t.Fatalf("Derive: %+v", rs)
	}
	var l firmLog
	l.other(fxStart.Add(-10 * time.Minute))       // entry 1
	l.issue(t, k, rs[1])                          // entry 2: the filing (the start was never logged)
	l.other(lineAt(fxSeqEffect).Add(time.Second)) // entry 3
	cpAt := lineAt(fxSeqEffect).Add(time.Minute)
	legacy := evidence.Options{AllowUnanchoredStart: true}

	t.Run("the whole log", func(t *testing.T) {
		rep, err := evidence.VerifyWith(l.bundle(t, k, lines, 1, cpAt), keys, legacy)
		if err != nil || rep.Complete || rep.StartAnchored || rep.Covered != fxSeqEffect || len(rep.Receipts) != 1 {
			t.Fatalf("VerifyWith: %v %+v", err, rep)
		}
	})
	t.Run("a segment after the filing's entry", func(t *testing.T) {
		late := l.bundle(t, k, lines, 3, cpAt)
		if len(late.Receipts) != 0 || len(late.Log.Entries) != 1 {
			t.Fatalf("the late bundle carries %d receipts, %d entries", len(late.Receipts), len(late.Log.Entries))
		}
		rep, err := evidence.VerifyWith(late, keys, legacy)
		if err == nil || !strings.Contains(err.Error(), "the segment starts at entry 3, appended after the run started") {
			t.Fatalf("VerifyWith: %v %+v", err, rep)
		}
		// By default a run's start must be in the segment.
		if _, err := evidence.Verify(late, keys); err == nil || !strings.Contains(err.Error(), "the run's start is not in the log segment") {
			t.Fatalf("Verify: %v", err)
		}
	})
}
