package evidence_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/seed-f6d3920e/warrant/pkg/evidence"
)

var noteCheckpoint = evidence.Checkpoint{FirmID: fxFirm, Number: 3, Size: 42,
	Head: "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9", CreatedAt: "2026-12-03T10:00:00Z"}

// TestCheckpointNoteFormat: the note text is the tlog-checkpoint body, byte
// for byte: origin, decimal size, base64 of the head's 32 bytes, the
// chain-head extension line, each ending in a newline.
func TestCheckpointNoteFormat(t *testing.T) {
	origin := evidence.Origin("", fxFirm)
	if origin != "warrant.example/firm/"+fxFirm {
		t.Fatalf("default origin %q", origin)
	}
	if got := evidence.Origin("evidence.acme.example/warrant", fxFirm); got != "evidence.acme.example/warrant/"+fxFirm {
		t.Fatalf("origin under a prefix %q", got)
	}
	want := "warrant.example/firm/" + fxFirm + "\n42\nChssPU5fYHGCk6S1xtfo+QobLD1OX2BxgpOktcbX6Pk=\nwarrant/chain-head/v1\n"
	if got := string(evidence.FormatCheckpointNote(origin, noteCheckpoint)); got != want {
		t.Fatalf("note text\n%q\nwant\n%q", got, want)
	}
	empty := evidence.Checkpoint{Size: 0, Head: evidence.Genesis}
	if got := string(evidence.FormatCheckpointNote("a.example/log", empty)); got != "a.example/log\n0\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\nwarrant/chain-head/v1\n" {
		t.Fatalf("empty log's note text %q", got)
	}
	for _, bad := range []string{"", "a b", "a+b", "a\tb", "a\nb", "a\u00a0b", "\xff"} {
		if evidence.CheckOrigin(bad) == nil {
			t.Errorf("origin %q accepted", bad)
		}
	}
}

// signNote signs noteCheckpoint under origin with k.
func signNote(t *testing.T, k evidence.Signer, origin string) string {
	t.Helper()
	n, err := evidence.SignCheckpointNote(context.Background(), k, origin, noteCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCheckpointNoteRoundTrip: a note signed with a P-256 key verifies
// under its public key and origin, and answers the size and head signed;
// its one signature line names the origin, and its key hash is the first 4
// bytes of the key id.
func TestCheckpointNoteRoundTrip(t *testing.T) {
	k, _ := newKey(t)
	origin := evidence.Origin("", fxFirm)
	n := signNote(t, k, origin)
	text := string(evidence.FormatCheckpointNote(origin, noteCheckpoint))
	sigLine, ok := strings.CutPrefix(n, text+"\n— "+origin+" ")
	if !ok || strings.Count(sigLine, "\n") != 1 || !strings.HasSuffix(sigLine, "\n") {
		t.Fatalf("note %q", n)
	}
	raw, _ := base64.StdEncoding.DecodeString(strings.TrimSuffix(sigLine, "\n"))
	kh, _ := evidence.NoteKeyHash(k.Public())
	if binary.BigEndian.Uint32(raw[:4]) != kh || !strings.HasPrefix(k.KeyID(), "sha256:"+strings.ToLower(hex8(kh))) {
		t.Fatalf("key hash %x, key %08x, key id %s", raw[:4], kh, k.KeyID())
	}
	got, err := evidence.VerifyCheckpointNote([]byte(n), origin, k.Public())
	if err != nil {
		t.Fatal(err)
	}
	if got.Size != noteCheckpoint.Size || got.Head != noteCheckpoint.Head {
		t.Fatalf("verified %+v", got)
	}
}

func hex8(v uint32) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		b[i] = digits[v&0xf]
		v >>= 4
	}
	return string(b)
}

