package dynamo_test

import (
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"

	"github.com/seed-f6d3920e/warrant"
)

// testRepeatsAreIdempotent: a caller that lost the answer to a write and
// sends the very same call again (same lines) gets success and no second
// write, instead of a conflict with itself (DESIGN §10: every handler is
// safe to call again with the same input).
func testRepeatsAreIdempotent(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	r := &run{firm: id(), id: id(), matter: id(), user: id()}
	r.chain = contracts.NewChain(r.id, r.firm)
	first := e.line(r, &contracts.RunStarted{AgentKey: "a", Mode: "invoke", ModelID: "m", PromptVersion: "p",
		SchemaVersion: "1", CostCapUSD: "1.00", MaxTokens: 1, MatterID: r.matter, UserID: r.user, History: []contracts.HistoryMessage{}})
	create := warrant.Run{FirmID: r.firm, RunID: r.id, MatterID: r.matter}
	must(t, e.store.CreateRun(e.ctx, create, first))
	before := e.partition(r.firm, r.id)
	must(t, e.store.CreateRun(e.ctx, create, first))
	e.unchanged(before, r.firm, r.id, "repeated CreateRun")

	h := &held{run: r, approval: id(), tool: newToolCall(t, "file_court_document")}
	h.expires = e.clock.Now().Add(warrant.DefaultWarrantTTL)
	blocked := e.line(r, &contracts.RunBlocked{Approval: contracts.BlockedApproval{ApprovalRequestID: h.approval,
		ToolName: h.tool.name, ToolInput: h.tool.input, ToolInputHash: h.tool.hash, ExpiresAt: contracts.FormatTime(h.expires)}})
	must(t, e.store.CreateWarrantRequest(e.ctx, e.warrant(h), blocked))
	before = e.partition(r.firm, r.id)
	must(t, e.store.CreateWarrantRequest(e.ctx, e.warrant(h), blocked))
	e.unchanged(before, r.firm, r.id, "repeated CreateWarrantRequest")

	d := warrant.CounselDecision{Decision: "approved", PresentedHash: h.tool.hash, DecidedBy: "counsel-1"}
	dl := e.line(r, &contracts.ApprovalDecided{ApprovalRequestID: h.approval, Decision: "approved", DecidedBy: "counsel-1", ToolInputHash: h.tool.hash})
	w1, err := e.store.DecideWarrant(e.ctx, r.firm, r.id, h.approval, d, dl)
	must(t, err)
	before = e.partition(r.firm, r.id)
	w2, err := e.store.DecideWarrant(e.ctx, r.firm, r.id, h.approval, d, dl)
	must(t, err)
	if w2.Status != w1.Status || !w2.DecidedAt.Equal(w1.DecidedAt) {
		t.Errorf("repeated decision returned %+v, first %+v", w2, w1)
	}
	e.unchanged(before, r.firm, r.id, "repeated DecideWarrant")

	c, l := e.resume(h, "approved")
	must(t, e.store.ResumeClaim(e.ctx, c, l))
	h.chain.Advance(l)
	before = e.partition(r.firm, r.id)
	must(t, e.store.ResumeClaim(e.ctx, c, l))
	e.unchanged(before, r.firm, r.id, "repeated ResumeClaim")
	// The same resume by someone else (another effect_ref) is a conflict.
	c2, l2 := e.resume(h, "approved")
	wantErr(t, e.store.ResumeClaim(e.ctx, c2, l2), warrant.ErrWarrantConsumed, "another resume")

	// The claim's own put, repeated, is still ours.
	tc := newToolCall(t, "send_email")
	in := warrant.ClaimInput{FirmID: r.firm, RunID: r.id, ToolName: tc.name, InputSHA256: tc.hash, EffectRef: id(),
		Owner: "o", LeaseUntil: e.clock.Now().Add(time.Minute)}
	req := e.line(r, requested(tc, "allow"))
	for range 2 {
		claimed, existing, err := e.store.ClaimToolEffectOnce(e.ctx, in, req)
		if err != nil || !claimed || existing != nil {
			t.Fatalf("own claim repeated: %v %v %v", claimed, existing, err)
		}
	}

	done := e.line(r, &contracts.RunCompleted{StopReason: "end_turn"})
	must(t, e.store.FinishRun(e.ctx, r.firm, r.id, warrant.RunCompleted, done))
	before = e.partition(r.firm, r.id)
	must(t, e.store.FinishRun(e.ctx, r.firm, r.id, warrant.RunCompleted, done))
	e.unchanged(before, r.firm, r.id, "repeated FinishRun")
}
