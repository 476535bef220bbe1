package toolpolicy

import (
	"bytes"
	"unicode/utf8"
)

// credentialKeys are the names of a secret that, assigned a value, make a
// credential: a word, or a pair of words ending with the same one, joined by
// nothing or one of '_', ' ', '.', '-' ("api key", "api_key", "apikey",
// "API-Key", "apiKey").
var credentialKeys = []struct {
	last   string
	firsts []string // none: the last word alone is the name
}{
	{"password", nil}, {"passwd", nil}, {"passphrase", nil}, {"passcode", nil}, {"pwd", nil},
	{"secret", []string{"client", "consumer", "api", "app"}},
	{"key", []string{"secret", "private", "account", "api", "access", "auth"}},
	{"token", []string{"access", "auth", "refresh", "session", "api", "bearer"}},
}

// weakCredentialKeys name a secret only as the last part of a longer name
// ("JWT_SECRET", "csrfToken") or before '=' ("?token=..."), and only with a
// value that holds a digit: "Trade secret: the formula" names none.
var weakCredentialKeys = []string{"secret", "token"}

// containsCredential reports whether s holds what looks like a credential:
//
//   - an assignment: a name of credentialKeys, starting a name (keyStart),
//     an optional quote, optionally "is", optional white space, ':', '=',
//     ":=" or "=>", optional white space, an optional quote, and a value
//     of at least 4 characters that are neither white space nor quotes, not
//     all 4 of them mask characters (* x X # . _ - • ●: "********") and not
//     opening a placeholder ('[', '<', '{', '(', "${": "[REDACTED]");
//   - the same with a weak name (weakCredentialKeys) at the end of a longer
//     name, or alone before '=' or "=>", and a value of at least 6 such
//     characters with a digit among its first 16 ("JWT_SECRET=9f8e7d...");
//   - a name of credentialKeys, white space, "is", white space, an optional
//     quote and such a value ("The password is Tr0ub4dor&3");
//   - an Authorization header with Basic credentials;
//   - an AWS access key id: AKIA or ASIA and 16 upper-case letters or
//     digits, as a whole word;
//   - a PEM private key header ("-----BEGIN ", upper-case words, "PRIVATE
//     KEY" or "PRIVATE KEY BLOCK", "-----") or a PuTTY key file's;
//   - a bearer token: the word "bearer" (any case), white space, and at
//     least 20 characters of [A-Za-z0-9._~+/-];
//   - a token in one of the published formats of GitHub, GitLab, Slack,
//     Stripe, OpenAI, Anthropic, Google, npm and SendGrid, or a JWT
//     (tokenAt);
//   - a URL with a password: "://", a user, ':', a value as above, '@'.
//
// Names and the words "is", "basic" and "bearer" are matched without ASCII
// case. It is exactly the RE2 pattern kept in the tests (credentialSpec in
// detect_test.go), written out because Go's regexp needs about 300 ns a
// byte for it. White space is space, tab, CR, LF and form feed; word
// characters are ASCII letters, digits and '_'.
func containsCredential(s []byte) bool {
	return eachByte(s, ':', func(s []byte, i int) bool { return assignmentAt(s, i) || urlPasswordAt(s, i) }) ||
		eachByte(s, '=', assignmentAt) ||
		eachByte(s, 's', isAssignmentAt) || eachByte(s, 'S', isAssignmentAt) ||
		eachByte(s, 'A', keyIDAt) ||
		eachByte(s, 'b', bearerToken) || eachByte(s, 'B', bearerToken) ||
		eachByte(s, '_', tokenAt) || eachByte(s, '-', dashAt) || eachByte(s, '.', tokenAt)
}

// Each form is found from a byte it must hold, with bytes.IndexByte
// (vectorised) instead of looking at every byte in turn, one pass a byte
// for every form that holds it; each look from such a byte is bounded or
// ends where the next one's starts, so a detector's time is linear in the
// text.

