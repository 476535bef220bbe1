package toolpolicy

import (
	"encoding/binary"
	"math/bits"
)

// addressDomain returns the domain of an e-mail address, lower-cased into
// buf, or ok=false when the address is malformed. Malformed addresses count
// as in no domain list (fail-closed), so the checks are deliberately narrow:
//
//   - the domain is what follows the last '@';
//   - the local part is 1 to 64 printable ASCII characters with none of
//     the separators a header would give a meaning to (space, '"', '(', ')',
//     ',', ':', ';', '<', '>', '@', '[', '\', ']'), so "Name <a@b.c>",
//     "a@b.c, d@e.f" and quoted local parts are malformed;
//   - nor '%' or '!': "x%evil.example@client.com" (the percent hack) and
//     "evil.example!x@client.com" (a UUCP bang path) are source routes, which
//     a relay that still honours them delivers to evil.example, so the domain
//     after '@' is not where the mail goes. RFC 5322 allows both characters;
//     refusing them costs the rare real address a warrant;
//   - the domain is 1 to 253 characters of dot-separated labels of 1 to 63
//     ASCII letters, digits and hyphens, not starting or ending with a
//     hyphen; no trailing dot, no IP literal, no Unicode (an international
//     domain must be written in its xn-- form). Letters are compared without
//     case, ASCII only: Unicode case folding would let "K" (U+212A KELVIN
//     SIGN) pass for "k".
func addressDomain(addr, buf []byte) ([]byte, bool) {
	at := -1
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == '@' {
			at = i
			break
		}
	}
	if at < 1 || at > 64 {
		return nil, false
	}
	for _, c := range addr[:at] {
		if c <= ' ' || c >= 0x7f {
			return nil, false
		}
		switch c {
		case '"', '(', ')', ',', ':', ';', '<', '>', '@', '[', '\\', ']', '%', '!':
			return nil, false
		}
	}
	dom := addr[at+1:]
	if len(dom) == 0 || len(dom) > 253 {
		return nil, false
	}
	buf = buf[:0]
	label := 0
	for i, c := range dom {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c == '-':
			if label == 0 || i+1 == len(dom) || dom[i+1] == '.' {
				return nil, false
			}
		case c == '.':
			if label == 0 {
				return nil, false
			}
			label = 0
			buf = append(buf, c)
			continue
		default:
			return nil, false
		}
		if label++; label > 63 {
			return nil, false
		}
		buf = append(buf, c)
	}
	if label == 0 {
		return nil, false // empty last label: a trailing dot
	}
	return buf, true
}

// validDomain reports whether d is a domain a rule may list: the domain
// syntax of addressDomain, already in lower case.
func validDomain(d string) bool {
	var buf [256]byte
	got, ok := addressDomain([]byte("x@"+d), buf[:0])
	return ok && string(got) == d
}

// domainListed reports whether the lower-case domain dom is in list,
// comparing exactly but for ASCII case. A sub-domain is not its parent:
// "a.client.com" is not "client.com".
func domainListed(dom []byte, list []string) bool {
	for _, l := range list {
		if equalFoldASCII(dom, l) {
			return true
		}
	}
	return false
}

func equalFoldASCII(lower []byte, s string) bool {
	if len(lower) != len(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if lower[i] != c {
			return false
		}
	}
	return true
}

// The separators a number's groups of digits may be written with. Besides
// ASCII, a word processor writes dashes and no-break spaces, and a model
// copies them: U+2010 HYPHEN, U+2011 NON-BREAKING HYPHEN, U+2012 FIGURE
// DASH, U+2013 EN DASH and U+2212 MINUS SIGN are hyphens here, U+00A0
// NO-BREAK SPACE, U+2007 FIGURE SPACE and U+202F NARROW NO-BREAK SPACE
// spaces.
const (
	sepNone byte = iota
	sepHyphen
	sepSpace
	sepDot
	sepSlash
)

