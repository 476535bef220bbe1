package contracts

import (
	"fmt"
	"strings"
)

// MaxPointerTokens bounds a JSON pointer the policy or a catalog
// declaration names.
const MaxPointerTokens = 32

// PointerToken is one reference token of a JSON pointer.
type PointerToken struct {
	Name  string
	Index int  // the token as an RFC 6901 array index, or -1
	Wild  bool // "*": every element of an array
}

// ParsePointer parses an RFC 6901 JSON pointer as the risk policy's rules
// (pkg/toolpolicy) and a tool's provenance declarations (pkg/provenance)
// read one: "" (the whole input, no tokens) or "/"-prefixed reference
// tokens, in which "~1" stands for "/" and "~0" for "~"; any other "~" is an
// error. A token "*" (unescaped) is their extension: every element of an
// array, so a member literally named "*" cannot be addressed. At most
// MaxPointerTokens tokens.
func ParsePointer(p string) ([]PointerToken, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, fmt.Errorf("a JSON pointer (RFC 6901) is empty or starts with '/'")
	}
	parts := strings.Split(p[1:], "/")
	if len(parts) > MaxPointerTokens {
		return nil, fmt.Errorf("a JSON pointer may have at most %d tokens", MaxPointerTokens)
	}
	toks := make([]PointerToken, 0, len(parts))
	for _, t := range parts {
		if t == "*" {
			toks = append(toks, PointerToken{Name: t, Index: -1, Wild: true})
			continue
		}
		if strings.IndexByte(t, '~') >= 0 {
			var b strings.Builder
			for i := 0; i < len(t); i++ {
				if t[i] != '~' {
					b.WriteByte(t[i])
					continue
				}
				if i+1 >= len(t) || (t[i+1] != '0' && t[i+1] != '1') {
					return nil, fmt.Errorf("'~' must be followed by 0 or 1 in a JSON pointer (RFC 6901)")
				}
				if t[i+1] == '0' {
					b.WriteByte('~')
				} else {
					b.WriteByte('/')
				}
				i++
			}
			t = b.String()
		}
		toks = append(toks, PointerToken{Name: t, Index: arrayIndex(t)})
	}
	return toks, nil
}

// arrayIndex is the token as an RFC 6901 array index ("0" or digits without
// a leading zero), or -1.
func arrayIndex(t string) int {
	if t == "" || len(t) > 9 || (t[0] == '0' && len(t) > 1) {
		return -1
	}
	n := 0
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return -1
		}
		n = n*10 + int(t[i]-'0')
	}
	return n
}
