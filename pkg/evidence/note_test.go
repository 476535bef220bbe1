package evidence_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
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
