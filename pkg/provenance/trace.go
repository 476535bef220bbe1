package provenance

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
)

// Origin is one place a value appears: a trusted source, or a tool result
// by its ledger seq and tool.
type Origin struct {
	Source Source `json:"source"`
	Seq    int64  `json:"seq,omitempty"`
	Tool   string `json:"tool,omitempty"`
}

// Finding is where one selected value appears in the run.
type Finding struct {
	// Pointer is the value's own pointer ("/cc/0"), a declared wildcard
	// resolved; for a value that could not be read, as far as the
	// declared pointer could be followed.
	Pointer string
	Kind    Kind
	// Value is the value as read. It is privileged content: Stored drops
	// it and Verdict's reasons never quote it.
	Value string
	// Unreadable says why the value could not be traced (not a string,
	// not a bare address, a URL without a host Go can read, ...); such a
	// finding has no origins and fails closed.
	Unreadable string
	// Origins are trusted sources first (counsel, matter, firm), then
	// tool results by seq. None: the value appears nowhere the run can
	// show ("cannot tell"), and the caller fails closed.
	Origins []Origin
}

// Trusted reports whether some origin of f is a trusted source.
func (f Finding) Trusted() bool {
	for _, o := range f.Origins {
		if o.Source.Trusted() {
			return true
		}
	}
	return false
}

// ErrInput is returned for an input that is not one JSON object.
var ErrInput = errors.New("provenance: the input is not a JSON object")

// Trace finds, for each value specs select in input (a call's canonical
// JSON input, as contracts.CanonicalInput makes it), where it appears in
// src. The input is not validated as a whole, which would cost more than
// the trace (the agent decides only canonical input): Trace refuses input
// that is not one object with balanced brackets and strings, and reads
// strictly only the members its pointers walk through. A selected value that is not a
// string, or not of its declared kind, is a finding that cannot be traced,
// never skipped; a pointer that selects nothing (no bcc) finds nothing. A
// spec whose pointer does not parse is an error, as is input that is not a
// JSON object: the caller fails closed on an error as on an unknown
// Verdict.
//
// How each kind matches, on purpose:
//   - email: the whole address, ASCII case aside; in a text, the longest
//     run of address characters around an '@' is one address, so
//     "bob@x.example" is not in "bob@x.example.evil" nor in
//     "rbob@x.example". An address on one of the firm's domains is trusted
//     by the firm's settings, on one of the client's by the matter
//     registry (exactly: a sub-domain is not its parent).
//   - host: the host (without its port, which must be a number), lower
//     case, no trailing dot, compared exactly with the host names in the
//     texts (runs of host characters, an address's domain among them, and
//     URLs' hosts) and with the firm's and client's domains.
//   - url: the host and the path (after any userinfo; the port unless it
//     is the scheme's default; no query, fragment or trailing slash),
//     lower case: a text vouches for it when it names that host and path,
//     or a folder above it, as a whole URL place (not inside a longer host
//     or path), so on a shared host (a file service) counsel's folder does
//     not vouch for a document's. The firm's and client's domains vouch
//     for any URL on them. A path with a dot segment or an encoded dot,
//     slash or backslash is not read.
//   - identifier: separators (space, '-', '.', '/', ':', '_') removed and
//     ASCII case folded, matched as a sequence of whole letter-digit tokens
//     of a text that are separated by one separator character each, so
//     "12 3456 78" in a document is "12345678" in a call, and "345" is not
//     in "123456".
//   - path: the exact bytes, not inside a longer path.
func Trace(input json.RawMessage, specs []Spec, src *Sources) ([]Finding, error) {
	root := wsAt(input, 0)
	if root >= len(input) || input[root] != '{' {
		return nil, ErrInput
	}
	if src == nil {
		src = &Sources{}
	}
	src.build()
	// The selector's buffers are the Sources' scratch, reused call after
	// call (a Sources is used by one goroutine at a time).
	sel := &src.scratch
	members, ok := rootMembers(input, root, sel.root[:0])
	if !ok {
		return nil, ErrInput
	}
	*sel = selector{d: input, root: members, out: sel.out[:0], path: sel.path[:0]}
	defer func() { // do not hold on to the input
		sel.d = nil
		clear(sel.out)
		clear(sel.root)
	}()
	findings := make([]Finding, 0, len(specs))
	// The findings' origins share one array, grown as needed: a finding's
	// origins are a full slice of it, never appended to after.
	src.outOrigins = nil
	for i := range specs {
		sp := &specs[i]
		toks := sp.toks
		if toks == nil {
			var err error
			if toks, err = parsePointer(sp.Pointer); err != nil {
				return nil, err
			}
		}
		if !sp.Kind.Valid() {
			return nil, errors.New("provenance: unknown kind")
		}
		sel.out = sel.out[:0]
		sel.walk(root, true, toks)
		for _, v := range sel.out {
			findings = append(findings, src.trace(v, sp.Kind))
		}
	}
	return findings, nil
}

