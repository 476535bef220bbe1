package toolpolicy

import (
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
		{"4222222222222", true},              // 13-digit Visa
		{"4111 1111 1111 1111 2027", true},   // run into another group
		{"ref 12 4111 1111 1111 1111", true}, // after another group
		{"x4111111111111111y", true},         // letters do not hide it
		{"4111111111111112", false},          // Luhn fails
		{"4111-1111 1111-1111", false},       // mixed separators
		{"4111  1111  1111  1111", false},    // double spaces end the run
		{"1111111111111117", false},          // issuer digit 1 (Luhn ok)
		{"9111111111111111", false},          // issuer digit 9
		{"411111111111", false},              // 12 digits
		{"41111111111111111111", false},      // 20 digits in one group
		{"+1 415-555-0100", false},           // phone number
		{"2026-12-03", false},                // date
		{"4111.1111.1111.1111", false},       // dots are not separators
		{"", false},
	} {
		if got := containsCardNumber([]byte(tc.s)); got != tc.want {
			t.Errorf("containsCardNumber(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

// refCardNumber is containsCardNumber's definition written the slow way:
// split the text into runs of digit groups, and try every window of whole
// groups.
func refCardNumber(s string) bool {
	type group struct {
		digits string
		sep    byte // the separator before it
	}
	var runs [][]group
	var cur []group
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
		var sep byte
		if len(cur) > 0 {
			sep = s[i-1]
		}
		cur = append(cur, group{s[i:j], sep})
		i = j
		if i+1 < len(s) && (s[i] == ' ' || s[i] == '-') && isDigit(s[i+1]) {
			i++
			continue
		}
		runs, cur = append(runs, cur), nil
	}
	if len(cur) > 0 {
		runs = append(runs, cur)
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
				if len(digits) >= 13 && cardNumber([]byte(digits)) {
					return true
				}
			}
		}
	}
	return false
}

func FuzzContainsCardNumber(f *testing.F) {
	for _, s := range []string{"4111 1111 1111 1111", "1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0", "4111-1111-1111-1111-9", "37828224631000 5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := containsCardNumber([]byte(s)), refCardNumber(s); got != want {
			t.Fatalf("containsCardNumber(%q) = %v, reference %v", s, got, want)
		}
	})
}

