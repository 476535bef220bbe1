package config

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// This file finds places in a configuration document: the line and column
// of a syntax error, with the path of the object or array it is in, and the
// line and column of the member a loader's error names by its path. jsontext
// reads the document; nothing found here holds a value of the document
// (names of members are named only when they read as field names, as
// pkg/contracts names them), and a fault's reason is one of the fixed texts
// below, chosen from where the reading stopped, never jsontext's message
// (which quotes the input).

// syntaxFault is where and how a document stops being JSON: the offset of
// the fault, a fixed reason, and the path of the innermost object or array
// it is in, or of the value it is in ("" the document itself).
type syntaxFault struct {
	at     int
	reason string
	path   string
}

// maxJSONDepth bounds how deep values may nest, as pkg/contracts bounds its
// own: a value inside more objects and arrays than this is a fault.
const maxJSONDepth = 512

// The fixed reasons.
const (
	ended           = "the document ends before every object, array and string in it is closed"
	tooDeep         = "nested too deep"
	nameExpected    = "expected a member's name in double quotes"
	nameQuoted      = "a member's name in single quotes (JSON takes double quotes)"
	colonExpected   = "expected ':' after the member's name"
	afterMember     = "expected ',' or '}' after a member (a comma missing?)"
	afterElement    = "expected ',' or ']' after an element (a comma missing?)"
	badLiteral      = "a misspelled true, false or null (or a string without its double quotes)"
	singleQuoted    = "a string in single quotes (JSON strings take double quotes)"
	unexpected      = "an unexpected character where a value should start (a string without its double quotes?)"
	badNumber       = "an invalid number"
	leadingZero     = "a number with a leading zero"
	neverClosed     = "a string that is never closed"
	lineNotClosed   = "a string that is never closed on its line (a '\"' missing?)"
	badUnicode      = `an invalid \u escape in a string (four hex digits)`
	badEscape       = `an invalid escape in a string (\" \\ \/ \b \f \n \r \t or \uXXXX)`
	controlChar     = `a control character in a string (write it as an escape, \t or \u00XX)`
	notUTF8         = "not valid UTF-8"
	emptyDocument   = "the document is empty"
	moreAfterTheEnd = "more follows the document's end (a document is one JSON object)"
)