// TestCheckpointNoteRefusals: each way a note can be wrong is refused,
// with what is wrong named.
func TestCheckpointNoteRefusals(t *testing.T) {
	k, _ := newKey(t)
	other, _ := newKey(t)
	origin := evidence.Origin("", fxFirm)
	good := signNote(t, k, origin)
	text := string(evidence.FormatCheckpointNote(origin, noteCheckpoint))
	sigs := strings.TrimPrefix(good, text+"\n")
	// sigLine is key's signature line over text under name.
	sigLine := func(key *evidence.P256, name, text string) string {
		sum := sha256.Sum256([]byte(text))
		sig, err := key.SignDigest(context.Background(), sum[:])
		if err != nil {
			t.Fatal(err)
		}
		kh, _ := evidence.NoteKeyHash(key.Public())
		blob := append(binary.BigEndian.AppendUint32(nil, kh), sig...)
		return "— " + name + " " + base64.StdEncoding.EncodeToString(blob) + "\n"
	}
	// resign signs an altered text with k, as the log's key would.
	resign := func(text string) string { return text + "\n" + sigLine(k, origin, text) }
	otherSig := sigLine(other, origin, text)
	foreign := sigLine(other, "witness.example/w1", text)
	for _, c := range []struct {
		name, note, want string
		origin           string
		pub              *ecdsa.PublicKey
	}{
		{name: "wrong origin expected", note: good, origin: "warrant.example/firm/someone-else", want: "origin is"},
		{name: "wrong key", note: good, pub: other.Public(), want: "no signature by"},
		{name: "size altered", note: strings.Replace(good, "\n42\n", "\n43\n", 1), want: "does not verify"},
		{name: "root altered", note: strings.Replace(good, "ChssPU5f", "ChssPU5g", 1), want: "does not verify"},
		{name: "size with a leading zero", note: resign(strings.Replace(text, "\n42\n", "\n042\n", 1)), want: "leading zeros"},
		{name: "size negative", note: resign(strings.Replace(text, "\n42\n", "\n-42\n", 1)), want: "not a decimal"},
		{name: "size too large", note: resign(strings.Replace(text, "\n42\n", "\n99999999999999999999\n", 1)), want: "out of range"},
		{name: "root not 32 bytes", note: resign(strings.Replace(text, "ChssPU5fYHGCk6S1xtfo+QobLD1OX2BxgpOktcbX6Pk=", "AAAAAAAA", 1)), want: "base64 of 32 bytes"},
		{name: "no extension line", note: resign(strings.TrimSuffix(text, evidence.ChainHeadExtension+"\n")), want: "extension line"},
		{name: "an extra extension line", note: resign(text + "more\n"), want: "extension line"},
		{name: "the signature altered", note: text + "\n" + strings.Replace(sigs, sigs[len(sigs)-10:len(sigs)-6], "AAAA", 1), want: "does not verify"},
		{name: "only another key's signature", note: text + "\n" + otherSig, want: "no signature by"},
		{name: "only a foreign signature", note: text + "\n" + foreign, want: "it has: witness.example/w1"},
		{name: "trailing garbage", note: good + "garbage\n", want: "not a signature line"},
		{name: "trailing bytes without a newline", note: good + "x", want: "does not end in a newline"},
		{name: "a second blank line", note: good + "\n", want: "no signature lines"},
		{name: "no blank line", note: text + strings.TrimSuffix(sigs, "\n") + "\n", want: "no blank line"},
		{name: "a control character", note: strings.Replace(good, "\n42", "\r\n42", 1), want: "control character"},
		{name: "not UTF-8", note: good[:len(good)-1] + "\xff\n", want: "UTF-8"},
		{name: "a signature line without its dash", note: text + "\n" + strings.TrimPrefix(sigs, "— "), want: "not a signature line"},
		{name: "a signature not base64", note: text + "\n— " + origin + " !!!!\n", want: "not the base64"},
		{name: "a signature too short", note: text + "\n— " + origin + " AAAA\n", want: "not the base64"},
		{name: "too large", note: strings.Repeat("x", evidence.MaxNoteBytes) + good, want: "over"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, pub := origin, k.Public()
			if c.origin != "" {
				o = c.origin
			}
			if c.pub != nil {
				pub = c.pub
			}
			_, err := evidence.VerifyCheckpointNote([]byte(c.note), o, pub)
			if err == nil {
				t.Fatalf("accepted:\n%s", c.note)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("refused with %q, want it to say %q", err, c.want)
			}
		})
	}
	// Signatures by other keys are ignored beside the log's own, in any
	// order (a witness's cosignature, a rotated key's).
	for _, n := range []string{text + "\n" + foreign + sigs, text + "\n" + sigs + otherSig} {
		if _, err := evidence.VerifyCheckpointNote([]byte(n), origin, k.Public()); err != nil {
			t.Fatalf("a note with another signature too: %v", err)
		}
	}
}