// eachByte calls at(s, i) for each i where s[i] is c, until it returns true.
func eachByte(s []byte, c byte, at func(s []byte, i int) bool) bool {
	for i := 0; ; i++ {
		k := bytes.IndexByte(s[i:], c)
		if k < 0 {
			return false
		}
		if i += k; at(s, i) {
			return true
		}
	}
}

// Kinds of name credentialKeyEndingAt finds.
const (
	keyStrong        = 1 << iota // a name of credentialKeys
	keyWeakPrefixed              // a weak name ending a longer name
	keyWeakAlone                 // a weak name on its own
	keyAuthorization             // "authorization"
)

// assignmentAt reports whether the ':' or '=' at s[i] assigns a credential.
func assignmentAt(s []byte, i int) bool {
	// The value may follow the connector's first byte or, for ":=" and
	// "=>", its second.
	v2 := -1
	if i+1 < len(s) && (s[i] == ':' && s[i+1] == '=' || s[i] == '=' && s[i+1] == '>') {
		v2 = i + 2
	}
	e := i
	for e > 0 && isSpace(s[e-1]) {
		e--
	}
	// Where the name (and its optional quote) may end: before the white
	// space, or before " is" and the white space.
	ends, n := [2]int{e, -1}, 1
	if e >= 3 && equalFoldASCIIBytes(s[e-2:e], "is") && isSpace(s[e-3]) {
		p := e - 3
		for p > 0 && isSpace(s[p-1]) {
			p--
		}
		ends[1], n = p, 2
	}
	for x, p := range ends[:n] {
		for q := 0; q <= 1; q++ {
			k := p - q
			if q == 1 && (k < 0 || s[k] != '\'' && s[k] != '"') {
				continue
			}
			kind := credentialKeyEndingAt(s, k)
			if kind&keyStrong != 0 && (credentialValue(s, i+1, false) || v2 > 0 && credentialValue(s, v2, false)) {
				return true
			}
			if (kind&keyWeakPrefixed != 0 || kind&keyWeakAlone != 0 && s[i] == '=') &&
				(strongValue(s, i+1) || v2 > 0 && strongValue(s, v2)) {
				return true
			}
			if kind&keyAuthorization != 0 && x == 0 && basicCredentials(s, i+1) {
				return true
			}
		}
	}
	return false
}

// keyStart reports whether a name may start at s[st]: at the start, after a
// character that is neither a letter nor a digit ("DB_PASSWORD",
// "x-api-key"), or, written with a capital, after a small letter or a digit
// ("dbPassword", "secretAccessKey").
func keyStart(s []byte, st int) bool {
	return st == 0 || !isAlnum(s[st-1]) || (isLower(s[st-1]) || isDigit(s[st-1])) && isUpper(s[st])
}

func pairSep(c byte) bool { return c == '_' || c == ' ' || c == '.' || c == '-' }

