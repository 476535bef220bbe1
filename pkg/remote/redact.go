package remote

import (
	"bytes"
	"encoding/json"
	"strings"
)

// redacted is what a secret becomes.
const redacted = "[redacted]"

// RedactJSON cuts every token and secret c has held out of v, a JSON value
// a system answered (a careless server echoes the Authorization header in
// its result, too). It reads each string of v, object members' names
// included, as JSON decodes it, so a secret written with escapes
// ("tok\u002d1", "a\/b") is found; a string that is itself a JSON document
// (a tool's text block often is) is read the same way, a few levels deep.
// A string holding a secret is written anew with the secret replaced;
// every other byte of v is kept. A nil c, or a v that is not JSON, is cut
// as text (Redact).
func RedactJSON(v json.RawMessage, c Credentials) json.RawMessage {
	secrets := known(c)
	if len(secrets) == 0 {
		return v
	}
	if !json.Valid(v) {
		return json.RawMessage(Redact(string(v), c))
	}
	return redactJSON(v, secrets, 0)
}

// maxDepth bounds how deep JSON inside strings is read.
const maxDepth = 4

func known(c Credentials) []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, s := range c.Known() {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// redactJSON rewrites the strings of valid JSON v that hold a secret.
func redactJSON(v []byte, secrets []string, depth int) []byte {
	var out []byte // nil until a string changes
	last := 0
	for i := 0; i < len(v); i++ {
		if v[i] != '"' {
			continue // outside a string there is no '"' in valid JSON
		}
		j := i + 1
		for v[j] != '"' {
			if v[j] == '\\' {
				j++
			}
			j++
		}
		lit := v[i : j+1]
		var s string
		if bytes.IndexByte(lit, '\\') < 0 {
			s = string(lit[1 : len(lit)-1]) // no escapes: the bytes are the string
		} else if json.Unmarshal(lit, &s) != nil {
			s = string(lit) // cannot happen in valid JSON
		}
		if r := redactString(s, secrets, depth); r != s {
			out = append(out, v[last:i]...)
			out = append(out, jsonString(r)...)
			last = j + 1
		}
		i = j
	}
	if out == nil {
		return v
	}
	return append(out, v[last:]...)
}

// redactString replaces each secret in s, and within s when it is a JSON
// document itself.
func redactString(s string, secrets []string, depth int) string {
	for _, secret := range secrets {
		s = strings.ReplaceAll(s, secret, redacted)
	}
	if depth < maxDepth && strings.IndexByte(s, '"') >= 0 && json.Valid([]byte(s)) {
		s = string(redactJSON([]byte(s), secrets, depth+1))
	}
	return s
}

// jsonString is s as a JSON string, <, > and & as they are.
func jsonString(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
