package contracts

import "testing"

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"Motion to Compel":             "Motion to Compel",
		"Motion\u202eexe.fdp":          `Motion\u202Eexe.fdp`,
		"a\u2066b\u2067c\u2068d\u2069": `a\u2066b\u2067c\u2068d\u2069`,
		"x\u202a\u202b\u202c\u202dy":   `x\u202A\u202B\u202C\u202Dy`,
		"lrm\u200erlm\u200falm\u061c":  `lrm\u200Erlm\u200Falm\u061C`,
		"bell\x07tab\tnl\nnul\x00":     `bell\u0007tab\u0009nl\u000Anul\u0000`,
		"del\x7fc1\u0085":              `del\u007Fc1\u0085`,
		"ls\u2028ps\u2029":             `ls\u2028ps\u2029`,
		"“quoted” é 中文 😀":              "“quoted” é 中文 😀",
		`back\slash`:                   `back\slash`,
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
