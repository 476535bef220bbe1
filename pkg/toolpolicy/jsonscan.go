package toolpolicy

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"
	"unicode/utf8"
)

// The input of a call is read through a tape: one validating pass over the
// bytes records every value's kind and span, so a rule's JSON pointers are
// resolved by walking the tape, with no encoding/json decode and no
// allocation beyond the tape itself (pooled). A document the pass refuses
// (not one JSON object, invalid UTF-8, an unpaired surrogate escape, nesting
// deeper than maxInputDepth) makes every condition on the input impossible to
// evaluate, which fires the rule (fail-closed).

// Tape node kinds: the first byte of the value, '0' for numbers.
const (
	kObject = '{'
	kArray  = '['
	kString = '"'
	kNumber = '0'
	kTrue   = 't'
	kFalse  = 'f'
	kNull   = 'n'
)

// maxInputDepth bounds nesting, so a hostile input cannot exhaust the stack.
const maxInputDepth = 64

// tnode is one JSON value of the input. A container's children follow it
// on the tape, the first at the next index, each linked to its sibling.
type tnode struct {
	start, end   int32 // the value's bytes; a string's include its quotes
	kstart, kend int32 // an object member's key, without its quotes
	next         int32 // the next sibling's index; 0 after the last child
	count        int32 // a container's number of children
	kind         byte
	esc          bool // the string value holds escapes
	kesc         bool // the member key holds escapes
}

type tapeParser struct {
	d    []byte
	i    int
	tape []tnode
}

// parseTape validates d as one JSON object (surrounded by optional
// whitespace) and appends its nodes to tape[:0]; the root is tape[0].
func parseTape(d []byte, tape []tnode) ([]tnode, bool) {
	if len(d) > math.MaxInt32-1 {
		return tape[:0], false
	}
	p := tapeParser{d: d, tape: tape[:0]}
	p.ws()
	if p.i >= len(d) || d[p.i] != '{' {
		return p.tape, false
	}
	if !p.value(0) {
		return p.tape, false
	}
	p.ws()
	return p.tape, p.i == len(d)
}

func (p *tapeParser) ws() {
	for p.i < len(p.d) {
		switch p.d[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *tapeParser) value(depth int) bool {
	if p.i >= len(p.d) {
		return false
	}
	idx := len(p.tape)
	p.tape = append(p.tape, tnode{start: int32(p.i)})
	switch c := p.d[p.i]; {
	case c == '{':
		if depth >= maxInputDepth {
			return false
		}
		p.tape[idx].kind = kObject
		p.i++
		p.ws()
		if p.i < len(p.d) && p.d[p.i] == '}' {
			p.i++
			break
		}
		prev := int32(-1)
		for {
			p.ws()
			if p.i >= len(p.d) || p.d[p.i] != '"' {
				return false
			}
			ks := p.i
			kesc, ok := p.str()
			if !ok {
				return false
			}
			ke := p.i
			p.ws()
			if p.i >= len(p.d) || p.d[p.i] != ':' {
				return false
			}
			p.i++
			p.ws()
			child := int32(len(p.tape))
			if !p.value(depth + 1) {
				return false
			}
			n := &p.tape[child]
			n.kstart, n.kend, n.kesc = int32(ks+1), int32(ke-1), kesc
			more, ok := p.member(idx, &prev, child, '}')
			if !ok {
				return false
			}
			if !more {
				break
			}
		}
	case c == '[':
		if depth >= maxInputDepth {
			return false
		}
		p.tape[idx].kind = kArray
		p.i++
		p.ws()
		if p.i < len(p.d) && p.d[p.i] == ']' {
			p.i++
			break
		}
		prev := int32(-1)
		for {
			p.ws()
			child := int32(len(p.tape))
			if !p.value(depth + 1) {
				return false
			}
			more, ok := p.member(idx, &prev, child, ']')
			if !ok {
				return false
			}
			if !more {
				break
			}
		}
	case c == '"':
		p.tape[idx].kind = kString
		esc, ok := p.str()
		if !ok {
			return false
		}
		p.tape[idx].esc = esc
	case c == '-' || c >= '0' && c <= '9':
		p.tape[idx].kind = kNumber
		if !p.number() {
			return false
		}
	case c == 't':
		p.tape[idx].kind = kTrue
		if !p.literal("true") {
			return false
		}
	case c == 'f':
		p.tape[idx].kind = kFalse
		if !p.literal("false") {
			return false
		}
	case c == 'n':
		p.tape[idx].kind = kNull
		if !p.literal("null") {
			return false
		}
	default:
		return false
	}
	p.tape[idx].end = int32(p.i)
	return true
}

// member links child, the container idx's newest member (after *prev),
// and reads what follows it: ',' (more members) or the container's close
// byte (the end). ok is false on anything else.
func (p *tapeParser) member(idx int, prev *int32, child int32, close byte) (more, ok bool) {
	if *prev >= 0 {
		p.tape[*prev].next = child
	}
	*prev = child
	p.tape[idx].count++
	p.ws()
	switch {
	case p.i >= len(p.d):
		return false, false
	case p.d[p.i] == ',':
		p.i++
		return true, true
	case p.d[p.i] == close:
		p.i++
		return false, true
	}
	return false, false
}

func (p *tapeParser) literal(lit string) bool {
	if len(p.d)-p.i < len(lit) || string(p.d[p.i:p.i+len(lit)]) != lit {
		return false
	}
	p.i += len(lit)
	return true
}

// plainByte marks the bytes a string holds as themselves: not '"', '\\', a
// control character or the start of a multi-byte sequence.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const (
	ones8  = 0x0101010101010101
	highs8 = 0x8080808080808080
)

// specialIn8 reports whether any of the 8 bytes in x is '"', '\\', a
// control character or not ASCII. (Each test may also flag a byte above a
// true hit, never when there is none.)
func specialIn8(x uint64) bool {
	quote := x ^ (ones8 * '"')
	bslash := x ^ (ones8 * '\\')
	zeroQ := (quote - ones8) &^ quote
	zeroB := (bslash - ones8) &^ bslash
	less := (x - ones8*0x20) &^ x
	return (zeroQ|zeroB|less|x)&highs8 != 0
}

// str scans the string at p.i (its opening quote) and reports whether it
// holds escapes.
func (p *tapeParser) str() (esc, ok bool) {
	d := p.d
	p.i++
	start, nonASCII := p.i, false
	for p.i < len(d) {
		// Eight bytes at a time while none needs a look (SWAR).
		for p.i+8 <= len(d) && !specialIn8(binary.LittleEndian.Uint64(d[p.i:])) {
			p.i += 8
		}
		for p.i < len(d) && plainByte[d[p.i]] {
			p.i++
		}
		if p.i >= len(d) {
			break
		}
		switch c := d[p.i]; {
		case c == '"':
			if nonASCII && !utf8.Valid(d[start:p.i]) {
				return false, false
			}
			p.i++
			return esc, true
		case c == '\\':
			esc = true
			if !p.escape() {
				return false, false
			}
		case c < 0x20:
			return false, false
		default:
			nonASCII = true
			p.i++
		}
	}
	return false, false
}

// escape consumes the escape at p.i. A \u escape of a UTF-16 surrogate must
// be the high half of a pair followed at once by its low half: decoders turn
// a lone one into U+FFFD, and two readers would disagree on the text.
func (p *tapeParser) escape() bool {
	d := p.d
	if p.i+1 >= len(d) {
		return false
	}
	switch d[p.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		p.i += 2
		return true
	case 'u':
		u, ok := hex4(d, p.i+2)
		if !ok {
			return false
		}
		p.i += 6
		switch {
		case u >= 0xDC00 && u <= 0xDFFF:
			return false
		case u >= 0xD800 && u <= 0xDBFF:
			if p.i+1 >= len(d) || d[p.i] != '\\' || d[p.i+1] != 'u' {
				return false
			}
			lo, ok := hex4(d, p.i+2)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return false
			}
			p.i += 6
		}
		return true
	}
	return false
}

