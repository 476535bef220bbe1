package provenance

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// Kind says how a destination value is read and matched. The kinds are a
// closed set; a declaration naming another is refused.
type Kind string

const (
	// KindEmail is a bare e-mail address ("bob@client.example"), matched
	// whole and without regard to case.
	KindEmail Kind = "email"
	// KindURL is an absolute URL, matched by its host.
	KindURL Kind = "url"
	// KindHost is a host name or IP address, with an optional port.
	KindHost Kind = "host"
	// KindIdentifier is an account, docket or reference number, matched
	// with its separators removed and its case folded, as whole tokens.
	KindIdentifier Kind = "identifier"
	// KindPath is a file path, matched exactly.
	KindPath Kind = "path"
)

// Valid reports whether k is one of the kinds above.
func (k Kind) Valid() bool {
	switch k {
	case KindEmail, KindURL, KindHost, KindIdentifier, KindPath:
		return true
	}
	return false
}

// maxPointerTokens bounds a pointer as pkg/toolpolicy bounds a rule's.
const maxPointerTokens = 32

// Spec declares that the values a pointer selects in a tool's input are
// destinations or identifiers of a kind. Pointer is an RFC 6901 JSON pointer
// ("~1" is "/", "~0" is "~") in which a token "*" selects every element of
// an array, as in pkg/toolpolicy's rules (a member literally named "*"
// cannot be addressed). The empty pointer (the whole input, an object) is
// not a destination and is refused.
type Spec struct {
	Pointer string `json:"pointer"`
	Kind    Kind   `json:"kind"`

	toks []token // parsed Pointer; nil until ParseSpecs or Trace parses it
}

// token is one reference token of a pointer: a member name (and, if it
// reads as one, an array index), or the wildcard.
type token struct {
	name  string
	index int // RFC 6901 array index, or -1
	wild  bool
}

// ParseSpecs reads a tool's destination declarations: a JSON array of
// {"pointer": ..., "kind": ...}, decoded strictly (pkg/contracts). It
// refuses an invalid pointer, an unknown kind and a pointer declared twice
// with a *contracts.FieldError naming the member ("[2].pointer"), which the
// caller re-roots where the array sits (a catalog tool's or a policy's
// member). The error never echoes the value.
func ParseSpecs(doc []byte) ([]Spec, error) {
	var specs []Spec
	if err := contracts.DecodeStrict(doc, &specs); err != nil {
		return nil, err
	}
	if err := ValidateSpecs(specs); err != nil {
		return nil, err
	}
	return specs, nil
}

// ValidateSpecs checks declarations built in code as ParseSpecs checks a
// document's, and parses their pointers in place so Trace does not.
func ValidateSpecs(specs []Spec) error {
	seen := make(map[string]bool, len(specs))
	for i := range specs {
		at := "[" + strconv.Itoa(i) + "]"
		toks, err := parsePointer(specs[i].Pointer)
		if err != nil {
			return &contracts.FieldError{Path: at + ".pointer", Reason: err.Error()}
		}
		if !specs[i].Kind.Valid() {
			return &contracts.FieldError{Path: at + ".kind", Reason: "must be email, url, host, identifier or path"}
		}
		if seen[specs[i].Pointer] {
			return &contracts.FieldError{Path: at + ".pointer", Reason: "is declared twice"}
		}
		seen[specs[i].Pointer] = true
		specs[i].toks = toks
	}
	return nil
}

var errEmptyPointer = errors.New("selects the whole input, which is not a destination")

// parsePointer parses p with pkg/toolpolicy's semantics (its parser is
// unexported there, and this package may not import the policy it will
// feed): "/"-prefixed tokens, "~1" for "/", "~0" for "~", any other "~" an
// error, "*" every element of an array.
func parsePointer(p string) ([]token, error) {
	if p == "" {
		return nil, errEmptyPointer
	}
	if p[0] != '/' {
		return nil, errors.New("a JSON pointer (RFC 6901) starts with '/'")
	}
	parts := strings.Split(p[1:], "/")
	if len(parts) > maxPointerTokens {
		return nil, fmt.Errorf("a JSON pointer may have at most %d tokens", maxPointerTokens)
	}
	toks := make([]token, 0, len(parts))
	for _, t := range parts {
		if t == "*" {
			toks = append(toks, token{name: t, index: -1, wild: true})
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
					return nil, errors.New("'~' must be followed by 0 or 1 in a JSON pointer (RFC 6901)")
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
		toks = append(toks, token{name: t, index: arrayIndex(t)})
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
