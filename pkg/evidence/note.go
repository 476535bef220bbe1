package evidence

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A checkpoint is also signed as a C2SP signed note in the tlog-checkpoint
// form (c2sp.org/signed-note, c2sp.org/tlog-checkpoint), so tools built for
// transparency logs can read it and check its signature:
//
//	<origin>
//	<size, decimal>
//	<base64 of the 32-byte chain head>
//	warrant/chain-head/v1
//
//	— <origin> <base64(key hash || DER ECDSA signature)>
//
// The signature is of signed-note type 0x02, "ECDSA signatures as
// implemented by github.com/transparency-dev/witness": an ASN.1 DER ECDSA
// P-256 signature over the SHA-256 of the note text (what the receipt key
// already makes), and a key hash that is the first four bytes of the SHA-256
// of the key's DER SubjectPublicKeyInfo (so the first 8 hex digits of its
// KeyIDOf). The key name is the origin, as tlog-checkpoint recommends.
//
// The third line is the firm log's hash chain head (Link), not an RFC 6962
// Merkle tree root: the firm log is a chain (docs/DECISIONS.md, "Issue 30
// item 1"). The extension line ChainHeadExtension says so; a verifier of this
// package requires it.

// Signed-note constants.
const (
	// NoteSigTypeECDSA is the signed-note signature type byte of ECDSA
	// (c2sp.org/signed-note, "Signature types", 0x02).
	NoteSigTypeECDSA = 0x02
	// ChainHeadExtension is the note's one extension line: its root hash
	// is Warrant's chain head (Link over the entries' lines from Genesis).
	ChainHeadExtension = "warrant/chain-head/v1"
	// DefaultOriginPrefix is what a firm log's origin starts with unless
	// the deployment names its own (CHECKPOINT_ORIGIN_PREFIX): the origin
	// is the prefix, a slash and the firm id.
	DefaultOriginPrefix = "warrant.example/firm"
	// MaxNoteBytes bounds a note a verifier reads.
	MaxNoteBytes = 64 << 10
	// maxNoteSigs bounds its signature lines (the spec asks at least 16).
	maxNoteSigs = 64
)

// Origin is firm's log's origin under prefix (DefaultOriginPrefix when
// empty): prefix + "/" + firm.
func Origin(prefix, firm string) string {
	if prefix == "" {
		prefix = DefaultOriginPrefix
	}
	return prefix + "/" + firm
}

// CheckOrigin refuses an origin a note cannot carry as its origin line and
// key name: empty, not UTF-8, or holding a control character, a Unicode
// space or a plus.
func CheckOrigin(origin string) error {
	if origin == "" {
		return errors.New("evidence: a note's origin is not empty")
	}
	if !utf8.ValidString(origin) {
		return errors.New("evidence: a note's origin is UTF-8")
	}
	for _, r := range origin {
		if r < 0x20 || unicode.IsSpace(r) || r == '+' {
			return fmt.Errorf("evidence: a note's origin has no spaces, plus signs or control characters (%q)", origin)
		}
	}
	return nil
}

// NoteKeyHash is the signed-note key hash of an ECDSA key (type 0x02): the
// first four bytes, big-endian, of the SHA-256 of its DER
// SubjectPublicKeyInfo.
func NoteKeyHash(pub *ecdsa.PublicKey) (uint32, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return 0, err
	}
	sum := sha256.Sum256(der)
	return binary.BigEndian.Uint32(sum[:4]), nil
}

// noteKeyHashOf reads the key hash out of a KeyIDOf id, which is the hex
// SHA-256 of the same DER: its first 8 hex digits.
func noteKeyHashOf(keyID string) (uint32, error) {
	h, ok := strings.CutPrefix(keyID, "sha256:")
	if !ok || len(h) != 64 {
		return 0, fmt.Errorf("evidence: key id %q is not sha256:<hex>", keyID)
	}
	b, err := hex.DecodeString(h[:8])
	if err != nil {
		return 0, fmt.Errorf("evidence: key id %q is not sha256:<hex>", keyID)
	}
	return binary.BigEndian.Uint32(b), nil
}

