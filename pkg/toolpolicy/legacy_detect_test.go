package toolpolicy

// The detectors as they were before issue 25 (item 2), kept for
// BenchmarkDetectors to measure the new ones against in the same run.
// Nothing else may call them.

import (
	"bytes"
	"encoding/binary"
)

// legacyContainsCardNumber reports whether s holds what looks like a payment card
// number: 13 to 19 digits, written together or in groups separated by
// single spaces or by single hyphens (one kind of separator per number),
// starting with 3, 4, 5 or 6 (the issuer ranges of the card networks:
// American Express, Diners, JCB, Visa, Mastercard, Discover, UnionPay) and
// passing the Luhn check. Every window of whole groups is tried, so a number
// run into other digit groups ("4111 1111 1111 1111 2027") is still found.
func legacyContainsCardNumber(s []byte) bool {
	const maxDigits = 19
	var (
		digits [maxDigits]byte
		starts [maxDigits + 1]int // digit offsets in digits of the groups kept
		seps   [maxDigits + 1]byte
	)
	for i := 0; i < len(s); {
		if i+8 <= len(s) && !legacyDigitIn8(binary.LittleEndian.Uint64(s[i:])) {
			i += 8
			continue
		}
		if !isDigit(s[i]) {
			i++
			continue
		}
		// A run of digit groups. Only the groups of the last 19 digits can
		// end a window, so the run is kept as a sliding list of groups.
		nd, ng := 0, 0
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
				if ng > 0 {
					seps[ng] = s[i-1]
				}
				ng++
				nd += copy(digits[nd:], s[i:j])
				// Windows ending with this group.
				for k := ng - 1; k >= 0; k-- {
					n := nd - starts[k]
					if n > maxDigits {
						break
					}
					if n >= 13 && sameSeparators(seps[k+1:ng]) && legacyCardNumber(digits[starts[k]:nd]) {
						return true
					}
				}
			}
			i = j
			if i+1 < len(s) && (s[i] == ' ' || s[i] == '-') && isDigit(s[i+1]) {
				i++
				continue
			}
			break
		}
	}
	return false
}

