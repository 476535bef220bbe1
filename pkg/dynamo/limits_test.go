package dynamo_test

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// counter is a counter of the risk policy's limit id over the current UTC
// day, for scope (a matter or run id), bounded by max (0: no bound).
func (e *env) counter(limit, per, scope string, max int64) warrant.Counter {
	day := e.clock.Now().UTC().Truncate(24 * time.Hour)
	return warrant.Counter{Limit: limit, Per: per, Scope: scope, Window: day, Max: max, Expires: day.Add(48 * time.Hour)}
}

func (e *env) count(firm string, c warrant.Counter) int64 {
	e.t.Helper()
	n, err := e.store.Count(e.ctx, firm, c)
	must(e.t, err)
	return n
}

// claimCounted claims a new call in r with the counters and its
// tool.requested line.
func (e *env) claimCounted(r *run, cs ...warrant.Counter) (toolCall, bool, *warrant.Claim, error) {
	e.t.Helper()
	tc := newToolCall(e.t, "draft_document")
	in := e.claimInput(r, tc, "owner-"+id()[:8])
	in.Counters = cs
	l := e.next(r, requested(tc, "allow"))
	claimed, existing, err := e.store.ClaimToolEffectOnce(e.ctx, in, l)
	if err == nil && claimed {
		r.chain.Advance(l)
	}
	return tc, claimed, existing, err
}

func wantLimit(t *testing.T, err error, limit, what string) {
	t.Helper()
	var le *warrant.LimitReachedError
	if !errors.Is(err, warrant.ErrLimitReached) || !errors.As(err, &le) || le.Limit != limit {
		t.Errorf("%s: %v, want the limit %s reached", what, err, limit)
	}
}

// testLimitRefusesClaim: a claim that finds a counter at its bound is
// refused, naming the limit, and writes nothing: no claim, no line, no
// count. The first counter at its bound in the order given is the one
// named, on every endpoint.
func testLimitRefusesClaim(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm, matter := id(), id()
	r := e.newRunOf(firm, matter)
	perMatter := e.counter("drafts.per_matter_day", "matter", matter, 2)
	perRun := e.counter("drafts.per_run_day", "run", r.id, 2)
	roomy := e.counter("drafts.per_firm_day", "firm", firm, 100)

	var done toolCall
	for i := range 2 {
		ep.Counter.Reset()
		tc, claimed, _, err := e.claimCounted(r, perMatter, perRun)
		done = tc
		if err != nil || !claimed {
			t.Fatalf("claim %d: %v %v", i+1, claimed, err)
		}
		// Counted in the claim's own write: one round trip.
		if ops := ep.Counter.ByOp(); ep.Counter.Count() != 1 || ops["TransactWriteItems"] != 1 {
			t.Errorf("claim %d with counters: round trips %v, want one TransactWriteItems", i+1, ops)
		}
	}
	if a, b := e.count(firm, perMatter), e.count(firm, perRun); a != 2 || b != 2 {
		t.Fatalf("counts after two claims: %d, %d; want 2, 2", a, b)
	}

	before := e.partition(firm, r.id)
	ep.Counter.Reset()
	tc, claimed, existing, err := e.claimCounted(r, roomy, perMatter, perRun)
	if claimed || existing != nil {
		t.Fatalf("the third claim: claimed=%v existing=%+v", claimed, existing)
	}
	wantLimit(t, err, perMatter.Limit, "the third claim")
	if k, _, _ := failure.Classify(err); k != failure.KindPolicyDenied {
		t.Errorf("the third claim's kind: %s", k)
	}
	if n := ep.Counter.Count(); n != 1 {
		t.Errorf("a refused claim took %d round trips %v, want 1", n, ep.Counter.ByOp())
	}
	e.unchanged(before, firm, r.id, "a claim refused by a limit")
	_, err = e.store.GetEffect(e.ctx, firm, r.id, warrant.EffectKey{ToolName: tc.name, InputSHA256: tc.hash})
	wantErr(t, err, warrant.ErrNotFound, "the refused claim")
	if a, b, c := e.count(firm, perMatter), e.count(firm, perRun), e.count(firm, roomy); a != 2 || b != 2 || c != 0 {
		t.Errorf("counts after the refusal: %d, %d, %d; want 2, 2, 0 (nothing of the claim written)", a, b, c)
	}

	// The order given decides which limit is named.
	_, _, _, err = e.claimCounted(r, perRun, perMatter)
	wantLimit(t, err, perRun.Limit, "counters in the other order")

	// Without lines it is a transaction too, with the same answer.
	other := newToolCall(t, "draft_document")
	in := e.claimInput(r, other, "owner-x")
	in.Counters = []warrant.Counter{perMatter}
	claimed, _, err = e.store.ClaimToolEffectOnce(e.ctx, in)
	if claimed {
		t.Fatal("claimed without lines past the limit")
	}
	wantLimit(t, err, perMatter.Limit, "a claim without lines")
	e.unchanged(before, firm, r.id, "a claim without lines refused by a limit")

	// A call already claimed answers with its claim: it would not be
	// counted again, so the limit does not refuse it.
	again := e.claimInput(r, done, "owner-y")
	again.Counters = []warrant.Counter{perMatter}
	claimed, existing, err = e.store.ClaimToolEffectOnce(e.ctx, again, e.next(r, requested(done, "allow")))
	if err != nil || claimed || existing == nil {
		t.Errorf("a repeat of a claimed call past the limit: claimed=%v existing=%v err=%v, want its claim", claimed, existing, err)
	}

	// The bound is the one given: a policy that raises it lets the next
	// call through.
	perMatter.Max = 3
	if _, claimed, _, err := e.claimCounted(r, perMatter); err != nil || !claimed {
		t.Errorf("a claim under a raised bound: %v %v", claimed, err)
	}
	if n := e.count(firm, perMatter); n != 3 {
		t.Errorf("count under the raised bound: %d, want 3", n)
	}

	// The item: firm partition, keyed by limit, scope and window, with
	// the table's TTL attribute.
	out, err := ep.Client.GetItem(e.ctx, &dynamodb.GetItemInput{TableName: aws.String(e.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			dynamo.AttrPK: &types.AttributeValueMemberS{Value: "FIRM#" + firm},
			dynamo.AttrSK: &types.AttributeValueMemberS{Value: "LIMIT#drafts.per_matter_day#matter#" + matter + "#" + perMatter.Window.Format(time.RFC3339)},
		}})
	must(t, err)
	ttl, _ := out.Item[dynamo.AttrTTL].(*types.AttributeValueMemberN)
	if ttl == nil || ttl.Value != strconv.FormatInt(perMatter.Expires.Unix(), 10) {
		t.Errorf("the counter item %v: want %s = %d", out.Item, dynamo.AttrTTL, perMatter.Expires.Unix())
	}
}

