package dynamo_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"

	"github.com/seed-f6d3920e/warrant"
)

func testWarrantApprovedLifecycle(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	h := e.newHeld(id())

	r, err := e.store.GetRun(e.ctx, h.firm, h.id)
	must(t, err)
	if r.Status != warrant.RunHeld || r.HeldOn != h.approval {
		t.Fatalf("run after CreateWarrantRequest: %s held on %q", r.Status, r.HeldOn)
	}
	w, err := e.store.GetWarrant(e.ctx, h.firm, h.id, h.approval)
	must(t, err)
	if w.Status != warrant.WarrantPending || w.ToolInputHash != h.tool.hash || string(w.Input) != string(h.tool.input) ||
		w.MatterID != h.matter || w.HumanSummary != "File the motion" || !w.ExpiresAt.Equal(h.expires) || w.Decision != "" {
		t.Errorf("pending warrant = %+v", w)
	}
	_, err = e.store.GetReleaseAuthorizedRequest(e.ctx, h.approval, h.firm, h.id, h.matter)
	wantErr(t, err, warrant.ErrWarrantNotDecided, "release of a pending warrant")

	// A held run cannot block again.
	before := e.partition(h.firm, h.id)
	w2 := e.warrant(h)
	w2.ApprovalID = id()
	wantErr(t, e.store.CreateWarrantRequest(e.ctx, w2, e.next(h.run, delta("x"))), warrant.ErrRunNotInState, "second warrant on a held run")
	e.unchanged(before, h.firm, h.id, "second warrant on a held run")

	decided, err := e.decide(h, warrant.DecisionApproved)
	must(t, err)
	if decided.Status != warrant.WarrantApproved || decided.Decision != "approved" || decided.DecidedBy != "counsel-1" ||
		decided.Note != "ok" || !decided.DecidedAt.Equal(e.clock.Now()) {
		t.Errorf("DecideWarrant = %+v", decided)
	}
	stored, err := e.store.GetWarrant(e.ctx, h.firm, h.id, h.approval)
	must(t, err)
	if stored.Status != decided.Status || stored.Decision != decided.Decision || !stored.DecidedAt.Equal(decided.DecidedAt) {
		t.Errorf("stored %+v, returned %+v", stored, decided)
	}
	// Decided warrants leave the sparse index: the item has no GSI1 keys.
	e.noGSIKeys(h)

	rel, err := e.store.GetReleaseAuthorizedRequest(e.ctx, h.approval, h.firm, h.id, h.matter)
	must(t, err)
	if rel.Decision != "approved" {
		t.Errorf("release request = %+v", rel)
	}
	_, err = e.store.GetReleaseAuthorizedRequest(e.ctx, h.approval, h.firm, h.id, id())
	wantErr(t, err, warrant.ErrNotFound, "release for another matter")

	c, l := e.resume(h, warrant.DecisionApproved)
	must(t, e.store.ResumeClaim(e.ctx, c, l))
	h.chain.Advance(l)

	r, err = e.store.GetRun(e.ctx, h.firm, h.id)
	must(t, err)
	if r.Status != warrant.RunRunning || r.HeldOn != "" {
		t.Errorf("run after resume: %s held on %q", r.Status, r.HeldOn)
	}
	w, err = e.store.GetWarrant(e.ctx, h.firm, h.id, h.approval)
	must(t, err)
	if w.Status != warrant.WarrantConsumed || w.Decision != "approved" {
		t.Errorf("warrant after resume = %s (decision %s)", w.Status, w.Decision)
	}
	claim, err := e.store.GetEffect(e.ctx, h.firm, h.id, warrant.EffectKey{ToolName: h.tool.name, InputSHA256: h.tool.hash})
	must(t, err)
	// Reserved for a worker: claimed, owned by nobody until the pickup
	// deadline, so nothing has run yet.
	if claim.EffectRef != c.EffectRef || claim.ApprovalID != h.approval || claim.Owner != "" || claim.Taken() ||
		claim.State != warrant.ClaimClaimed || !claim.LeaseUntil.Equal(c.PickupBy) {
		t.Errorf("claim = %+v", claim)
	}
	// Of the workers handed the run, one takes the claim; taking it again
	// as the same owner (its answer was lost) is fine, as another is not.
	key := warrant.EffectKey{ToolName: h.tool.name, InputSHA256: h.tool.hash}
	owner := e.take(c)
	must(t, e.store.TakeClaim(e.ctx, h.firm, h.id, key, owner, e.clock.Now().Add(time.Minute)))
	wantErr(t, e.store.TakeClaim(e.ctx, h.firm, h.id, key, "another-worker", e.clock.Now().Add(time.Minute)),
		warrant.ErrLeaseHeld, "a second taker, without the run's lease")
	if claim, err = e.store.GetEffect(e.ctx, h.firm, h.id, key); err != nil || claim.Owner != owner || !claim.Taken() {
		t.Errorf("taken claim = %+v, %v", claim, err)
	}
	last, err := e.store.LastLine(e.ctx, h.firm, h.id)
	must(t, err)
	if string(last.Raw) != string(l.Raw) {
		t.Error("run.released line not stored")
	}

	// The warrant is burnt: resuming, releasing or deciding again changes
	// nothing.
	before = e.partition(h.firm, h.id)
	c2, l2 := e.resume(h, warrant.DecisionApproved)
	wantErr(t, e.store.ResumeClaim(e.ctx, c2, l2), warrant.ErrWarrantConsumed, "second resume")
	_, err = e.store.GetReleaseAuthorizedRequest(e.ctx, h.approval, h.firm, h.id, h.matter)
	wantErr(t, err, warrant.ErrWarrantConsumed, "release after consume")
	_, err = e.decide(h, warrant.DecisionDenied)
	wantErr(t, err, warrant.ErrWarrantNotPending, "decision after consume")
	e.unchanged(before, h.firm, h.id, "resume/decide after consume")
}