// ecdsaVerifier is a golang.org/x/mod/sumdb/note Verifier for signature
// type 0x02, written as transparency-dev/formats' NewECDSAVerifier is (key
// hash: SHA-256 of the DER SubjectPublicKeyInfo; signature: ASN.1 DER ECDSA
// over the SHA-256 of the text).
type ecdsaVerifier struct {
	name string
	hash uint32
	pub  *ecdsa.PublicKey
}

func (v ecdsaVerifier) Name() string    { return v.name }
func (v ecdsaVerifier) KeyHash() uint32 { return v.hash }
func (v ecdsaVerifier) Verify(msg, sig []byte) bool {
	sum := sha256.Sum256(msg)
	return ecdsa.VerifyASN1(v.pub, sum[:], sig)
}

// TestCheckpointNoteXModNote: the Go checksum database's note package (what
// transparency-dev's formats and witness parse checkpoints with) opens a
// note Warrant signed, with an ECDSA verifier: its text is the checkpoint
// and its signature is the log's; a note altered after signing is refused.
func TestCheckpointNoteXModNote(t *testing.T) {
	k, _ := newKey(t)
	origin := evidence.Origin("", fxFirm)
	n := signNote(t, k, origin)
	kh, _ := evidence.NoteKeyHash(k.Public())
	v := ecdsaVerifier{name: origin, hash: kh, pub: k.Public()}
	opened, err := note.Open([]byte(n), note.VerifierList(v))
	if err != nil {
		t.Fatal(err)
	}
	if opened.Text != string(evidence.FormatCheckpointNote(origin, noteCheckpoint)) || len(opened.Sigs) != 1 ||
		opened.Sigs[0].Name != origin || opened.Sigs[0].Hash != kh {
		t.Fatalf("opened %+v", opened)
	}
	// The first three lines are a tlog-checkpoint body as formats'
	// log.Checkpoint.Unmarshal reads it: origin, size, root; the rest is
	// the extension line.
	lines := strings.SplitN(opened.Text, "\n", 4)
	if lines[0] != origin || lines[1] != "42" || lines[3] != evidence.ChainHeadExtension+"\n" {
		t.Fatalf("checkpoint body %q", lines)
	}
	if _, err := note.Open([]byte(strings.Replace(n, "\n42\n", "\n43\n", 1)), note.VerifierList(v)); err == nil {
		t.Fatal("x/mod's note opened an altered note")
	}
	// And the verifier key this package prints is the one formats reads:
	// name+hash+base64(0x02 || SPKI DER).
	vkey, err := evidence.VerifierKey(origin, k.Public())
	if err != nil || !strings.HasPrefix(vkey, origin+"+"+hex8(kh)+"+Aj") {
		t.Fatalf("vkey %q (%v)", vkey, err)
	}
}

