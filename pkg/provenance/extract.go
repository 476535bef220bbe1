package provenance

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// The readers below define what "appears in a text" means for each kind.
// They are deliberately simple and byte-oriented (ASCII case folding only):
// a value they cannot find is a finding with no origin, which fails closed,
// so every shortcut here can make a call wait for counsel but never lets
// one through.

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// isLocal: a character of an address's local part (RFC 5322 atext and '.').
// '%' and '!' are kept so that a source-routed address in a text is read
// whole (and so matches no bare address).
func isLocal(c byte) bool {
	if isAlnum(c) {
		return true
	}
	return strings.IndexByte("!#$%&'*+/=?^_`{|}~.-", c) >= 0
}

// isDomain: a character of a host name as written in text.
func isDomain(c byte) bool { return isAlnum(c) || c == '.' || c == '-' }

// lowerString folds ASCII case, allocating only when s has an upper-case
// letter.
func lowerString(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				b[j] = lower(b[j])
			}
			return string(b)
		}
	}
	return s
}

// validHost reports whether h (lower case, no trailing dot) is a DNS name
// of letter-digit-hyphen labels with at least one dot and a last label that
// is not all digits, or an IP address. A Unicode name must be in its xn--
// form.
func validHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	if looksLikeIP(h) {
		_, err := netip.ParseAddr(h)
		return err == nil
	}
	labels := 0
	start := 0
	lastAlpha := false
	for i := 0; i <= len(h); i++ {
		if i < len(h) && h[i] != '.' {
			c := h[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
			continue
		}
		l := h[start:i]
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		lastAlpha = false
		for j := 0; j < len(l); j++ {
			if isLetter(l[j]) {
				lastAlpha = true
				break
			}
		}
		labels++
		start = i + 1
	}
	return labels >= 2 && lastAlpha
}

// looksLikeIP: only digits and dots, or a colon (IPv6); anything else is
// read as a name, which spares netip the common case.
func looksLikeIP(h string) bool {
	digitsDots := true
	for i := 0; i < len(h); i++ {
		switch c := h[i]; {
		case c == ':':
			return true
		case c != '.' && (c < '0' || c > '9'):
			digitsDots = false
		}
	}
	return digitsDots
}

// normEmail reads a destination value as a bare address: one '@', a local
// part of atext and dots (no '%' or '!', the source routes), a valid host
// name. A display name, a list, a quoted local part, an IP literal or a
// trailing dot is not a bare address. It returns the address in lower case
// and its domain.
func normEmail(v string) (addr, domain string, ok bool) {
	at := strings.LastIndexByte(v, '@')
	if at <= 0 || at != strings.IndexByte(v, '@') || len(v) > 320 {
		return "", "", false
	}
	local := v[:at]
	if local[0] == '.' || local[len(local)-1] == '.' || strings.Contains(local, "..") {
		return "", "", false
	}
	for i := 0; i < len(local); i++ {
		if !isLocal(local[i]) || local[i] == '%' || local[i] == '!' {
			return "", "", false
		}
	}
	addr = lowerString(v)
	domain = addr[at+1:]
	if looksLikeIP(domain) || !validHost(domain) {
		return "", "", false
	}
	return addr, domain, true
}

// normHost reads a destination value as a host: lower case, without a
// trailing dot or a port.
func normHost(v string) (string, bool) {
	h := v
	if hp, err := netip.ParseAddrPort(v); err == nil {
		h = hp.Addr().String()
	} else if i := strings.LastIndexByte(v, ':'); i > 0 && strings.IndexByte(v[:i], ':') < 0 {
		// A port is a number up to 65535; anything else after the colon
		// ("443@other.example") is not a port, and the value is not a host
		// that can be read.
		if _, err := strconv.ParseUint(v[i+1:], 10, 16); err != nil {
			return "", false
		}
		h = v[:i]
	}
	h = strings.TrimSuffix(lowerString(h), ".")
	return h, validHost(h)
}

// urlHost is the host of an absolute URL as Go's net/url reads it (after
// any userinfo, without the port), in lower case and without a trailing
// dot. A URL net/url will not read (a percent-encoded host among others)
// has no host.
func urlHost(v string) (string, bool) {
	h, _, _, ok := urlHostPath(v)
	return h, ok
}

// urlHostPath is urlHost and the URL's place as it is written in a text:
// the host (with its port, unless it is the scheme's default) and the path
// as given, lower case and without a trailing slash
// ("app.box.com/folder/a"); hostLen is the length of its host part. The
// scheme, userinfo, query and fragment are not part of it. A path with a
// dot segment or an encoded dot or slash is not read: it could climb out
// of a folder counsel named.
func urlHostPath(v string) (host, place string, hostLen int, ok bool) {
	u, err := url.Parse(v)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", "", 0, false
	}
	h := strings.TrimSuffix(lowerString(u.Hostname()), ".")
	if !validHost(h) {
		return "", "", 0, false
	}
	place = h
	if p := u.Port(); p != "" && !(p == "443" && strings.EqualFold(u.Scheme, "https") || p == "80" && strings.EqualFold(u.Scheme, "http")) {
		place += ":" + p
	}
	path := lowerString(u.EscapedPath())
	if strings.Contains(path, "%2e") || strings.Contains(path, "%2f") || strings.Contains(path, "%5c") || strings.Contains(path, "\\") {
		return "", "", 0, false
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "." || seg == ".." {
			return "", "", 0, false
		}
	}
	return h, place + strings.TrimRight(path, "/"), len(place), true
}

