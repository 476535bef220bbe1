package httpserver

import "strings"

// sfString parses a Structured Field String (RFC 9651 §4.2.5) at the start
// of in: the value and what follows it.
func sfString(in string) (value, rest string, ok bool) {
	if !strings.HasPrefix(in, `"`) {
		return "", "", false
	}
	var b strings.Builder
	for i := 1; i < len(in); i++ {
		c := in[i]
		switch {
		case c == '\\':
			if i+1 == len(in) || (in[i+1] != '"' && in[i+1] != '\\') {
				return "", "", false
			}
			i++
			b.WriteByte(in[i])
		case c == '"':
			return b.String(), in[i+1:], true
		case c < 0x20 || c > 0x7e:
			return "", "", false
		default:
			b.WriteByte(c)
		}
	}
	return "", "", false
}

// sfDictionary parses a Dictionary (RFC 9651 §4.2.2) whose members are all
// Strings without parameters, which is what Warrant-Run is; anything else
// (another item type, parameters, a duplicate key) is refused rather than
// half-read.
func sfDictionary(in string) (map[string]string, bool) {
	out := map[string]string{}
	in = strings.TrimLeft(in, " ")
	for in != "" {
		i := 0
		for i < len(in) && (in[i] >= 'a' && in[i] <= 'z' || in[i] >= '0' && in[i] <= '9' || in[i] == '_' || in[i] == '-' || in[i] == '.' || in[i] == '*') {
			i++
		}
		key := in[:i]
		if key == "" || key[0] < 'a' || key[0] > 'z' || i == len(in) || in[i] != '=' {
			return nil, false
		}
		v, rest, ok := sfString(in[i+1:])
		if !ok {
			return nil, false
		}
		if _, dup := out[key]; dup {
			return nil, false
		}
		out[key] = v
		rest = strings.TrimLeft(rest, " \t")
		if rest == "" {
			break
		}
		if rest[0] != ',' {
			return nil, false
		}
		in = strings.TrimLeft(rest[1:], " \t")
		if in == "" {
			return nil, false // a trailing comma
		}
	}
	return out, len(out) > 0
}