// withNote signs b's checkpoint also as a note of origin with k.
func withNote(t *testing.T, k evidence.Signer, b evidence.Bundle, origin string) evidence.Bundle {
	t.Helper()
	b = cloneBundle(t, b)
	var c evidence.Checkpoint
	if err := json.Unmarshal([]byte(b.Checkpoint.Body), &c); err != nil {
		t.Fatal(err)
	}
	var err error
	if b.Checkpoint.Note, err = evidence.SignCheckpointNote(context.Background(), k, origin, c); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBundleCheckpointNote: a bundle whose checkpoint carries its signed
// note verifies and reports the note's origin; one without a note verifies
// as before (NoteOrigin empty); a note altered, of another origin, by
// another key, or signing another size or head than the JSON checkpoint is
// refused, naming the checkpoint note. The firm log document is checked the
// same way.
func TestBundleCheckpointNote(t *testing.T) {
	k, pub := newKey(t)
	other, otherPub := newKey(t)
	keys := evidence.KeySet{}.Add(pub)
	lines := filingLedger(t, true)
	plain := completedBundle(t, k, lines, derive(t, lines))
	origin := evidence.Origin("", fxFirm)

	rep, err := evidence.Verify(plain, keys)
	if err != nil || rep.NoteOrigin != "" {
		t.Fatalf("without a note: %v %q", err, rep.NoteOrigin)
	}
	b := withNote(t, k, plain, origin)
	if rep, err = evidence.Verify(b, keys); err != nil || rep.NoteOrigin != origin || !rep.Complete {
		t.Fatalf("with a note: %v %+v", err, rep)
	}
	custom := withNote(t, k, plain, evidence.Origin("evidence.acme.example/warrant", fxFirm))
	if _, err := evidence.VerifyWith(custom, keys, evidence.Options{OriginPrefix: "evidence.acme.example/warrant"}); err != nil {
		t.Fatalf("a deployment's own origin: %v", err)
	}
	var c evidence.Checkpoint
	if err := json.Unmarshal([]byte(plain.Checkpoint.Body), &c); err != nil {
		t.Fatal(err)
	}
	moved := c
	moved.Size--
	movedNote, err := evidence.SignCheckpointNote(context.Background(), k, origin, moved)
	if err != nil {
		t.Fatal(err)
	}
	tampered := cloneBundle(t, b)
	tampered.Checkpoint.Note = strings.Replace(b.Checkpoint.Note, "\n"+strconv.FormatInt(c.Size, 10)+"\n", "\n"+strconv.FormatInt(c.Size+1, 10)+"\n", 1)
	for _, tc := range []struct {
		name string
		b    evidence.Bundle
		keys evidence.KeySet
		opts evidence.Options
		want string
	}{
		{"the note altered", tampered, keys, evidence.Options{}, "does not verify"},
		{"another origin than the verifier's", custom, keys, evidence.Options{}, "origin is"},
		{"signed by another key", withNote(t, other, plain, origin), evidence.KeySet{}.Add(pub, otherPub), evidence.Options{}, "no signature by"},
		{"another size than the checkpoint", func() evidence.Bundle { x := cloneBundle(t, b); x.Checkpoint.Note = movedNote; return x }(), keys, evidence.Options{}, "the note signs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := evidence.VerifyWith(tc.b, tc.keys, tc.opts)
			var p *evidence.Problem
			if !errors.As(err, &p) || p.Check != "checkpoint note" || !strings.Contains(p.Msg, tc.want) {
				t.Fatalf("want a checkpoint note problem saying %q, got %v", tc.want, err)
			}
			lb := evidence.LogBundle{Schema: evidence.LogSchema, FirmID: fxFirm, Log: tc.b.Log, Checkpoint: tc.b.Checkpoint, KeyIDs: tc.b.KeyIDs}
			if _, err := evidence.VerifyLogWith(lb, tc.keys, []evidence.Bundle{plain}, tc.opts); !errors.As(err, &p) || p.Check != "checkpoint note" {
				t.Fatalf("the firm log: want a checkpoint note problem, got %v", err)
			}
		})
	}
	// A receipt carries no note.
	r := cloneBundle(t, b)
	r.Receipts[0].Note = b.Checkpoint.Note
	if _, err := evidence.Verify(r, keys); err == nil || !strings.Contains(err.Error(), "no note") {
		t.Fatalf("a receipt with a note: %v", err)
	}
}
