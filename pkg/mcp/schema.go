package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// SchemaHash is the pin of a tool's input schema: hex SHA-256 of the
// schema's RFC 8785 (JCS) canonical form, so spacing, key order and
// escapes do not change it. Numbers are read as RFC 8785 reads them (as
// doubles); duplicate keys and invalid UTF-8 are errors.
func SchemaHash(raw json.RawMessage) (string, error) {
	c, err := canonicalSchema(raw)
	if err != nil {
		return "", err
	}
	return hashOf(c), nil
}

func canonicalSchema(raw json.RawMessage) ([]byte, error) {
	return contracts.Canonicalize(raw)
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
