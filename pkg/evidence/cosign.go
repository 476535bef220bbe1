package evidence

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// A witness (c2sp.org/tlog-witness; Warrant's is pkg/witness) keeps the
// last checkpoint of a firm log it cosigned and cosigns a new one only if it
// extends that one. Its cosignature is a signed-note signature line over the
// checkpoint's note text (c2sp.org/tlog-cosignature, "cosignature/v1",
// Ed25519, signature type 0x04 in its vkey), kept in Signed.Cosignatures.
// A verifier that requires a witness (Options.Witnesses) refuses a
// checkpoint without a valid cosignature by it: a history the firm's own key
// re-signed after the witness saw another one has none.

// WitnessKey is a witness a verifier requires: its name and its
// cosignature verifier key.
type WitnessKey struct {
	// Name is the witness's key name, VKey its verifier key as given.
	Name, VKey string
	v          note.Verifier
}

// ParseWitnessKey reads a witness's verifier key: a signed-note vkey
// <name>+<hex key id>+<base64 of 0x04 and the 32-byte Ed25519 key> (or 0x01,
// read as the same key's cosignature/v1 form, or 0x06 for ML-DSA-44), as
// transparency-dev/formats' NewVerifierForCosignatureV1 reads it.
func ParseWitnessKey(vkey string) (WitnessKey, error) {
	vkey = strings.TrimSpace(vkey)
	v, err := fnote.NewVerifierForCosignatureV1(vkey)
	if err != nil {
		return WitnessKey{}, fmt.Errorf("evidence: %q is not a witness's cosignature verifier key: %v", vkey, err)
	}
	return WitnessKey{Name: v.Name(), VKey: vkey, v: v}, nil
}

// VerifyCosignature checks that one of cosigs (signature lines, "— <name>
// <base64>") is w's valid cosignature over note's text (the note's lines up
// to the blank line before its signatures). A line by another name or key id
// is ignored; a line by w that does not verify is an error.
func VerifyCosignature(signedNote string, cosigs []string, w WitnessKey) error {
	if w.v == nil {
		return errors.New("evidence: a witness key not made by ParseWitnessKey")
	}
	text, _, err := splitNote([]byte(signedNote))
	if err != nil {
		return fmt.Errorf("the checkpoint's note: %v", err)
	}
	found := false
	for _, line := range cosigs {
		name, raw, ok := parseSigLine(line)
		if !ok {
			return fmt.Errorf("%q is not a signature line (— <name> <base64>)", line)
		}
		if name != w.Name || binary.BigEndian.Uint32(raw[:4]) != w.v.KeyHash() {
			continue
		}
		if !w.v.Verify(text, raw[4:]) {
			return fmt.Errorf("witness %s's cosignature does not verify over the checkpoint's note", w.Name)
		}
		found = true
	}
	if !found {
		return fmt.Errorf("the checkpoint has no cosignature by witness %s (%s)", w.Name, w.VKey)
	}
	return nil
}

// parseSigLine reads "— <name> <base64 of a key id and a signature>".
func parseSigLine(line string) (string, []byte, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "— ")
	name, b64, ok2 := strings.Cut(rest, " ")
	if !ok || !ok2 || CheckOrigin(name) != nil {
		return "", nil, false
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) < 5 || base64.StdEncoding.EncodeToString(raw) != b64 {
		return "", nil, false
	}
	return name, raw, true
}

// checkWitnesses requires of checkpoint s (number n) a valid cosignature
// by every witness opts names.
func checkWitnesses(s Signed, n int64, opts Options) error {
	for _, w := range opts.Witnesses {
		if s.Note == "" {
			return problem("witness", "checkpoint %d carries no signed note, so no cosignature by witness %s", n, w.Name)
		}
		if err := VerifyCosignature(s.Note, s.Cosignatures, w); err != nil {
			return problem("witness", "checkpoint %d: %v", n, err)
		}
	}
	return nil
}
