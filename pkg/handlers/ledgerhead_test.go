package handlers_test

import (
	"testing"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// Issue 11, item 2: GET /v1/runs/{id}?consistent=true folds the ledger and
// checks it against the run's signed head; the view says so. A ledger a table
// writer rewrote and re-chained is a ledger_corrupt problem there, and
// stream-reduce does not project it.
func TestConsistentViewVerifiesTheLedger(t *testing.T) {
	s := newStack(t, stackOptions{})
	done := s.completeRun(t)
	get := func(run string) *event {
		return fixture(t, "get-run.json").runPath(run, "").query(map[string]string{"consistent": "true"})
	}
	resp := s.call(get(done.runID))
	if resp.StatusCode != 200 {
		t.Fatalf("consistent view: %d %s", resp.StatusCode, resp.Body)
	}
	v := decode[handlers.RunView](t, resp)
	if v.Ledger == nil || !v.Ledger.Verified || v.Ledger.HeadSeq != v.ProjectedThroughSeq || !contracts.IsHash(v.Ledger.HeadHash) || v.Ledger.KeyID == "" {
		t.Fatalf("ledger check in the view: %+v (folded to seq %d)", v.Ledger, v.ProjectedThroughSeq)
	}
	if plain := decode[handlers.RunView](t, s.call(fixture(t, "get-run.json").runPath(done.runID, ""))); plain.Ledger != nil {
		t.Fatalf("the projection view claims a ledger check: %+v", plain.Ledger)
	}

	// The final answer rewritten, every line re-chained, the head moved to
	// the forgery's last line with the MAC it had.
	forged := dynamotest.RechainSealedLedger(t, s.client, s.table, fixFirm, done.runID, s.runKey(t, done.runID), func(e contracts.Event) {
		if c, ok := e.(*contracts.RunCompleted); ok {
			c.FinalText = "The motion was withdrawn."
		}
	})
	last := forged.Lines[len(forged.Lines)-1]
	dynamotest.SetHead(t, s.client, s.table, fixFirm, done.runID, last.Seq, last.Hash)
	if p := s.wantProblem("consistent view of a forged ledger", s.call(get(done.runID)), 500); p.Kind != "ledger_corrupt" {
		t.Fatalf("problem %+v", p)
	}
	recs := s.records(fixFirm, done.runID, 0)
	if got := failedIDs(s.deliver(recs)); len(got) != len(recs) {
		t.Fatalf("stream-reduce projected a forged ledger: failures %v of %d records", got, len(recs))
	}
}

// Issue 17, item 1: a line a table writer appended after the signed head
// (well formed and chained, never signed) is not part of the run. On a held
// run, a forged approval.decided past the head: the consistent view refuses
// the ledger instead of saying verified, the export with its head refuses
// to end past it, and stream-reduce does not project it.
func TestLinesPastTheSignedHeadAreRefused(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.startHeld(t)
	get := fixture(t, "get-run.json").runPath(h.runID, "").query(map[string]string{"consistent": "true"})
	export := fixture(t, "get-run-events.json").runPath(h.runID, "").query(map[string]string{"head": "true"})
	if resp := s.call(export); resp.StatusCode != 200 {
		t.Fatalf("export before the forgery: %d %s", resp.StatusCode, resp.Body)
	}
	s.deliver(s.records(fixFirm, h.runID, 0))
	projected := s.projection(fixFirm, h.runID).LastSeq

	dynamotest.AppendUnsigned(t, s.client, s.table, fixFirm, h.runID,
		&contracts.ApprovalDecided{ApprovalRequestID: h.approvalID, Decision: warrant.DecisionApproved,
			DecidedBy: "c0c0c0c0-1111-4222-8333-444455556666", ToolInputHash: h.hash, RequestedBy: fixUser,
			Separation: contracts.SeparationEnforced, DecidedAs: contracts.RoleCounsel})
	// And after it a line of a type this reducer does not know, where
	// stream-reduce halts: what it folded before the halt is still past
	// the head.
	seq, _, raw := s.nextLine(fixFirm, h.runID, func(m map[string]any) {
		m["type"], m["payload"] = "run.paused", map[string]any{"reason": "a newer writer"}
	})
	raw, _ = sealed(t, raw)
	s.putLine(fixFirm, h.runID, seq, "run.paused", raw)
	if p := s.wantProblem("consistent view past the head", s.call(get), 500); p.Kind != "ledger_corrupt" {
		t.Fatalf("problem %+v", p)
	}
	if p := s.wantProblem("export past the head", s.call(export), 500); p.Kind != "ledger_corrupt" {
		t.Fatalf("problem %+v", p)
	}
	recs := s.records(fixFirm, h.runID, projected)
	if got := failedIDs(s.deliver(recs)); len(got) != len(recs) {
		t.Fatalf("stream-reduce projected past the head: failures %v of %d records", got, len(recs))
	}
	if got := s.projection(fixFirm, h.runID).LastSeq; got != projected {
		t.Fatalf("projection moved to seq %d past the head at %d", got, projected)
	}
}
