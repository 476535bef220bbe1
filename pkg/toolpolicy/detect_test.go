package toolpolicy

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

func TestAddressDomain(t *testing.T) {
	for _, tc := range []struct {
		addr, dom string // dom "" means malformed
	}{
		{"a@client.com", "client.com"},
		{"A.B+tag@Client.COM", "client.com"},
		{"x@a.client.com", "a.client.com"},
		{"x@localhost", "localhost"},
		{"x@xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"o'brien@firm.com", "firm.com"},
		{"x@1-2.com", "1-2.com"},
		{"", ""},
		{"client.com", ""},
		{"@client.com", ""},
		{"a@", ""},
		{"a@client.com.", ""},
		{"a@.client.com", ""},
		{"a@client..com", ""},
		{"a@-client.com", ""},
		{"a@client-.com", ""},
		{"a@client.com-", ""},
		{"a@cli_ent.com", ""},
		{"a@[127.0.0.1]", ""},
		{"a@büro.de", ""},
		{"a@firm\u212A.com", ""}, // KELVIN SIGN is not a 'k'
		{"a b@client.com", ""},
		{"Bob <bob@client.com>", ""},
		{"a@client.com, b@evil.com", ""},
		{"a@evil.com,b@client.com", ""},
		{`"a@b"@client.com`, ""},
		{"a@b@client.com", ""},
		{"a\n@client.com", ""},
		// Source routes: a relay that honours them sends the mail on to the
		// host in the local part, not to the domain after '@'.
		{"x%evil.example@client.com", ""},
		{"evil.example!x@client.com", ""},
		{"x%@client.com", ""},
		{"!@client.com", ""},
		{strings.Repeat("a", 65) + "@client.com", ""},
		{"a@" + strings.Repeat("b", 64) + ".com", ""},
		{"a@" + strings.Repeat("b.", 127) + "c", ""},
	} {
		dom, ok := addressDomain([]byte(tc.addr), nil)
		if ok != (tc.dom != "") || string(dom) != tc.dom {
			t.Errorf("addressDomain(%q) = %q, %v; want %q", tc.addr, dom, ok, tc.dom)
		}
	}
}

func TestValidDomain(t *testing.T) {
	for d, want := range map[string]bool{
		"client.com": true, "a.b-c.d": true, "x": true,
		"Client.com": false, "": false, "client.com.": false, "@client.com": false, " client.com": false, "a@b.c": false,
	} {
		if got := validDomain(d); got != want {
			t.Errorf("validDomain(%q) = %v", d, got)
		}
	}
}

func TestContainsCardNumber(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"4111111111111111", true},
		{"card 4111 1111 1111 1111, exp 12/27", true},
		{"4111-1111-1111-1111", true},
		{"amex 3782 822463 10005", true},
		{"5555555555554444", true},
		{"6011111111111117", true},
		{"4222222222222", true},                       // 13-digit Visa
		{"4111 1111 1111 1111 2027", true},            // run into another group
		{"ref 12 4111 1111 1111 1111", true},          // after another group
		{"x4111111111111111y", true},                  // letters do not hide it
		{"2223 0031 2200 3222", true},                 // Mastercard 2-series
		{"2221000000000009", true},                    // its lowest prefix
		{"2720999999999996", true},                    // its highest
		{"4111\u20131111\u20131111\u20131111", true},  // en dashes
		{"4111\u00a01111\u00a01111\u00a01111", true},  // no-break spaces
		{"4111\u20111111-1111\u22121111", true},       // hyphens of three kinds
		{"4111\u202f1111 1111\u20071111", true},       // spaces of three kinds
		{"4111111111111112", false},                   // Luhn fails
		{"4111-1111 1111-1111", false},                // mixed separators
		{"4111\u20131111\u00a01111\u20131111", false}, // mixed, in Unicode
		{"4111  1111  1111  1111", false},             // double spaces end the run
		{"4111\u2014111111111111", false},             // an em dash is no separator
		{"1111111111111117", false},                   // issuer digit 1 (Luhn ok)
		{"9111111111111111", false},                   // issuer digit 9
		{"2220999999999997", false},                   // below the 2-series (Luhn ok)
		{"2721000000000004", false},                   // above it (Luhn ok)
		{"222100000000000", false},                    // 2-series, 15 digits (Luhn ok)
		{"411111111111", false},                       // 12 digits
		{"41111111111111111111", false},               // 20 digits in one group
		{"+1 415-555-0100", false},                    // phone number
		{"2026-12-03", false},                         // date
		{"4111.1111.1111.1111", false},                // dots are not separators
		{"", false},
	} {
		if got := containsCardNumber([]byte(tc.s)); got != tc.want {
			t.Errorf("containsCardNumber(%q) = %v, want %v", tc.s, got, tc.want)
		}
		if got := refCardNumber(tc.s); got != tc.want {
			t.Errorf("refCardNumber(%q) = %v, want %v (the table disagrees with the reference)", tc.s, got, tc.want)
		}
	}
}