func hex4(d []byte, i int) (rune, bool) {
	if i+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// number consumes -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *tapeParser) number() bool {
	d := p.d
	if d[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(d) && d[p.i] >= '0' && d[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	intStart := p.i
	switch n := digits(); {
	case n == 0:
		return false
	case n > 1 && d[intStart] == '0':
		return false
	}
	if p.i < len(d) && d[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return false
		}
	}
	if p.i < len(d) && (d[p.i] == 'e' || d[p.i] == 'E') {
		p.i++
		if p.i < len(d) && (d[p.i] == '+' || d[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// appendUnescaped appends the text of a JSON string's raw bytes (between
// its quotes, already validated by the tape) to dst.
func appendUnescaped(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			j := bytes.IndexByte(raw[i:], '\\')
			if j < 0 {
				j = len(raw)
			} else {
				j += i
			}
			dst = append(dst, raw[i:j]...)
			i = j
			continue
		}
		switch raw[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			u, _ := hex4(raw, i+2)
			if u >= 0xD800 && u <= 0xDBFF {
				lo, _ := hex4(raw, i+8)
				u = 0x10000 + (u-0xD800)<<10 + (lo - 0xDC00)
				i += 6
			}
			dst = utf8.AppendRune(dst, u)
			i += 6
			continue
		default: // '"', '\\', '/'
			dst = append(dst, raw[i+1])
		}
		i += 2
	}
	return dst
}

// parseNumber reads a number the tape validated. Integers of up to 15
// digits, the common case, are read without strconv.
func parseNumber(b []byte) float64 {
	neg := len(b) > 0 && b[0] == '-'
	digits := b
	if neg {
		digits = b[1:]
	}
	if len(digits) <= 15 {
		var n int64
		plain := true
		for _, c := range digits {
			if c < '0' || c > '9' {
				plain = false
				break
			}
			n = n*10 + int64(c-'0')
		}
		if plain {
			if neg {
				return -float64(n)
			}
			return float64(n)
		}
	}
	// Out of range, ParseFloat returns ±Inf, which compares as the size it
	// stands for.
	f, _ := strconv.ParseFloat(string(b), 64)
	return f
}
