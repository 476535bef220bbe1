package evidence_test

import (
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
)

// TestVerifyComparesAReceiptsFactsWithTheLedger: an insider who holds a
// trusted key re-issues a completed run's receipts with one fact of the
// filing's changed, logs them and signs a checkpoint. Every signature and
// the log's chain verify; Verify refuses the bundle naming the field, since
// the receipt no longer says what the ledger says. An honest rebuild, the
// same way, verifies.
//
// Checked: with sameFacts skipped in Verify, each subtest but "an honest
// rebuild" fails (Verify answers nil); with it back, all pass. Issue 31
// item 4.
func TestVerifyComparesAReceiptsFactsWithTheLedger(t *testing.T) {
	k, pub := newKey(t)
	keys := evidence.KeySet{}.Add(pub)
	lines := filingLedger(t, true)
	otherHash, err := contracts.InputHash([]byte(`{"matter_id":"` + fxMatter + `","court":"SF Superior","title":"Notice of withdrawal"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, want string
		edit       func(r *evidence.Receipt)
	}{
		{"an honest rebuild", "", func(*evidence.Receipt) {}},
		{"decided_by", "its decided_by is 2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e, the ledger says " + fxCounsel,
			func(r *evidence.Receipt) { r.DecidedBy = "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e" }},
		{"input_sha256", "its input_sha256 is " + otherHash + ", the ledger says",
			func(r *evidence.Receipt) { r.InputSHA256 = otherHash }},
		{"tool_name", "its tool_name is get_matter_summary, the ledger says file_court_document",
			func(r *evidence.Receipt) { r.ToolName = "get_matter_summary" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := derive(t, lines)
			if rs[1].Seq != fxSeqEffect {
				t.Fatalf("receipt 2 covers seq %d", rs[1].Seq)
			}
			tc.edit(&rs[1])
			rep, err := evidence.Verify(completedBundle(t, k, lines, rs), keys)
			if tc.want == "" {
				if err != nil || !rep.Complete {
					t.Fatalf("Verify: %v %+v", err, rep)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "the receipt for seq 8: "+tc.want) {
				t.Fatalf("Verify: %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
}
