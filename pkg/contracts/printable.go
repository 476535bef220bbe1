package contracts

import (
	"fmt"
	"strings"
	"unicode"
)

// Printable returns s with every character that could make text read other
// than it is written shown as a visible escape (\u202E): control characters
// (C0, DEL, C1), Unicode bidirectional controls (U+061C, U+200E, U+200F,
// U+202A-U+202E, U+2066-U+2069) and the line and paragraph separators. A
// summary counsel reads before signing goes through it, so a title cannot
// reorder or hide the text around it. Escapes are uppercase hex, and a
// backslash is left alone: the escapes are for reading, not for decoding.
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

func hidden(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r == 0x061C, r == 0x200E, r == 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return false
}
