package evidence_test

import (
	"context"
	"strings"
	"testing"

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
