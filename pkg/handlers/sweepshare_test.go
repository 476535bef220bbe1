package handlers_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// TestSweeperShardsShareItsLimit: the first GSI2 shard holding more runs
// whose hand-over was lost than a pass's limit does not starve the others:
// the first pass restarts the run of the last shard too.
func TestSweeperShardsShareItsLimit(t *testing.T) {
	var ids []string
	for range 5 {
		ids = append(ids, "0"+uuid.NewString()[1:])
	}
	last := "f" + uuid.NewString()[1:]
	ids = append(ids, last)
	next := 0
	s := newStack(t, stackOptions{newID: func() string { next++; return ids[next-1] }})
	for range ids {
		if resp := s.post(fixture(t, "invoke.json")); resp.StatusCode != 202 {
			t.Fatalf("invoke: %d %s", resp.StatusCode, resp.Body)
		}
	}
	if n := s.lose(); n != len(ids) {
		t.Fatalf("%d hand-overs, want %d", n, len(ids))
	}
	s.clock.Advance(6 * time.Minute)
	s.sweeper.Limit = 3 // shard 0 holds 5
	rep := s.sweep()
	if rep.Expired != 3 || rep.Restarted != 3 || rep.Errors != 0 {
		t.Fatalf("sweep: %+v, want 3 listed and restarted", rep)
	}
	var restarted []string
	for _, m := range s.queue.take() {
		if m.Reason != contracts.ReasonRestarted {
			t.Errorf("message %+v", m)
		}
		restarted = append(restarted, m.RunID)
	}
	if !slices.Contains(restarted, last) {
		t.Fatalf("restarted %v: the last shard's run %s waits behind shard 0", restarted, last)
	}
	if v := s.view(last); v.Status != "running" {
		t.Errorf("the last shard's run: %+v", v)
	}
}
