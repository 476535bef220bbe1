package evidence

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

// The spec's own vectors, checked against this package's note reader: the
// signed-note example (an Ed25519 key, so its signature is checked here with
// a minimal Ed25519 path the package itself does not have), the
// tlog-checkpoint example's form, and the ECDSA (type 0x02) verifier keys of
// transparency-dev/formats' tests, whose key hash is the SHA-256 of the
// key's DER SubjectPublicKeyInfo.
//
// Sources: C2SP/C2SP signed-note.md ("Example") and tlog-checkpoint.md;
// transparency-dev/formats note/note_verifier_test.go (sigStoreKey,
// pixelKey).

// The signed-note spec's example.
const (
	specVKey = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
	specNote = "This is an example message.\n\n— example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n"
	// The tlog-checkpoint spec's example (its key is not given).
	specCheckpoint = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\n— example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n"
)

// TestSpecEd25519Example: splitNote reads the spec's example note into its
// text and one signature line, whose key hash is the vkey's and is
// SHA-256(name || 0x0A || 0x01 || public key)[:4], and whose signature
// verifies over the text (so the text is cut where the spec says: with its
// final newline, without the blank line).
func TestSpecEd25519Example(t *testing.T) {
	parts := strings.Split(specVKey, "+")
	name, hashHex, b64 := parts[0], parts[1], parts[2]
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) != 1+ed25519.PublicKeySize || key[0] != 0x01 {
		t.Fatalf("vkey: %v %x", err, key)
	}
	pub := ed25519.PublicKey(key[1:])
	h := sha256.Sum256(append([]byte(name+"\n\x01"), pub...))
	if got := fmt.Sprintf("%08x", binary.BigEndian.Uint32(h[:4])); got != hashHex {
		t.Fatalf("key hash %s, vkey says %s", got, hashHex)
	}
	text, sigs, err := splitNote([]byte(specNote))
	if err != nil {
		t.Fatal(err)
	}
	if string(text) != "This is an example message.\n" || len(sigs) != 1 {
		t.Fatalf("text %q, %d signatures", text, len(sigs))
	}
	s := sigs[0]
	if s.name != name || fmt.Sprintf("%08x", s.hash) != hashHex {
		t.Fatalf("signature by %s %08x", s.name, s.hash)
	}
	if !ed25519.Verify(pub, text, s.sig) {
		t.Fatal("the spec's signature does not verify over the text splitNote cut")
	}
}

// TestSpecCheckpointExample: the tlog-checkpoint example splits into a
// three-line text and one signature; VerifyCheckpointNote refuses it for
// Warrant (no chain-head extension line, and no signature by the key).
func TestSpecCheckpointExample(t *testing.T) {
	text, sigs, err := splitNote([]byte(specCheckpoint))
	if err != nil {
		t.Fatal(err)
	}
	if string(text) != "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n" || len(sigs) != 1 || sigs[0].name != "example.com/behind-the-sofa" {
		t.Fatalf("text %q, signatures %+v", text, sigs)
	}
	k, _ := GenerateP256()
	_, err = VerifyCheckpointNote([]byte(specCheckpoint), "example.com/behind-the-sofa", k.Public())
	if err == nil || !strings.Contains(err.Error(), ChainHeadExtension) {
		t.Fatalf("want a refusal naming the extension line, got %v", err)
	}
}

// TestECDSAKeyHashVectors: NoteKeyHash and VerifierKey give the key hashes
// and verifier keys transparency-dev/formats' tests hold for real ECDSA
// P-256 log keys (Sigstore's Rekor and the Pixel transparency log).
func TestECDSAKeyHashVectors(t *testing.T) {
	for _, v := range []struct{ name, hash, material string }{
		{"rekor.sigstore.dev", "c0d23d6a", "AjBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABNhtmPtrWm3U1eQXBogSMdGvXwBcK5AW5i0hrZLOC96l+smGNM7nwZ4QvFK/4sueRoVj//QP22Ni4Qt9DPfkWLc="},
		{"pixel6_transparency_log", "91c16e30", "AjBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABN+4x0Jk1yTwvLFI9A4NDdGZcX0aiWVdWM5XJVy0M4VWD3AvyW5Q6Hs9A0mcDkpUoYgn+KKPNzFC0H3nN3q6JQ8="},
	} {
		raw, err := base64.StdEncoding.DecodeString(v.material)
		if err != nil || raw[0] != NoteSigTypeECDSA {
			t.Fatalf("%s: %v", v.name, err)
		}
		k, err := x509.ParsePKIXPublicKey(raw[1:])
		if err != nil {
			t.Fatal(err)
		}
		pub := k.(*ecdsa.PublicKey)
		kh, err := NoteKeyHash(pub)
		if err != nil || fmt.Sprintf("%08x", kh) != v.hash {
			t.Fatalf("%s: key hash %08x, want %s (%v)", v.name, kh, v.hash, err)
		}
		vkey, err := VerifierKey(v.name, pub)
		if want := v.name + "+" + v.hash + "+" + v.material; err != nil || vkey != want {
			t.Fatalf("%s: vkey %s, want %s (%v)", v.name, vkey, want, err)
		}
		// A KeyIDOf id's first 8 hex digits are the same hash.
		id, _ := KeyIDOf(pub)
		if got, _ := noteKeyHashOf(id); got != kh {
			t.Fatalf("%s: key hash from the key id %08x, want %08x", v.name, got, kh)
		}
	}
}