// sepAt returns the separator that starts at s[i], and its width in bytes.
func sepAt(s []byte, i int) (kind byte, width int) {
	if i >= len(s) {
		return sepNone, 0
	}
	switch s[i] {
	case '-':
		return sepHyphen, 1
	case ' ':
		return sepSpace, 1
	case '.':
		return sepDot, 1
	case '/':
		return sepSlash, 1
	case 0xC2:
		if i+1 < len(s) && s[i+1] == 0xA0 {
			return sepSpace, 2
		}
	case 0xE2:
		if i+2 < len(s) {
			switch b1, b2 := s[i+1], s[i+2]; {
			case b1 == 0x80 && b2 >= 0x90 && b2 <= 0x93, b1 == 0x88 && b2 == 0x92:
				return sepHyphen, 3
			case b1 == 0x80 && (b2 == 0x87 || b2 == 0xAF):
				return sepSpace, 3
			}
		}
	}
	return sepNone, 0
}

// sepBefore returns the separator that ends just before s[i], and its width.
func sepBefore(s []byte, i int) (kind byte, width int) {
	for w := 1; w <= 3 && w <= i; w++ {
		if k, n := sepAt(s, i-w); n == w {
			return k, w
		}
	}
	return sepNone, 0
}

// containsCardNumber reports whether s holds what looks like a payment card
// number: 13 to 19 digits, written together or in groups separated by one
// hyphen or one space each (the Unicode ones of sepAt included; hyphens or
// spaces, not both, in one number), passing the Luhn check, and starting
// with 3, 4, 5 or 6 (American Express, Diners, JCB, Visa, Mastercard,
// Discover, UnionPay, Maestro) or, 16 digits long, with 2221 to 2720
// (Mastercard's 2-series). Every window of whole groups is tried, so a
// number run into other digit groups ("4111 1111 1111 1111 2027") is still
// found.
func containsCardNumber(s []byte) bool {
	const maxDigits = 19
	var (
		digits [maxDigits]byte
		starts [maxDigits + 1]int  // digit offsets in digits of the groups kept
		seps   [maxDigits + 1]byte // the kind of separator before each group
	)
	for i := nextDigit(s, 0); i < len(s); i = nextDigit(s, i) {
		// A run of digit groups. Only the groups of the last 19 digits can
		// end a window, so the run is kept as a sliding list of groups.
		nd, ng := 0, 0
		sep := sepNone
		for {
			j := i
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			glen := j - i
			if glen > maxDigits {
				// No window can hold this group; what comes after starts anew.
				nd, ng = 0, 0
			} else {
				// Drop the oldest groups until this one fits.
				for nd+glen > maxDigits {
					drop := nd // the only group
					if ng > 1 {
						drop = starts[1]
					}
					copy(digits[:], digits[drop:nd])
					nd -= drop
					copy(starts[:], starts[1:ng])
					copy(seps[:], seps[1:ng])
					ng--
					for k := 0; k < ng; k++ {
						starts[k] -= drop
					}
				}
				starts[ng] = nd
				seps[ng] = sep
				ng++
				nd += copy(digits[nd:], s[i:j])
				// Windows ending with this group.
				for k := ng - 1; k >= 0; k-- {
					n := nd - starts[k]
					if n > maxDigits {
						break
					}
					if n >= 13 && sameSeparators(seps[k+1:ng]) && cardNumber(digits[starts[k]:nd]) {
						return true
					}
				}
			}
			i = j
			k, w := sepAt(s, i)
			if (k == sepHyphen || k == sepSpace) && i+w < len(s) && isDigit(s[i+w]) {
				i, sep = i+w, k
				continue
			}
			break
		}
	}
	return false
}

// nextDigit returns the index of the first ASCII digit of s from s[i], or
// len(s). Eight bytes at a time (SWAR): each byte's high bit in m says
// whether it is above '/' and below ':' (bytes >= 0x80 are excluded, and no
// byte's sum reaches into the next, so the bits are exact).
func nextDigit(s []byte, i int) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
		low7  = 0x7f7f7f7f7f7f7f7f
		lo    = uint64('0' - 1)
		hi    = uint64('9' + 1)
	)
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64(s[i:])
		y := x & low7
		if m := (ones*(127+hi) - y) &^ x & (y + ones*(127-lo)) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(s) && !isDigit(s[i]) {
		i++
	}
	return i
}

