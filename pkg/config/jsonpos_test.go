package config

import (
	"bytes"
	"strings"
	"testing"
)

// The corners where jsontext, as its defaults read, differs from what a
// fault should say: each is decided here.
func TestSyntaxCorners(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      *syntaxFault // nil: the document is JSON
	}{
		// jsontext reads "-01" as -0 and stops before the 1.
		{"a negative leading zero", `{"a": -01}`, &syntaxFault{at: 6, reason: leadingZero, path: "a"}},
		{"zero before a fraction", `{"a": 0.1}`, nil},
		// A byte order mark is not JSON (RFC 8259, section 8.1); the
		// loaders refuse it at byte 0 too.
		{"a byte order mark", "\ufeff{}", &syntaxFault{at: 0, reason: unexpected}},
		// Invalid UTF-8 is named at its byte, in a string or out of one,
		// and with no path (the document is read only when it is UTF-8).
		{"invalid UTF-8 between tokens", "{\"a\": 1,\xff}", &syntaxFault{at: 8, reason: notUTF8}},
		{"invalid UTF-8 in a name", "{\"a\xff\": 1}", &syntaxFault{at: 3, reason: notUTF8}},
		// An escaped lone surrogate loads (encoding/json reads it as
		// U+FFFD), so it is no fault here either.
		{"a lone surrogate escape", `{"a": "\ud800", "b": "\udc00x"}`, nil},
		// Duplicate names are the loaders' to name (duplicate key), at
		// the second occurrence: no syntax fault.
		{"a duplicate name", `{"a": 1, "a": 2}`, nil},
		{"a \\u escape cut short", `{"a": "\u12`, &syntaxFault{at: 7, reason: badUnicode, path: "a"}},
		{"a \\u escape that is not hex", `{"a": "\u12x4"}`, &syntaxFault{at: 7, reason: badUnicode, path: "a"}},
		{"a backslash at the end", `{"a": "\`, &syntaxFault{at: 6, reason: neverClosed, path: "a"}},
		{"a newline at the end of a string", "{\"a\": \"x\n", &syntaxFault{at: 6, reason: lineNotClosed, path: "a"}},
		{"a tab in a string", "{\"a\": \"x\ty\"}", &syntaxFault{at: 8, reason: controlChar, path: "a"}},
		{"a bad escape in a name", `{"a\q": 1}`, &syntaxFault{at: 3, reason: badEscape}},
		{"two documents", `{} {}`, &syntaxFault{at: 3, reason: moreAfterTheEnd}},
		{"a comma after '{'", `{, "a": 1}`, &syntaxFault{at: 1, reason: nameExpected}},
		{"a ']' after a member's comma", `{"a": 1,]`, &syntaxFault{at: 8, reason: nameExpected}},
		{"a '}' after an element's comma", `{"a": [1,}`, &syntaxFault{at: 9, reason: "a value is missing before '}'", path: "a[1]"}},
		{"a value missing", `{"a": }`, &syntaxFault{at: 6, reason: "a value is missing before '}'", path: "a"}},
		{"ends after '['", `{"a": [`, &syntaxFault{at: 7, reason: ended, path: "a[0]"}},
		{"ends after a name", `{"a"`, &syntaxFault{at: 4, reason: ended}},
		{"a comma for a colon", `{"a", 1}`, &syntaxFault{at: 4, reason: colonExpected, path: "a"}},
		{"a number cut short", `{"a": 1.`, &syntaxFault{at: 6, reason: badNumber, path: "a"}},
		{"a literal cut short", `[nul`, &syntaxFault{at: 1, reason: badLiteral, path: "[0]"}},
		{"a scalar document", ` "x" `, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := []byte(tc.doc)
			got := checkSyntax(doc)
			switch {
			case got == nil && tc.want == nil:
			case got == nil || tc.want == nil || *got != *tc.want:
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if !bytes.Equal(doc, []byte(tc.doc)) {
				t.Errorf("the document was changed: %q", doc)
			}
		})
	}
}

// Values may nest maxJSONDepth deep; one deeper is a fault where it starts,
// whatever it is.
func TestSyntaxDepth(t *testing.T) {
	deep := func(n int, inner string) []byte {
		return []byte(strings.Repeat("[", n) + inner + strings.Repeat("]", n))
	}
	if f := checkSyntax(deep(maxJSONDepth, "1")); f != nil {
		t.Errorf("%d deep: %+v", maxJSONDepth, f)
	}
	if f := checkSyntax(deep(maxJSONDepth+1, "")); f != nil {
		t.Errorf("%d deep and empty: %+v", maxJSONDepth+1, f)
	}
	path := strings.Repeat("[0]", maxJSONDepth+1)
	for _, inner := range []string{"1", "{}", "x", "}"} {
		f := checkSyntax(deep(maxJSONDepth+1, inner))
		if f == nil || f.reason != tooDeep || f.at != maxJSONDepth+1 || f.path != path {
			t.Errorf("%d deep, %q inside: %+v", maxJSONDepth+1, inner, f)
		}
	}
}

// locate finds a member by name (the first of several, or the last), by
// position, and an array's element; escaped names read as they decode.
func TestLocate(t *testing.T) {
	doc := []byte("{\"a\": {\"x\": 1},\n \"a\": {\"x\": [10, {\"y\": 2}]},\n \"\\u0062\": 3, \"free text\": 4}")
	for _, tc := range []struct {
		path string
		last bool
		at   int // -1: not found
	}{
		{"a", false, 1},
		{"a.x", false, 7},
		{"a", true, 17},
		{"a.x", true, 23},
		{"a.x[1].y", true, 34},
		{"a.x[1]", true, 33},
		{"a.x[2]", true, -1},
		{"b", false, 46},
		{"$[3]", false, 59},
		{"$[4]", false, -1},
		{"a[0]", false, 7},
		{"a.x.y", false, -1},
		{"", false, 0},
		{"a..x", false, -1},
	} {
		at, ok := locate(doc, tc.path, tc.last)
		if !ok {
			at = -1
		}
		if at != tc.at {
			t.Errorf("locate(%q, %v) = %d, want %d", tc.path, tc.last, at, tc.at)
		}
	}
}
