package evidence_test

import (
	"context"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/evidence"
)

// BenchmarkIssueReceipt: what one receipt costs besides the key's own
// signing round trip: RFC 8785 canonical form, SHA-256 and a local P-256
// signature (on AWS, kms:Sign replaces the last with one request).
func BenchmarkIssueReceipt(b *testing.B) {
	k, err := evidence.GenerateP256()
	if err != nil {
		b.Fatal(err)
	}
	r := evidence.Receipt{Schema: evidence.ReceiptSchema, Kind: evidence.KindEffect, FirmID: "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b",
		RunID: "5b0c6a2e-7d4f-4c8e-9a51-0b8f2f3c1d01", Seq: 12, LineSHA256: "2038756a672cac405b3bc71e93cdca9a61d7e9ca763bdaad7e2c1e8a28de6186",
		Outcome: "success", EffectRef: "78833f7d-5073-4e98-8597-614804d58b76", ToolName: "file_court_document",
		InputSHA256: "c32bc8a87814810d55907b175549bb8eb19eb8d6eb87565741e2d1873632b350", Authority: evidence.AuthorityWarrant,
		WarrantID: "c3065ce4-b9e4-4c29-a183-38faef841c70", DecidedBy: "c0c0c0c0-1111-4222-8333-444455556666", DecidedAs: "counsel",
		ApprovedAt: "2026-12-03T20:50:57.916Z", ExecutedAt: "2026-12-03T20:50:57.920Z", RiskTier: "high",
		MatchedPolicy: "tools.file_court_document", PolicyVersion: "2026-12-03.2",
		PolicySHA256:  "75fea2a77c655ac47b0c6eaf4023dd07aeb7b04a4224512a30295ec342c3b067",
		CatalogSHA256: "5baeb12228d0f089b45fc8354aef70f52fc3f790564bd52aa11a5fd46f17f465"}
	ctx := context.Background()
	for b.Loop() {
		if _, err := evidence.Issue(ctx, k, r, "2026-12-03T20:50:57.930Z"); err != nil {
			b.Fatal(err)
		}
	}
}
