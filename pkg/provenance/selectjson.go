package provenance

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// The input is read in place: a pointer is resolved by scanning the bytes to
// the members it names and skipping everything else, so an e-mail call's
// body is passed over, never decoded. Trace first holds the input to
// json.Valid, so the scanner below only ever sees well-formed JSON; it is
// still written to stop, never to panic, on anything else.

// selected is one value a spec selects: its concrete pointer and bytes.
type selected struct {
	pointer string
	raw     []byte
	problem string // set when the pointer crossed something it cannot read
}

var errMalformed = errors.New("malformed JSON")

func wsAt(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at d[i] ('"').
// It jumps from quote to quote (bytes.IndexByte is vectorized): a quote
// ends the string unless an odd number of backslashes precede it.
func skipString(d []byte, i int) (int, bool) {
	for i++; i < len(d); {
		q := bytes.IndexByte(d[i:], '"')
		if q < 0 {
			return 0, false
		}
		q += i
		n := 0
		for j := q - 1; j >= i && d[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, true
		}
		i = q + 1
	}
	return 0, false
}

// skipValue returns the index after the value starting at d[i].
func skipValue(d []byte, i int) (int, bool) {
	if i >= len(d) {
		return 0, false
	}
	switch d[i] {
	case '"':
		return skipString(d, i)
	case '{', '[':
		depth := 0
		for ; i < len(d); i++ {
			switch d[i] {
			case '"':
				e, ok := skipString(d, i)
				if !ok {
					return 0, false
				}
				i = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
		}
		return 0, false
	}
	start := i
	for i < len(d) {
		switch d[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i, i > start
		}
		i++
	}
	return i, i > start
}

// decodeString is the JSON string raw (with its quotes) as Go text.
func decodeString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c == '\\' {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", false
			}
			return s, true
		}
	}
	return string(body), true
}

// keyEquals compares the JSON string raw (a member name) with name.
func keyEquals(raw []byte, name string) bool {
	body := raw[1 : len(raw)-1]
	plain := true
	for _, c := range body {
		if c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return string(body) == name
	}
	s, ok := decodeString(raw)
	return ok && s == name
}

// member finds name in the object at d[i] ('{'): the start of its value, or
// -1 when absent. A name given twice is an error: which value a reader
// takes differs between readers, so neither is traced.
func member(d []byte, i int, name string) (int, error) {
	found := -1
	i = wsAt(d, i+1)
	if i < len(d) && d[i] == '}' {
		return -1, nil
	}
	for i < len(d) {
		if d[i] != '"' {
			return -1, errMalformed
		}
		ke, ok := skipString(d, i)
		if !ok {
			return -1, errMalformed
		}
		match := keyEquals(d[i:ke], name)
		i = wsAt(d, ke)
		if i >= len(d) || d[i] != ':' {
			return -1, errMalformed
		}
		i = wsAt(d, i+1)
		if match {
			if found >= 0 {
				return -1, errors.New("a member is named twice")
			}
			found = i
		}
		if i, ok = skipValue(d, i); !ok {
			return -1, errMalformed
		}
		i = wsAt(d, i)
		if i < len(d) && d[i] == ',' {
			i = wsAt(d, i+1)
			continue
		}
		if i < len(d) && d[i] == '}' {
			return found, nil
		}
		return -1, errMalformed
	}
	return -1, errMalformed
}

// elements lists the starts of the elements of the array at d[i] ('[').
func elements(d []byte, i int, out []int) ([]int, error) {
	i = wsAt(d, i+1)
	if i < len(d) && d[i] == ']' {
		return out, nil
	}
	for i < len(d) {
		out = append(out, i)
		var ok bool
		if i, ok = skipValue(d, i); !ok {
			return out, errMalformed
		}
		i = wsAt(d, i)
		if i < len(d) && d[i] == ',' {
			i = wsAt(d, i+1)
			continue
		}
		if i < len(d) && d[i] == ']' {
			return out, nil
		}
		return out, errMalformed
	}
	return out, errMalformed
}

