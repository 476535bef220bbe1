package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// ErrKeyUnavailable means the run's data key is not held: it was destroyed
// (Destroy, Cache.Forget), its wrapped blob names a KMS key that is disabled,
// pending deletion or gone, or there never was one (a nil *RunKey). Content
// sealed under it cannot be opened and nothing can be sealed with it.
var ErrKeyUnavailable = errors.New("seal: the run's data key is destroyed or unavailable")

// ErrCannotOpen means a stored value or a wrapped data key does not open:
// it was altered, moved to another field, run or firm, sealed under another
// key, or is not in the sealed form at all where a sealed value must be. It
// is an integrity failure of what was stored, so it carries ledger_corrupt.
var ErrCannotOpen = failure.New(failure.KindLedgerCorrupt, "a sealed value does not open under its run's key")

// ErrKMS means KMS did not answer a request (throttled, unreachable, an
// internal error, access denied): no verdict on the data. The error also
// carries a failure kind: store_unavailable (retryable), or config_invalid
// when the function may not use the key.
var ErrKMS = errors.New("seal: KMS failed")

// Version is the stored form's version, the value of its "sealed" member.
const Version = "v1"

const (
	keySize = 32 // AES-256
	// overhead is what GCM adds to a value: the 96-bit nonce and the
	// 128-bit tag.
	overhead = 12 + 16
	// valueLabel starts every value's additional data, so a value's AAD can
	// never equal a wrapped key's (localLabel) or a later format's.
	valueLabel = "warrant/seal/value/v1"
)

// RunKey is one run's data key, in memory only. Its methods are safe for
// concurrent use. Destroy drops it; a RunKey from a Cache belongs to the
// cache (drop it with Cache.Forget).
type RunKey struct {
	firm, run string
	// aadPrefix is valueLabel, the firm and the run, length-prefixed; each
	// value appends its field.
	aadPrefix []byte
	aead      atomic.Pointer[aeadBox]
}

// aeadBox holds the cipher, so Destroy can drop it atomically while a Seal
// or an Open is using it (GCM's Seal and Open keep no state between calls).
type aeadBox struct{ cipher.AEAD }

// newRunKey builds the key from raw (32 bytes) and zeroes raw: from then on
// the key exists only inside the AES cipher.
func newRunKey(firm, run string, raw []byte) (*RunKey, error) {
	defer clear(raw)
	if len(raw) != keySize {
		return nil, fmt.Errorf("seal: a data key is %d bytes, not %d", keySize, len(raw))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, err
	}
	k := &RunKey{firm: firm, run: run, aadPrefix: appendParts([]byte(valueLabel), firm, run)}
	k.aead.Store(&aeadBox{aead})
	return k, nil
}

