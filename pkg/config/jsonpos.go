package config

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file finds places in a configuration document: the line and column
// of a syntax error, with the path of the object or array it is in, and the
// line and column of the member a loader's error names by its path. It reads
// the document's structure only; nothing it returns holds a value of the
// document (names of members are named only when they read as field names,
// as pkg/contracts names them).

// jnode is a parsed JSON value: where it starts and, for an object or an
// array, its members (an array's keys are empty).
type jnode struct {
	kind  byte // '{', '[', or 0 for a scalar
	start int
	keys  []string // member names, unescaped
	keyAt []int    // offset of each member's name (an element's start)
	vals  []*jnode
}

// syntaxFault is where and how a document stops being JSON: the offset of
// the fault, a fixed reason, and the path of the innermost object or array
// it is in ("" the document itself).
type syntaxFault struct {
	at     int
	reason string
	path   string
}

// maxJSONDepth bounds the scanner's recursion, as pkg/contracts bounds its own.
const maxJSONDepth = 512

type jscanner struct {
	b     []byte
	i     int
	fault *syntaxFault
}

// scanJSON parses doc as one JSON value. A document that is not JSON gives
// its first fault instead of a tree.
func scanJSON(doc []byte) (*jnode, *syntaxFault) {
	if !utf8.Valid(doc) {
		at := 0
		for at < len(doc) {
			r, n := utf8.DecodeRune(doc[at:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			at += n
		}
		return nil, &syntaxFault{at: at, reason: "not valid UTF-8"}
	}
	s := &jscanner{b: doc}
	s.space()
	if s.i == len(doc) {
		return nil, &syntaxFault{at: s.i, reason: "the document is empty"}
	}
	n := s.value("", 0)
	if s.fault != nil {
		return nil, s.fault
	}
	s.space()
	if s.i != len(doc) {
		return nil, &syntaxFault{at: s.i, reason: "more follows the document's end (a document is one JSON object)"}
	}
	return n, nil
}

func (s *jscanner) fail(at int, path, reason string) *jnode {
	if s.fault == nil {
		s.fault = &syntaxFault{at: at, reason: reason, path: path}
	}
	return nil
}

func (s *jscanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// ended is the fault of a document that ends inside a value.
const ended = "the document ends before every object, array and string in it is closed"

func (s *jscanner) value(path string, depth int) *jnode {
	if depth > maxJSONDepth {
		return s.fail(s.i, path, "nested too deep")
	}
	if s.i >= len(s.b) {
		return s.fail(s.i, path, ended)
	}
	start := s.i
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object(path, depth)
	case c == '[':
		return s.array(path, depth)
	case c == '"':
		if !s.str(path) {
			return nil
		}
	case c == '-' || c >= '0' && c <= '9':
		if !s.number(path) {
			return nil
		}
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if strings.HasPrefix(string(s.b[s.i:min(len(s.b), s.i+len(lit))]), lit) && lit[0] == c {
				s.i += len(lit)
				return &jnode{start: start}
			}
		}
		return s.fail(start, path, "a misspelled true, false or null (or a string without its double quotes)")
	case c == '\'':
		return s.fail(start, path, "a string in single quotes (JSON strings take double quotes)")
	case c == '}' || c == ']':
		return s.fail(start, path, "a value is missing before '"+string(c)+"'")
	default:
		return s.fail(start, path, "an unexpected character where a value should start (a string without its double quotes?)")
	}
	return &jnode{start: start}
}

func (s *jscanner) object(path string, depth int) *jnode {
	n := &jnode{kind: '{', start: s.i}
	s.i++
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return n
	}
	for {
		if s.i >= len(s.b) {
			return s.fail(s.i, path, ended)
		}
		if s.b[s.i] != '"' {
			if s.b[s.i] == '\'' {
				return s.fail(s.i, path, "a member's name in single quotes (JSON takes double quotes)")
			}
			return s.fail(s.i, path, "expected a member's name in double quotes")
		}
		keyAt := s.i
		if !s.str(path) {
			return nil
		}
		var key string
		_ = json.Unmarshal(s.b[keyAt:s.i], &key) // a valid string: str checked it
		child := memberPath(path, key, len(n.keys))
		s.space()
		if s.i >= len(s.b) {
			return s.fail(s.i, path, ended)
		}
		if s.b[s.i] != ':' {
			return s.fail(s.i, child, "expected ':' after the member's name")
		}
		s.i++
		s.space()
		v := s.value(child, depth+1)
		if v == nil {
			return nil
		}
		n.keys, n.keyAt, n.vals = append(n.keys, key), append(n.keyAt, keyAt), append(n.vals, v)
		s.space()
		if s.i >= len(s.b) {
			return s.fail(s.i, path, ended)
		}
		switch s.b[s.i] {
		case '}':
			s.i++
			return n
		case ',':
			comma := s.i
			s.i++
			s.space()
			if s.i < len(s.b) && s.b[s.i] == '}' {
				return s.fail(comma, path, "a trailing comma before '}'")
			}
		default:
			return s.fail(s.i, path, "expected ',' or '}' after a member (a comma missing?)")
		}
	}
}