// noGSIKeys checks the warrant item has no GSI1 keys.
func (e *env) noGSIKeys(h *held) {
	e.t.Helper()
	out, err := e.ep.Client.GetItem(e.ctx, &dynamodb.GetItemInput{
		TableName: aws.String(e.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			dynamo.AttrPK: &types.AttributeValueMemberS{Value: "FIRM#" + h.firm + "#RUN#" + h.id},
			dynamo.AttrSK: &types.AttributeValueMemberS{Value: "APR#" + h.approval},
		},
	})
	must(e.t, err)
	if _, ok := out.Item[dynamo.AttrGSI1PK]; ok {
		e.t.Error("decided warrant still has GSI1PK")
	}
	if _, ok := out.Item[dynamo.AttrGSI1SK]; ok {
		e.t.Error("decided warrant still has GSI1SK")
	}
}

func testWarrantDeniedResumeOnce(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	h := e.newHeld(id())
	_, err := e.decide(h, warrant.DecisionDenied)
	must(t, err)

	// Resuming with the wrong decision is refused and writes nothing.
	before := e.partition(h.firm, h.id)
	ca, la := e.resume(h, warrant.DecisionApproved)
	wantErr(t, e.store.ResumeClaim(e.ctx, ca, la), warrant.ErrWarrantNotDecided, "approved resume of a denied warrant")
	e.unchanged(before, h.firm, h.id, "approved resume of a denied warrant")

	// A declined warrant releases the run once, claiming its call as
	// declined: no effect_ref, no owner, and nothing can claim it again.
	c, l := e.resume(h, warrant.DecisionDenied)
	must(t, e.store.ResumeClaim(e.ctx, c, l))
	h.chain.Advance(l)
	r, err := e.store.GetRun(e.ctx, h.firm, h.id)
	must(t, err)
	if r.Status != warrant.RunRunning {
		t.Errorf("run after declined resume: %s", r.Status)
	}
	declined, err := e.store.GetEffect(e.ctx, h.firm, h.id, warrant.EffectKey{ToolName: h.tool.name, InputSHA256: h.tool.hash})
	must(t, err)
	if declined.State != warrant.ClaimDeclined || declined.EffectRef != "" || declined.Owner != "" || declined.ApprovalID != h.approval {
		t.Errorf("claim of a declined warrant: %+v", declined)
	}
	if claimed, _, err := e.store.ClaimToolEffectOnce(e.ctx, warrant.ClaimInput{FirmID: h.firm, RunID: h.id, ToolName: h.tool.name,
		InputSHA256: h.tool.hash, EffectRef: id(), Owner: "another", LeaseUntil: e.clock.Now().Add(time.Minute)}); err != nil || claimed {
		t.Errorf("a declined call was claimed again: %v %v", claimed, err)
	}
	w, err := e.store.GetWarrant(e.ctx, h.firm, h.id, h.approval)
	must(t, err)
	if w.Status != warrant.WarrantConsumed || w.Decision != "denied" {
		t.Errorf("declined warrant after resume: %s / %s", w.Status, w.Decision)
	}

	before = e.partition(h.firm, h.id)
	c2, l2 := e.resume(h, warrant.DecisionDenied)
	wantErr(t, e.store.ResumeClaim(e.ctx, c2, l2), warrant.ErrWarrantConsumed, "second declined resume")
	e.unchanged(before, h.firm, h.id, "second declined resume")
}

