package handlers_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBodyKeysAreNotEchoed: a request body member whose key is not a short
// identifier (a 5,000-character key, a sentence of privileged text, a key
// with quotes, newlines and non-ASCII) is refused with its position, and
// neither the problem nor any logged line holds the key's text.
func TestBodyKeysAreNotEchoed(t *testing.T) {
	keys := map[string]struct{ key, marker string }{
		"5000 chars": {"LONGKEY" + strings.Repeat("a", 5000-7), "LONGKEY"},
		"privileged": {"PRIVILEGED: the client admitted backdating the merger documents", "backdating"},
		"punctuated": {"QUOTED \"key\" with spaces,\nnewlines\tand non-ASCII é 中文 \u2028 [0].$", "QUOTED"},
	}
	const good = `"agent_key":"matter_assistant","matter_id":"` + fixMatter + `"`
	s := newStack(t, stackOptions{})
	for name, k := range keys {
		kb, _ := json.Marshal(k.key)
		key := string(kb)
		for _, tc := range []struct{ name, body, detail string }{
			{"top-level unknown", `{` + good + `,"counsel_message":"hi",` + key + `:"x"}`, "field $[3]: unknown field"},
			{"top-level duplicate", `{` + key + `:1,` + key + `:2,` + good + `}`, "field $[1]: duplicate key"},
			{"unknown in history", `{` + good + `,"history":[{"role":"user","text":"hi",` + key + `:"x"}]}`, "field $.history[0][2]: unknown field"},
			{"duplicate in history", `{` + good + `,"history":[{"role":"user","text":"hi"},{` + key + `:"a",` + key + `:"b"}]}`, "field $.history[1][1]: duplicate key"},
			{"nesting under the key", `{` + good + `,` + key + `:` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`,
				"field $[2]" + strings.Repeat("[0]", 64) + ": nested deeper than 64 levels"},
			{"wrong type under the key", `{` + good + `,"history":[{"role":"user","text":"hi",` + key + `:01}]}`, "field $.history[0][2]: number with a leading zero"},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				parent := s.t
				s.t = t
				defer func() { s.t = parent }()
				logged := len(s.logs.String())
				resp := s.call(fixture(t, "invoke.json").body(tc.body))
				p := s.wantProblem(tc.name, resp, 400)
				if p.Detail != tc.detail {
					t.Errorf("detail %.200q, want %q", p.Detail, tc.detail)
				}
				l := s.logs.String()[logged:]
				if !strings.Contains(l, `"failure_kind"`) {
					t.Errorf("no failure envelope logged")
				}
				for _, m := range []string{k.marker, strings.Repeat("a", 64)} {
					if strings.Contains(resp.Body, m) {
						t.Errorf("problem echoes the key (%q): %.300s", m, resp.Body)
					}
					if strings.Contains(l, m) {
						t.Errorf("the failure log echoes the key (%q): %.300s", m, l)
					}
				}
			})
		}
	}
}
