package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
)

// noteBundle is the run of ledger(t) as its evidence bundle: its receipts
// signed with k, a firm log of just them, and checkpoint 1 over it, signed
// (and, with origin, also signed as a note of that origin).
func noteBundle(t *testing.T, k *evidence.P256, origin string) evidence.Bundle {
	t.Helper()
	return noteBundleAt(t, k, origin, time.Date(2026, 12, 2, 10, 0, 1, 0, time.UTC))
}

// noteBundleAt is noteBundle with its receipts issued and logged at at.
func noteBundleAt(t *testing.T, k *evidence.P256, origin string, issued time.Time) evidence.Bundle {
	t.Helper()
	ctx := context.Background()
	raws := ledger(t)
	lines := make([]contracts.Line, len(raws))
	ledgerOut := make([]string, len(raws))
	for i, r := range raws {
		l, err := contracts.ParseEventLine(r)
		if err != nil {
			t.Fatal(err)
		}
		lines[i], ledgerOut[i] = l, string(r)
	}
	derived, err := evidence.Derive(lines)
	if err != nil {
		t.Fatal(err)
	}
	at := contracts.FormatTime(issued)
	seg := evidence.Segment{From: 1, Prev: evidence.Genesis, Entries: []string{}}
	head := evidence.Genesis
	var receipts []evidence.Signed
	for i, r := range derived {
		s, err := evidence.Issue(ctx, k, r, at)
		if err != nil {
			t.Fatal(err)
		}
		e := evidence.Entry{Index: int64(i + 1), At: at, RunID: runID, Seq: r.Seq, Kind: r.Kind, ReceiptSHA256: s.SHA256()}
		seg.Entries = append(seg.Entries, e.Line())
		head = evidence.Link(head, e.Line())
		receipts = append(receipts, s)
	}
	cp := evidence.Checkpoint{FirmID: firmID, Number: 1, Size: int64(len(derived)), Head: head,
		CreatedAt: contracts.FormatTime(time.Date(2026, 12, 2, 10, 1, 0, 0, time.UTC))}
	signed, err := evidence.SignCheckpoint(ctx, k, cp)
	if err != nil {
		t.Fatal(err)
	}
	if origin != "" {
		if signed.Note, err = evidence.SignCheckpointNote(ctx, k, origin, cp); err != nil {
			t.Fatal(err)
		}
	}
	return evidence.Bundle{Schema: evidence.BundleSchema, FirmID: firmID, RunID: runID, Ledger: ledgerOut, Receipts: receipts,
		Log: seg, Checkpoint: &signed, KeyIDs: []string{k.KeyID()}}
}

// Issue 30 item 1: `warrant evidence verify` checks a bundle's checkpoint
// note when there is one and says so (origin and vkey); a bundle without a
// note verifies as before; a note that does not verify, or is of another
// origin than --origin-prefix makes, is refused naming the checkpoint note.
func TestEvidenceVerifyCheckpointNote(t *testing.T) {
	k, keyFile := firmKey(t)
	origin := evidence.Origin("", firmID)
	file := func(b evidence.Bundle) string {
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		return writeTemp(t, "bundle.json", raw)
	}
	withNote := noteBundle(t, k, origin)
	vkey, _ := evidence.VerifierKey(origin, k.Public())

	got := runCLI("", "evidence", "verify", "--public-key", keyFile, file(withNote))
	check(t, got, 0, `"checkpoint_note": {
        "verified": true,
        "origin": "`+origin+`",
        "vkey": "`+vkey+`"
      }`, "")

	got = runCLI("", "evidence", "verify", "--public-key", keyFile, file(noteBundle(t, k, "")))
	check(t, got, 0, `"complete": true`, "")
	if strings.Contains(got.stdout, "checkpoint_note") {
		t.Fatalf("a bundle without a note reports one: %s", got.stdout)
	}

	tampered := noteBundle(t, k, origin)
	tampered.Checkpoint.Note = strings.Replace(tampered.Checkpoint.Note, "\n3\n", "\n4\n", 1)
	if tampered.Checkpoint.Note == withNote.Checkpoint.Note {
		t.Fatal("the note was not tampered with")
	}
	got = runCLI("", "evidence", "verify", "--public-key", keyFile, file(tampered))
	check(t, got, 1, "", "checkpoint note: checkpoint 1's signed note: the note's signature by "+origin)

	custom := noteBundle(t, k, evidence.Origin("evidence.acme.example/warrant", firmID))
	check(t, runCLI("", "evidence", "verify", "--public-key", keyFile, file(custom)), 1, "", "the note's origin is")
	check(t, runCLI("", "evidence", "verify", "--public-key", keyFile, "--origin-prefix", "evidence.acme.example/warrant", file(custom)),
		0, `"origin": "evidence.acme.example/warrant/`+firmID+`"`, "")
	check(t, runCLI("", "evidence", "verify", "--public-key", keyFile, "--origin-prefix", "a b", file(custom)), 2, "", "--origin-prefix")

	// A held checkpoint (--checkpoint) with a bad note is refused too.
	held, _ := json.Marshal(tampered.Checkpoint)
	check(t, runCLI("", "evidence", "verify", "--public-key", keyFile, "--checkpoint", writeTemp(t, "cp.json", held), file(withNote)),
		1, "", "signed note")
}