// trace is one selected value's finding.
func (s *Sources) trace(v selected, k Kind) (f Finding) {
	f = Finding{Pointer: v.pointer, Kind: k}
	// Origins are gathered in the Sources' scratch and copied out at their
	// size: one allocation a value.
	f.Origins = s.originBuf[:0]
	defer func() {
		s.originBuf = f.Origins[:0]
		if len(f.Origins) == 0 {
			f.Origins = nil
			return
		}
		if cap(s.outOrigins)-len(s.outOrigins) < len(f.Origins) {
			s.outOrigins = make([]Origin, 0, max(8, 2*cap(s.outOrigins), len(f.Origins)))
		}
		start := len(s.outOrigins)
		s.outOrigins = append(s.outOrigins, f.Origins...)
		f.Origins = s.outOrigins[start:len(s.outOrigins):len(s.outOrigins)]
	}()
	if v.problem != "" {
		f.Unreadable = v.problem
		return f
	}
	str, ok := decodeString(v.raw)
	if !ok {
		f.Unreadable = "not a string"
		return f
	}
	f.Value = str
	switch k {
	case KindEmail:
		addr, dom, ok := normEmail(str)
		if !ok {
			f.Unreadable = "not a bare e-mail address"
			return f
		}
		f.Origins = s.fromTexts(f.Origins, s.emails[addr])
		f.Origins = s.fromRegistry(f.Origins, dom)
	case KindURL:
		h, place, hostLen, ok := urlHostPath(str)
		if !ok {
			f.Unreadable = "no host and path that can be read"
			return f
		}
		// A text vouches for the URL when it names the URL's host and path,
		// or a folder above it (on a shared host, one folder is not
		// another); the registry, for any URL on its domains.
		for _, n := range s.hosts[h] {
			text := s.texts[n].lowerText()
			for p := place; ; {
				if containsPlace(text, p) {
					f.Origins = s.addOrigin(f.Origins, n)
					break
				}
				j := strings.LastIndexByte(p, '/')
				if j < hostLen {
					break
				}
				p = p[:j]
			}
		}
		f.Origins = s.fromRegistry(f.Origins, h)
	case KindHost:
		h, ok := normHost(str)
		if !ok {
			f.Unreadable = "no host that can be read"
			return f
		}
		f.Origins = s.fromTexts(f.Origins, s.hosts[h])
		f.Origins = s.fromRegistry(f.Origins, h)
	case KindIdentifier:
		id, ok := normIdentifier(str)
		if !ok {
			f.Unreadable = "not an identifier of letters, digits and separators"
			return f
		}
		f.Origins = s.identifier(f.Origins, id)
	case KindPath:
		if str == "" {
			f.Unreadable = "an empty path"
			return f
		}
		for n, t := range s.texts {
			if containsPath(t.text, str) {
				f.Origins = s.addOrigin(f.Origins, int32(n))
			}
		}
	}
	sortOrigins(f.Origins)
	return f
}

func (s *Sources) addOrigin(os []Origin, text int32) []Origin {
	o := s.origins[text]
	if slices.Contains(os, o) {
		return os
	}
	return append(os, o)
}

func (s *Sources) fromTexts(os []Origin, texts []int32) []Origin {
	for _, n := range texts {
		os = s.addOrigin(os, n)
	}
	return os
}

// fromRegistry adds the firm or the matter when host is one of their
// domains, compared exactly (the settings hold them in lower case; they
// are folded here too, so a registry typed in capitals still matches).
func (s *Sources) fromRegistry(os []Origin, host string) []Origin {
	for _, d := range s.Firm.Domains {
		if strings.EqualFold(strings.TrimSuffix(d, "."), host) {
			os = append(os, Origin{Source: SourceFirm})
			break
		}
	}
	for _, d := range s.Matter.ClientDomains {
		if strings.EqualFold(strings.TrimSuffix(d, "."), host) {
			if !slices.Contains(os, Origin{Source: SourceMatter}) {
				os = append(os, Origin{Source: SourceMatter})
			}
			break
		}
	}
	return os
}

// identifier finds id as consecutive joined tokens: each prefix of id that
// is a token somewhere is a possible start, extended along that text.
func (s *Sources) identifier(os []Origin, id string) []Origin {
	for k := 1; k <= len(id); k++ {
		for _, p := range s.tokens[id[:k]] {
			t := s.texts[p.text]
			rest, q := id[k:], int(p.idx)
			for rest != "" && q+1 < len(t.tokens) && t.joins[q] && strings.HasPrefix(rest, t.tokens[q+1]) {
				rest = rest[len(t.tokens[q+1]):]
				q++
			}
			if rest == "" {
				os = s.addOrigin(os, p.text)
			}
		}
	}
	return os
}

// isPathChar: a character that continues a path written in text.
func isPathChar(c byte) bool {
	return isAlnum(c) || c == '/' || c == '\\' || c == '_' || c == '-' || c == '~' || c >= 0x80
}

// containsPath reports whether p appears in text not as part of a longer
// path: the character before it does not continue a path, nor the one
// after (a full stop after it does only if a path character follows).
func containsPath(text, p string) bool {
	for off := 0; ; {
		i := strings.Index(text[off:], p)
		if i < 0 {
			return false
		}
		i += off
		e := i + len(p)
		before := i == 0 || !(isPathChar(text[i-1]) || text[i-1] == '.')
		after := e == len(text) || !isPathChar(text[e]) && !(text[e] == '.' && e+1 < len(text) && isPathChar(text[e+1]))
		if before && after {
			return true
		}
		off = i + 1
	}
}

// sortOrigins puts trusted sources first in a fixed order, then results by
// seq.
func sortOrigins(os []Origin) {
	rank := func(s Source) int {
		switch s {
		case SourceCounsel:
			return 0
		case SourceMatter:
			return 1
		case SourceFirm:
			return 2
		}
		return 3
	}
	slices.SortStableFunc(os, func(a, b Origin) int {
		if ra, rb := rank(a.Source), rank(b.Source); ra != rb {
			return ra - rb
		}
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return strings.Compare(a.Tool, b.Tool)
	})
}
