package contracts

import (
	"reflect"
	"strings"
	"testing"
)

func TestParsePointer(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []PointerToken
		bad  string
	}{
		{in: "", want: nil},
		{in: "/cc/*", want: []PointerToken{{Name: "cc", Index: -1}, {Name: "*", Index: -1, Wild: true}}},
		{in: "/a~1b/~0/0/01", want: []PointerToken{{Name: "a/b", Index: -1}, {Name: "~", Index: -1}, {Name: "0", Index: 0}, {Name: "01", Index: -1}}},
		{in: "/", want: []PointerToken{{Name: "", Index: -1}}},
		{in: "cc", bad: "starts with '/'"},
		{in: "/a~2", bad: "'~' must be followed by 0 or 1"},
		{in: "/a~", bad: "'~' must be followed by 0 or 1"},
		{in: strings.Repeat("/a", MaxPointerTokens+1), bad: "at most 32 tokens"},
	} {
		got, err := ParsePointer(c.in)
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("ParsePointer(%q): %v, want an error saying %q", c.in, err, c.bad)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParsePointer(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}