func sameSeparators(seps []byte) bool {
	for _, c := range seps {
		if c != seps[0] {
			return false
		}
	}
	return true
}

func cardNumber(d []byte) bool {
	switch {
	case d[0] >= '3' && d[0] <= '6':
	case d[0] == '2' && len(d) == 16:
		if p := string(d[:4]); p < "2221" || p > "2720" {
			return false
		}
	default:
		return false
	}
	sum := 0
	for i := len(d) - 1; i >= 0; i-- {
		v := int(d[i] - '0')
		if (len(d)-1-i)%2 == 1 {
			if v *= 2; v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return sum%10 == 0
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }

func isLower(c byte) bool { return c >= 'a' && c <= 'z' }

func isAlnum(c byte) bool { return isLetter(c) || isDigit(c) }

// containsSSN reports whether s holds a US Social Security number: an area
// (001-899 but 666), a group (01-99) and a serial (0001-9999), as
//
//   - AAA-GG-SSSS or AAA GG SSSS, with hyphens or spaces (those of sepAt);
//   - or, next to a keyword (ssnKeyword), also with full stops, mixed
//     separators or none: "SSN: 123456789", "123.45.6789 (SSN)";
//
// and not part of a longer number: the characters next to it are not
// digits, nor a hyphen, a full stop or a slash (or, if the number is
// written with spaces, a space) followed by a digit. So "ssn-123-45-6789"
// and "123-45-6789-final" hold one, "9-123-45-6789", "2026-123-45-6789"
// and "415 123 45 6789" do not. Nine digits without a keyword are not
// matched: too often they are something else (a ZIP+4, an account, a
// routing number, a Bates number). The RE2 pattern the tests hold
// (ssnSpec in detect_test.go) says the same; Go's regexp would take
// microseconds a string for it.
func containsSSN(s []byte) bool {
	for i := nextDigit(s, 0); i < len(s); {
		end := i + 1
		for end < len(s) && isDigit(s[end]) {
			end++
		}
		if ssnAt(s, i, end) {
			return true
		}
		i = nextDigit(s, end)
	}
	return false
}

// digitRun counts the digits from s[i], up to max+1.
func digitRun(s []byte, i, max int) int {
	n := 0
	for i+n < len(s) && n <= max && isDigit(s[i+n]) {
		n++
	}
	return n
}

// ssnSep reports whether k may separate an SSN's groups.
func ssnSep(k byte) bool { return k == sepHyphen || k == sepSpace || k == sepDot }

// ssnAt reports whether an SSN starts with the run of digits s[i:e1].
func ssnAt(s []byte, i, e1 int) bool {
	var (
		area, group, serial []byte
		k1, k2              = sepNone, sepNone
		end                 int
	)
	switch e1 - i {
	case 9: // AAAGGSSSS
		area, group, serial, end = s[i:i+3], s[i+3:i+5], s[i+5:i+9], e1
	case 3: // AAA-GG-SSSS or AAA-GGSSSS
		var w1 int
		if k1, w1 = sepAt(s, e1); !ssnSep(k1) {
			return false
		}
		j := e1 + w1
		switch digitRun(s, j, 6) {
		case 2:
			var w2 int
			if k2, w2 = sepAt(s, j+2); !ssnSep(k2) {
				return false
			}
			l := j + 2 + w2
			if digitRun(s, l, 4) != 4 {
				return false
			}
			area, group, serial, end = s[i:e1], s[j:j+2], s[l:l+4], l+4
		case 6:
			area, group, serial, end = s[i:e1], s[j:j+2], s[j+2:j+6], j+6
		default:
			return false
		}
	case 5: // AAAGG-SSSS
		var w2 int
		if k2, w2 = sepAt(s, e1); !ssnSep(k2) {
			return false
		}
		l := e1 + w2
		if digitRun(s, l, 4) != 4 {
			return false
		}
		area, group, serial, end = s[i:i+3], s[i+3:e1], s[l:l+4], l+4
	default:
		return false
	}
	if a := string(area); a == "000" || a == "666" || a[0] == '9' || string(group) == "00" || string(serial) == "0000" {
		return false
	}
	// A hyphen, a full stop or a slash joins digits into a longer number;
	// so does a space in a number written with spaces.
	spaced := k1 == sepSpace || k2 == sepSpace
	joins := func(k byte) bool { return k == sepHyphen || k == sepDot || k == sepSlash || (spaced && k == sepSpace) }
	if k, w := sepBefore(s, i); joins(k) && i-w > 0 && isDigit(s[i-w-1]) {
		return false
	}
	if k, w := sepAt(s, end); joins(k) && end+w < len(s) && isDigit(s[end+w]) {
		return false
	}
	if k1 == k2 && (k1 == sepHyphen || k1 == sepSpace) {
		return true
	}
	return ssnKeywordBefore(s, i) || ssnKeywordAfter(s, end)
}

// What may stand between an SSN and its keyword: up to 4 gap characters
// (gapChar), or up to 3 filler words (ssnFillers), each with 1 to 4 gap
// characters on both sides: "SSN: ", "SSN# ", "SSN is ", "Social Security
// No.: ", "SSN/TIN: ", " (SSN)", " is his SSN".
const (
	maxGapRun  = 4
	maxFillers = 3
)

// ssnFillers are the words that may stand between an SSN and its keyword.
var ssnFillers = []string{"no", "nr", "nbr", "num", "number", "is", "was", "are", "of", "his", "her", "their", "my", "your",
	"the", "its", "tin", "itin", "card"}

// gapChar returns the width of the gap character at s[i], or 0: white
// space, the separators of sepAt and : # = , _ ( ) [ ] ' ".
func gapChar(s []byte, i int) int {
	if i >= len(s) {
		return 0
	}
	switch s[i] {
	case '\t', '\n', '\r', '\f', ':', '#', '=', ',', '_', '(', ')', '[', ']', '\'', '"':
		return 1
	}
	_, w := sepAt(s, i)
	return w
}

// gapCharBefore returns the width of the gap character that ends just
// before s[i], or 0.
func gapCharBefore(s []byte, i int) int {
	for w := 1; w <= 3 && w <= i; w++ {
		if gapChar(s, i-w) == w {
			return w
		}
	}
	return 0
}

// A run of gap characters never holds two quotes in a row: that is the
// separator sentText puts between strings, and a keyword in one string must
// not reach a number in another.

// gapRunBefore counts the gap characters before s[i] (up to maxGapRun+1)
// and returns where they start; ok is false if two quotes meet in them.
func gapRunBefore(s []byte, i int) (n, start int, ok bool) {
	start = i
	for n <= maxGapRun {
		w := gapCharBefore(s, start)
		if w == 0 {
			break
		}
		if s[start-1] == '"' && start < i && s[start] == '"' {
			return n, start, false
		}
		start -= w
		n++
	}
	return n, start, true
}

// gapRunAt counts the gap characters from s[i] (up to maxGapRun+1) and
// returns where they end; ok is false if two quotes meet in them.
func gapRunAt(s []byte, i int) (n, end int, ok bool) {
	end = i
	for n <= maxGapRun {
		w := gapChar(s, end)
		if w == 0 {
			break
		}
		if s[end] == '"' && end > i && s[end-1] == '"' {
			return n, end, false
		}
		end += w
		n++
	}
	return n, end, true
}

func isFiller(word []byte, fillers []string) bool {
	for _, f := range fillers {
		if equalFoldASCIIBytes(word, f) {
			return true
		}
	}
	return false
}

// ssnKeywordBefore reports whether a keyword, then a gap, ends at s[i].
func ssnKeywordBefore(s []byte, i int) bool {
	for fillers := 0; ; fillers++ {
		n, start, ok := gapRunBefore(s, i)
		if !ok || n > maxGapRun || (fillers > 0 && n == 0) {
			return false
		}
		if ssnKeywordEndsAt(s, start) {
			return true
		}
		if n == 0 || fillers == maxFillers {
			return false
		}
		ws := start
		for ws > 0 && isLetter(s[ws-1]) {
			ws--
		}
		if !isFiller(s[ws:start], ssnFillers) {
			return false
		}
		i = ws
	}
}

// ssnKeywordAfter reports whether a gap, then a keyword, starts at s[i].
func ssnKeywordAfter(s []byte, i int) bool {
	for fillers := 0; ; fillers++ {
		n, next, ok := gapRunAt(s, i)
		if !ok || n > maxGapRun || (fillers > 0 && n == 0) {
			return false
		}
		// What precedes next is a gap character or a digit: a keyword may
		// start there.
		for ends := ssnKeyword(s, next); ends != 0; ends &= ends - 1 {
			if e := next + bits.TrailingZeros32(ends); e == len(s) || !isLetter(s[e]) {
				return true
			}
		}
		if n == 0 || fillers == maxFillers {
			return false
		}
		we := next
		for we < len(s) && isLetter(s[we]) {
			we++
		}
		if !isFiller(s[next:we], ssnFillers) {
			return false
		}
		i = we
	}
}

// maxSSNKeyword is the longest keyword: "social" + 2 + "security" + 2 +
// "number".
const maxSSNKeyword = 24

// ssnKeyword returns the lengths of the keywords that start at s[st], as
// bits of a mask, ASCII case ignored:
//
//	ssn, ssns, ss, s.s.n, soc[ial] sec[urity] (up to two of [ ._-] between),
//	each optionally followed (up to two of [ ._-] between) by number, num,
//	no, nr or nbr.
//
// "SSN", "SS#", "S.S.N.", "Social Security No.", "soc_sec_num",
// "socialSecurityNumber".
func ssnKeyword(s []byte, st int) uint32 {
	if st >= len(s) || s[st]|0x20 != 's' {
		return 0
	}
	var core uint32
	if hasFoldAt(s, st, "ssn") {
		core |= 1 << 3
		if hasFoldAt(s, st+3, "s") {
			core |= 1 << 4
		}
	}
	if hasFoldAt(s, st, "ss") {
		core |= 1 << 2
	}
	if hasFoldAt(s, st, "s.s.n") {
		core |= 1 << 5
	}
	if hasFoldAt(s, st, "soc") {
		for _, a := range []int{3, 6} { // soc, social
			if a == 6 && !hasFoldAt(s, st+3, "ial") {
				continue
			}
			for b := st + a; b <= st+a+2; b++ {
				if b > st+a && !keywordSep(s[b-1]) {
					break
				}
				if hasFoldAt(s, b, "sec") {
					core |= 1 << (b + 3 - st)
					if hasFoldAt(s, b+3, "urity") {
						core |= 1 << (b + 8 - st)
					}
				}
			}
		}
	}
	ends := core
	for c := core; c != 0; c &= c - 1 {
		e := st + bits.TrailingZeros32(c)
		for b := e; b <= e+2 && b < len(s); b++ {
			if b > e && !keywordSep(s[b-1]) {
				break
			}
			for _, w := range []string{"number", "num", "no", "nr", "nbr"} {
				if hasFoldAt(s, b, w) {
					ends |= 1 << (b + len(w) - st)
				}
			}
		}
	}
	return ends
}

func keywordSep(c byte) bool { return c == ' ' || c == '.' || c == '_' || c == '-' }

// ssnKeywordEndsAt reports whether a keyword ends at s[e] (exclusive) and
// starts a word: after a character that is not a letter, or, written with
// a capital, after a small letter ("clientSSN").
func ssnKeywordEndsAt(s []byte, e int) bool {
	for st := e - 1; st >= 0 && st >= e-maxSSNKeyword; st-- {
		if ssnKeyword(s, st)&(1<<(e-st)) != 0 && (st == 0 || !isLetter(s[st-1]) || (isLower(s[st-1]) && isUpper(s[st]))) {
			return true
		}
	}
	return false
}

// hasFoldAt reports whether lower (lower case ASCII) is at s[i], ASCII case
// ignored.
func hasFoldAt(s []byte, i int, lower string) bool {
	return i >= 0 && len(s)-i >= len(lower) && equalFoldASCIIBytes(s[i:i+len(lower)], lower)
}

func equalFoldASCIIBytes(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
