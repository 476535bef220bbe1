package agent

import (
	"slices"
	"strings"
	"testing"
)

func TestCoalesce(t *testing.T) {
	frag := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = strings.Repeat("é", i%5) + "x"
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		in    []string
		max   int
		lines int
	}{
		{"none", nil, 16, 0},
		{"empties dropped", []string{"", "a", "", "b"}, 16, 2},
		{"few kept as they are", frag(16), 16, 16},
		{"many bounded", frag(300), 16, -1},
		{"one huge among small", append(append(frag(40), strings.Repeat("y", 10000)), frag(40)...), 16, -1},
	} {
		got := coalesce(tc.in, tc.max)
		if strings.Join(got, "") != strings.Join(tc.in, "") {
			t.Errorf("%s: joined text changed", tc.name)
		}
		if len(got) > tc.max || (tc.lines >= 0 && len(got) != tc.lines) {
			t.Errorf("%s: %d lines (want %d, at most %d)", tc.name, len(got), tc.lines, tc.max)
		}
		if slices.Contains(got, "") {
			t.Errorf("%s: an empty line", tc.name)
		}
	}
}
