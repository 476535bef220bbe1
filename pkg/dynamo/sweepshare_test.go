package dynamo_test

import (
	"slices"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"

	"github.com/seed-f6d3920e/warrant"
)

// testExpiredLeasesShareTheLimit: a sweep's limit is shared among the GSI2
// shards, so one shard holding more expired runs than the limit (a backlog,
// or a client that ground Idempotency-Keys until its runs' ids all start
// with the same digit) does not starve the others: every shard with an
// expired lease is listed, each shard's oldest first, the limit used up.
func testExpiredLeasesShareTheLimit(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	t0 := e.clock.Now()
	firm := id()
	byShard := map[byte][]*run{}
	lost := func(shard byte, n int) {
		for i := range n {
			r := e.newRunID(firm, idIn(shard), warrant.Lease{})
			// Leases end in creation order, a second apart, within the shard.
			_, err := e.store.AcquireRun(e.ctx, firm, r.id, "worker-"+r.id[:8], t0.Add(time.Duration(len(byShard[shard])+i+1)*time.Second))
			must(t, err)
			byShard[shard] = append(byShard[shard], r)
		}
	}
	const limit = 4
	lost('0', limit+2)
	lost('7', 1)
	lost('f', 2)
	now := t0.Add(time.Hour)

	got := e.expired(now, limit)
	if len(got) != limit {
		t.Fatalf("%d listed, want the limit %d: %v", len(got), limit, got)
	}
	seen := map[warrant.RunRef]bool{}
	perShard := map[byte][]warrant.RunRef{}
	for _, r := range got {
		if seen[r] {
			t.Errorf("%v listed twice", r)
		}
		seen[r] = true
		perShard[r.RunID[0]] = append(perShard[r.RunID[0]], r)
	}
	for shard, runs := range byShard {
		listed := perShard[shard]
		if len(listed) == 0 {
			t.Errorf("shard %c (%d expired) starved: %v", shard, len(runs), got)
			continue
		}
		// A shard gives its oldest leases, oldest first.
		want := make([]warrant.RunRef, len(listed))
		for i := range listed {
			want[i] = ref(runs[i])
		}
		if !slices.Equal(listed, want) {
			t.Errorf("shard %c listed %v, want its oldest %v", shard, listed, want)
		}
	}
	for shard := range perShard {
		if _, ok := byShard[shard]; !ok {
			t.Errorf("listed a run of shard %c, which has none expired", shard)
		}
	}

	// Without a limit, every one; a limit above the count, every one too.
	for _, l := range []int{0, 100} {
		if all := e.expired(now, l); len(all) != limit+2+1+2 {
			t.Errorf("limit %d: %d listed, want %d", l, len(all), limit+2+1+2)
		}
	}
	// Queries on GSI2 only, never a Scan: a round of one a shard (shard 0,
	// 7 and f each give one), then one more for the share that is left.
	ep.Counter.Reset()
	e.expired(now, limit)
	if ops := ep.Counter.ByOp(); ops["Scan"] != 0 || ops["Query"] != 17 || len(ops) != 1 {
		t.Errorf("ExpiredLeases used %v, want 17 Queries and nothing else", ops)
	}
}
