package contracts

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/gowebpki/jcs"
)

// ZeroHash is the prev_hash of ledger line 1.
const ZeroHash = "0000000000000000000000000000000000000000000000000000000000000000"

// Canonicalize returns the RFC 8785 (JCS) form of a JSON document. Duplicate
// keys are an error, not last-wins: two readers of the same bytes must never
// disagree about what was signed.
func Canonicalize(doc []byte) ([]byte, error) {
	if _, err := parseDocument(doc); err != nil {
		return nil, err
	}
	out, err := jcs.Transform(doc)
	if err != nil {
		return nil, fieldErr("", "not canonicalizable JSON (RFC 8785)")
	}
	return out, nil
}

// InputHash is the tool_input_hash a warrant is bound to:
// hex(sha256(JCS(input))).
func InputHash(input []byte) (string, error) {
	c, err := Canonicalize(input)
	if err != nil {
		return "", err
	}
	return sha256Hex(c), nil
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