// testLimitUnbounded: a counter without a bound counts every claim written
// (counsel's signed calls), at a claim and at a take of a reserved claim;
// a bounded take past its bound is refused and takes nothing.
func testLimitUnbounded(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm, matter := id(), id()
	r := e.newRunOf(firm, matter)
	bounded := e.counter("drafts.per_matter_day", "matter", matter, 2)
	unbounded := bounded
	unbounded.Max = 0
	for i := range 3 {
		if _, claimed, _, err := e.claimCounted(r, unbounded); err != nil || !claimed {
			t.Fatalf("unbounded claim %d: %v %v", i+1, claimed, err)
		}
	}
	if n := e.count(firm, bounded); n != 3 {
		t.Fatalf("count after three unbounded claims: %d", n)
	}
	_, _, _, err := e.claimCounted(r, bounded)
	wantLimit(t, err, bounded.Limit, "a bounded claim past the count")
	if _, claimed, _, err := e.claimCounted(r, unbounded); err != nil || !claimed {
		t.Fatalf("an unbounded claim past the bound: %v %v", claimed, err)
	}

	// The warranted path: the worker takes the claim the resume reserved,
	// counted in the same write.
	h, c, key := e.released(firm)
	until := e.clock.Now().Add(time.Minute)
	_, err = e.store.AcquireRun(e.ctx, firm, h.id, "worker-a", until)
	must(t, err)
	wantInvalid(t, e.store.TakeClaim(e.ctx, firm, h.id, key, "worker-a", until, warrant.Counter{Limit: "x", Per: "matter", Scope: "m"}), "take with a bad counter")
	before := e.partition(firm, h.id)
	wantLimit(t, e.store.TakeClaim(e.ctx, firm, h.id, key, "worker-a", until, bounded), bounded.Limit, "a bounded take past the count")
	e.unchanged(before, firm, h.id, "a take refused by a limit")
	must(t, e.store.TakeClaim(e.ctx, firm, h.id, key, "worker-a", until, unbounded))
	got, err := e.store.GetEffect(e.ctx, firm, h.id, key)
	must(t, err)
	if got.Owner != "worker-a" || got.EffectRef != c.EffectRef {
		t.Errorf("taken claim %+v", got)
	}
	if n := e.count(firm, bounded); n != 5 {
		t.Errorf("count after the take: %d, want 5", n)
	}
}

// testLimitCountersInvalid: counters the store cannot key are refused
// before anything is sent.
func testLimitCountersInvalid(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm, matter := id(), id()
	r := e.newRunOf(firm, matter)
	good := e.counter("drafts.per_matter_day", "matter", matter, 2)
	for name, edit := range map[string]func(*warrant.Counter){
		"no limit":          func(c *warrant.Counter) { c.Limit = "" },
		"a limit with #":    func(c *warrant.Counter) { c.Limit = "a#b" },
		"an unknown scope":  func(c *warrant.Counter) { c.Per = "week" },
		"a scope not an id": func(c *warrant.Counter) { c.Scope = "MATTER-7" },
		"no window":         func(c *warrant.Counter) { c.Window = time.Time{} },
		"expires before":    func(c *warrant.Counter) { c.Expires = c.Window.Add(-time.Second) },
		"a negative bound":  func(c *warrant.Counter) { c.Max = -1 },
	} {
		c := good
		edit(&c)
		_, _, _, err := e.claimCounted(r, c)
		wantInvalid(t, err, name)
	}
	_, _, _, err := e.claimCounted(r, good, good)
	wantInvalid(t, err, "a counter twice")
	if n := e.count(firm, good); n != 0 {
		t.Errorf("count after refused input: %d", n)
	}
}