// rootMember is a member of the input's top-level object: its name (raw,
// with quotes) and where its value starts. Trace reads the top level once
// for all of a call's pointers, which also checks it is well formed.
type rootMember struct {
	key []byte
	val int
}

// rootMembers lists the members of the object at d[i] ('{') and checks
// that nothing but whitespace follows it.
func rootMembers(d []byte, i int, out []rootMember) ([]rootMember, bool) {
	i = wsAt(d, i+1)
	if i < len(d) && d[i] == '}' {
		return out, wsAt(d, i+1) == len(d)
	}
	for i < len(d) {
		if d[i] != '"' {
			return out, false
		}
		ke, ok := skipString(d, i)
		if !ok {
			return out, false
		}
		key := d[i:ke]
		i = wsAt(d, ke)
		if i >= len(d) || d[i] != ':' {
			return out, false
		}
		i = wsAt(d, i+1)
		out = append(out, rootMember{key: key, val: i})
		if i, ok = skipValue(d, i); !ok {
			return out, false
		}
		i = wsAt(d, i)
		if i < len(d) && d[i] == ',' {
			i = wsAt(d, i+1)
			continue
		}
		return out, i < len(d) && d[i] == '}' && wsAt(d, i+1) == len(d)
	}
	return out, false
}

// selector resolves pointers in one input; path is the pointer of the
// value being visited, built in place and copied only for a selected value.
type selector struct {
	d    []byte
	root []rootMember
	path []byte
	out  []selected
}

func (s *selector) emit(raw []byte, problem string) {
	s.out = append(s.out, selected{pointer: string(s.path), raw: raw, problem: problem})
}

// walk appends the values toks selects under the value at d[i] (the root
// object when top). An absent member or an index past the end selects
// nothing (the call has no such destination); a token crossing a value of
// another type, or a member named twice, selects a problem at that point,
// which Trace reports as a finding that cannot be traced.
func (s *selector) walk(i int, top bool, toks []token) {
	d := s.d
	if len(toks) == 0 {
		e, ok := skipValue(d, i)
		if !ok {
			s.emit(nil, "the value cannot be read")
			return
		}
		s.emit(d[i:e], "")
		return
	}
	t := toks[0]
	n := len(s.path)
	defer func() { s.path = s.path[:n] }()
	switch {
	case i < len(d) && d[i] == '{' && !t.wild:
		v := -1
		var err error
		if top {
			for _, m := range s.root {
				if keyEquals(m.key, t.name) {
					if v >= 0 {
						err = errors.New("a member is named twice")
						break
					}
					v = m.val
				}
			}
		} else {
			v, err = member(d, i, t.name)
		}
		if err != nil {
			s.emit(nil, "the object cannot be read: "+err.Error())
			return
		}
		if v < 0 {
			return
		}
		s.path = append(s.path, '/')
		s.path = appendEscaped(s.path, t.name)
		s.walk(v, false, toks[1:])
	case i < len(d) && d[i] == '[' && (t.wild || t.index >= 0):
		var buf [8]int
		elems, err := elements(d, i, buf[:0])
		if err != nil {
			s.emit(nil, "the array cannot be read")
			return
		}
		if !t.wild {
			if t.index >= len(elems) {
				return
			}
			s.path = append(append(s.path, '/'), t.name...)
			s.walk(elems[t.index], false, toks[1:])
			return
		}
		for k, e := range elems {
			s.path = strconv.AppendInt(append(s.path[:n], '/'), int64(k), 10)
			s.walk(e, false, toks[1:])
		}
	default:
		s.emit(nil, "the pointer crosses a value of another type")
	}
}

// appendEscaped writes a member name back into pointer form.
func appendEscaped(b []byte, name string) []byte {
	for i := 0; i < len(name); i++ {
		switch name[i] {
		case '~':
			b = append(b, '~', '0')
		case '/':
			b = append(b, '~', '1')
		default:
			b = append(b, name[i])
		}
	}
	return b
}
