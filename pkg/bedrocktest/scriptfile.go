package bedrocktest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// A script file is a scripted model written as data, so a platform team can
// rehearse a tool and its policy on the local stack without Bedrock
// (localapi -model-script FILE):
//
//	{"turns": [
//	  {"text": "Searching first.", "tool_uses": [{"name": "dms_search", "input": {"query": "deposition"}}]},
//	  {"text": "Filing it.", "tool_uses": [{"name": "dms_file", "input": {"title": "Motion"}}]},
//	  {"text": "Filed."}
//	]}
//
// Turns are matched in order within a run: the model's n-th answer of a
// conversation (counting from 0) is turns[n]. A conversation past the last
// turn gets a ValidationException: a script that stops short fails the run
// loudly. The matter of the run (the system prompt's) may be written into
// an input as the string "{{matter}}".
type scriptFile struct {
	Turns []scriptTurn `json:"turns"`
}

type scriptTurn struct {
	Text     string          `json:"text,omitempty"`
	ToolUses []scriptToolUse `json:"tool_uses,omitempty"`
}

type scriptToolUse struct {
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ParseScript reads a script file.
func ParseScript(doc []byte) (Script, error) {
	var f scriptFile
	if err := contracts.DecodeStrict(doc, &f); err != nil {
		return Script{}, fmt.Errorf("model script: %w", err)
	}
	if len(f.Turns) == 0 {
		return Script{}, fmt.Errorf("model script: field turns: at least one turn")
	}
	var s Script
	for i, t := range f.Turns {
		if t.Text == "" && len(t.ToolUses) == 0 {
			return Script{}, fmt.Errorf("model script: field turns[%d]: a turn has text, tool uses or both", i)
		}
		r := Reply{Text: t.Text}
		for j, u := range t.ToolUses {
			if u.Name == "" {
				return Script{}, fmt.Errorf("model script: field turns[%d].tool_uses[%d].name: required", i, j)
			}
			if len(u.Input) == 0 || u.Input[0] != '{' || !json.Valid(u.Input) {
				return Script{}, fmt.Errorf("model script: field turns[%d].tool_uses[%d].input: must be a JSON object", i, j)
			}
			raw := string(u.Input)
			r.ToolUses = append(r.ToolUses, ToolUse{Name: u.Name, InputFunc: func(c Conversation) json.RawMessage {
				m, _ := json.Marshal(demoMatter(c))
				return json.RawMessage(strings.ReplaceAll(raw, `"{{matter}}"`, string(m)))
			}})
		}
		n := i
		s.Rules = append(s.Rules, Rule{Name: fmt.Sprintf("turn %d", i), When: func(c Conversation) bool { return c.assistantTurns() == n }, Reply: r})
	}
	return s, nil
}