// refSeps are the separators of card number groups, by kind (1 hyphens, 2
// spaces), written out apart from sepAt.
var refSeps = map[string]int{"-": 1, "\u2010": 1, "\u2011": 1, "\u2012": 1, "\u2013": 1, "\u2212": 1,
	" ": 2, "\u00a0": 2, "\u2007": 2, "\u202f": 2}

// refSepAt is the separator at s[i:], its kind and width.
func refSepAt(s string, i int) (kind, width int) {
	for sep, k := range refSeps {
		if strings.HasPrefix(s[i:], sep) {
			return k, len(sep)
		}
	}
	return 0, 0
}

// refCardNumber is containsCardNumber's definition written the slow way:
// split the text into runs of digit groups, and try every window of whole
// groups.
func refCardNumber(s string) bool {
	type group struct {
		digits string
		sep    int // the kind of separator before it
	}
	var runs [][]group
	var cur []group
	sep := 0
	i := 0
	for i < len(s) {
		if !isDigit(s[i]) {
			if len(cur) > 0 {
				runs, cur = append(runs, cur), nil
			}
			i++
			continue
		}
		j := i
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if len(cur) == 0 {
			sep = 0
		}
		cur = append(cur, group{s[i:j], sep})
		i = j
		if k, w := refSepAt(s, i); k != 0 && i+w < len(s) && isDigit(s[i+w]) {
			i, sep = i+w, k
			continue
		}
		runs, cur = append(runs, cur), nil
	}
	if len(cur) > 0 {
		runs = append(runs, cur)
	}
	issuer := func(d string) bool {
		switch {
		case d[0] >= '3' && d[0] <= '6':
			return true
		case d[0] == '2':
			return len(d) == 16 && d[:4] >= "2221" && d[:4] <= "2720"
		}
		return false
	}
	luhn := func(d string) bool {
		sum := 0
		for i := range len(d) {
			v := int(d[len(d)-1-i] - '0')
			if i%2 == 1 {
				v *= 2
				if v > 9 {
					v -= 9
				}
			}
			sum += v
		}
		return sum%10 == 0
	}
	for _, run := range runs {
		for a := range run {
			digits := ""
			for b := a; b < len(run); b++ {
				if b > a+1 && run[b].sep != run[a+1].sep {
					break
				}
				digits += run[b].digits
				if len(digits) > 19 {
					break
				}
				if len(digits) >= 13 && issuer(digits) && luhn(digits) {
					return true
				}
			}
		}
	}
	return false
}

// fuzzRunes stand, in a fuzzed string, for characters the detectors treat
// apart (Unicode separators and mask characters), so a fuzzer that mostly
// writes ASCII tries them too: each control byte below is replaced by its
// character.
var fuzzRunes = strings.NewReplacer("\x01", "\u00a0", "\x02", "\u2013", "\x03", "\u2011", "\x04", "\u202f", "\x05", "\u2022",
	"\x06", "\u2212", "\x07", "\u2007", "\x0e", "\u2014", "\x0f", "\u25cf")

func FuzzContainsCardNumber(f *testing.F) {
	for _, s := range []string{"4111 1111 1111 1111", "1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0", "4111-1111-1111-1111-9", "37828224631000 5",
		"2223\x010031\x012200\x013222", "4111\x021111\x031111-1111"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = fuzzRunes.Replace(s)
		if got, want := containsCardNumber([]byte(s)), refCardNumber(s); got != want {
			t.Fatalf("containsCardNumber(%q) = %v, reference %v", s, got, want)
		}
	})
}

// The detectors are specified by RE2 patterns, built here from their parts;
// the hand-written scanners are checked against them (on ASCII and the
// characters of fuzzRunes: RE2's (?i) also folds 'ſ' into 's' and 'K'
// (Kelvin) into 'k', which the scanners do not).
var (
	ssnSpec        = regexp.MustCompile(ssnSpecSource())
	credentialSpec = regexp.MustCompile(credentialSpecSource())
)