// Issue 30 item 2: a fork shown to two verifiers. The firm's key signs two
// histories of one log (the same run's receipts, logged at different
// times), and shows each to one verifier, who keeps its checkpoint. Each
// bundle verifies alone; given the other's with --since the checkpoint it
// kept, each verifier refuses it as a fork naming both checkpoints.
func TestEvidenceVerifySinceFork(t *testing.T) {
	k, keyFile := firmKey(t)
	origin := evidence.Origin("", firmID)
	a := noteBundleAt(t, k, origin, time.Date(2026, 12, 2, 10, 0, 1, 0, time.UTC))
	b := noteBundleAt(t, k, origin, time.Date(2026, 12, 2, 10, 0, 2, 0, time.UTC))
	file := func(name string, v any) string {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return writeTemp(t, name, raw)
	}
	fileA, fileB := file("a.json", a), file("b.json", b)
	heldA, heldB := file("held-a.json", a.Checkpoint), file("held-b.json", b.Checkpoint)
	for _, c := range []struct{ held, doc string }{{heldA, fileA}, {heldB, fileB}} {
		check(t, runCLI("", "evidence", "verify", "--public-key", keyFile, "--since", c.held, c.doc), 0, `"extends": {
        "checkpoint": 1,
        "linked": false
      }`, "")
	}
	for _, c := range []struct {
		held, doc string
		mine, its evidence.Bundle
	}{{heldA, fileB, a, b}, {heldB, fileA, b, a}} {
		got := runCLI("", "evidence", "verify", "--public-key", keyFile, "--since", c.held, c.doc)
		check(t, got, 1, "", "fork: checkpoint 1 (")
		for _, cp := range []*evidence.Signed{c.mine.Checkpoint, c.its.Checkpoint} {
			if !strings.Contains(got.stderr, "sha256 "+cp.SHA256()) {
				t.Errorf("the refusal does not name checkpoint %s: %s", cp.SHA256(), got.stderr)
			}
		}
	}
	// What --since reads: a checkpoint, or a document carrying one; a held
	// checkpoint another key signed is refused, naming the flag.
	other, _ := evidence.GenerateP256()
	forged := noteBundleAt(t, other, origin, time.Date(2026, 12, 2, 10, 0, 1, 0, time.UTC))
	check(t, runCLI("", "evidence", "verify", "--public-key", keyFile, "--since", file("forged.json", forged.Checkpoint), fileA), 1, "", "--since")
	check(t, runCLI("", "evidence", "verify", "--public-key", keyFile, "--since", fileA, fileA), 0, `"extends"`, "")
}

// firmKey is a fresh firm receipt key and the file of its public half, as
// --public-key takes it.
func firmKey(t *testing.T) (*evidence.P256, string) {
	t.Helper()
	k, err := evidence.GenerateP256()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := evidence.NewPublicKey(k.Public())
	return k, writeTemp(t, "key.pem", []byte(pub.PEM()))
}
