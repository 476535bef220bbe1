package contracts

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable returns s with every character that could make text read other
// than it is written shown as a visible escape (\u202E, \uE0041): every
// Invisible character, and tab and line feed (a summary is one line). A
// summary counsel reads before signing goes through it, so a title cannot
// reorder, hide or smuggle text around it. Escapes are uppercase hex, at
// least four digits, and a backslash is left alone: the escapes are for
// reading, not for decoding.
func Printable(s string) string {
	if strings.IndexFunc(s, hidden) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if hidden(r) {
			fmt.Fprintf(&b, `\u%04X`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func hidden(r rune) bool { return r == '\t' || r == '\n' || Invisible(r) }

// invisibleTables are the Unicode sets of Invisible. Their union holds the
// derived Default_Ignorable_Code_Point of UAX #44 (Other_Default_Ignorable +
// Cf + Variation_Selector, less some Cf and white space, which Cf puts back)
// and all of Cf (format characters: bidi controls, zero-width characters,
// the soft hyphen, tag characters, U+180E).
var invisibleTables = []*unicode.RangeTable{
	unicode.Cc, unicode.Cf, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector, unicode.Zl, unicode.Zp,
}

// Invisible reports whether r is a character a reader does not see as
// itself, or that changes how the text around it reads: controls (C0 but
// tab and line feed, DEL, C1), format characters (Cf: bidi controls,
// zero-width characters, the soft hyphen, U+180E, tag characters U+E0000
// to U+E007F, "ASCII smuggling"), default-ignorable code points (Hangul
// fillers, variation selectors, combining grapheme joiner, reserved
// ignorables) and the line and paragraph separators. It is the one table
// (InvisibleRanges) that Printable and the counsel's desk escape by: the
// desk's script is generated from it (pkg/desk/static/invisible.js).
func Invisible(r rune) bool {
	if r < 0x80 {
		return r < 0x20 && r != '\t' && r != '\n' || r == 0x7F
	}
	return unicode.In(r, invisibleTables...)
}

// InvisibleRanges lists the code points Invisible reports, as inclusive
// [lo, hi] ranges, ordered, disjoint and not adjacent.
func InvisibleRanges() [][2]rune {
	var rs [][2]rune
	add := func(lo, hi, stride rune) {
		if stride == 1 {
			rs = append(rs, [2]rune{lo, hi})
			return
		}
		for r := lo; r <= hi; r += stride {
			rs = append(rs, [2]rune{r, r})
		}
	}
	for _, t := range invisibleTables {
		for _, r := range t.R16 {
			add(rune(r.Lo), rune(r.Hi), rune(r.Stride))
		}
		for _, r := range t.R32 {
			add(rune(r.Lo), rune(r.Hi), rune(r.Stride))
		}
	}
	slices.SortFunc(rs, func(a, b [2]rune) int { return int(a[0] - b[0]) })
	var out [][2]rune
	for _, r := range rs {
		if n := len(out); n > 0 && r[0] <= out[n-1][1]+1 {
			out[n-1][1] = max(out[n-1][1], r[1])
			continue
		}
		out = append(out, r)
	}
	// Tab and line feed are controls that Invisible leaves out.
	var cut [][2]rune
	for _, r := range out {
		for _, x := range []rune{'\t', '\n'} {
			if r[0] <= x && x <= r[1] {
				if r[0] < x {
					cut = append(cut, [2]rune{r[0], x - 1})
				}
				r[0] = x + 1
			}
		}
		if r[0] <= r[1] {
			cut = append(cut, r)
		}
	}
	return cut
}

// MaxDisplayName bounds a display name in bytes.
const MaxDisplayName = 200

// DisplayName returns a person's name as a token's claim gives it (name or
// e-mail), fit to show: trimmed, valid UTF-8, at most MaxDisplayName bytes,
// with no character Printable would escape. Anything else is "" (no name):
// a name is shown, never used to authorize, so a bad one is dropped, not
// refused.
func DisplayName(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > MaxDisplayName || !utf8.ValidString(s) || strings.IndexFunc(s, hidden) >= 0 {
		return ""
	}
	return s
}

func checkDisplayName(path, s string) error {
	if s != "" && DisplayName(s) != s {
		return fieldErr(path, "must be a display name: trimmed, at most 200 bytes, no invisible characters")
	}
	return nil
}