func testWarrantRefusals(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	h := e.newHeld(id())
	before := e.partition(h.firm, h.id)

	// Resume of a pending warrant.
	c, l := e.resume(h, warrant.DecisionApproved)
	wantErr(t, e.store.ResumeClaim(e.ctx, c, l), warrant.ErrWarrantNotDecided, "resume of a pending warrant")

	// Counsel was shown another input.
	other := newToolCall(t, h.tool.name)
	dl := e.next(h.run, &contracts.ApprovalDecided{ApprovalRequestID: h.approval, Decision: "approved",
		DecidedBy: "counsel-1", ToolInputHash: other.hash})
	_, err := e.store.DecideWarrant(e.ctx, h.firm, h.id, h.approval,
		warrant.CounselDecision{Decision: "approved", PresentedHash: other.hash, DecidedBy: "counsel-1"}, dl)
	wantErr(t, err, warrant.ErrHashMismatch, "decision on another hash")

	// Unknown approval.
	unknown := id()
	ul := e.next(h.run, &contracts.ApprovalDecided{ApprovalRequestID: unknown, Decision: "approved",
		DecidedBy: "counsel-1", ToolInputHash: h.tool.hash})
	_, err = e.store.DecideWarrant(e.ctx, h.firm, h.id, unknown,
		warrant.CounselDecision{Decision: "approved", PresentedHash: h.tool.hash, DecidedBy: "counsel-1"}, ul)
	wantErr(t, err, warrant.ErrNotFound, "decision on an unknown approval")
	e.unchanged(before, h.firm, h.id, "refused resume and decisions")

	// A warrant request whose input does not hash to its hash.
	r2 := e.newRun(id())
	bad := warrant.Warrant{FirmID: r2.firm, RunID: r2.id, ApprovalID: id(), MatterID: r2.matter,
		ToolName: h.tool.name, ToolInputHash: h.tool.hash, Input: other.input}
	before2 := e.partition(r2.firm, r2.id)
	wantErr(t, e.store.CreateWarrantRequest(e.ctx, bad), warrant.ErrHashMismatch, "warrant input/hash mismatch")
	e.unchanged(before2, r2.firm, r2.id, "warrant input/hash mismatch")

	// Double decision.
	_, err = e.decide(h, warrant.DecisionApproved)
	must(t, err)
	before = e.partition(h.firm, h.id)
	_, err = e.decide(h, warrant.DecisionDenied)
	wantErr(t, err, warrant.ErrWarrantNotPending, "second decision")
	e.unchanged(before, h.firm, h.id, "second decision")

	// Resume claiming another input than the one signed.
	c, l = e.resume(h, warrant.DecisionApproved)
	c.InputSHA256 = other.hash
	wantErr(t, e.store.ResumeClaim(e.ctx, c, l), warrant.ErrHashMismatch, "resume for another input")
	e.unchanged(before, h.firm, h.id, "resume for another input")
}

