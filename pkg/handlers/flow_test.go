package handlers_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"
)

// held is a run the invoke fixture left held on its warrant.
type held struct {
	runID, approvalID, hash string
	view                    handlers.RunView
}

// startHeld sends events/invoke.json as it is and expects the demo filing to
// be held on a warrant.
func (s *stack) startHeld(t *testing.T) held {
	t.Helper()
	resp := s.call(fixture(t, "invoke.json"))
	if resp.StatusCode != 200 {
		t.Fatalf("invoke: status %d, want 200: %s", resp.StatusCode, resp.Body)
	}
	v := decode[handlers.RunView](t, resp)
	if v.Status != "held" || v.PendingApproval == nil {
		t.Fatalf("invoke: %+v, want held with a pending approval", v)
	}
	p := v.PendingApproval
	return held{runID: v.RunID, approvalID: p.ApprovalRequestID, hash: p.ToolInputHash, view: v}
}

// approveReq is events/approve.json aimed at h, deciding with hash.
func approveReq(t *testing.T, h held, decision, hash string) *event {
	return fixture(t, "approve.json").runPath(h.runID, h.approvalID).editBody(func(m map[string]any) {
		m["decision"], m["tool_input_hash"] = decision, hash
	})
}

// resumeReq is events/resume.json aimed at h.
func resumeReq(t *testing.T, h held) *event {
	return fixture(t, "resume.json").runPath(h.runID, "").editBody(func(m map[string]any) {
		m["approval_request_id"] = h.approvalID
	})
}

func listApprovals(t *testing.T, s *stack) []handlers.WarrantView {
	t.Helper()
	resp := s.call(fixture(t, "list-approvals.json"))
	if resp.StatusCode != 200 || resp.Headers["Content-Type"] != "application/json" {
		t.Fatalf("list approvals: %d %v: %s", resp.StatusCode, resp.Headers, resp.Body)
	}
	return decode[struct {
		Approvals []handlers.WarrantView `json:"approvals"`
	}](t, resp).Approvals
}