// noQuoteRuns is an RE2 alternation of the runs of 1 to max characters of
// class (a class without '"') and '"' in which no two quotes meet.
func noQuoteRuns(class string, max int) string {
	var words []string
	var grow func(w string, lastQuote bool)
	grow = func(w string, lastQuote bool) {
		if w != "" {
			words = append(words, w)
		}
		if strings.Count(w, "·") >= max {
			return
		}
		grow(w+class+"·", false)
		if !lastQuote {
			grow(w+`"`+"·", true)
		}
	}
	grow("", false)
	for i := range words {
		words[i] = strings.ReplaceAll(words[i], "·", "")
	}
	return "(?:" + strings.Join(words, "|") + ")"
}

func ssnSpecSource() string {
	const (
		area   = `(?:00[1-9]|0[1-9][0-9]|[1-57-8][0-9]{2}|6(?:[0-57-9][0-9]|6[0-57-9]))`
		group  = `(?:0[1-9]|[1-9][0-9])`
		serial = `(?:000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})`
		hy     = `\-\x{2010}-\x{2013}\x{2212}` // hyphens
		sp     = ` \x{00A0}\x{2007}\x{202F}`   // spaces
		jh     = hy + `./`                     // what joins digits
		jw     = jh + sp                       // ... in a number written with spaces
		gap    = `\t\n\r\f:#=,_()\[\]'` + jw   // gap characters but '"'
		kwHead = `(?:ssns?|ss|s\.s\.n|soc(?:ial)?[ ._-]{0,2}sec(?:urity)?)`
		kwRest = `(?:sns?|s|\.s\.n|oc(?:ial)?[ ._-]{0,2}sec(?:urity)?)` // kwHead after its 's'
		kwTail = `(?:[ ._-]{0,2}(?:number|num|no|nr|nbr))?`
		filler = `(?i:no|nr|nbr|num|number|is|was|are|of|his|her|their|my|your|the|its|tin|itin|card)`
	)
	left := func(j string) string { return `(?:^|[^0-9` + j + `]|(?:^|[^0-9])[` + j + `])` }
	right := func(j string) string { return `(?:$|[^0-9` + j + `]|[` + j + `](?:$|[^0-9]))` }
	h, w := `[`+hy+`]`, `[`+sp+`]`
	noW, any := `[`+hy+`.]?`, `[`+hy+sp+`.]?`
	numH := area + h + group + h + serial
	numS := area + w + group + w + serial
	numNoW := area + noW + group + noW + serial
	numW := area + `(?:` + w + group + any + `|` + noW + group + w + `)` + serial
	kw := `(?i:` + kwHead + kwTail + `)`
	// Written with a capital after a small letter ("clientSSN").
	kwStart := `(?:(?:^|[^A-Za-z])` + kw + `|[a-z]S(?i:` + kwRest + kwTail + `))`
	run := noQuoteRuns(`[`+gap+`]`, 4)
	g := `(?:` + run + `?|` + run + `(?:` + filler + run + `){1,3})`
	bare := left(jh) + numH + right(jh) + `|` + left(jw) + numS + right(jw)
	before := kwStart + g + `(?:` + numNoW + right(jh) + `|` + numW + right(jw) + `)`
	after := `(?:` + left(jh) + numNoW + `|` + left(jw) + numW + `)` + g + kw + `(?:$|[^A-Za-z])`
	return bare + `|` + before + `|` + after
}

// keyStartSpec is the RE2 of a name (lower-case ASCII, with RE2 between its
// words) at keyStart: after the start or a character that is neither a
// letter nor a digit, or with a capital after a small letter or a digit.
func keyStartSpec(name string) string {
	return `(?:(?:^|[^A-Za-z0-9])(?i:` + name + `)|[a-z0-9]` + strings.ToUpper(name[:1]) + `(?i:` + name[1:] + `))`
}

