package evidence_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
)

// A small firm log, checkpointed, and what its checks refuse.
func TestSegmentAndCheckpoint(t *testing.T) {
	ctx := context.Background()
	k, err := evidence.GenerateP256()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := evidence.NewPublicKey(k.Public())
	keys := evidence.KeySet{}.Add(pub)
	const firm = "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b"
	var lines []string
	h := evidence.Genesis
	for i := int64(1); i <= 3; i++ {
		e := evidence.Entry{Index: i, At: "2026-12-03T10:00:0" + string(rune('0'+i)) + ".000Z", RunID: "5b0c6a2e-7d4f-4c8e-9a51-0b8f2f3c1d01",
			Seq: i * 4, Kind: evidence.KindEffect, ReceiptSHA256: strings.Repeat("ab", 32)}
		lines = append(lines, e.Line())
		h = evidence.Link(h, e.Line())
	}
	signed, err := evidence.SignCheckpoint(ctx, k, evidence.Checkpoint{FirmID: firm, Number: 1, Size: 3, Head: h, CreatedAt: "2026-12-03T10:01:00.000Z"})
	if err != nil {
		t.Fatal(err)
	}
	log := evidence.LogBundle{Schema: evidence.LogSchema, FirmID: firm, Checkpoint: &signed,
		Log: evidence.Segment{From: 1, Prev: evidence.Genesis, Entries: lines}}
	rep, err := evidence.VerifyLog(log, keys, nil)
	if err == nil || !strings.Contains(err.Error(), "deleted or withheld") || rep.LogSize != 3 {
		t.Fatalf("a log whose run has no bundle: %v %+v", err, rep)
	}
	for _, tc := range []struct {
		name, want string
		edit       func(l *evidence.LogBundle)
	}{
		{"an entry dropped", "ends at entry 2", func(l *evidence.LogBundle) { l.Log.Entries = l.Log.Entries[:2] }},
		{"entries swapped", "says it is entry", func(l *evidence.LogBundle) {
			l.Log.Entries[0], l.Log.Entries[1] = l.Log.Entries[1], l.Log.Entries[0]
		}},
		{"an entry not canonical", "not canonical", func(l *evidence.LogBundle) { l.Log.Entries[1] = " " + l.Log.Entries[1] }},
		{"a start that follows nothing", "start is malformed", func(l *evidence.LogBundle) { l.Log.Prev = strings.Repeat("1", 64) }},
		{"another firm's checkpoint", "firm", func(l *evidence.LogBundle) { l.FirmID = "9e8d7c6b-5a49-4b38-8c27-1d0e9f8a7b6c" }},
		{"a checkpoint body edited", "signature does not verify", func(l *evidence.LogBundle) {
			c := *l.Checkpoint
			c.Body = strings.Replace(c.Body, `"size":3`, `"size":2`, 1)
			l.Checkpoint = &c
		}},
		{"no checkpoint", "no checkpoint", func(l *evidence.LogBundle) { l.Checkpoint = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := log
			l.Log.Entries = append([]string(nil), log.Log.Entries...)
			tc.edit(&l)
			if _, err := evidence.VerifyLog(l, keys, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("VerifyLog: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestKeys(t *testing.T) {
	k, err := evidence.GenerateP256()
	if err != nil {
		t.Fatal(err)
	}
	again, err := evidence.ParseP256(k.Spec())
	if err != nil || again.KeyID() != k.KeyID() || !strings.HasPrefix(k.KeyID(), "sha256:") || len(k.KeyID()) != 71 {
		t.Fatalf("round trip: %v %s %s", err, again.KeyID(), k.KeyID())
	}
	pub, _ := evidence.NewPublicKey(k.Public())
	set, err := evidence.ParsePEM([]byte(pub.PEM() + pub.PEM()))
	if err != nil || len(set) != 1 || set[k.KeyID()].ID != k.KeyID() {
		t.Fatalf("ParsePEM: %v %v", err, set.IDs())
	}
	for _, bad := range []string{"", "not pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", pub.PEM() + "trailing"} {
		if _, err := evidence.ParsePEM([]byte(bad)); err == nil {
			t.Errorf("ParsePEM(%q) accepted", bad)
		}
	}
	for _, bad := range []string{"", "p256:", "p256:zz", "hmac:00", "p256:" + strings.Repeat("00", 40)} {
		if _, err := evidence.ParseP256(bad); err == nil || (len(bad) > 6 && strings.Contains(err.Error(), bad[5:])) {
			t.Errorf("ParseP256(%q): %v", bad, err)
		}
	}
}

// legacyFixture is a run started before starts were anchored: its ledger
// (run.started, run.completed), a firm log with another run's entry ten
// minutes before and this run's end receipt (no start receipt), and a
// checkpoint a minute after its end.
type legacyFixture struct {
	keys    evidence.KeySet
	bundle  evidence.Bundle
	started time.Time
}

func newLegacyFixture(t *testing.T) legacyFixture {
	t.Helper()
	ctx := context.Background()
	k, err := evidence.GenerateP256()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := evidence.NewPublicKey(k.Public())
	const firm, run, other = "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b", "5b0c6a2e-7d4f-4c8e-9a51-0b8f2f3c1d01", "6c1d7b3f-8e5a-4d9f-8b62-1c9a3a4d2e02"
	started := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	c := contracts.NewChain(run, firm)
	c.Now = func() time.Time { return started }
	l1, err := c.Append(&contracts.RunStarted{AgentKey: "matter_assistant", Mode: contracts.ModeInvoke, ModelID: "m", PromptVersion: "1",
		SchemaVersion: contracts.SchemaVersion, CostCapUSD: "1.00", MaxTokens: 100, MatterID: "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99",
		UserID: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", History: []contracts.HistoryMessage{}})
	if err != nil {
		t.Fatal(err)
	}
	c.Now = func() time.Time { return started.Add(time.Second) }
	l2, err := c.Append(&contracts.RunCompleted{StopReason: "end_turn", FinalText: "done"})
	if err != nil {
		t.Fatal(err)
	}
	derived, err := evidence.Derive([]contracts.Line{l1, l2})
	if err != nil || len(derived) != 2 || derived[0].Kind != evidence.KindStart || derived[1].Kind != evidence.KindRun {
		t.Fatalf("Derive: %v %+v", err, derived)
	}
	end, err := evidence.Issue(ctx, k, derived[1], contracts.FormatTime(started.Add(2*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	entries := []evidence.Entry{
		{Index: 1, At: contracts.FormatTime(started.Add(-10 * time.Minute)), RunID: other, Seq: 3, Kind: evidence.KindEffect, ReceiptSHA256: strings.Repeat("ab", 32)},
		{Index: 2, At: contracts.FormatTime(started.Add(2 * time.Second)), RunID: run, Seq: 2, Kind: evidence.KindRun, ReceiptSHA256: end.SHA256()},
	}
	var lines []string
	h := evidence.Genesis
	for _, e := range entries {
		lines = append(lines, e.Line())
		h = evidence.Link(h, e.Line())
	}
	cp, err := evidence.SignCheckpoint(ctx, k, evidence.Checkpoint{FirmID: firm, Number: 1, Size: 2, Head: h,
		CreatedAt: contracts.FormatTime(started.Add(time.Minute))})
	if err != nil {
		t.Fatal(err)
	}
	return legacyFixture{keys: evidence.KeySet{}.Add(pub), started: started, bundle: evidence.Bundle{Schema: evidence.BundleSchema, FirmID: firm, RunID: run,
		Ledger: []string{string(l1.Raw), string(l2.Raw)}, Receipts: []evidence.Signed{end}, Checkpoint: &cp,
		Log: evidence.Segment{From: 1, Prev: evidence.Genesis, Entries: lines}, KeyIDs: []string{k.KeyID()}}}
}

// A run started before starts were anchored is refused unless the
// verifier allows it, and then checked the older way (its segment starts
// Skew before the run's first line), the report saying so.
func TestVerifyUnanchoredStart(t *testing.T) {
	f := newLegacyFixture(t)
	if _, err := evidence.Verify(f.bundle, f.keys); err == nil || !strings.Contains(err.Error(), "start is not in the log segment") {
		t.Fatalf("an unanchored run, by default: %v", err)
	}
	rep, err := evidence.VerifyWith(f.bundle, f.keys, evidence.Options{AllowUnanchoredStart: true})
	if err != nil || rep.StartAnchored || !rep.Complete {
		t.Fatalf("an unanchored run, allowed: %v %+v", err, rep)
	}
	// The older rule still holds: a segment that starts after the run did
	// may hide the run's entries.
	late := f.bundle
	late.Log = evidence.Segment{From: 2, Prev: evidence.Link(evidence.Genesis, f.bundle.Log.Entries[0]), Entries: f.bundle.Log.Entries[1:]}
	if _, err := evidence.VerifyWith(late, f.keys, evidence.Options{AllowUnanchoredStart: true}); err == nil || !strings.Contains(err.Error(), "appended after the run started") {
		t.Fatalf("a segment that starts after the run: %v", err)
	}
}

// A verifier's clock refuses a ledger dated in its future (an insider who
// moved a run's end past every checkpoint to keep it "pending").
func TestVerifyClock(t *testing.T) {
	f := newLegacyFixture(t)
	opts := evidence.Options{AllowUnanchoredStart: true, Now: f.started.Add(time.Hour)}
	if _, err := evidence.VerifyWith(f.bundle, f.keys, opts); err != nil {
		t.Fatalf("with the clock an hour on: %v", err)
	}
	opts.Now = f.started.Add(-time.Hour)
	if _, err := evidence.VerifyWith(f.bundle, f.keys, opts); err == nil || !strings.Contains(err.Error(), "after this verifier's clock") {
		t.Fatalf("a ledger dated after the clock: %v", err)
	}
}
