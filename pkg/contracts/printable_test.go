package contracts

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
)

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"Motion to Compel":             "Motion to Compel",
		"Motion\u202eexe.fdp":          `Motion\u202Eexe.fdp`,
		"a\u2066b\u2067c\u2068d\u2069": `a\u2066b\u2067c\u2068d\u2069`,
		"x\u202a\u202b\u202c\u202dy":   `x\u202A\u202B\u202C\u202Dy`,
		"lrm\u200erlm\u200falm\u061c":  `lrm\u200Erlm\u200Falm\u061C`,
		"bell\x07tab\tnl\nnul\x00":     `bell\u0007tab\u0009nl\u000Anul\u0000`,
		"del\x7fc1\u0085":              `del\u007Fc1\u0085`,
		"ls\u2028ps\u2029":             `ls\u2028ps\u2029`,
		"“quoted” é 中文 😀":              "“quoted” é 中文 😀",
		`back\slash`:                   `back\slash`,
		// Invisible in any text (issue 17, item 9): tag characters ("ASCII
		// smuggling"), the soft hyphen, the Mongolian vowel separator, the
		// Hangul fillers, variation selectors, zero-width characters.
		"pay\U000E0041\U000E0042\U000E007Fnow":       `pay\uE0041\uE0042\uE007Fnow`,
		"re\u00adsign":                               `re\u00ADsign`,
		"a\u180eb":                                   `a\u180Eb`,
		"\u115f\u1160\u3164\uffa0":                   `\u115F\u1160\u3164\uFFA0`,
		"ok\ufe0f\U000E0100\u180b":                   `ok\uFE0F\uE0100\u180B`,
		"zw\u200bsp\u200cnj\u200dj\u2060wj\ufeffbom": `zw\u200Bsp\u200Cnj\u200Dj\u2060wj\uFEFFbom`,
		"cgj\u034f":                                  `cgj\u034F`,
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// defaultIgnorable is the derived property Default_Ignorable_Code_Point of
// UAX #44 (DerivedCoreProperties.txt), computed from Go's tables:
// Other_Default_Ignorable_Code_Point + Cf + Variation_Selector - White_Space
// - FFF9..FFFB - 13430..1343F - Prepended_Concatenation_Mark.
func defaultIgnorable(r rune) bool {
	if !unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Cf, unicode.Variation_Selector) {
		return false
	}
	return !unicode.In(r, unicode.White_Space, unicode.Prepended_Concatenation_Mark) &&
		!(r >= 0xFFF9 && r <= 0xFFFB) && !(r >= 0x13430 && r <= 0x1343F)
}

// Every default-ignorable and every format (Cf) code point, every control
// but tab and line feed, and the line and paragraph separators are in the
// one table (Invisible, InvisibleRanges, the desk's generated script), and
// nothing else is; Printable escapes all of them, and tab and line feed.
func TestInvisibleIsTheTable(t *testing.T) {
	ranges := InvisibleRanges()
	inRanges := func(r rune) bool {
		for _, rg := range ranges {
			if r >= rg[0] && r <= rg[1] {
				return true
			}
		}
		return false
	}
	for i, rg := range ranges {
		if rg[0] > rg[1] || (i > 0 && rg[0] <= ranges[i-1][1]+1) {
			t.Fatalf("ranges %d and %d are not ordered, disjoint and apart: %v %v", i-1, i, ranges[max(i-1, 0)], rg)
		}
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		want := defaultIgnorable(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) || (unicode.Is(unicode.Cc, r) && r != '\t' && r != '\n') ||
			unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
		if got := Invisible(r); got != want || inRanges(r) != want {
			t.Fatalf("U+%04X: Invisible %v, in InvisibleRanges %v, want %v", r, got, inRanges(r), want)
		}
		if want || r == '\t' || r == '\n' {
			if p := Printable(string(r)); p != fmt.Sprintf(`\u%04X`, r) {
				t.Fatalf("Printable(U+%04X) = %q", r, p)
			}
		}
	}
	if s := Printable(strings.Repeat("ab", 3)); s != "ababab" {
		t.Fatal(s)
	}
}