func testWarrantExpiry(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	pending := e.newHeld(id())
	approved := e.newHeld(pending.firm)
	_, err := e.decide(approved, warrant.DecisionApproved)
	must(t, err)

	e.clock.Advance(warrant.DefaultWarrantTTL + time.Second)

	before := e.partition(pending.firm, pending.id)
	_, err = e.decide(pending, warrant.DecisionApproved)
	wantErr(t, err, warrant.ErrWarrantExpired, "decision after expiry")
	e.unchanged(before, pending.firm, pending.id, "decision after expiry")
	list, err := e.store.ListPendingWarrants(e.ctx, pending.firm, 0)
	must(t, err)
	if len(list) != 0 {
		t.Errorf("expired warrant listed as pending: %v", list)
	}

	before = e.partition(approved.firm, approved.id)
	_, err = e.store.GetReleaseAuthorizedRequest(e.ctx, approved.approval, approved.firm, approved.id, approved.matter)
	wantErr(t, err, warrant.ErrWarrantExpired, "release after expiry")
	c, l := e.resume(approved, warrant.DecisionApproved)
	wantErr(t, e.store.ResumeClaim(e.ctx, c, l), warrant.ErrWarrantExpired, "resume after expiry")
	e.unchanged(before, approved.firm, approved.id, "resume after expiry")
}

// testResumeConditionMapping makes each later item of the resume
// transaction the one that fails, to check the mapping by item index. On
// minidyn only the first failing item has a reason; on moto every item has
// one; both must give the same answer.
func testResumeConditionMapping(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)

	// The effect was already claimed (say an earlier allow-tier call with
	// the same input): ErrEffectClaimed, and the warrant is not burnt.
	h := e.newHeld(id())
	_, err := e.decide(h, warrant.DecisionApproved)
	must(t, err)
	claimed, _, err := e.store.ClaimToolEffectOnce(e.ctx, warrant.ClaimInput{FirmID: h.firm, RunID: h.id,
		ToolName: h.tool.name, InputSHA256: h.tool.hash, EffectRef: id(), Owner: "earlier", LeaseUntil: e.clock.Now().Add(time.Minute)})
	if err != nil || !claimed {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	before := e.partition(h.firm, h.id)
	c, l := e.resume(h, warrant.DecisionApproved)
	wantErr(t, e.store.ResumeClaim(e.ctx, c, l), warrant.ErrEffectClaimed, "resume with the effect claimed")
	e.unchanged(before, h.firm, h.id, "resume with the effect claimed")

	// The run is not held on this warrant: ErrRunNotInState.
	h = e.newHeld(id())
	_, err = e.decide(h, warrant.DecisionApproved)
	must(t, err)
	e.rawUpdate(h, "RUN", "SET #s = :s", "held_on", id())
	before = e.partition(h.firm, h.id)
	c, l = e.resume(h, warrant.DecisionApproved)
	wantErr(t, e.store.ResumeClaim(e.ctx, c, l), warrant.ErrRunNotInState, "resume of a run held on another warrant")
	e.unchanged(before, h.firm, h.id, "resume of a run held on another warrant")

	// The released line's seq is taken: ErrSeqTaken.
	h = e.newHeld(id())
	_, err = e.decide(h, warrant.DecisionApproved)
	must(t, err)
	c, l = e.resume(h, warrant.DecisionApproved)
	must(t, e.store.AppendEvents(e.ctx, h.firm, h.id, e.line(h.run, delta("sneaked in"))))
	before = e.partition(h.firm, h.id)
	wantErr(t, e.store.ResumeClaim(e.ctx, c, l), warrant.ErrSeqTaken, "resume with a taken seq")
	e.unchanged(before, h.firm, h.id, "resume with a taken seq")

	// Unknown warrant in a real run: ErrNotFound.
	c, l = e.resume(h, warrant.DecisionApproved)
	c.ApprovalID = id()
	l = e.next(h.run, &contracts.RunReleased{ApprovalRequestID: c.ApprovalID, Decision: "approved", EffectRef: c.EffectRef})
	wantErr(t, e.store.ResumeClaim(e.ctx, c, l), warrant.ErrNotFound, "resume of an unknown warrant")
}

// rawUpdate sets one attribute of an item behind the store's back (test
// setup for states the API never produces on its own).
func (e *env) rawUpdate(h *held, sk, expr, attr, value string) {
	e.t.Helper()
	_, err := e.ep.Client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(e.table),
		Key: map[string]types.AttributeValue{
			dynamo.AttrPK: &types.AttributeValueMemberS{Value: "FIRM#" + h.firm + "#RUN#" + h.id},
			dynamo.AttrSK: &types.AttributeValueMemberS{Value: sk},
		},
		UpdateExpression:          aws.String(expr),
		ExpressionAttributeNames:  map[string]string{"#s": attr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: value}},
	})
	must(e.t, err)
}