func credentialSpecSource() string {
	const (
		mask = `*xX#._\-\x{2022}\x{25CF}`
		q    = `['"]?`
		is   = `(?:\s+(?i:is))?`
		conn = `(?::=|=>|[:=])`
	)
	value := func(end string) string {
		vc, m, n := `[^\s'"`+end+`]`, `[`+mask+`]`, `[^\s'"`+end+mask+`]`
		first := `[^\s'"` + end + mask + `\[<{($]`
		return `(?:` + first + vc + `{3}|\$[^\s'"` + end + `{]` + vc + `{2}|` + m + `(?:` + n + vc + `{2}|` + m + n + vc + `|` + m + m + n + `))`
	}
	var strong []string // a value of 6 or more, a digit among the first 16
	for k := range 16 {
		strong = append(strong, fmt.Sprintf(`[^\s'"]{%d}[0-9][^\s'"]{%d}`, k, max(0, 5-k)))
	}
	strongValue := `(?:` + strings.Join(strong, "|") + `)`
	var names []string
	for _, kw := range credentialKeys {
		if kw.firsts == nil {
			names = append(names, keyStartSpec(kw.last))
		}
		for _, first := range kw.firsts {
			names = append(names, keyStartSpec(first+`[_ .-]?`+kw.last))
		}
	}
	keys := `(?:` + strings.Join(names, "|") + `)`
	forms := []string{
		keys + q + is + `\s*` + conn + `\s*` + q + value(""),
		`(?:[A-Za-z0-9][_.-](?i:secret|token)|[a-z0-9]S(?i:ecret)|[a-z0-9]T(?i:oken))` + q + is + `\s*` + conn + `\s*` + q + strongValue,
		`(?:^|[^A-Za-z0-9])(?i:secret|token)` + q + is + `\s*(?:=>|=)\s*` + q + strongValue,
		keys + `\s+(?i:is)\s+` + q + strongValue,
		keyStartSpec("authorization") + q + `\s*[:=]\s*` + q + `(?i:basic)\s+[A-Za-z0-9+/]{8}`,
		`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`,
		`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-[0-9]+:`,
		`(?i:\bbearer)\s+[A-Za-z0-9._~+/-]{20}`,
		`\b(?:gh[pousr]_[A-Za-z0-9]{36}|npm_[A-Za-z0-9]{36}|whsec_[A-Za-z0-9]{24}|[sr]k_(?:live|test)_[A-Za-z0-9]{16}|` +
			`github_pat_[A-Za-z0-9_]{22}|glpat-[A-Za-z0-9_-]{20}|xox[abprs]-[A-Za-z0-9-]{10}|` +
			`sk-(?:proj|svcacct|admin|ant)-[A-Za-z0-9_-]{20}|sk-[A-Za-z0-9]{32}|AIza[A-Za-z0-9_-]{35}|` +
			`SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16}|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8})`,
		`://[^\s/?#@:'"]+:` + value(`/?#@`) + `[^\s/?#@'"]*@`,
	}
	return strings.Join(forms, "|")
}

func TestContainsSSN(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"123-45-6789", true},
		{"SSN: 123-45-6789.", true},
		{"ssn=001-01-0001", true},
		{"(899-99-9999)", true},
		{"665-12-3456", true},
		{"667-12-3456", true},
		{"123 45 6789", true},           // spaces
		{"123\u201345\u20116789", true}, // two kinds of hyphen
		{"123\u00a045 6789", true},      // two kinds of space
		{"ssn-123-45-6789.pdf", true},   // a hyphen before, then a letter
		{"123-45-6789-final", true},     // a hyphen after, then a letter
		{"12 123-45-6789", true},        // a space does not join a hyphenated number
		{"SSN 123-45-6789 123-45-6790", true},
		{"SSN: 123456789", true},
		{"ssn123456789", true},
		{"SSN#123456789", true},
		{"S.S.N. 123456789", true},
		{"Soc. Sec. No. 123456789", true},
		{"socialSecurityNumber: 123456789", true},
		{"clientSSN=123456789", true},        // a capital after a small letter
		{"SSN is 123.45.6789", true},         // a filler word
		{"SSN/TIN: 123456789", true},         // another
		{"SSN no. is the 123456789", true},   // three
		{"123456789 (SSN)", true},            // keyword after
		{"123456789_ssn.pdf", true},          //
		{"123456789 is his SSN", true},       //
		{`{"ssn": "123456789"}`, true},       // one quote on each side
		{"ssn: 123-456789", true},            // one separator
		{"ssn: 12345 6789", true},            //
		{"SSN\n123456789", true},             //
		{"000-12-3456", false},               //
		{"666-12-3456", false},               //
		{"900-12-3456", false},               // 9xx: an ITIN, not an SSN
		{"123-00-6789", false},               //
		{"123-45-0000", false},               //
		{"1123-45-6789", false},              //
		{"123-45-67890", false},              //
		{"123-45-6789-1", false},             // a hyphen, then a digit
		{"9-123-45-6789", false},             //
		{"2026.123-45-6789", false},          // a full stop, then a digit
		{"415 123 45 6789", false},           // a space joins a spaced number
		{"123 45 6789 10", false},            //
		{"123456789", false},                 // nine digits need a keyword
		{"123.45.6789", false},               // so do full stops
		{"123-45 6789", false},               // and mixed separators
		{"12-345-6789", false},               //
		{"classn 123456789", false},          // not a word
		{"xssn 123456789", false},            //
		{"SSNx 123456789", false},            //
		{"SSN:     123456789", false},        // a gap of 6
		{"SSN requested 123456789", false},   // not a filler
		{"SSN; 123456789", false},            // ';' is not in a gap
		{`ssn""123456789`, false},            // two quotes: another string
		{"SSN is is is is 123456789", false}, // four fillers
		{"123456789 SSNs2", true},            //
		{"123456789 ssnx", false},            // the keyword must end a word
		{"", false},
	} {
		if got := containsSSN([]byte(tc.s)); got != tc.want {
			t.Errorf("containsSSN(%q) = %v, want %v", tc.s, got, tc.want)
		}
		if got := ssnSpec.MatchString(tc.s); got != tc.want {
			t.Errorf("ssnSpec(%q) = %v, want %v (the table disagrees with the specification)", tc.s, got, tc.want)
		}
	}
}

