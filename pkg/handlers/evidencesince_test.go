package handlers_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
)

// firmLogFrom is GET /v1/evidence/log?from=from.
func (s *stack) firmLogFrom(from int64) evidence.LogBundle {
	s.t.Helper()
	resp := s.post(getRoute(s.t, "GET /v1/evidence/log", "/v1/evidence/log", nil, map[string]string{"from": strconv.FormatInt(from, 10)}))
	if resp.StatusCode != 200 {
		s.t.Fatalf("firm log from %d: %d %s", from, resp.StatusCode, resp.Body)
	}
	var l evidence.LogBundle
	if err := contracts.DecodeStrict([]byte(resp.Body), &l); err != nil {
		s.t.Fatalf("firm log does not decode strictly: %v", err)
	}
	return l
}

// Issue 30 item 2: a verifier who kept the checkpoint of a first run's
// bundle asks the firm log from the entry after it, and that answer proves
// the latest checkpoint extends the one kept: the entries appended since
// start at the kept head, and the checkpoints signed between lead back to
// it. A log asked from a later entry cannot show it, and says what to ask.
func TestEvidenceLogSince(t *testing.T) {
	s := newStack(t, stackOptions{})
	first := s.completedFiling(t)
	s.settle(first.runID)
	keys := s.trusted()
	kept := s.bundle(first.runID, nil).Checkpoint
	held, err := evidence.OpenHeld(keys, *kept)
	if err != nil {
		t.Fatal(err)
	}
	second := s.completedFiling(t)
	s.settle(second.runID)
	third := s.completedFiling(t)
	s.settle(third.runID)

	l := s.firmLogFrom(held.Checkpoint.Size + 1)
	if len(l.Checkpoints) != 2 || l.Checkpoints[0].Body != kept.Body {
		t.Fatalf("the log from entry %d links %d checkpoints, want the kept one and the one after it", held.Checkpoint.Size+1, len(l.Checkpoints))
	}
	bundles := []evidence.Bundle{s.bundle(second.runID, nil), s.bundle(third.runID, nil)}
	rep, err := evidence.VerifyLogWith(l, keys, bundles, evidence.Options{Since: &held})
	if err != nil || rep.Extends == nil || rep.Extends.Held != held.Checkpoint.Number || !rep.Extends.Linked || rep.Checkpoint != held.Checkpoint.Number+2 {
		t.Fatalf("the log since the kept checkpoint: %+v %+v, %v", rep, rep.Extends, err)
	}
	// The whole log (from entry 1) carries no checkpoints between: its
	// entries alone prove it.
	whole := s.firmLog()
	if len(whole.Checkpoints) != 0 {
		t.Fatalf("the whole log carries %d checkpoints", len(whole.Checkpoints))
	}
	all := append([]evidence.Bundle{s.bundle(first.runID, nil)}, bundles...)
	if rep, err := evidence.VerifyLogWith(whole, keys, all, evidence.Options{Since: &held}); err != nil || rep.Extends.Linked {
		t.Fatalf("the whole log: %+v %v", rep.Extends, err)
	}
	// A run's bundle whose log starts after the kept checkpoint's entries.
	_, err = evidence.VerifyWith(bundles[1], keys, evidence.Options{Since: &held})
	if err == nil || !strings.Contains(err.Error(), "fetch the firm log from entry") {
		t.Fatalf("a bundle starting after the kept checkpoint: %v", err)
	}
	// The checkpoint between, dropped from the answer: the chain cannot
	// reach the kept one.
	l.Checkpoints = l.Checkpoints[:1]
	if _, err := evidence.VerifyLogWith(l, keys, bundles, evidence.Options{Since: &held}); err == nil || !strings.Contains(err.Error(), "carries no checkpoint") {
		t.Fatalf("a link dropped: %v", err)
	}
}
