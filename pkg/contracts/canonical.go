package contracts

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/gowebpki/jcs"
)

// appendCanonical appends the RFC 8785 (JCS) form of n, a value the strict
// scanner parsed out of data, to buf. It writes from the parse tree the
// scanner already built, so a line is parsed once rather than once by the
// scanner and again by a JCS library; the output is checked against
// gowebpki/jcs, the reference, by TestAppendCanonicalMatchesJCS and
// FuzzAppendCanonical.
//
// The scanner has already refused duplicate keys, control characters in
// strings, unpaired surrogate escapes and invalid UTF-8, so what is left is
// the JCS writing rules: members sorted by the UTF-16 code units of their
// keys, strings with only the escapes ECMAScript's JSON.stringify writes,
// numbers in ECMAScript's shortest form, no whitespace.
func appendCanonical(buf, data []byte, n *node) ([]byte, error) {
	switch n.kind {
	case '{':
		order := make([]int, len(n.keys))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return compareUTF16(n.keys[a], n.keys[b]) })
		buf = append(buf, '{')
		for j, i := range order {
			if j > 0 {
				buf = append(buf, ',')
			}
			buf = appendCanonicalString(buf, n.keys[i])
			buf = append(buf, ':')
			var err error
			if buf, err = appendCanonical(buf, data, n.vals[i]); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	case '[':
		buf = append(buf, '[')
		for j, v := range n.vals {
			if j > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = appendCanonical(buf, data, v); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	case '"':
		raw := data[n.start+1 : n.end-1]
		if !slices.Contains(raw, '\\') {
			// Without escapes the bytes are the string itself, and a JSON
			// string without escapes holds nothing JCS would escape.
			buf = append(buf, '"')
			buf = append(buf, raw...)
			return append(buf, '"'), nil
		}
		var s string
		if err := json.Unmarshal(data[n.start:n.end], &s); err != nil {
			return nil, fieldErr("", "not canonicalizable JSON (RFC 8785)")
		}
		return appendCanonicalString(buf, s), nil
	case '0':
		num := data[n.start:n.end]
		if plainInteger(num) {
			return append(buf, num...), nil
		}
		f, err := strconv.ParseFloat(string(num), 64)
		if err != nil {
			return nil, fieldErr("", "not canonicalizable JSON (RFC 8785)")
		}
		s, err := jcs.NumberToJSON(f)
		if err != nil {
			return nil, fieldErr("", "not canonicalizable JSON (RFC 8785)")
		}
		return append(buf, s...), nil
	default: // true, false, null
		return append(buf, data[n.start:n.end]...), nil
	}
}

// plainInteger reports whether num is an integer literal JCS writes as it
// is: no fraction or exponent, not -0, at most 15 digits (so a double holds
// it exactly and ECMAScript prints every digit).
func plainInteger(num []byte) bool {
	digits := num
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && (len(digits) > 1 || len(num) > 1)) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// appendCanonicalString writes s as JCS does: the two-character escapes for
// \b \t \n \f \r " and \, \u00xx for other control characters, every other
// character as its UTF-8 bytes.
func appendCanonicalString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"', '\\':
			buf = append(buf, '\\', c)
		case '\b':
			buf = append(buf, '\\', 'b')
		case '\f':
			buf = append(buf, '\\', 'f')
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\t':
			buf = append(buf, '\\', 't')
		default:
			if c < 0x20 {
				buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			} else {
				buf = append(buf, c)
			}
		}
	}
	return append(buf, '"')
}

// compareUTF16 orders keys by their UTF-16 code units, as RFC 8785 sorts
// members. UTF-8 byte order is code point order, which differs from UTF-16
// order only between supplementary characters and U+E000..U+FFFF, so keys
// without a 4-byte sequence compare as bytes.
func compareUTF16(a, b string) int {
	if !hasSupplementary(a) && !hasSupplementary(b) {
		return strings.Compare(a, b)
	}
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func hasSupplementary(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0xf0 {
			return true
		}
	}
	return false
}

// canonicalOf returns the canonical form of data, which the scanner parsed
// into root: data itself when the scanner found it already canonical.
func canonicalOf(data []byte, root *node, canonical bool) ([]byte, error) {
	if canonical {
		return slices.Clone(data), nil
	}
	return appendCanonical(make([]byte, 0, len(data)), data, root)
}