func TestContainsCredential(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"password=hunter22", true},
		{"Your Password: Tr0ub4dor&3", true},
		{"PASSWD = 'abcd'", true},
		{`api_key="sk-live-1234"`, true},
		{"API KEY: 1234abcd", true},
		{"apikey=zzzz", true},
		{"client-secret:zzzz", true},
		{"secret_key = a1b2c3", true},
		{"access token: ya29.a0Af", true},
		{"refresh_token=1//0g", true},
		{"pwd=abcd", true},
		{"passphrase: correct horse", true},
		{"DB_PASSWORD=abcd", true},                  // after '_'
		{"aws_secret_access_key=abcd", true},        //
		{"dbPassword=abcd", true},                   // a capital after a small letter
		{"secretAccessKey=abcd", true},              //
		{`"password": "abcd"`, true},                // a quote after the name
		{"password is: abcd", true},                 //
		{"PASSWORD := abcd", true},                  //
		{"passwd => abcd", true},                    //
		{"password: x9Kd", true},                    // a mask character, then others
		{"password: $ecret", true},                  // '$' not before '{'
		{"The password is Tr0ub4dor&3", true},       //
		{"password IS hunter22", true},              //
		{"JWT_SECRET=abc123", true},                 // a weak name at the end of a name
		{"csrfToken: 9f8e7d6c", true},               //
		{"?token=abc123", true},                     // alone, before '='
		{"Authorization: Basic dXNlcjpwYXNz", true}, //
		{"proxy-authorization='basic YWxhZGRpbjpvcGVu'", true},
		{"AKIAIOSFODNN7EXAMPLE", true},
		{"key ASIAIOSFODNN7EXAMPLE.", true},
		{"-----BEGIN PRIVATE KEY-----", true},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIE", true},
		{"-----BEGIN OPENSSH PRIVATE KEY-----", true},
		{"-----BEGIN PGP PRIVATE KEY BLOCK-----", true},
		{"PuTTY-User-Key-File-2: ssh-rsa", true},
		{"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIx", true},
		{"bearer\tabcdefghijklmnopqrstuvwxyz", true},
		{"ghp_" + strings.Repeat("a1", 18), true},
		{"github_pat_" + strings.Repeat("A_", 11), true},
		{"glpat-" + strings.Repeat("x-", 10), true},
		{"xoxp-0123456789", true},
		{"sk_test_" + strings.Repeat("Ab", 8), true},
		{"whsec_" + strings.Repeat("a", 24), true},
		{"sk-ant-" + strings.Repeat("a", 20), true},
		{"sk-" + strings.Repeat("A1", 16), true},
		{"AIza" + strings.Repeat("-", 35), true},
		{"npm_" + strings.Repeat("0", 36), true},
		{"SG." + strings.Repeat("a", 16) + "." + strings.Repeat("b", 16), true},
		{"eyJhbGciOiJ.eyJzdWIiOiJ", true},
		{"x-eyJhbGciOiJ.eyJzdWIiOiJ", true},
		{"https://user:pass@host", true},
		{"ftp://u:pa:ss@host", true},
		{"password: abc", false},           // value too short
		{"password: 'ab'", false},          // value too short
		{"password:", false},               //
		{"password protected file", false}, // no assignment
		{"mypassword=abcd", false},         // not the start of a name
		{"MYPASSWORD=abcd", false},         //
		{"the passwords = abcd", false},    // another word
		{"apiXkey=abcd", false},            //
		{"api__key=abcd", false},           // one separator at most
		{"password: ****", false},          // masked
		{"password: xxxxxxxx", false},      //
		{"password: ••••••", false},        //
		{"password: ••••1234", false},      // the first 4 are masks
		{"password: [REDACTED]", false},    // a placeholder
		{"password: <your password>", false},
		{"password: {{pw}}", false},
		{"password: (see above)", false},
		{"password: ${PW}", false},
		{`password""abcd`, false},               // two quotes: another string
		{"password is changed", false},          // "is" needs a digit in the value
		{"password is 12345", false},            // and 6 characters
		{"Trade secret: the formula", false},    // a weak name alone takes '='
		{"Trade secret: formula X-1000", false}, //
		{"JWT_SECRET=abcdefgh", false},          // a weak name needs a digit
		{"mysecret=abc123", false},              //
		{"Authorization: signed", false},        //
		{"Authorization: Basic rules", false},   //
		{"Basic dXNlcjpwYXNz", false},           // Basic without Authorization
		{"AKIAIOSFODNN7EXAMPL", false},          // 15 characters
		{"AKIAIOSFODNN7EXAMPLEX", false},        // 17: not a whole word
		{"XAKIAIOSFODNN7EXAMPLE", false},        //
		{"akiaiosfodnn7example", false},         // key ids are upper case
		{"-----BEGIN PUBLIC KEY-----", false},
		{"-----BEGIN CERTIFICATE-----", false},
		{"-----BEGIN rsa PRIVATE KEY-----", false},
		{"PuTTY-User-Key-File-: x", false},
		{"bearer of bad news", false},
		{"the bearer bond abcdefghijklmnopqrst", false}, // "bond" is followed by a space
		{"xghp_" + strings.Repeat("a", 36), false},      // a prefix starts a word
		{"ghp_" + strings.Repeat("a", 35), false},       //
		{"sk-contract-review-final-version-2", false},   //
		{"eyJhbGciOi.eyJzdWIiOiJ", false},               // 7 after eyJ
		{"https://user@host", false},                    // no password
		{"https://user:****@host", false},               //
		{"https://host:8443/path@x", false},             //
		{"", false},
	} {
		if got := containsCredential([]byte(tc.s)); got != tc.want {
			t.Errorf("containsCredential(%q) = %v, want %v", tc.s, got, tc.want)
		}
		if got := credentialSpec.MatchString(tc.s); got != tc.want {
			t.Errorf("credentialSpec(%q) = %v, want %v (the table disagrees with the specification)", tc.s, got, tc.want)
		}
	}
}

