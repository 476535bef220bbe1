package bedrocktest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
)

// A script file answers a conversation's n-th model call with its n-th
// turn, fills the run's matter where it says {{matter}}, and a conversation
// past its last turn is refused loudly.
func TestParseScript(t *testing.T) {
	s, err := bedrocktest.ParseScript([]byte(`{"turns":[
		{"text":"Searching.","tool_uses":[{"name":"dms_search","input":{"matter":"{{matter}}","query":"deposition"}}]},
		{"text":"Done."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	const matter = "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"
	first := bedrocktest.Conversation{System: []string{"You help.\nMatter: " + matter},
		Messages: []bedrocktest.Message{{Role: "user"}}}
	if !s.Rules[0].When(first) || s.Rules[1].When(first) {
		t.Fatal("the first model call is not the first turn's")
	}
	in := s.Rules[0].Reply.ToolUses[0].InputFunc(first)
	var got map[string]string
	if json.Unmarshal(in, &got) != nil || got["matter"] != matter || got["query"] != "deposition" {
		t.Fatalf("input %s", in)
	}
	second := first
	second.Messages = append(second.Messages, bedrocktest.Message{Role: "assistant"}, bedrocktest.Message{Role: "user"})
	if s.Rules[0].When(second) || !s.Rules[1].When(second) || s.Rules[1].Reply.Text != "Done." {
		t.Fatal("the second model call is not the second turn's")
	}
	third := second
	third.Messages = append(third.Messages, bedrocktest.Message{Role: "assistant"}, bedrocktest.Message{Role: "user"})
	for _, r := range s.Rules {
		if r.When(third) {
			t.Fatalf("a conversation past the script's turns matched %s", r.Name)
		}
	}
	for _, bad := range []string{`{"turns":[]}`, `{"turns":[{}]}`, `{"turns":[{"tool_uses":[{"name":"x","input":[]}]}]}`,
		`{"turns":[{"text":"a","extra":1}]}`, `{"turns":[{"tool_uses":[{"input":{}}]}]}`} {
		if _, err := bedrocktest.ParseScript([]byte(bad)); err == nil || !strings.Contains(err.Error(), "model script") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