// appendParts appends each part with its length (4 bytes, big-endian) first,
// so no choice of ids and field names can make two different triples read
// the same.
func appendParts(b []byte, parts ...string) []byte {
	for _, p := range parts {
		b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	return b
}

// Firm is the firm the key belongs to.
func (k *RunKey) Firm() string { return k.firm }

// Run is the run the key belongs to.
func (k *RunKey) Run() string { return k.run }

// cipher returns the live cipher, or nil once the key is destroyed.
func (k *RunKey) cipher() cipher.AEAD {
	if k == nil {
		return nil
	}
	if b := k.aead.Load(); b != nil {
		return b.AEAD
	}
	return nil
}

func (k *RunKey) aad(field string) []byte {
	return appendParts(k.aadPrefix[:len(k.aadPrefix):len(k.aadPrefix)], field)
}

// Destroy drops the key: every later Seal and Open fails with
// ErrKeyUnavailable. The 32 key bytes this package received were zeroed
// when the key was built; what remains is the AES key schedule inside
// crypto/aes, which Go offers no way to wipe, so Destroy removes the only
// reference to it and the garbage collector reclaims it (without zeroing)
// at some later time. A Destroy is therefore a promise about this process's
// behaviour, not a guarantee that no copy is left in its memory.
func (k *RunKey) Destroy() {
	if k != nil {
		k.aead.Store(nil)
	}
}

// Sealed is a sealed value as bytes: the 12-byte nonce, the ciphertext and
// the 16-byte GCM tag. Its JSON form is the stored form (see the package
// doc).
type Sealed []byte

// Seal encrypts plaintext for field. field names where the value is stored
// ("input", "text"); the same name must be given to Open. Without a live
// key it returns ErrKeyUnavailable and no bytes.
func (k *RunKey) Seal(field string, plaintext []byte) (Sealed, error) {
	aead := k.cipher()
	if aead == nil {
		return nil, ErrKeyUnavailable
	}
	if field == "" {
		return nil, errors.New("seal: a sealed value needs its field name")
	}
	return aead.Seal(nil, nil, plaintext, k.aad(field)), nil
}

// Open decrypts s, sealed for field under this key: ErrKeyUnavailable
// without a live key, ErrCannotOpen if s was altered, sealed for another
// field, run or firm, or under another key.
func (k *RunKey) Open(field string, s Sealed) ([]byte, error) {
	aead := k.cipher()
	if aead == nil {
		return nil, ErrKeyUnavailable
	}
	if len(s) < overhead {
		return nil, fmt.Errorf("seal: open %s: %w", field, ErrCannotOpen)
	}
	pt, err := aead.Open(nil, nil, s, k.aad(field))
	if err != nil {
		return nil, fmt.Errorf("seal: open %s: %w", field, ErrCannotOpen)
	}
	if pt == nil {
		pt = []byte{}
	}
	return pt, nil
}

// SealJSON seals a JSON value, as its exact bytes, and returns the stored
// form, itself a JSON value to put where raw was. raw must be valid JSON as
// json.Valid judges it (which does not check strings' UTF-8: the bytes are
// sealed as they are, whatever produced them).
func (k *RunKey) SealJSON(field string, raw json.RawMessage) (json.RawMessage, error) {
	if !json.Valid(raw) {
		return nil, fmt.Errorf("seal: %s is not a JSON value", field)
	}
	s, err := k.Seal(field, raw)
	if err != nil {
		return nil, err
	}
	return s.MarshalJSON()
}

// OpenJSON opens a stored form that SealJSON wrote for field and returns
// exactly the bytes that were sealed. Anything else (a plaintext value, a
// malformed or altered form) is ErrCannotOpen: where a sealed value must be,
// a plain one is tampering, not a value to pass on.
func (k *RunKey) OpenJSON(field string, stored json.RawMessage) (json.RawMessage, error) {
	if k.cipher() == nil {
		return nil, ErrKeyUnavailable
	}
	s, ok := parse(stored)
	if !ok {
		return nil, fmt.Errorf("seal: open %s: %w", field, ErrCannotOpen)
	}
	return k.Open(field, s)
}

// formHead and formTail enclose the base64 in the form MarshalJSON writes.
const (
	formHead = `{"sealed":"` + Version + `","ct":"`
	formTail = `"}`
)

var b64 = base64.StdEncoding.Strict()

// MarshalJSON writes the stored form, {"sealed":"v1","ct":"<base64>"}, with
// no spaces and the members in that order. A Sealed too short to be one
// (a zero Sealed in a struct) is an error, not a form that cannot open.
func (s Sealed) MarshalJSON() ([]byte, error) {
	if len(s) < overhead {
		return nil, errors.New("seal: an empty Sealed has no stored form")
	}
	n := b64.EncodedLen(len(s))
	out := make([]byte, len(formHead)+n+len(formTail))
	copy(out, formHead)
	b64.Encode(out[len(formHead):], s)
	copy(out[len(formHead)+n:], formTail)
	return out, nil
}

// UnmarshalJSON reads a stored form (see IsSealed for what is accepted).
func (s *Sealed) UnmarshalJSON(data []byte) error {
	v, ok := parse(data)
	if !ok {
		return fmt.Errorf("seal: not a sealed value: %w", ErrCannotOpen)
	}
	*s = v
	return nil
}

// IsSealed reports whether raw is a stored form: a JSON object with exactly
// two members, "sealed" equal to "v1" and "ct" a string of standard, padded
// base64 (RFC 4648 section 4, no line breaks) of at least 28 bytes, in any
// order and spacing (a store may re-encode it). It says nothing about
// whether the value opens.
func IsSealed(raw json.RawMessage) bool {
	_, ok := parse(raw)
	return ok
}

func parse(raw []byte) (Sealed, bool) {
	// The form MarshalJSON writes is read without a JSON decoder; anything
	// else (other order, spaces, escapes) goes through one. Base64 decoding
	// refuses every byte outside its alphabet (a quote or a backslash
	// included) but skips line breaks, so those are kept out first.
	if mid, ok := bytes.CutPrefix(raw, []byte(formHead)); ok {
		if mid, ok := bytes.CutSuffix(mid, []byte(formTail)); ok && !hasLineBreak(mid) {
			if s, ok := decode(mid); ok {
				return s, true
			}
		}
	}
	return parseSlow(raw)
}

func hasLineBreak(b []byte) bool {
	return bytes.IndexByte(b, '\n') >= 0 || bytes.IndexByte(b, '\r') >= 0
}

func decode(b64text []byte) (Sealed, bool) {
	s := make(Sealed, b64.DecodedLen(len(b64text)))
	n, err := b64.Decode(s, b64text)
	if err != nil || n < overhead {
		return nil, false
	}
	return s[:n], true
}

func parseSlow(raw []byte) (Sealed, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var version, ct string
	var haveVersion, haveCT bool
	for dec.More() {
		name, err := dec.Token()
		if err != nil {
			return nil, false
		}
		val, err := dec.Token()
		str, isStr := val.(string)
		if err != nil || !isStr {
			return nil, false
		}
		switch {
		case name == "sealed" && !haveVersion:
			version, haveVersion = str, true
		case name == "ct" && !haveCT:
			ct, haveCT = str, true
		default: // another member, or one twice
			return nil, false
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // trailing data
	}
	if !haveVersion || !haveCT || version != Version || hasLineBreak([]byte(ct)) {
		return nil, false
	}
	return decode([]byte(ct))
}