func testListPendingWarrants(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm := id()
	a := e.newHeld(firm)
	e.clock.Advance(time.Second)
	b := e.newHeld(firm)
	e.clock.Advance(time.Second)
	c := e.newHeld(firm)
	e.newHeld(id()) // another firm's

	// GSI1 is eventually consistent on DynamoDB; the local endpoints
	// update it synchronously, so the listing is checked directly.
	list, err := e.store.ListPendingWarrants(e.ctx, firm, 0)
	must(t, err)
	if len(list) != 3 || list[0].ApprovalID != a.approval || list[1].ApprovalID != b.approval || list[2].ApprovalID != c.approval {
		t.Fatalf("pending = %v", approvals(list))
	}
	list, err = e.store.ListPendingWarrants(e.ctx, firm, 2)
	must(t, err)
	if len(list) != 2 || list[0].ApprovalID != a.approval {
		t.Errorf("pending(limit 2) = %v", approvals(list))
	}
	_, err = e.decide(b, warrant.DecisionApproved)
	must(t, err)
	list, err = e.store.ListPendingWarrants(e.ctx, firm, 0)
	must(t, err)
	if len(list) != 2 || list[0].ApprovalID != a.approval || list[1].ApprovalID != c.approval {
		t.Errorf("pending after a decision = %v", approvals(list))
	}
}

// testPendingWarrantsPaged: the firm's pending list is read from any
// warrant it listed on (a page's last), as the caller consumes it, and a
// caller that stops consuming stops the reading. The position holds when
// the warrant it names was decided meanwhile (it left the index), and two
// warrants requested in the same instant are neither skipped nor repeated.
func testPendingWarrantsPaged(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	firm := id()
	var held []*held
	for i := range 5 {
		if i != 2 { // the second and third share their request time
			e.clock.Advance(time.Second)
		}
		held = append(held, e.newHeld(firm))
	}
	e.newHeld(id()) // another firm's
	// read takes n warrants and sees whether an n+1st is there, as a
	// page does to know there is more.
	read := func(after *warrant.Warrant, n int) []warrant.Warrant {
		t.Helper()
		var out []warrant.Warrant
		for w, err := range e.store.FirmPendingWarrants(e.ctx, firm, after, n+1) {
			must(t, err)
			if len(out) == n {
				break
			}
			out = append(out, w)
		}
		return out
	}
	all := read(nil, 100)
	if len(all) != 5 {
		t.Fatalf("pending = %v, want the firm's 5", approvals(all))
	}
	// Paged by two: every warrant once, in the order of the whole list.
	var paged []warrant.Warrant
	var after *warrant.Warrant
	for range 4 {
		page := read(after, 2)
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
		after = &page[len(page)-1]
	}
	if !slices.Equal(approvals(paged), approvals(all)) {
		t.Fatalf("paged by two = %v, want %v", approvals(paged), approvals(all))
	}
	// The page ended on all[1]; it is decided (it leaves the index) and so
	// is all[2]: the next page starts at all[3].
	for _, h := range held {
		if h.approval == all[1].ApprovalID || h.approval == all[2].ApprovalID {
			_, err := e.decide(h, warrant.DecisionApproved)
			must(t, err)
		}
	}
	if got := read(&all[1], 10); !slices.Equal(approvals(got), approvals(all[3:])) {
		t.Errorf("after a decided warrant: %v, want %v", approvals(got), approvals(all[3:]))
	}
	// Stopping after the first warrant (and a look at the second) sends
	// one query.
	ep.Counter.Reset()
	if got := read(nil, 1); len(got) != 1 {
		t.Fatalf("read one: %v", approvals(got))
	}
	if q := ep.Counter.ByOp()["Query"]; q != 1 {
		t.Errorf("one warrant read with %d queries %v, want 1", q, ep.Counter.ByOp())
	}
}

func approvals(ws []warrant.Warrant) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.ApprovalID
	}
	return out
}
