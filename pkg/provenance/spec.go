package provenance

import (
	"errors"
	"strconv"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// Kind says how a destination value is read and matched. The kinds are a
// closed set; a declaration naming another is refused.
type Kind string

const (
	// KindEmail is a bare e-mail address ("bob@client.example"), matched
	// whole and without regard to case.
	KindEmail Kind = contracts.ProvenanceEmail
	// KindURL is an absolute URL, matched by its host and path.
	KindURL Kind = contracts.ProvenanceURL
	// KindHost is a host name or IP address, with an optional port.
	KindHost Kind = contracts.ProvenanceHost
	// KindIdentifier is an account, docket or reference number, matched
	// with its separators removed and its case folded, as whole tokens.
	KindIdentifier Kind = contracts.ProvenanceIdentifier
	// KindPath is a file path, matched exactly.
	KindPath Kind = contracts.ProvenancePath
)

// Valid reports whether k is one of the kinds above.
func (k Kind) Valid() bool {
	switch k {
	case KindEmail, KindURL, KindHost, KindIdentifier, KindPath:
		return true
	}
	return false
}

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

// parsePointer parses a declaration's pointer as pkg/toolpolicy parses a
// rule's (contracts.ParsePointer); the whole input is not a destination.
func parsePointer(p string) ([]token, error) {
	if p == "" {
		return nil, errEmptyPointer
	}
	toks, err := contracts.ParsePointer(p)
	if err != nil {
		return nil, err
	}
	out := make([]token, len(toks))
	for i, t := range toks {
		out[i] = token{name: t.Name, index: t.Index, wild: t.Wild}
	}
	return out, nil
}