// credentialKeyEndingAt returns the kinds of name that end at s[k]
// (exclusive).
func credentialKeyEndingAt(s []byte, k int) (kind int) {
	if k < 3 {
		return 0
	}
	// Every name ends with one of these pairs of letters; most of what
	// comes before a ':' or '=' (a member's name in sentText) does not.
	switch uint16(s[k-2]|0x20)<<8 | uint16(s[k-1]|0x20) {
	case 'r'<<8 | 'd', 'w'<<8 | 'd', 's'<<8 | 'e', 'd'<<8 | 'e', 'e'<<8 | 't', 'e'<<8 | 'y', 'e'<<8 | 'n', 'o'<<8 | 'n':
	default:
		return 0
	}
	last := s[k-1] | 0x20
	for _, kw := range credentialKeys {
		second := k - len(kw.last)
		if kw.last[len(kw.last)-1] != last || !hasFoldAt(s, second, kw.last) {
			continue
		}
		if kw.firsts == nil {
			if keyStart(s, second) {
				kind |= keyStrong
			}
			continue
		}
		for gap := 0; gap <= 1; gap++ {
			if gap == 1 && (second < 1 || !pairSep(s[second-1])) {
				continue
			}
			for _, first := range kw.firsts {
				if st := second - gap - len(first); hasFoldAt(s, st, first) && keyStart(s, st) {
					kind |= keyStrong
				}
			}
		}
	}
	for _, kw := range weakCredentialKeys {
		st := k - len(kw)
		if kw[len(kw)-1] != last || !hasFoldAt(s, st, kw) {
			continue
		}
		if st >= 2 && (s[st-1] == '_' || s[st-1] == '.' || s[st-1] == '-') && isAlnum(s[st-2]) ||
			st >= 1 && (isLower(s[st-1]) || isDigit(s[st-1])) && isUpper(s[st]) {
			kind |= keyWeakPrefixed
		}
		if st == 0 || !isAlnum(s[st-1]) {
			kind |= keyWeakAlone
		}
	}
	if st := k - len("authorization"); last == 'n' && hasFoldAt(s, st, "authorization") && keyStart(s, st) {
		kind |= keyAuthorization
	}
	return kind
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

func isQuote(c byte) bool { return c == '\'' || c == '"' }

// isMask reports whether r is a character that stands for a hidden one.
func isMask(r rune) bool {
	switch r {
	case '*', 'x', 'X', '#', '.', '_', '-', '\u2022', '\u25CF':
		return true
	}
	return false
}

// urlValueEnd reports whether c ends a URL's password.
func urlValueEnd(c byte) bool {
	return isSpace(c) || isQuote(c) || c == '/' || c == '?' || c == '#' || c == '@'
}

// credentialValue reports whether, from s[j], come optional white space, an
// optional quote (unless url: in a URL's password) and 4 characters that are
// neither white space nor quotes (nor, in a URL, '/', '?', '#', '@'), not
// all of them mask characters, the first not '[', '<', '{', '(' or the '$'
// of "${".
func credentialValue(s []byte, j int, url bool) bool {
	if !url {
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		if j < len(s) && isQuote(s[j]) {
			j++
		}
	}
	if j < len(s) {
		switch s[j] {
		case '[', '<', '{', '(':
			return false
		case '$':
			if j+1 < len(s) && s[j+1] == '{' {
				return false
			}
		}
	}
	masked := true
	for range 4 {
		if j >= len(s) || isSpace(s[j]) || isQuote(s[j]) || url && urlValueEnd(s[j]) {
			return false
		}
		r, w := utf8.DecodeRune(s[j:])
		masked = masked && isMask(r)
		j += w
	}
	return !masked
}

// strongValue reports whether, from s[j], come optional white space, an
// optional quote and at least 6 characters that are neither white space
// nor quotes, with a digit among the first 16.
func strongValue(s []byte, j int) bool {
	for j < len(s) && isSpace(s[j]) {
		j++
	}
	if j < len(s) && isQuote(s[j]) {
		j++
	}
	n, digit := 0, false
	for n < 16 && j < len(s) && !isSpace(s[j]) && !isQuote(s[j]) {
		digit = digit || isDigit(s[j])
		_, w := utf8.DecodeRune(s[j:])
		j += w
		n++
	}
	return digit && n >= 6
}

// basicCredentials reports whether, from s[j], come optional white space,
// an optional quote, "basic", white space and 8 base64 characters.
func basicCredentials(s []byte, j int) bool {
	for j < len(s) && isSpace(s[j]) {
		j++
	}
	if j < len(s) && isQuote(s[j]) {
		j++
	}
	if !hasFoldAt(s, j, "basic") {
		return false
	}
	j += len("basic")
	if j >= len(s) || !isSpace(s[j]) {
		return false
	}
	for j < len(s) && isSpace(s[j]) {
		j++
	}
	return runOf(s, j, 8, func(c byte) bool { return isAlnum(c) || c == '+' || c == '/' })
}

// isAssignmentAt reports whether the 's' at s[i] ends an "is" between a
// name and a value: "<name> is <value>".
func isAssignmentAt(s []byte, i int) bool {
	if i < 2 || s[i-1]|0x20 != 'i' || !isSpace(s[i-2]) || i+1 >= len(s) || !isSpace(s[i+1]) {
		return false
	}
	k := i - 2
	for k > 0 && isSpace(s[k-1]) {
		k--
	}
	return credentialKeyEndingAt(s, k)&keyStrong != 0 && strongValue(s, i+1)
}

func isWordChar(c byte) bool { return isAlnum(c) || c == '_' }

// wordStart reports whether a word may start at s[i] (\b before a word char).
func wordStart(s []byte, i int) bool { return i == 0 || !isWordChar(s[i-1]) }

// runOf reports whether n bytes from s[i] are all in a class.
func runOf(s []byte, i, n int, in func(byte) bool) bool {
	if i < 0 || len(s)-i < n {
		return false
	}
	for _, c := range s[i : i+n] {
		if !in(c) {
			return false
		}
	}
	return true
}

func isBase64URL(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }

// keyIDAt reports whether an AWS access key id or a Google API key starts
// at the 'A' at s[i].
func keyIDAt(s []byte, i int) bool {
	return awsKeyID(s, i) || hasPrefix(s[i:], "AIza") && wordStart(s, i) && runOf(s, i+4, 35, isBase64URL)
}

// awsKeyID: \b(?:AKIA|ASIA)[0-9A-Z]{16}\b at s[i].
func awsKeyID(s []byte, i int) bool {
	if i+20 > len(s) || !wordStart(s, i) {
		return false
	}
	if p := string(s[i : i+4]); p != "AKIA" && p != "ASIA" {
		return false
	}
	if !runOf(s, i+4, 16, func(c byte) bool { return isUpper(c) || isDigit(c) }) {
		return false
	}
	return i+20 == len(s) || !isWordChar(s[i+20])
}

// dashAt reports whether the '-' at s[i] starts a PEM private key header,
// ends the "PuTTY" of a PuTTY key file's first line
// ("PuTTY-User-Key-File-<version>:"), or ends a token's prefix (tokenAt).
func dashAt(s []byte, i int) bool {
	if privateKeyHeader(s, i) {
		return true
	}
	const putty = "-User-Key-File-"
	if i >= 5 && string(s[i-5:i]) == "PuTTY" && hasPrefix(s[i:], putty) {
		j := i + len(putty)
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j > i+len(putty) && j < len(s) && s[j] == ':' {
			return true
		}
	}
	return tokenAt(s, i)
}

// privateKeyHeader: -----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?----- at s[i].
func privateKeyHeader(s []byte, i int) bool {
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
		for k < len(s) && (isUpper(s[k]) || isDigit(s[k])) {
			k++
		}
		if k == j || k >= len(s) || s[k] != ' ' {
			return false
		}
		j = k + 1
	}
}