func TestFlow(t *testing.T) {
	s := newStack(t, stackOptions{})
	ctx := context.Background()

	// invoke -> 202 held on a warrant for the court filing.
	h := s.startHeld(t)
	p := h.view.PendingApproval
	if p.ToolName != bedrocktest.ToolFileCourtDocument || p.RiskTier != "high" || p.HumanSummary == "" || p.Reason == "" ||
		!contracts.IsHash(p.ToolInputHash) || p.ExpiresAt == "" || contracts.CheckUUID("", p.ApprovalRequestID) != nil {
		t.Fatalf("pending approval %+v", p)
	}
	if h.view.AgentKey != "matter_assistant" || h.view.MatterID != fixMatter || h.view.ModelID != testModel || h.view.CostCapUSD != s.cfg.DefaultCostCapUSD {
		t.Errorf("held run view %+v", h.view)
	}
	// The fixture's hash is the demo filing's for the fixture matter, so
	// events/approve.json works against a stack that ran events/invoke.json.
	var fixBody struct{ Decision, ToolInputHash string }
	decodeFixtureBody(t, "approve.json", &fixBody)
	if fixBody.ToolInputHash != h.hash {
		t.Errorf("events/approve.json tool_input_hash %s, the demo filing's is %s", fixBody.ToolInputHash, h.hash)
	}

	// The firm's pending warrants list it while it is pending.
	list := listApprovals(t, s)
	if len(list) != 1 || list[0].ApprovalRequestID != h.approvalID || list[0].RunID != h.runID ||
		list[0].ToolInputHash != h.hash || list[0].Status != "pending" {
		t.Fatalf("pending approvals %+v, want the one warrant", list)
	}

	// approve (counsel, with the hash shown) -> 200 warrant view.
	resp := s.call(approveReq(t, h, "approve", h.hash))
	if resp.StatusCode != 200 {
		t.Fatalf("approve: %d %s", resp.StatusCode, resp.Body)
	}
	w := decode[handlers.WarrantView](t, resp)
	if w.ApprovalRequestID != h.approvalID || w.RunID != h.runID || w.Status != "approved" || w.DecidedBy != fixCounsel ||
		w.DecidedAt == "" || w.ToolInputHash != h.hash || w.ToolName != bedrocktest.ToolFileCourtDocument {
		t.Fatalf("approve: warrant view %+v", w)
	}
	if list := listApprovals(t, s); len(list) != 0 {
		t.Fatalf("pending approvals after the decision: %+v", list)
	}

	// resume -> 200 completed, the filing executed once.
	resp = s.call(resumeReq(t, h))
	if resp.StatusCode != 200 {
		t.Fatalf("resume: %d %s", resp.StatusCode, resp.Body)
	}
	done := decode[handlers.RunView](t, resp)
	if done.Status != "completed" || done.FinalText != bedrocktest.DemoFiledText || done.PendingApproval != nil || done.Failure != nil {
		t.Fatalf("resume: %+v", done)
	}
	if c, err := pricing.ParseUSD(done.CostUSD); err != nil || c <= 0 || done.InputTokens <= 0 || done.OutputTokens <= 0 {
		t.Fatalf("resume: cost %q tokens %d/%d", done.CostUSD, done.InputTokens, done.OutputTokens)
	}
	wantOneFiling := func(when string) {
		t.Helper()
		out, err := s.store.ListOutbound(ctx, fixFirm, h.runID)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != 1 || out[0].Kind != "court_filing" {
			t.Fatalf("%s: outbound effects %+v, want one court_filing", when, out)
		}
	}
	wantOneFiling("after resume")

	// A replayed resume is refused and executes nothing.
	before := s.scan()
	resp = s.call(resumeReq(t, h))
	s.wantProblem("replayed resume", resp, 409)
	s.wantUnchanged("replayed resume", before)
	wantOneFiling("after a replayed resume")

	// GET run: the projection may lag (no stream here); consistent=true folds.
	get := fixture(t, "get-run.json").runPath(h.runID, "")
	resp = s.call(get)
	if resp.StatusCode != 200 || decode[handlers.RunView](t, resp).RunID != h.runID {
		t.Fatalf("get run: %d %s", resp.StatusCode, resp.Body)
	}
	resp = s.call(get.query(map[string]string{"consistent": "true"}))
	if resp.StatusCode != 200 {
		t.Fatalf("get run consistent: %d %s", resp.StatusCode, resp.Body)
	}
	cv := decode[handlers.RunView](t, resp)
	if cv.Status != "completed" || cv.FinalText != done.FinalText || cv.CostUSD != done.CostUSD || cv.ProjectedThroughSeq != done.ProjectedThroughSeq {
		t.Fatalf("get run consistent: %+v, want %+v", cv, done)
	}

	// GET events: NDJSON that verifies as a ledger.
	resp = s.call(fixture(t, "get-run-events.json").runPath(h.runID, ""))
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Headers["Content-Type"], "application/x-ndjson") {
		t.Fatalf("get events: %d %v", resp.StatusCode, resp.Headers)
	}
	if _, more := resp.Headers["X-Next-After-Seq"]; more {
		t.Errorf("get events: X-Next-After-Seq on the only page")
	}
	var lines []contracts.Line
	if err := contracts.ReadLedger(strings.NewReader(resp.Body), func(l contracts.Line) error { lines = append(lines, l); return nil }); err != nil {
		t.Fatalf("get events: ledger does not verify: %v", err)
	}
	items, _, err := s.store.ReadLedger(ctx, fixFirm, h.runID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != len(items) || int64(len(lines)) != done.ProjectedThroughSeq || lines[0].Seq != 1 ||
		lines[len(lines)-1].Type != contracts.TypeRunCompleted {
		t.Fatalf("get events: %d lines, ledger has %d, view through seq %d", len(lines), len(items), done.ProjectedThroughSeq)
	}
	for i, l := range lines {
		if !bytes.Equal(l.Raw, items[i].Raw) {
			t.Fatalf("get events: line %d is not the stored bytes", i+1)
		}
	}
	// A page: after_seq and limit, with the next cursor.
	resp = s.call(fixture(t, "get-run-events.json").runPath(h.runID, "").query(map[string]string{"after_seq": "2", "limit": "3"}))
	if resp.StatusCode != 200 || strings.Count(resp.Body, "\n") != 3 || resp.Headers["X-Next-After-Seq"] != "5" {
		t.Fatalf("get events page: %d %v %q", resp.StatusCode, resp.Headers, resp.Body)
	}
}

