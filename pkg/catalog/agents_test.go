package catalog_test

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
)

func TestEmbeddedAgents(t *testing.T) {
	a, err := catalog.EmbeddedAgents()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := a.Agents["matter_assistant"]
	c, _ := catalog.Embedded()
	if !ok || m.SystemPrompt == "" || m.PromptVersion == "" || len(m.Tools) != len(c.Tools) || len(a.Version) != 64 {
		t.Fatalf("agents %+v", a)
	}
	for _, name := range m.Tools {
		if _, ok := c.Tools[name]; !ok {
			t.Errorf("the matter assistant uses %s, which the embedded catalog lacks", name)
		}
	}
}

func agentsDoc(edit func(a map[string]any)) []byte {
	a := map[string]any{"system_prompt": "You help.", "prompt_version": "v1", "model_id": "m", "tools": []string{"search_documents"},
		"max_tokens": 2048, "max_turns": 8, "default_cost_cap_usd": "2.50"}
	if edit != nil {
		edit(a)
	}
	b, _ := json.Marshal(map[string]any{"agents": map[string]any{"researcher": a}})
	return b
}

func TestParseAgents(t *testing.T) {
	a, err := catalog.ParseAgents(agentsDoc(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := a.Agents["researcher"]
	if r.MaxTokens != 2048 || r.MaxTurns != 8 || r.DefaultCostCapUSD != "2.50" || r.ModelID != "m" {
		t.Fatalf("%+v", r)
	}
	// A prompt from a file: its text is the agent's, and the version
	// covers it (a changed file is a new version).
	dir := t.TempDir()
	read := func(name string) ([]byte, error) { return os.ReadFile(dir + "/" + name) }
	fromFile := agentsDoc(func(a map[string]any) { delete(a, "system_prompt"); a["system_prompt_file"] = "p.txt" })
	_ = os.WriteFile(dir+"/p.txt", []byte("You research."), 0o600)
	v1, err := catalog.ParseAgents(fromFile, read)
	if err != nil || v1.Agents["researcher"].SystemPrompt != "You research." {
		t.Fatalf("%+v %v", v1, err)
	}
	_ = os.WriteFile(dir+"/p.txt", []byte("You research carefully."), 0o600)
	if v2, _ := catalog.ParseAgents(fromFile, read); v2.Version == v1.Version {
		t.Fatal("a changed prompt file kept the version")
	}
	for name, tc := range map[string]struct {
		doc  []byte
		path string
	}{
		"both prompts":         {agentsDoc(func(a map[string]any) { a["system_prompt_file"] = "p.txt" }), "agents.researcher"},
		"no prompt":            {agentsDoc(func(a map[string]any) { delete(a, "system_prompt") }), "agents.researcher"},
		"file not read":        {fromFile, "agents.researcher.system_prompt_file"},
		"no tools":             {agentsDoc(func(a map[string]any) { a["tools"] = []string{} }), "agents.researcher.tools"},
		"a tool twice":         {agentsDoc(func(a map[string]any) { a["tools"] = []string{"a", "a"} }), "agents.researcher.tools"},
		"max tokens":           {agentsDoc(func(a map[string]any) { a["max_tokens"] = 100_000 }), "agents.researcher.max_tokens"},
		"cost cap":             {agentsDoc(func(a map[string]any) { a["default_cost_cap_usd"] = "2.5e1" }), "agents.researcher.default_cost_cap_usd"},
		"empty prompt version": {agentsDoc(func(a map[string]any) { a["prompt_version"] = "" }), "agents.researcher.prompt_version"},
		"no prompt version":    {agentsDoc(func(a map[string]any) { delete(a, "prompt_version") }), ""}, // named by pkg/contracts
	} {
		_, err := catalog.ParseAgents(tc.doc, nil)
		var ce *catalog.Error
		if tc.path == "" && err != nil {
			continue
		}
		if !errors.As(err, &ce) || ce.Path != tc.path {
			t.Errorf("%s: %v, want an error at %s", name, err, tc.path)
		}
	}
	if _, err := catalog.ParseAgents([]byte(`{"agents":{"Researcher":{"system_prompt":"x","prompt_version":"v","tools":["a"]}}}`), nil); err == nil {
		t.Error("an agent_key with capitals loaded")
	}
}