// racers is how many claims race one counter: 64, or 16 on an endpoint the
// harness serializes (moto), where a race checks the store's answers, not
// the server's isolation, and each run costs a round trip in turn.
func racers(ep *dynamotest.Endpoint) int {
	if ep.IsLenient(dynamotest.LenientSerialized) {
		return 16
	}
	return 64
}

// testRaceLimit: 64 claims of distinct effects (64 runs of one matter)
// charge one counter bounded at 5 at once: exactly 5 are written, the
// other 59 are refused by the limit, and the counter reads 5.
func testRaceLimit(t *testing.T, ep *dynamotest.Endpoint) {
	const bound = 5
	n := racers(ep)
	e := newEnv(t, ep)
	firm, matter := id(), id()
	runs := make([]*run, n)
	for i := range n {
		runs[i] = e.newRunOf(firm, matter)
	}
	c := e.counter("drafts.per_matter_day", "matter", matter, bound)
	ins, lines, tcs := make([]warrant.ClaimInput, n), make([]contracts.Line, n), make([]toolCall, n)
	for i := range n {
		tcs[i] = newToolCall(t, "draft_document")
		ins[i] = e.claimInput(runs[i], tcs[i], fmt.Sprintf("lambda-%d", i))
		ins[i].Counters = []warrant.Counter{c}
		lines[i] = e.next(runs[i], requested(tcs[i], "allow"))
	}
	claimed, errs := make([]bool, n), make([]error, n)
	race(n, func(i int) { claimed[i], _, errs[i] = e.store.ClaimToolEffectOnce(e.ctx, ins[i], lines[i]) })
	won, refused := 0, 0
	for i := range n {
		switch {
		case errs[i] == nil && claimed[i]:
			won++
		case errors.Is(errs[i], warrant.ErrLimitReached):
			refused++
			if _, err := e.store.GetEffect(e.ctx, firm, runs[i].id, warrant.EffectKey{ToolName: tcs[i].name, InputSHA256: tcs[i].hash}); !errors.Is(err, warrant.ErrNotFound) {
				t.Errorf("racer %d was refused and its claim is stored (%v)", i, err)
			}
		default:
			t.Errorf("racer %d: claimed=%v err=%v", i, claimed[i], errs[i])
		}
	}
	if won != bound || refused != n-bound {
		t.Errorf("%d claims written, %d refused by the limit; want %d and %d", won, refused, bound, n-bound)
	}
	if got := e.count(firm, c); got != bound {
		t.Errorf("the counter reads %d after the race, want %d", got, bound)
	}
}

// testRaceUnbounded: 64 claims of distinct effects charge one counter
// without a bound at once, while 16 repeats of calls already claimed race
// them: the counter reads exactly 64, the repeats (refused: the effect is
// claimed) counting nothing.
func testRaceUnbounded(t *testing.T, ep *dynamotest.Endpoint) {
	n := racers(ep)
	repeats := n / 4
	e := newEnv(t, ep)
	firm, matter := id(), id()
	c := e.counter("drafts.per_matter_day", "matter", matter, 0)
	ins, lines := make([]warrant.ClaimInput, n+repeats), make([]contracts.Line, n+repeats)
	for i := range n {
		r := e.newRunOf(firm, matter)
		tc := newToolCall(t, "draft_document")
		ins[i] = e.claimInput(r, tc, fmt.Sprintf("lambda-%d", i))
		ins[i].Counters = []warrant.Counter{c}
		lines[i] = e.next(r, requested(tc, "allow"))
	}
	for i := n; i < n+repeats; i++ {
		r := e.newRunOf(firm, matter)
		tc := newToolCall(t, "draft_document")
		first := e.claimInput(r, tc, "earlier")
		claimed, _, err := e.store.ClaimToolEffectOnce(e.ctx, first, e.line(r, requested(tc, "allow")))
		if err != nil || !claimed {
			t.Fatalf("the earlier claim: %v %v", claimed, err)
		}
		ins[i] = e.claimInput(r, tc, fmt.Sprintf("repeat-%d", i))
		ins[i].Counters = []warrant.Counter{c}
		lines[i] = e.next(r, requested(tc, "allow"))
	}
	claimed, errs := make([]bool, n+repeats), make([]error, n+repeats)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n + repeats {
		wg.Go(func() {
			<-start
			claimed[i], _, errs[i] = e.store.ClaimToolEffectOnce(e.ctx, ins[i], lines[i])
		})
	}
	close(start)
	wg.Wait()
	for i := range n + repeats {
		if errs[i] != nil || claimed[i] != (i < n) {
			t.Errorf("racer %d: claimed=%v err=%v", i, claimed[i], errs[i])
		}
	}
	if got := e.count(firm, c); got != int64(n) {
		t.Errorf("the counter reads %d after the race, want %d", got, n)
	}
}