// The detectors are specified by these RE2 patterns; the hand-written
// scanners are checked against them (on ASCII: RE2's (?i) also folds 'ſ'
// into 's' and 'K' (Kelvin) into 'k', which the scanners do not).
var (
	ssnPattern = regexp.MustCompile(`(?:^|[^0-9-])(?:00[1-9]|0[1-9][0-9]|[1-57-8][0-9]{2}|6(?:[0-57-9][0-9]|6[0-57-9]))` +
		`-(?:0[1-9]|[1-9][0-9])-(?:000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})(?:$|[^0-9-])`)
	credentialPattern = regexp.MustCompile(`(?i:\b(?:password|passwd|passphrase|passcode|pwd|client[_ -]?secret|secret[_ -]?key|` +
		`api[_ -]?key|access[_ -]?key|access[_ -]?token|auth[_ -]?token|refresh[_ -]?token)\s*[:=])\s*['"]?[^\s'"]{4,}` +
		`|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b` +
		`|-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----` +
		`|(?i:\bbearer)\s+[A-Za-z0-9._~+/-]{20,}`)
)

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
		{"000-12-3456", false},
		{"666-12-3456", false},
		{"900-12-3456", false}, // 9xx: an ITIN, not an SSN
		{"123-00-6789", false},
		{"123-45-0000", false},
		{"1123-45-6789", false},
		{"123-45-67890", false},
		{"123-45-6789-1", false},
		{"9-123-45-6789", false},
		{"123456789", false},
		{"123 45 6789", false},
		{"12-345-6789", false},
		{"", false},
	} {
		if got := containsSSN([]byte(tc.s)); got != tc.want {
			t.Errorf("containsSSN(%q) = %v, want %v", tc.s, got, tc.want)
		}
		if got := ssnPattern.MatchString(tc.s); got != tc.want {
			t.Errorf("ssnPattern(%q) = %v, want %v (the table disagrees with the specification)", tc.s, got, tc.want)
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
		{"AKIAIOSFODNN7EXAMPLE", true},
		{"key ASIAIOSFODNN7EXAMPLE.", true},
		{"-----BEGIN PRIVATE KEY-----", true},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIE", true},
		{"-----BEGIN OPENSSH PRIVATE KEY-----", true},
		{"-----BEGIN PGP PRIVATE KEY BLOCK-----", true},
		{"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIx", true},
		{"bearer\tabcdefghijklmnopqrstuvwxyz", true},
		{"password: abc", false},           // value too short
		{"password: 'ab'", false},          // value too short
		{"password:", false},               //
		{"password protected file", false}, // no assignment
		{"mypassword=abcd", false},         // not a word start
		{"the passwords = abcd", false},    // another word
		{"apiXkey=abcd", false},            //
		{"api__key=abcd", false},           // one separator at most
		{"AKIAIOSFODNN7EXAMPL", false},     // 15 characters
		{"AKIAIOSFODNN7EXAMPLEX", false},   // 17: not a whole word
		{"XAKIAIOSFODNN7EXAMPLE", false},   //
		{"akiaiosfodnn7example", false},    // key ids are upper case
		{"-----BEGIN PUBLIC KEY-----", false},
		{"-----BEGIN CERTIFICATE-----", false},
		{"-----BEGIN rsa PRIVATE KEY-----", false},
		{"bearer of bad news", false},
		{"the bearer bond abcdefghijklmnopqrst", false}, // "bond" is followed by a space
		{"Trade secret: the formula", false},
		{"", false},
	} {
		if got := containsCredential([]byte(tc.s)); got != tc.want {
			t.Errorf("containsCredential(%q) = %v, want %v", tc.s, got, tc.want)
		}
		if got := credentialPattern.MatchString(tc.s); got != tc.want {
			t.Errorf("credentialPattern(%q) = %v, want %v (the table disagrees with the specification)", tc.s, got, tc.want)
		}
	}
}

func asciiOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func FuzzDetectorsMatchPatterns(f *testing.F) {
	for _, s := range []string{"password=hunter22", "api key : 'abcd'", "AKIAIOSFODNN7EXAMPLE", "-----BEGIN A B PRIVATE KEY-----",
		"Bearer abcdefghijklmnopqrstu", "123-45-6789", "x 665-01-0001 y", "pass-word=abcd", "client secret:=ab"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !asciiOnly(s) {
			return
		}
		if got, want := containsSSN([]byte(s)), ssnPattern.MatchString(s); got != want {
			t.Fatalf("containsSSN(%q) = %v, pattern %v", s, got, want)
		}
		if got, want := containsCredential([]byte(s)), credentialPattern.MatchString(s); got != want {
			t.Fatalf("containsCredential(%q) = %v, pattern %v", s, got, want)
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

// The strings are made of the pieces the detectors look for, cut and
// joined anywhere (a fixed seed: the same strings every run).
func TestJoinedStringsDetectAsEach(t *testing.T) {
	pieces := []string{"password", "PWD", "api", "_", "key", "Bearer", ":", "=", " ", "\t", "\n", `"`, `'`, "hunter22", "ab", "é",
		"123", "-", "45", "6789", "4111", "1111", "5555", "4444", "AKIA", "IOSFODNN7EXAMPLE", "-----BEGIN ", "RSA ", "PRIVATE KEY", "-----",
		"x", "0", "9", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0"}
	rng := rand.New(rand.NewPCG(17, 6))
	for range 50000 {
		strs := make([]string, 1+rng.IntN(3))
		for i := range strs {
			var b strings.Builder
			for range rng.IntN(7) {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			strs[i] = b.String()
		}
		joinedDetectsAsEach(t, strs)
	}
}

func FuzzJoinedStringsDetectAsEach(f *testing.F) {
	f.Add("password:", "abcd", "")
	f.Add("123-45-", "6789", "4111 1111 1111 1111")
	f.Add("bearer ", "abcdefghijklmnopqrstuvwxyz", "-----BEGIN ")
	f.Add(`api key: '`, "AKIAIOSFODNN7EXAMPL", "E")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		joinedDetectsAsEach(t, []string{a, b, c})
	})
}
