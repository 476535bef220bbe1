package contracts

import (
	"crypto/sha256"
	"encoding/hex"
)

// ZeroHash is the prev_hash of ledger line 1.
const ZeroHash = "0000000000000000000000000000000000000000000000000000000000000000"

// Canonicalize returns the RFC 8785 (JCS) form of a JSON document. Duplicate
// keys and unpaired surrogate escapes are errors, not last-wins or U+FFFD:
// two readers of the same bytes must never disagree about what was signed.
// Numbers are rounded to doubles as RFC 8785 says; InputHash is stricter.
func Canonicalize(doc []byte) ([]byte, error) {
	root, canonical, err := parse(&scanner{data: doc, anyNumber: true})
	if err != nil {
		return nil, err
	}
	return canonicalOf(doc, root, canonical)
}

// InputHash is the tool_input_hash a warrant is bound to:
// hex(sha256(JCS(input))). An input JCS would change the meaning of is
// refused with the JSON path: a number a double cannot hold exactly (RFC 8785
// would round it, so 9007199254740993 and 9007199254740992 would share a
// hash) or an unpaired surrogate escape.
func InputHash(input []byte) (string, error) {
	_, h, err := CanonicalInput(input)
	return h, err
}

// CanonicalInput returns the canonical bytes of a tool input and their
// tool_input_hash, refusing what InputHash refuses. The brain hands these
// bytes, not the model's, to the ledger, the warrant and the tool, so what
// counsel reads, signs and runs is one byte string.
func CanonicalInput(input []byte) (canonical []byte, hash string, err error) {
	root, already, err := parseCanonical(input)
	if err != nil {
		return nil, "", err
	}
	c, err := canonicalOf(input, root, already)
	if err != nil {
		return nil, "", err
	}
	return c, sha256Hex(c), nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// IsHash reports whether s is a lowercase hex SHA-256 digest.
func IsHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func checkHash(path, s string) error {
	if !IsHash(s) {
		return fieldErr(path, "must be a lowercase hex SHA-256 digest")
	}
	return nil
}

func mustNotEmpty(path, s string) error {
	if s == "" {
		return fieldErr(path, "must not be empty")
	}
	return nil
}

func oneOf(path, s string, allowed ...string) error {
	for _, a := range allowed {
		if s == a {
			return nil
		}
	}
	return fieldErr(path, "must be one of %v", allowed) // the value is not echoed: errors reach logs
}
