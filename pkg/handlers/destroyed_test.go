package handlers_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// destroy destroys a finished run's content as the store's DestroyContent
// does it (the sweeper's retention pass and the destroy API build the same
// line): the line extends the run's ledger, folded without its key.
func (s *stack) destroy(t *testing.T, runID string) contracts.ContentDestroyed {
	t.Helper()
	ctx := context.Background()
	folded, err := reducer.Fold(ctx, s.store, fixFirm, runID, reducer.FoldOptions{Keys: s.keys})
	if err != nil {
		t.Fatal(err)
	}
	chain := contracts.ChainAfter(folded.Last)
	chain.Now = s.clock.Now
	ev := contracts.ContentDestroyed{MatterID: folded.State.MatterID, Reason: "retention", RetentionDays: 30, RetentionSource: "firm",
		BackupsUntil: contracts.FormatTime(s.clock.Now().Add(warrant.BackupWindow + time.Second))}
	line, err := chain.Next(&ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.store.DestroyContent(ctx, fixFirm, runID, line); err != nil {
		t.Fatal(err)
	}
	return ev
}

// Issue 26, item 7: after its content is destroyed a run is shown with its
// state, cost and decisions and says when and why its content went; its
// final text is not shown (it no longer opens anywhere), GET
// ?consistent=true still verifies the ledger against its signed head, and
// the events, opened or not, are the lines as stored.
func TestDestroyedRunIsShownDestroyed(t *testing.T) {
	s := newStack(t, stackOptions{})
	done := s.completeRun(t)
	before := decode[handlers.RunView](t, s.call(fixture(t, "get-run.json").runPath(done.runID, "").query(map[string]string{"consistent": "true"})))
	if before.FinalText == "" || before.ContentDestroyed != nil {
		t.Fatalf("before: %+v", before)
	}
	ev := s.destroy(t, done.runID)
	s.settle(done.runID) // stream-reduce projects the line, without the key
	for _, q := range []map[string]string{nil, {"consistent": "true"}} {
		resp := s.call(fixture(t, "get-run.json").runPath(done.runID, "").query(q))
		if resp.StatusCode != 200 {
			t.Fatalf("GET %v: %d %s", q, resp.StatusCode, resp.Body)
		}
		v := decode[handlers.RunView](t, resp)
		if v.ContentDestroyed == nil || v.ContentDestroyed.Reason != "retention" || v.ContentDestroyed.BackupsUntil != ev.BackupsUntil || (q != nil) != (v.Ledger != nil) {
			t.Fatalf("view after destruction %v: %+v", q, v)
		}
		if v.FinalText != "" || v.Status != before.Status || v.CostUSD != before.CostUSD {
			t.Fatalf("view after destruction %v: %+v, before %+v", q, v, before)
		}
	}
	for _, open := range []string{"false", "true"} {
		resp := s.call(getRoute(t, "GET /v1/runs/{run_id}/events", "/v1/runs/"+done.runID+"/events", map[string]string{"run_id": done.runID}, map[string]string{"open": open}))
		if resp.StatusCode != 200 || strings.Contains(resp.Body, `"opened":true`) || !strings.Contains(resp.Body, `"type":"content.destroyed"`) {
			t.Fatalf("events open=%s: %d %.300s", open, resp.StatusCode, resp.Body)
		}
	}
}

// Issue 26, items 6 and 7: the destruction of a run's content is a receipt
// in the firm log, like an effect's: stream-reduce signs it from the
// content.destroyed line, and the run's bundle, taken after the sweeper's
// next checkpoint, verifies with the public key alone (pkg/evidence, the
// warrant CLI and docs/EVIDENCE.md's openssl recipe), complete, with the
// destruction's reason and backups_until in its last receipt: the
// certificate a firm hands its client.
func TestDestructionIsAReceipt(t *testing.T) {
	s := newStack(t, stackOptions{})
	h := s.completedFiling(t)
	s.settle(h.runID)
	ev := s.destroy(t, h.runID)
	if rep := s.settle(h.runID); rep.CheckpointErrors != 0 {
		t.Fatalf("sweep: %+v", rep)
	}
	b := s.bundle(h.runID, nil)
	rep, err := evidence.Verify(b, s.trusted())
	if err != nil {
		t.Fatalf("the bundle of a destroyed run does not verify: %v", err)
	}
	last := rep.Receipts[len(rep.Receipts)-1]
	if !rep.Complete || rep.Covered != rep.LastSeq || last.Kind != evidence.KindDestruction || last.Outcome != "retention" ||
		last.BackupsUntil != ev.BackupsUntil || last.MatterID != ev.MatterID || last.RetentionDays != 30 || last.DestroyedAt == "" {
		t.Fatalf("report %+v, last receipt %+v", rep, last)
	}
	needTools(t)
	files := map[string][]byte{"bundle.json": jsonOf(t, b), "key.pem": s.publicKeyPEM(t)}
	if out, ok := runRecipe(t, recipe(t, "check-evidence.sh"), files, "bundle.json", "key.pem"); !ok || !strings.Contains(out, "verified: run "+h.runID) {
		t.Fatalf("the openssl recipe on a destroyed run: %v\n%s", ok, out)
	}
	if out, ok := runCLI(t, buildCLI(t), files, "--public-key", "key.pem", "bundle.json"); !ok || !strings.Contains(out, `"complete": true`) {
		t.Fatalf("warrant evidence verify on a destroyed run: %v\n%s", ok, out)
	}
	// The run's export (as stored, with its signed head) verifies and
	// audits too: `warrant ledger verify` and `ledger audit` on it.
	export := s.post(getRoute(t, "GET /v1/runs/{run_id}/events", "/v1/runs/"+h.runID+"/events", map[string]string{"run_id": h.runID},
		map[string]string{"head": "true"}))
	if export.StatusCode != 200 || !strings.Contains(export.Body, `"type":"content.destroyed"`) {
		t.Fatalf("the export: %d %.300s", export.StatusCode, export.Body)
	}
	dir := writeFiles(t, map[string][]byte{"run.ndjson": []byte(export.Body)})
	for _, sub := range []string{"verify", "audit"} {
		cmd := exec.Command(buildCLI(t), "ledger", sub, "run.ndjson")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("warrant ledger %s on a destroyed run's export: %v\n%s", sub, err, out)
		}
	}
}