// containsPlace reports whether lower-case text holds place (urlHostPath's)
// as a URL's host and path, not inside a longer host or path: the character
// before it does not continue a host, and after it comes the end, a
// character that does not continue a path, a query or fragment, or one
// slash that does not lead on.
func containsPlace(text, place string) bool {
	for off := 0; ; {
		i := strings.Index(text[off:], place)
		if i < 0 {
			return false
		}
		i += off
		e := i + len(place)
		before := i == 0 || !isDomain(text[i-1])
		after := true
		if e < len(text) {
			switch c := text[e]; {
			case c == '/' || c == '.': // a trailing slash, or a full stop
				after = e+1 == len(text) || !isPathChar(text[e+1]) && text[e+1] != '.'
			default:
				after = !isPathChar(c)
			}
		}
		if before && after {
			return true
		}
		off = i + 1
	}
}

// isSep: the separators an identifier may be written with. A space is one
// only between two tokens (a line break is not).
func isSep(c byte) bool {
	switch c {
	case ' ', '-', '.', '/', ':', '_':
		return true
	}
	return false
}

// normIdentifier is an identifier with its separators removed and its case
// folded. An identifier holding another character than letters, digits and
// separators cannot be traced.
func normIdentifier(v string) (string, bool) {
	b := make([]byte, 0, len(v))
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case isAlnum(c):
			b = append(b, lower(c))
		case isSep(c):
		default:
			return "", false
		}
	}
	return string(b), len(b) > 0
}

// textIndex is what one text holds, read once.
type textIndex struct {
	emails map[string]struct{}
	hosts  map[string]struct{}
	// tokens are the text's letter-digit runs in lower case; joins[i]
	// says tokens[i] and tokens[i+1] are separated by one separator
	// character, so together they may spell one identifier.
	tokens []string
	joins  []bool
	text   string // for paths, which are searched, not indexed
	lower  string // text in lower case, for URLs' places; made on first use
}

// lowerText is the text in lower case, made once.
func (ix *textIndex) lowerText() string {
	if ix.lower == "" && ix.text != "" {
		ix.lower = lowerString(ix.text)
	}
	return ix.lower
}

func indexText(s string) *textIndex {
	ix := &textIndex{emails: map[string]struct{}{}, hosts: map[string]struct{}{}, text: s}
	ix.add(s)
	return ix
}

// add reads s into ix. It may be called for several strings of one text
// (a JSON result's decoded strings).
func (ix *textIndex) add(s string) {
	// Addresses: around each '@', the longest run of address characters.
	for i := 0; i < len(s); i++ {
		if s[i] != '@' {
			continue
		}
		l := i
		for l > 0 && isLocal(s[l-1]) {
			l--
		}
		r := i + 1
		for r < len(s) && isDomain(s[r]) {
			r++
		}
		local := strings.TrimLeft(s[l:i], ".")
		dom := strings.TrimRight(s[i+1:r], ".")
		if local == "" || dom == "" {
			continue
		}
		ix.emails[lowerString(local+"@"+dom)] = struct{}{}
		// Quotes and markup are atext too, but a chat message puts them
		// around an address ('bob@x.example', `bob@x.example`,
		// **bob@x.example**): the address without them is in the text
		// as well. Only these characters are trimmed; "_bob@x.example"
		// still does not hold "bob@x.example".
		if t := strings.TrimLeft(local, "'`{|*"); t != local && t != "" {
			ix.emails[lowerString(t+"@"+dom)] = struct{}{}
		}
	}
	// Hosts: every run of host characters that is a host name or an IP
	// address (so an address's domain counts), and the host of every URL.
	for i := 0; i < len(s); {
		if !isDomain(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isDomain(s[j]) {
			j++
		}
		h := strings.Trim(lowerString(s[i:j]), ".-")
		if strings.IndexByte(h, '.') > 0 && validHost(h) {
			ix.hosts[h] = struct{}{}
		}
		i = j
	}
	for off := 0; ; {
		k := strings.Index(s[off:], "://")
		if k < 0 {
			break
		}
		k += off
		l := k
		for l > 0 && (isAlnum(s[l-1]) || s[l-1] == '+' || s[l-1] == '-' || s[l-1] == '.') {
			l--
		}
		r := k + 3
		for r < len(s) && s[r] > ' ' && strings.IndexByte("\"'<>\\`{}|^", s[r]) < 0 && s[r] < 0x7f {
			r++
		}
		if h, ok := urlHost(s[l:r]); ok {
			ix.hosts[h] = struct{}{}
		}
		off = k + 3
	}
	// Identifier tokens.
	first := true
	for i := 0; i < len(s); {
		if !isAlnum(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isAlnum(s[j]) {
			j++
		}
		if !first {
			ix.joins = append(ix.joins, i >= 1 && isSep(s[i-1]) && (i < 2 || isAlnum(s[i-2])))
		}
		// A new string of the same text never joins the last.
		if first && len(ix.tokens) > 0 {
			ix.joins = append(ix.joins, false)
		}
		first = false
		ix.tokens = append(ix.tokens, lowerString(s[i:j]))
		i = j
	}
}