// VerifierKey is the signed-note verifier key ("vkey") of pub for notes of
// origin: origin+hex(key hash)+base64(0x02 || DER SubjectPublicKeyInfo),
// the form transparency-dev/formats' note.NewECDSAVerifier reads.
func VerifierKey(origin string, pub *ecdsa.PublicKey) (string, error) {
	if err := CheckOrigin(origin); err != nil {
		return "", err
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	kh, _ := NoteKeyHash(pub) // marshals as above
	return fmt.Sprintf("%s+%08x+%s", origin, kh, base64.StdEncoding.EncodeToString(append([]byte{NoteSigTypeECDSA}, der...))), nil
}

// FormatCheckpointNote is the note text of checkpoint c of the log named
// origin: the origin, the size in decimal, the base64 of the chain head's 32
// bytes and ChainHeadExtension, each ending in a newline. c.Head is a hex
// SHA-256 (OpenCheckpoint's rule); SignCheckpointNote checks it.
func FormatCheckpointNote(origin string, c Checkpoint) []byte {
	root, _ := hex.DecodeString(c.Head)
	return fmt.Appendf(nil, "%s\n%d\n%s\n%s\n", origin, c.Size, base64.StdEncoding.EncodeToString(root), ChainHeadExtension)
}

// SignCheckpointNote signs checkpoint c of the log named origin as a signed
// note with k: the text FormatCheckpointNote makes, a blank line and one
// signature line by the key named origin. The digest k signs is the SHA-256
// of the text, so KMS (MessageType DIGEST) and the local key sign it as they
// sign receipts.
func SignCheckpointNote(ctx context.Context, k Signer, origin string, c Checkpoint) (string, error) {
	if err := CheckOrigin(origin); err != nil {
		return "", err
	}
	if c.Size < 0 || len(c.Head) != 64 {
		return "", errors.New("evidence: a checkpoint note needs a size and a hex SHA-256 head")
	}
	if _, err := hex.DecodeString(c.Head); err != nil {
		return "", errors.New("evidence: a checkpoint note needs a hex SHA-256 head")
	}
	kh, err := noteKeyHashOf(k.KeyID())
	if err != nil {
		return "", err
	}
	text := FormatCheckpointNote(origin, c)
	sum := sha256.Sum256(text)
	sig, err := k.SignDigest(ctx, sum[:])
	if err != nil {
		return "", err
	}
	blob := binary.BigEndian.AppendUint32(nil, kh)
	blob = append(blob, sig...)
	return fmt.Sprintf("%s\n— %s %s\n", text, origin, base64.StdEncoding.EncodeToString(blob)), nil
}

// noteSig is one signature line of a note.
type noteSig struct {
	name string
	hash uint32
	sig  []byte
}

// VerifyCheckpointNote reads a signed checkpoint note strictly and checks
// it: valid UTF-8 with no control character but newline, at most
// MaxNoteBytes, a text of exactly the origin (which must be origin), a
// decimal size without leading zeros, the base64 of a 32-byte head and
// ChainHeadExtension; then a blank line and nothing but signature lines. A
// signature by another key (another name or key hash) is ignored, as the
// spec asks; at least one must be by pub under the name origin, and every
// such signature must verify. It answers the size and head (hex) the note
// signs; the other fields of the Checkpoint are empty.
func VerifyCheckpointNote(note []byte, origin string, pub *ecdsa.PublicKey) (Checkpoint, error) {
	var c Checkpoint
	if err := CheckOrigin(origin); err != nil {
		return c, err
	}
	if pub == nil {
		return c, errors.New("no public key to check the note with")
	}
	text, sigs, err := splitNote(note)
	if err != nil {
		return c, err
	}
	// The text: the tlog-checkpoint body.
	lines := strings.Split(string(text[:len(text)-1]), "\n")
	if len(lines) < 3 {
		return c, fmt.Errorf("the note's text has %d lines, a checkpoint has at least 3", len(lines))
	}
	if lines[0] != origin {
		return c, fmt.Errorf("the note's origin is %q, not %q", lines[0], origin)
	}
	if !IsDecimal(lines[1]) {
		return c, fmt.Errorf("the note's size %q is not a decimal number without leading zeros", lines[1])
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return c, fmt.Errorf("the note's size %q is out of range", lines[1])
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != sha256.Size || base64.StdEncoding.EncodeToString(root) != lines[2] {
		return c, fmt.Errorf("the note's root hash %q is not the base64 of 32 bytes", lines[2])
	}
	if len(lines) != 4 || lines[3] != ChainHeadExtension {
		return c, fmt.Errorf("the note's lines after its root hash are %q, not the one extension line %q", lines[3:], ChainHeadExtension)
	}
	// The signatures: the ones by pub named origin must all verify, and
	// there must be one.
	want, err := NoteKeyHash(pub)
	if err != nil {
		return c, err
	}
	sum := sha256.Sum256(text)
	found := 0
	var others []string
	for _, s := range sigs {
		if s.name != origin || s.hash != want {
			others = append(others, fmt.Sprintf("%s %08x", s.name, s.hash))
			continue
		}
		if !ecdsa.VerifyASN1(pub, sum[:], s.sig) {
			return c, fmt.Errorf("the note's signature by %s (key hash %08x) does not verify", origin, want)
		}
		found++
	}
	if found == 0 {
		return c, fmt.Errorf("the note has no signature by %s with key hash %08x (it has: %s)", origin, want, strings.Join(others, ", "))
	}
	c.Size, c.Head = size, hex.EncodeToString(root)
	return c, nil
}

// splitNote reads a signed note's form (c2sp.org/signed-note): at most
// MaxNoteBytes of UTF-8 with no control character but newline, ending in a
// newline; the text (up to and with the newline before the last blank line)
// and the signature lines after it, nothing else.
func splitNote(note []byte) ([]byte, []noteSig, error) {
	if len(note) > MaxNoteBytes {
		return nil, nil, fmt.Errorf("the note is over %d bytes", MaxNoteBytes)
	}
	if !utf8.Valid(note) {
		return nil, nil, errors.New("the note is not UTF-8")
	}
	for _, b := range note {
		if b < 0x20 && b != '\n' {
			return nil, nil, errors.New("the note holds a control character")
		}
	}
	if len(note) == 0 || note[len(note)-1] != '\n' {
		return nil, nil, errors.New("the note does not end in a newline (trailing bytes after its last signature line)")
	}
	split := bytes.LastIndex(note, []byte("\n\n"))
	if split < 0 {
		return nil, nil, errors.New("the note has no blank line before its signatures")
	}
	text, sigBlock := note[:split+1], note[split+2:]
	sigs, err := parseNoteSigs(sigBlock)
	return text, sigs, err
}

// parseNoteSigs reads a note's signature lines: "— <name> <base64>\n" each,
// nothing else.
func parseNoteSigs(block []byte) ([]noteSig, error) {
	if len(block) == 0 {
		return nil, errors.New("the note has no signature lines")
	}
	lines := strings.Split(string(block[:len(block)-1]), "\n")
	if len(lines) > maxNoteSigs {
		return nil, fmt.Errorf("the note has %d signature lines, over %d", len(lines), maxNoteSigs)
	}
	out := make([]noteSig, 0, len(lines))
	for i, l := range lines {
		rest, ok := strings.CutPrefix(l, "— ")
		name, b64, ok2 := strings.Cut(rest, " ")
		if !ok || !ok2 || CheckOrigin(name) != nil || strings.ContainsAny(b64, " ") {
			return nil, fmt.Errorf("line %d after the note's blank line is not a signature line (— <name> <base64>)", i+1)
		}
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(raw) < 5 || base64.StdEncoding.EncodeToString(raw) != b64 {
			return nil, fmt.Errorf("the note's signature line %d is not the base64 of a key hash and a signature", i+1)
		}
		out = append(out, noteSig{name: name, hash: binary.BigEndian.Uint32(raw[:4]), sig: raw[4:]})
	}
	return out, nil
}

// IsDecimal: s is a size as the note formats write it (c2sp.org): decimal
// digits, no sign, no leading zero.
func IsDecimal(s string) bool {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