// decoder reads doc as it is: a member's name may repeat (the loaders name
// a duplicate key, and locate finds it), and an escaped lone surrogate is
// taken as encoding/json takes it (invalid UTF-8 bytes are refused before
// reading, by checkSyntax).
func decoder(doc []byte) *jsontext.Decoder {
	// A bytes.Buffer is read in place, without a copy.
	return jsontext.NewDecoder(bytes.NewBuffer(doc),
		jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
}

// frame is an object or array being read: its path, how many members or
// elements it has so far and, in an object between a member's name and its
// value, that member's path.
type frame struct {
	kind  jsontext.Kind // '{' or '['
	path  string
	n     int
	named bool
	child string
}

// checkSyntax reads doc as one JSON value; nil when it is one, else its
// first fault.
func checkSyntax(doc []byte) *syntaxFault {
	if !utf8.Valid(doc) {
		at := 0
		for at < len(doc) {
			r, n := utf8.DecodeRune(doc[at:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			at += n
		}
		return &syntaxFault{at: at, reason: notUTF8}
	}
	d := decoder(doc)
	var stack []*frame
	for {
		// Where the next token starts, as jsontext finds it: after
		// whitespace and the ',' or ':' before it, if any.
		p0 := skipSpace(doc, int(d.InputOffset()))
		start, delim := p0, byte(0)
		if p0 < len(doc) && (doc[p0] == ',' || doc[p0] == ':') {
			delim, start = doc[p0], skipSpace(doc, p0+1)
		}
		tok, err := d.ReadToken()
		if err != nil {
			if len(stack) == 0 && p0 == len(doc) {
				return &syntaxFault{at: p0, reason: emptyDocument}
			}
			var serr *jsontext.SyntacticError
			off := -1
			if errors.As(err, &serr) {
				off = int(serr.ByteOffset)
			}
			return faultAt(doc, stack, p0, start, delim, off)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		kind := tok.Kind()
		switch {
		case kind == '}' || kind == ']':
			stack = stack[:len(stack)-1]
		case kind == '"' && top != nil && top.kind == '{' && !top.named:
			top.named, top.child = true, memberPath(top.path, tok.String(), top.n)
			continue
		default: // a value
			path := valuePath(top)
			if len(stack) > maxJSONDepth {
				return &syntaxFault{at: start, reason: tooDeep, path: path}
			}
			end := int(d.InputOffset())
			if kind == '0' && end < len(doc) && doc[end] >= '0' && doc[end] <= '9' {
				// jsontext reads "01" as 0 and stops before the 1.
				if raw := doc[start:end]; string(raw) == "0" || string(raw) == "-0" {
					return &syntaxFault{at: start, reason: leadingZero, path: path}
				}
			}
			if kind == '{' || kind == '[' {
				stack = append(stack, &frame{kind: kind, path: path})
				continue
			}
		}
		// A value has been read whole.
		if len(stack) == 0 {
			if rest := skipSpace(doc, int(d.InputOffset())); rest < len(doc) {
				return &syntaxFault{at: rest, reason: moreAfterTheEnd}
			}
			return nil
		}
		top = stack[len(stack)-1]
		top.n, top.named = top.n+1, false
	}
}

// valuePath is the path of the next value in top ("" the document itself).
func valuePath(top *frame) string {
	switch {
	case top == nil:
		return ""
	case top.kind == '{':
		return top.child
	}
	return top.path + "[" + strconv.Itoa(top.n) + "]"
}

// faultAt names the fault jsontext stopped at while reading the token that
// starts at p0 (whitespace skipped), or at start after the ',' or ':' delim
// at p0; off is where jsontext stopped, -1 unknown. Which fault it is
// follows from what the innermost object or array expected there, never
// from jsontext's message.
func faultAt(doc []byte, stack []*frame, p0, start int, delim byte, off int) *syntaxFault {
	if len(stack) == 0 {
		return valueFault(doc, 0, p0, "", off)
	}
	f := stack[len(stack)-1]
	fault := func(at int, reason string) *syntaxFault { return &syntaxFault{at: at, reason: reason, path: f.path} }
	switch {
	case f.kind == '[' && f.n == 0: // right after '['
		return valueFault(doc, len(stack), p0, valuePath(f), off)
	case p0 == len(doc):
		return fault(p0, ended)
	case f.kind == '{' && f.named:
		if delim != ':' {
			return &syntaxFault{at: p0, reason: colonExpected, path: f.child}
		}
		return valueFault(doc, len(stack), start, f.child, off)
	case f.n > 0 && delim != ',':
		if f.kind == '{' {
			return fault(p0, afterMember)
		}
		return fault(p0, afterElement)
	case start < len(doc) && f.n > 0 && (f.kind == '{' && doc[start] == '}' || f.kind == '[' && doc[start] == ']'):
		return fault(p0, "a trailing comma before '"+string(doc[start])+"'")
	case f.kind == '[':
		return valueFault(doc, len(stack), start, valuePath(f), off)
	case f.n == 0 && delim != 0:
		// Right after '{', a ',' or ':' is no name.
		return fault(p0, nameExpected)
	case start == len(doc):
		return fault(start, ended)
	case doc[start] == '"':
		return stringFault(doc, start, f.path, off)
	case doc[start] == '\'':
		return fault(start, nameQuoted)
	}
	return fault(start, nameExpected)
}

// valueFault names a fault in a value that starts at (or should start at)
// at, at depth, whose path is path.
func valueFault(doc []byte, depth, at int, path string, off int) *syntaxFault {
	fault := func(reason string) *syntaxFault { return &syntaxFault{at: at, reason: reason, path: path} }
	if depth > maxJSONDepth {
		return fault(tooDeep)
	}
	if at >= len(doc) {
		return fault(ended)
	}
	switch c := doc[at]; {
	case c == '"':
		return stringFault(doc, at, path, off)
	case c == '-' || c >= '0' && c <= '9':
		return fault(badNumber)
	case c == 't' || c == 'f' || c == 'n':
		return fault(badLiteral)
	case c == '\'':
		return fault(singleQuoted)
	case c == '}' || c == ']':
		return fault("a value is missing before '" + string(c) + "'")
	}
	return fault(unexpected)
}

// stringFault names a fault in the string that starts at at, where
// jsontext stopped at off: an escape, a control character, or its end.
func stringFault(doc []byte, at int, path string, off int) *syntaxFault {
	fault := func(at int, reason string) *syntaxFault { return &syntaxFault{at: at, reason: reason, path: path} }
	if off <= at || off >= len(doc) {
		return fault(at, neverClosed)
	}
	switch c := doc[off]; {
	case c == '\\' && off+1 == len(doc):
		return fault(at, neverClosed)
	case c == '\\' && doc[off+1] == 'u':
		return fault(off, badUnicode)
	case c == '\\':
		return fault(off, badEscape)
	case c == '\n':
		return fault(at, lineNotClosed)
	case c < 0x20:
		return fault(off, controlChar)
	}
	return fault(at, neverClosed)
}

// skipSpace is the offset of the first byte from at that is not JSON
// whitespace.
func skipSpace(doc []byte, at int) int {
	for at < len(doc) {
		switch doc[at] {
		case ' ', '\t', '\n', '\r':
			at++
		default:
			return at
		}
	}
	return at
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

// member is a member of an object (where its name starts) or an element of
// an array (at is where it starts), and where its value starts: offsets in
// the value that holds it.
type member struct {
	name    string
	at, val int
}

// members reads the value v starts with: its kind and, for an object or an
// array, its members; false when v does not start with a JSON value.
func members(v []byte) (jsontext.Kind, []member, bool) {
	d := decoder(v)
	tok, err := d.ReadToken()
	if err != nil {
		return 0, nil, false
	}
	kind := tok.Kind()
	if kind != '{' && kind != '[' {
		return kind, nil, true
	}
	var ms []member
	for {
		switch d.PeekKind() {
		case '}', ']':
			return kind, ms, true
		case 0: // invalid: the error waits for the next read
			return 0, nil, false
		}
		var m member
		if kind == '{' {
			name, err := d.ReadValue()
			if err != nil {
				return 0, nil, false
			}
			m.at = int(d.InputOffset()) - len(name)
			unquoted, _ := jsontext.AppendUnquote(nil, name) // read whole: only a lone surrogate errs, as U+FFFD
			m.name = string(unquoted)
		}
		val, err := d.ReadValue()
		if err != nil {
			return 0, nil, false
		}
		m.val = int(d.InputOffset()) - len(val)
		if kind == '[' {
			m.at = m.val
		}
		ms = append(ms, m)
	}
}

// locate is the offset in doc where the member at path starts (its name, or
// an element's first character); last picks the last of several members of
// one name (a duplicate key's second occurrence). False when the document
// has no such member.
func locate(doc []byte, path string, last bool) (int, bool) {
	segs, ok := parsePath(path)
	if !ok {
		return 0, false
	}
	base := skipSpace(doc, 0) // where the value being walked starts
	at := base
	for _, seg := range segs {
		kind, ms, ok := members(doc[base:])
		if !ok {
			return 0, false
		}
		next := -1
		switch {
		case seg.index >= 0 && (kind == '[' || kind == '{') && seg.index < len(ms):
			next = seg.index
		case seg.index < 0 && kind == '{':
			for i, m := range ms {
				if m.name == seg.name {
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
		at, base = base+ms[next].at, base+ms[next].val
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