func legacyCardNumber(d []byte) bool {
	if d[0] < '3' || d[0] > '6' {
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

// legacyContainsSSN reports whether s holds a US Social Security number written
// AAA-GG-SSSS with a valid area (001-899 but 666), group (01-99) and serial
// (0001-9999), not run into other digits or hyphens. It is exactly the RE2
// pattern
//
//	(?:^|[^0-9-])(?:00[1-9]|0[1-9][0-9]|[1-57-8][0-9]{2}|6(?:[0-57-9][0-9]|6[0-57-9]))
//	-(?:0[1-9]|[1-9][0-9])-(?:000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})(?:$|[^0-9-])
//
// written out, because Go's regexp needs about 100 ns a byte for it.
// Numbers without hyphens are not matched: nine bare digits are too often
// something else.
func legacyContainsSSN(s []byte) bool {
	for from := 3; from < len(s); {
		k := bytes.IndexByte(s[from:], '-')
		if k < 0 {
			return false
		}
		j := from + k // s[j-3:j+8] is the candidate AAA-GG-SSSS
		from = j + 1
		if j+8 > len(s) {
			return false
		}
		if (j-4 >= 0 && (isDigit(s[j-4]) || s[j-4] == '-')) || (j+8 < len(s) && (isDigit(s[j+8]) || s[j+8] == '-')) ||
			s[j+3] != '-' || !legacyAllDigits(s[j-3:j]) || !legacyAllDigits(s[j+1:j+3]) || !legacyAllDigits(s[j+4:j+8]) {
			continue
		}
		if area := string(s[j-3 : j]); area == "000" || area == "666" || area[0] == '9' ||
			string(s[j+1:j+3]) == "00" || string(s[j+4:j+8]) == "0000" {
			continue
		}
		return true
	}
	return false
}

func legacyAllDigits(b []byte) bool {
	for _, c := range b {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

// legacyCredentialKeywords are the names of a secret that, followed by ':' or
// '=' and a value, make a credential assignment. A pair is two words that
// may be joined by nothing, '_', ' ' or '-' ("api key", "api_key",
// "apikey", "api-key").
var legacyCredentialKeywords = [][2]string{
	{"password", ""}, {"passwd", ""}, {"passphrase", ""}, {"passcode", ""}, {"pwd", ""},
	{"client", "secret"}, {"secret", "key"}, {"api", "key"}, {"access", "key"},
	{"access", "token"}, {"auth", "token"}, {"refresh", "token"},
}

// legacyContainsCredential reports whether s holds what looks like a credential:
//
//   - an assignment: one of legacyCredentialKeywords (ASCII case-insensitive,
//     starting a word), optional whitespace, ':' or '=', optional
//     whitespace, an optional quote, and at least 4 characters that are
//     neither whitespace nor quotes ("password: hunter22", "API_KEY='abcd1234'");
//   - an AWS access key id: AKIA or ASIA and 16 upper-case letters or
//     digits, as a whole word;
//   - a PEM private key header: "-----BEGIN ", upper-case words, "PRIVATE
//     KEY" (or "PRIVATE KEY BLOCK"), "-----";
//   - a bearer token: the word "bearer" (any case), whitespace, and at least
//     20 characters of [A-Za-z0-9._~+/-].
//
// It is exactly the RE2 pattern kept in the tests (detect_test.go) for
// ASCII text, written out because Go's regexp needs about 300 ns a byte
// for it. Whitespace is space, tab, CR, LF and form feed; word characters
// are ASCII letters, digits and '_'.
func legacyContainsCredential(s []byte) bool {
	// Each form is found from a byte it must hold, with bytes.IndexByte and
	// bytes.Index (vectorised), instead of looking at every byte in turn.
	for _, sep := range []byte{':', '='} {
		for i := 0; ; i++ {
			k := bytes.IndexByte(s[i:], sep)
			if k < 0 {
				break
			}
			i += k
			if legacyCredentialValue(s, i+1) && legacyCredentialKeyBefore(s, i) {
				return true
			}
		}
	}
	for _, prefix := range []string{"AKIA", "ASIA"} {
		for i := 0; ; i++ {
			k := bytes.Index(s[i:], []byte(prefix))
			if k < 0 {
				break
			}
			if i += k; legacyAwsKeyID(s, i) {
				return true
			}
		}
	}
	for i := 0; ; i++ {
		k := bytes.Index(s[i:], []byte("-----BEGIN "))
		if k < 0 {
			break
		}
		if i += k; legacyPrivateKeyHeader(s, i) {
			return true
		}
	}
	for _, b := range []byte{'b', 'B'} {
		for i := 0; ; i++ {
			k := bytes.IndexByte(s[i:], b)
			if k < 0 {
				break
			}
			if i += k; legacyBearerToken(s, i) {
				return true
			}
		}
	}
	return false
}

// legacyCredentialValue reports whether, from s[i], come optional whitespace, an
// optional quote and 4 characters that are neither whitespace nor quotes.
func legacyCredentialValue(s []byte, i int) bool {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	if i < len(s) && (s[i] == '\'' || s[i] == '"') {
		i++
	}
	n := 0
	for ; i < len(s) && n < 4; i++ {
		c := s[i]
		if isSpace(c) || c == '\'' || c == '"' {
			return false
		}
		if c&0xC0 != 0x80 { // count characters, not UTF-8 continuation bytes
			n++
		}
	}
	// The 4th character may be multi-byte: its continuation bytes follow.
	return n == 4
}

// legacyCredentialKeyBefore reports whether the separator at s[sep] follows a
// credential keyword (and optional whitespace).
func legacyCredentialKeyBefore(s []byte, sep int) bool {
	end := sep
	for end > 0 && isSpace(s[end-1]) {
		end--
	}
	for _, kw := range legacyCredentialKeywords {
		if kw[1] == "" {
			if start := end - len(kw[0]); start >= 0 && equalFoldASCIIBytes(s[start:end], kw[0]) && wordStart(s, start) {
				return true
			}
			continue
		}
		second := end - len(kw[1])
		if second < 0 || !equalFoldASCIIBytes(s[second:end], kw[1]) {
			continue
		}
		for _, gap := range []int{0, 1} {
			first := second - gap - len(kw[0])
			if first < 0 {
				continue
			}
			if gap == 1 {
				if c := s[second-1]; c != '_' && c != ' ' && c != '-' {
					continue
				}
			}
			if equalFoldASCIIBytes(s[first:first+len(kw[0])], kw[0]) && wordStart(s, first) {
				return true
			}
		}
	}
	return false
}

// legacyAwsKeyID: \b(?:AKIA|ASIA)[0-9A-Z]{16}\b at s[i].
func legacyAwsKeyID(s []byte, i int) bool {
	if i+20 > len(s) || !wordStart(s, i) {
		return false
	}
	if p := string(s[i : i+4]); p != "AKIA" && p != "ASIA" {
		return false
	}
	for _, c := range s[i+4 : i+20] {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return i+20 == len(s) || !isWordChar(s[i+20])
}

// legacyPrivateKeyHeader: -----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?----- at s[i].
func legacyPrivateKeyHeader(s []byte, i int) bool {
	const begin = "-----BEGIN "
	if len(s)-i < len(begin) || string(s[i:i+len(begin)]) != begin {
		return false
	}
	j := i + len(begin)
	for {
		rest := s[j:]
		if hasPrefix(rest, "PRIVATE KEY-----") || hasPrefix(rest, "PRIVATE KEY BLOCK-----") {
			return true
		}
		k := j
		for k < len(s) && (s[k] >= 'A' && s[k] <= 'Z' || s[k] >= '0' && s[k] <= '9') {
			k++
		}
		if k == j || k >= len(s) || s[k] != ' ' {
			return false
		}
		j = k + 1
	}
}

// legacyBearerToken: (?i:\bbearer)\s+[A-Za-z0-9._~+/-]{20,} at s[i].
func legacyBearerToken(s []byte, i int) bool {
	if len(s)-i < len("bearer")+21 || !wordStart(s, i) || !equalFoldASCIIBytes(s[i:i+6], "bearer") {
		return false
	}
	j := i + 6
	if !isSpace(s[j]) {
		return false
	}
	for j < len(s) && isSpace(s[j]) {
		j++
	}
	n := 0
	for ; j < len(s) && n < 20; j++ {
		c := s[j]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '-') {
			return false
		}
		n++
	}
	return n == 20
}

func legacyDigitIn8(x uint64) bool {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
		low7  = 0x7f7f7f7f7f7f7f7f
	)
	m, n := uint64('0'-1), uint64('9'+1)
	y := x & low7
	return ((ones*(127+n)-y)&^x&(y+ones*(127-m)))&highs != 0
}
