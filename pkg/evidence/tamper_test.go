package evidence_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
)

// TestVerifyRefusesTamperedBundles: Verify's receipt-signature and firm-log
// chain checks, each row a tampering of the honest fixture bundle and the
// error it must produce (issue 31 item 8; until now only pkg/handlers' stack
// tests, about 8 minutes, caught these).
//
// Checked (issue 31 item 8), each mutation planted alone, then removed:
//   - KeySet.verify skipping the ECDSA check: "a receipt's body altered",
//     "a receipt re-signed by another key under the trusted key's id", "two
//     receipts' signatures swapped", "a receipt's signature cut short" and
//     "the checkpoint's body altered" fail (three of them then verify);
//   - open dropping keys.verify's error: those and "a receipt signed by an
//     untrusted key", "a checkpoint signed by an untrusted key" fail;
//   - Segment.check not comparing the chain with the checkpoint's head: "a
//     log entry altered", "another run's entry altered" and "the segment's
//     prev altered" fail (the last two then verify);
//   - Segment.check not checking an entry's index: "entries swapped" fails;
//   - Verify accepting a log entry whose receipt the bundle lacks, or a
//     receipt the log does not record: "a receipt dropped", "a receipt the
//     log does not record" fail.
//
// Each passes with the check back.
func TestVerifyRefusesTamperedBundles(t *testing.T) {
	ctx := context.Background()
	k, pub := newKey(t)
	other, _ := newKey(t) // a key the verifier does not trust
	keys := evidence.KeySet{}.Add(pub)
	lines := filingLedger(t, true)
	good := completedBundle(t, k, lines, derive(t, lines))
	// The bundle's receipts: 0 the start, 1 the filing, 2 the run's end.
	// Its segment: 0 the start's entry, 1 another run's, 2 the filing's, 3
	// the end's, 4 another run's.
	receipt := func(b evidence.Bundle, i int) evidence.Receipt {
		var r evidence.Receipt
		if err := json.Unmarshal([]byte(b.Receipts[i].Body), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	entry := func(b *evidence.Bundle, i int, edit func(e *evidence.Entry)) {
		e, err := evidence.ParseEntry(b.Log.Entries[i])
		if err != nil {
			t.Fatal(err)
		}
		edit(&e)
		b.Log.Entries[i] = e.Line()
	}
	for _, tc := range []struct {
		name, want string
		edit       func(b *evidence.Bundle)
	}{
		// The receipts' signatures.
		{"a receipt's body altered", "receipt 2: the signature does not verify", func(b *evidence.Bundle) {
			b.Receipts[1].Body = strings.Replace(b.Receipts[1].Body, `"outcome":"success"`, `"outcome":"error"`, 1)
		}},
		{"a receipt signed by an untrusted key", "receipt 2: signed by key " + other.KeyID() + ", which is not among the keys you trust", func(b *evidence.Bundle) {
			r := receipt(*b, 1)
			s, err := evidence.Issue(ctx, other, r, r.IssuedAt)
			if err != nil {
				t.Fatal(err)
			}
			b.Receipts[1] = s
		}},
		{"a receipt re-signed by another key under the trusted key's id", "receipt 1: the signature does not verify under key " + k.KeyID(), func(b *evidence.Bundle) {
			s, err := evidence.Sign(ctx, other, receipt(*b, 0))
			if err != nil {
				t.Fatal(err)
			}
			b.Receipts[0] = s
		}},
		{"two receipts' signatures swapped", "receipt 2: the signature does not verify", func(b *evidence.Bundle) {
			b.Receipts[1].Signature, b.Receipts[2].Signature = b.Receipts[2].Signature, b.Receipts[1].Signature
		}},
		{"a receipt's signature cut short", "receipt 3: the signature does not verify", func(b *evidence.Bundle) {
			b.Receipts[2].Signature = b.Receipts[2].Signature[:len(b.Receipts[2].Signature)-8]
		}},
		{"a receipt's signature not base64", "receipt 3: the signature is not base64", func(b *evidence.Bundle) {
			b.Receipts[2].Signature = "!" + b.Receipts[2].Signature
		}},
		{"a receipt's body not canonical", "receipt 1: the body is not canonical", func(b *evidence.Bundle) {
			b.Receipts[0].Body = " " + b.Receipts[0].Body
		}},
		// The receipts against the log.
		{"a receipt dropped", "records a receipt for seq 8 (effect) that the bundle does not carry", func(b *evidence.Bundle) {
			b.Receipts = append(b.Receipts[:1], b.Receipts[2:]...)
		}},
		{"a receipt the log does not record", "the receipt for seq 8 (effect) is not in the firm log", func(b *evidence.Bundle) {
			r := receipt(*b, 1)
			s, err := evidence.Issue(ctx, k, r, contracts.FormatTime(lineAt(fxSeqEnd)))
			if err != nil {
				t.Fatal(err)
			}
			b.Receipts = append(b.Receipts, s)
		}},
		// The log's chain to the checkpoint.
		{"a log entry altered", "does not reach checkpoint 1's head", func(b *evidence.Bundle) {
			entry(b, 2, func(e *evidence.Entry) { e.Kind = evidence.KindRun })
		}},
		{"another run's entry altered", "does not reach checkpoint 1's head", func(b *evidence.Bundle) {
			entry(b, 4, func(e *evidence.Entry) { e.ReceiptSHA256 = strings.Repeat("cd", 32) })
		}},
		{"the segment's prev altered", "does not reach checkpoint 1's head", func(b *evidence.Bundle) {
			b.Log.Prev = strings.Repeat("0f", 32)
		}},
		{"a segment from entry 1 that follows something", "the log segment's start is malformed", func(b *evidence.Bundle) {
			b.Log.From = 1
		}},
		{"an entry dropped", "the log segment ends at entry 5, checkpoint 1 covers 6 entries", func(b *evidence.Bundle) {
			b.Log.Entries = append(b.Log.Entries[:1], b.Log.Entries[2:]...)
		}},
		{"entries swapped", "log entry 2 says it is entry 3", func(b *evidence.Bundle) {
			b.Log.Entries[0], b.Log.Entries[1] = b.Log.Entries[1], b.Log.Entries[0]
		}},
		{"an entry dated before the one before it", "log entry 4 goes back in time", func(b *evidence.Bundle) {
			entry(b, 2, func(e *evidence.Entry) { e.At = "2026-12-03T09:00:00.000Z" })
		}},
		{"an entry not canonical", "log entry 3: the entry is not canonical", func(b *evidence.Bundle) {
			b.Log.Entries[1] = " " + b.Log.Entries[1]
		}},
		// The checkpoint's signature.
		{"the checkpoint's body altered", "checkpoint: the signature does not verify", func(b *evidence.Bundle) {
			c := *b.Checkpoint
			c.Body = strings.Replace(c.Body, `"size":6`, `"size":5`, 1)
			b.Checkpoint = &c
		}},
		{"a checkpoint signed by an untrusted key", "checkpoint: signed by key " + other.KeyID() + ", which is not among the keys you trust", func(b *evidence.Bundle) {
			var cp evidence.Checkpoint
			if err := json.Unmarshal([]byte(b.Checkpoint.Body), &cp); err != nil {
				t.Fatal(err)
			}
			s, err := evidence.SignCheckpoint(ctx, other, cp)
			if err != nil {
				t.Fatal(err)
			}
			b.Checkpoint = &s
		}},
		{"no checkpoint", "no checkpoint covers this run yet", func(b *evidence.Bundle) { b.Checkpoint = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := cloneBundle(t, good)
			tc.edit(&b)
			if _, err := evidence.Verify(b, keys); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Verify: %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := evidence.Verify(cloneBundle(t, good), keys); err != nil {
		t.Fatalf("the untampered copy: %v", err)
	}
}
