package evidence_test

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/seed-f6d3920e/warrant/pkg/evidence"
)

// cosigner is an Ed25519 cosignature/v1 witness key: its signer and vkey.
func cosigner(t *testing.T, name string) (note.Signer, string) {
	t.Helper()
	skey, v1, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := fnote.VKeyToCosignatureV1(v1)
	if err != nil {
		t.Fatal(err)
	}
	return s, vkey
}

// cosign is s's cosignature line over signed note n.
func cosign(t *testing.T, n string, s note.Signer) string {
	t.Helper()
	text, _, _ := strings.Cut(n, "\n\n")
	out, err := note.Sign(&note.Note{Text: text + "\n"}, s)
	if err != nil {
		t.Fatal(err)
	}
	_, sig, _ := strings.Cut(string(out), "\n\n")
	return strings.TrimSuffix(sig, "\n")
}

// Issue 30 item 4: VerifyCosignature accepts a witness's cosignature over
// the note's text, ignores other witnesses' lines, and refuses a line by
// the witness that does not verify, a malformed line, and the absence of
// one; ParseWitnessKey reads cosignature vkeys (and a plain Ed25519 vkey as
// one) and refuses others, the firm's own ECDSA note key among them.
func TestVerifyCosignature(t *testing.T) {
	k, _ := newKey(t)
	origin := evidence.Origin("", fxFirm)
	n1, err := evidence.SignCheckpointNote(context.Background(), k, origin, evidence.Checkpoint{Size: 1, Head: strings.Repeat("ab", 32)})
	if err != nil {
		t.Fatal(err)
	}
	n2, err := evidence.SignCheckpointNote(context.Background(), k, origin, evidence.Checkpoint{Size: 2, Head: strings.Repeat("cd", 32)})
	if err != nil {
		t.Fatal(err)
	}
	s, vkey := cosigner(t, "witness.example/w1")
	other, _ := cosigner(t, "witness.example/w2")
	w, err := evidence.ParseWitnessKey(vkey)
	if err != nil || w.Name != "witness.example/w1" {
		t.Fatalf("%+v %v", w, err)
	}
	line := cosign(t, n1, s)
	if err := evidence.VerifyCosignature(n1, []string{cosign(t, n1, other), line}, w); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		note   string
		cosigs []string
		want   string
	}{
		{"none", n1, nil, "no cosignature by witness witness.example/w1"},
		{"another witness's only", n1, []string{cosign(t, n1, other)}, "no cosignature by witness witness.example/w1"},
		{"over another note", n2, []string{line}, "does not verify"},
		{"malformed", n1, []string{"— witness.example/w1 !!", line}, "not a signature line"},
		{"no note", "", []string{line}, "the checkpoint's note"},
	} {
		if err := evidence.VerifyCosignature(tc.note, tc.cosigs, w); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	_, plain, _ := note.GenerateKey(rand.Reader, "witness.example/w3")
	if _, err := evidence.ParseWitnessKey(plain); err != nil {
		t.Errorf("a plain Ed25519 vkey: %v", err)
	}
	firmVKey, _ := evidence.VerifierKey(origin, k.Public())
	for _, bad := range []string{"", "witness.example/w1", firmVKey, vkey + "x"} {
		if _, err := evidence.ParseWitnessKey(bad); err == nil {
			t.Errorf("ParseWitnessKey(%q) accepted", bad)
		}
	}
	if err := evidence.VerifyCosignature(n1, []string{line}, evidence.WitnessKey{Name: "witness.example/w1"}); err == nil {
		t.Error("a WitnessKey not made by ParseWitnessKey verified")
	}
}

// Options.Witnesses applies to a firm log's checkpoint (VerifyLogWith) as to
// a bundle's: without the witness's cosignature it is refused, check
// "witness"; with it, the log and its run verify.
func TestVerifyLogRequiresWitness(t *testing.T) {
	k, pub := newKey(t)
	keys := evidence.KeySet{}.Add(pub)
	lines := filingLedger(t, true)
	var l firmLog
	for _, r := range derive(t, lines) {
		l.issue(t, k, r)
	}
	b := l.bundle(t, k, lines, 1, lineAt(fxSeqEnd).Add(time.Minute))
	cp, err := evidence.OpenCheckpoint(keys, *b.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if b.Checkpoint.Note, err = evidence.SignCheckpointNote(context.Background(), k, evidence.Origin("", fxFirm), cp); err != nil {
		t.Fatal(err)
	}
	s, vkey := cosigner(t, "witness.example/w1")
	w, _ := evidence.ParseWitnessKey(vkey)
	opts := evidence.Options{Witnesses: []evidence.WitnessKey{w}}
	log := evidence.LogBundle{Schema: evidence.LogSchema, FirmID: fxFirm, Log: b.Log, Checkpoint: b.Checkpoint, KeyIDs: b.KeyIDs}
	if _, err := evidence.VerifyLog(log, keys, []evidence.Bundle{b}); err != nil {
		t.Fatalf("without a witness required: %v", err)
	}
	_, err = evidence.VerifyLogWith(log, keys, []evidence.Bundle{b}, opts)
	var p *evidence.Problem
	if !errors.As(err, &p) || p.Check != "witness" || !strings.Contains(p.Msg, "witness.example/w1") {
		t.Fatalf("an uncosigned log: %v", err)
	}
	b.Checkpoint.Cosignatures = []string{cosign(t, b.Checkpoint.Note, s)}
	if rep, err := evidence.VerifyLogWith(log, keys, []evidence.Bundle{b}, opts); err != nil || len(rep.Runs) != 1 {
		t.Fatalf("a cosigned log: %v %+v", err, rep)
	}
	// A receipt carries no cosignatures.
	b.Receipts[0].Cosignatures = []string{b.Checkpoint.Cosignatures[0]}
	if _, err := evidence.VerifyWith(b, keys, opts); err == nil || !strings.Contains(err.Error(), "a receipt carries no cosignatures") {
		t.Fatalf("a receipt with a cosignature: %v", err)
	}
}