func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }

// bearerToken: (?i:\bbearer)\s+[A-Za-z0-9._~+/-]{20,} at s[i].
func bearerToken(s []byte, i int) bool {
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
	return runOf(s, j, 20, func(c byte) bool {
		return isAlnum(c) || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '-'
	})
}

// tokenAt reports whether the '_', '-' or '.' at s[i] is that of a token's
// prefix, at the start of a word, followed by the token's characters:
//
//	gh[pousr]_ and 36 letters or digits (GitHub)   github_pat_ and 22 of [A-Za-z0-9_]
//	glpat- and 20 of [A-Za-z0-9_-] (GitLab)          xox[abprs]- and 10 of [A-Za-z0-9-] (Slack)
//	[sr]k_(live|test)_ and 16 letters or digits (Stripe)   whsec_ and 24 (Stripe webhooks)
//	sk-(proj|svcacct|admin|ant)- and 20 of [A-Za-z0-9_-], or sk- and 32 letters or digits (OpenAI, Anthropic)
//	npm_ and 36 letters or digits                    SG. 16 or more of [A-Za-z0-9_-] . 16 more (SendGrid)
//	a JWT: eyJ, 8 or more of [A-Za-z0-9_-], ".eyJ" and 8 more
func tokenAt(s []byte, i int) bool {
	if i < 2 {
		return false
	}
	prefix := func(p string) bool {
		st := i - len(p)
		return st >= 0 && string(s[st:i]) == p && wordStart(s, st)
	}
	// What the byte before the '_' or '-' is tells which prefix it may end.
	switch s[i] {
	case '_':
		switch s[i-1] {
		case 'p', 'o', 'u', 's', 'r':
			return i >= 3 && s[i-3] == 'g' && s[i-2] == 'h' && wordStart(s, i-3) && runOf(s, i+1, 36, isAlnum)
		case 'm':
			return prefix("npm") && runOf(s, i+1, 36, isAlnum)
		case 'c':
			return prefix("whsec") && runOf(s, i+1, 24, isAlnum)
		case 'k':
			return (prefix("sk") || prefix("rk")) && (hasPrefix(s[i+1:], "live_") || hasPrefix(s[i+1:], "test_")) &&
				runOf(s, i+6, 16, isAlnum)
		case 'b':
			return prefix("github") && hasPrefix(s[i+1:], "pat_") && runOf(s, i+5, 22, isWordChar)
		}
	case '-':
		switch s[i-1] {
		case 't':
			return prefix("glpat") && runOf(s, i+1, 20, isBase64URL)
		case 'a', 'b', 'p', 'r', 's':
			return i >= 4 && string(s[i-4:i-1]) == "xox" && wordStart(s, i-4) &&
				runOf(s, i+1, 10, func(c byte) bool { return isAlnum(c) || c == '-' })
		case 'k':
			if !prefix("sk") {
				return false
			}
			for _, p := range []string{"proj-", "svcacct-", "admin-", "ant-"} {
				if hasPrefix(s[i+1:], p) && runOf(s, i+1+len(p), 20, isBase64URL) {
					return true
				}
			}
			return runOf(s, i+1, 32, isAlnum)
		}
	case '.':
		if s[i-1] == 'G' && prefix("SG") {
			j := i + 1
			for j < len(s) && isBase64URL(s[j]) {
				j++
			}
			if j-i-1 >= 16 && j < len(s) && s[j] == '.' && runOf(s, j+1, 16, isBase64URL) {
				return true
			}
		}
		if hasPrefix(s[i+1:], "eyJ") && runOf(s, i+4, 8, isBase64URL) {
			// A JWT's header, "eyJ" and 8 or more, ends here.
			r := i
			for r > 0 && isBase64URL(s[r-1]) {
				r--
			}
			for p := r; p <= i-11; p++ {
				if string(s[p:p+3]) == "eyJ" && wordStart(s, p) {
					return true
				}
			}
		}
	}
	return false
}

// urlPasswordAt reports whether the ':' at s[i] starts "://", a user
// ([^\s/?#@:'"]+), ':', a password (credentialValue's 4 characters, then
// more of [^\s/?#@'"]) and '@'.
func urlPasswordAt(s []byte, i int) bool {
	if !hasPrefix(s[i:], "://") {
		return false
	}
	u := i + 3
	for u < len(s) && !urlValueEnd(s[u]) && s[u] != ':' {
		u++
	}
	if u == i+3 || u >= len(s) || s[u] != ':' || !credentialValue(s, u+1, true) {
		return false
	}
	p := u + 1
	for p < len(s) && !urlValueEnd(s[p]) {
		p++
	}
	return p < len(s) && s[p] == '@'
}