// specInput reports whether the specifications read s as the scanners do:
// ASCII and the characters of fuzzRunes only.
func specInput(s string) bool {
	for _, r := range s {
		if r >= 0x80 && !strings.ContainsRune("\u00a0\u2013\u2011\u202f\u2022\u2212\u2007\u2014\u25cf", r) {
			return false
		}
	}
	return true
}

func FuzzDetectorsMatchPatterns(f *testing.F) {
	for _, s := range []string{"password=hunter22", "api key : 'abcd'", "AKIAIOSFODNN7EXAMPLE", "-----BEGIN A B PRIVATE KEY-----",
		"Bearer abcdefghijklmnopqrstu", "123-45-6789", "x 665-01-0001 y", "pass-word=abcd", "client secret:=ab",
		"SSN: 123456789", "123\x0145\x016789", "Soc. Sec. No. is the 123.45.6789", "123456789 (SSN)", `"ssn": "123456789"`,
		"DB_PASSWORD=x9", "the password is Tr0ub4dor&3", "JWT_SECRET=abc123", "Authorization: Basic dXNlcjpwYXNz",
		"eyJhbGciOi.eyJzdWIiOi", "https://u:p4ss@h", "password: \x05\x05\x05\x05", "sk-ant-aaaaaaaaaaaaaaaaaaaa"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// The specifications take microseconds a byte; what the detectors
		// look at around a match is far shorter than this.
		if s = fuzzRunes.Replace(s); len(s) > 512 || !specInput(s) {
			return
		}
		if got, want := containsSSN([]byte(s)), ssnSpec.MatchString(s); got != want {
			t.Fatalf("containsSSN(%q) = %v, specification %v", s, got, want)
		}
		if got, want := containsCredential([]byte(s)), credentialSpec.MatchString(s); got != want {
			t.Fatalf("containsCredential(%q) = %v, specification %v", s, got, want)
		}
	})
}