func (s *jscanner) array(path string, depth int) *jnode {
	n := &jnode{kind: '[', start: s.i}
	s.i++
	s.space()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return n
	}
	for {
		s.space()
		at := s.i
		v := s.value(path+"["+strconv.Itoa(len(n.vals))+"]", depth+1)
		if v == nil {
			return nil
		}
		n.keys, n.keyAt, n.vals = append(n.keys, ""), append(n.keyAt, at), append(n.vals, v)
		s.space()
		if s.i >= len(s.b) {
			return s.fail(s.i, path, ended)
		}
		switch s.b[s.i] {
		case ']':
			s.i++
			return n
		case ',':
			comma := s.i
			s.i++
			s.space()
			if s.i < len(s.b) && s.b[s.i] == ']' {
				return s.fail(comma, path, "a trailing comma before ']'")
			}
		default:
			return s.fail(s.i, path, "expected ',' or ']' after an element (a comma missing?)")
		}
	}
}

// str scans a string; false after a fault.
func (s *jscanner) str(path string) bool {
	start := s.i
	s.i++
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return true
		case c == '\\':
			if s.i+1 >= len(s.b) {
				s.fail(start, path, "a string that is never closed")
				return false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) || !isHex4(s.b[s.i+2:s.i+6]) {
					s.fail(s.i, path, `an invalid \u escape in a string (four hex digits)`)
					return false
				}
				s.i += 6
			default:
				s.fail(s.i, path, `an invalid escape in a string (\" \\ \/ \b \f \n \r \t or \uXXXX)`)
				return false
			}
		case c < 0x20:
			if c == '\n' {
				s.fail(start, path, "a string that is never closed on its line (a '\"' missing?)")
			} else {
				s.fail(s.i, path, `a control character in a string (write it as an escape, \t or \u00XX)`)
			}
			return false
		default:
			s.i++
		}
	}
	s.fail(start, path, "a string that is never closed")
	return false
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?; false after a fault.
func (s *jscanner) number(path string) bool {
	start := s.i
	bad := func() bool {
		s.fail(start, path, "an invalid number")
		return false
	}
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.b[s.i] == '-' {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
		if s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.fail(start, path, "a number with a leading zero")
			return false
		}
	} else if digits() == 0 {
		return bad()
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return bad()
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return bad()
		}
	}
	return true
}

// isShortKey is pkg/contracts' rule for a name a path may show: 1 to 64
// ASCII letters, digits, '_' or '-', the first a letter or '_'.
func isShortKey(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case (c >= '0' && c <= '9' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// memberPath is the path of member idx (named key) of the object at path,
// written as pkg/contracts writes it: by name when the name reads as a field
// name, else by position, the path then rooted at "$".
func memberPath(path, key string, idx int) string {
	if isShortKey(key) {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	switch {
	case path == "":
		path = "$"
	case path[0] == '[':
		path = "$" + path
	case path[0] != '$':
		path = "$." + path
	}
	return path + "[" + strconv.Itoa(idx) + "]"
}

// pathSegment is one step of a path: a member's name, or an index ("[n]":
// an array's element, or in a "$"-rooted path an object's member by
// position).
type pathSegment struct {
	name  string
	index int // -1 for a name
}

// parsePath splits a path as pkg/contracts and the loaders write it
// ("tools.search.timeout", "rules[0].when[1].op", "$.tools[3]"); false
// for anything else.
func parsePath(p string) ([]pathSegment, bool) {
	p = strings.TrimPrefix(p, "$")
	var out []pathSegment
	for p != "" {
		switch p[0] {
		case '.':
			p = p[1:]
			fallthrough
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			if end == 0 {
				return nil, false
			}
			out = append(out, pathSegment{name: p[:end], index: -1})
			p = p[end:]
		case '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return nil, false
			}
			n, err := strconv.Atoi(p[1:end])
			if err != nil || n < 0 {
				return nil, false
			}
			out = append(out, pathSegment{index: n})
			p = p[end+1:]
		}
	}
	return out, true
}

// locate is the offset where the member at path starts (its name, or an
// element's first character); last picks the last of several members of
// one name (a duplicate key's second occurrence). False when the document
// has no such member.
func (n *jnode) locate(path string, last bool) (int, bool) {
	if n == nil {
		return 0, false
	}
	segs, ok := parsePath(path)
	if !ok {
		return 0, false
	}
	at := n.start
	for _, seg := range segs {
		next := -1
		switch {
		case seg.index >= 0 && (n.kind == '[' || n.kind == '{') && seg.index < len(n.vals):
			next = seg.index
		case seg.index < 0 && n.kind == '{':
			for i, k := range n.keys {
				if k == seg.name {
					next = i
					if !last {
						break
					}
				}
			}
		}
		if next < 0 {
			return 0, false
		}
		at, n = n.keyAt[next], n.vals[next]
	}
	return at, true
}

// lineCol is the 1-based line and column of offset at in doc; a column
// counts characters, not bytes.
func lineCol(doc []byte, at int) (line, col int) {
	at = min(max(at, 0), len(doc))
	line = 1 + strings.Count(string(doc[:at]), "\n")
	lineStart := strings.LastIndexByte(string(doc[:at]), '\n') + 1
	return line, 1 + utf8.RuneCount(doc[lineStart:at])
}