// TestFlowDeny: a declined warrant resumes too, and nothing is filed.
func TestFlowDeny(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.startHeld(t)
	resp := s.call(approveReq(t, h, "deny", h.hash))
	if resp.StatusCode != 200 || decode[handlers.WarrantView](t, resp).Status != "denied" {
		t.Fatalf("deny: %d %s", resp.StatusCode, resp.Body)
	}
	resp = s.call(resumeReq(t, h))
	if resp.StatusCode != 200 {
		t.Fatalf("resume: %d %s", resp.StatusCode, resp.Body)
	}
	if v := decode[handlers.RunView](t, resp); v.Status != "completed" || v.FinalText != bedrocktest.DemoDeclinedText {
		t.Fatalf("resume after deny: %+v", v)
	}
	out, err := s.store.ListOutbound(context.Background(), fixFirm, h.runID)
	if err != nil || len(out) != 0 {
		t.Fatalf("outbound after deny: %+v %v", out, err)
	}
}

// TestFixtureRunID: with the invoke handler minting the fixture's run id,
// the fixtures' own path parameters address the run: events/get-run.json
// as it is finds the run events/invoke.json started.
func TestFixtureRunID(t *testing.T) {
	s := newStack(t, stackOptions{newID: func() string { return fixRun }})
	h := s.startHeld(t)
	if h.runID != fixRun {
		t.Fatalf("run id %s", h.runID)
	}
	resp := s.call(fixture(t, "get-run.json"))
	if resp.StatusCode != 200 || decode[handlers.RunView](t, resp).RunID != fixRun {
		t.Fatalf("get-run.json: %d %s", resp.StatusCode, resp.Body)
	}
	resp = s.call(fixture(t, "get-run-events.json"))
	if resp.StatusCode != 200 || contracts.ReadLedger(strings.NewReader(resp.Body), func(contracts.Line) error { return nil }) != nil {
		t.Fatalf("get-run-events.json: %d %s", resp.StatusCode, resp.Body)
	}
	// events/approve.json names a warrant id the brain did not mint: 404.
	before := s.scan()
	s.wantProblem("approve.json as is", s.call(fixture(t, "approve.json")), 404)
	s.wantUnchanged("approve.json as is", before)
}

// TestDisplayNames: the requester's and the decider's names come from their
// tokens' name (else email) claims, are recorded in run.started and
// approval.decided and shown on the warrant; a name with an invisible
// character is dropped, never shown, and authorizes nothing either way.
func TestDisplayNames(t *testing.T) {
	s := newStack(t, stackOptions{})
	resp := s.call(fixture(t, "invoke.json").claim("name", "Avery Associate"))
	v := decode[handlers.RunView](t, resp)
	if v.Status != "held" || v.PendingApproval == nil || v.PendingApproval.RequestedByName != "Avery Associate" {
		t.Fatalf("held run: %+v", v.PendingApproval)
	}
	h := held{runID: v.RunID, approvalID: v.PendingApproval.ApprovalRequestID, hash: v.PendingApproval.ToolInputHash}
	list := listApprovals(t, s)
	if len(list) != 1 || list[0].RequestedByName != "Avery Associate" {
		t.Fatalf("pending list: %+v", list)
	}
	resp = s.call(approveReq(t, h, "approve", h.hash).claim("email", "casey.counsel@firm.example"))
	w := decode[handlers.WarrantView](t, resp)
	if resp.StatusCode != 200 || w.DecidedByName != "casey.counsel@firm.example" || w.RequestedByName != "Avery Associate" {
		t.Fatalf("decided warrant: %d %+v", resp.StatusCode, w)
	}
	var started, decided bool
	for _, l := range s.ledgerLines(h.runID) {
		switch e := l.Event.(type) {
		case *contracts.RunStarted:
			started = e.UserName == "Avery Associate"
		case *contracts.ApprovalDecided:
			decided = e.DecidedByName == "casey.counsel@firm.example"
		}
	}
	if !started || !decided {
		t.Fatalf("ledger: run.started name %v, approval.decided name %v", started, decided)
	}
	// A name with a right-to-left override is no name.
	resp = s.call(fixture(t, "invoke.json").claim("name", "Avery \u202eetaicossA"))
	if v := decode[handlers.RunView](t, resp); v.PendingApproval == nil || v.PendingApproval.RequestedByName != "" {
		t.Fatalf("an invisible character in the name: %+v", v.PendingApproval)
	}
}