// joinedDetectsAsEach checks what sentText relies on: joined by stringSep,
// the strings hold a card number, an SSN or a credential exactly when one
// of them does.
func joinedDetectsAsEach(t *testing.T, strs []string) {
	t.Helper()
	joined := []byte(strings.Join(strs, stringSep) + stringSep)
	for _, o := range []op{opContainsCard, opContainsSSN, opContainsCredential} {
		each := false
		for _, s := range strs {
			each = each || detect(o, []byte(s))
		}
		if got := detect(o, joined); got != each {
			t.Fatalf("detector %d on %q joined: %v, on each: %v", o, strs, got, each)
		}
	}
}

// memberDetectsNameAndValue checks the other thing sentText relies on: a
// member's name and value joined by memberSep hold whatever the name or the
// value holds.
func memberDetectsNameAndValue(t *testing.T, name, value string) {
	t.Helper()
	member := []byte(name + memberSep + value)
	for _, o := range []op{opContainsCard, opContainsSSN, opContainsCredential} {
		if (detect(o, []byte(name)) || detect(o, []byte(value))) && !detect(o, member) {
			t.Fatalf("detector %d finds something in %q or %q but not in the member %q", o, name, value, member)
		}
	}
}

// detectorPieces are what the detectors look for, cut small.
var detectorPieces = []string{"password", "PWD", "api", "_", "key", "Bearer", ":", "=", " ", "\t", "\n", `"`, `'`, "hunter22", "ab", "é",
	"123", "-", "45", "6789", "4111", "1111", "5555", "4444", "2223", "AKIA", "IOSFODNN7EXAMPLE", "-----BEGIN ", "RSA ", "PRIVATE KEY", "-----",
	"x", "0", "9", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0", "ssn", "SSN", "S.S.N.", "social security", "no", "is", ".", "(", ")", "#",
	"123456789", "\u00a0", "\u2013", "•", "*", "[", "{", "$", "ghp_", "aB3", "sk-", "://", "@", "u", "Secret", "TOKEN", "Authorization",
	"basic ", "dXNlcjpwYXNz", "PuTTY-User-Key-File-2"}

// The strings are made of detectorPieces, cut and joined anywhere (a fixed
// seed: the same strings every run).
func TestJoinedStringsDetectAsEach(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 6))
	for range 50000 {
		strs := make([]string, 1+rng.IntN(3))
		for i := range strs {
			strs[i] = randomPieces(rng)
		}
		joinedDetectsAsEach(t, strs)
	}
}

func TestMemberTextDetectsNameAndValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 2))
	for range 50000 {
		memberDetectsNameAndValue(t, randomPieces(rng), randomPieces(rng))
	}
}

func randomPieces(rng *rand.Rand) string {
	var b strings.Builder
	for range rng.IntN(7) {
		b.WriteString(detectorPieces[rng.IntN(len(detectorPieces))])
	}
	return b.String()
}

func FuzzJoinedStringsDetectAsEach(f *testing.F) {
	f.Add("password:", "abcd", "")
	f.Add("123-45-", "6789", "4111 1111 1111 1111")
	f.Add("bearer ", "abcdefghijklmnopqrstuvwxyz", "-----BEGIN ")
	f.Add(`api key: '`, "AKIAIOSFODNN7EXAMPL", "E")
	f.Add("SSN: ", "123456789", "123456789 (")
	f.Add("ssn", "\x01123 45 6789", "SSN)")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		a, b, c = fuzzRunes.Replace(a), fuzzRunes.Replace(b), fuzzRunes.Replace(c)
		joinedDetectsAsEach(t, []string{a, b, c})
		memberDetectsNameAndValue(t, a, b)
	})
}
