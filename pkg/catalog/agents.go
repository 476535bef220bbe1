package catalog

import (
	"bytes"
	_ "embed"
	"fmt"
	"regexp"
	"slices"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// Agents is a loaded agents document (AGENTS).
type Agents struct {
	// Version is the hex SHA-256 of the document's RFC 8785 form, with
	// every system_prompt_file read into it: run.started records it.
	Version string
	Agents  map[string]Agent
}

// Agent is one agent: what it is told, which model, which tools, its limits.
type Agent struct {
	Key, SystemPrompt, PromptVersion, ModelID string
	// Tools are the catalog tools the agent may use: the model is shown
	// only these, and a call to another is denied and recorded.
	Tools []string
	// MaxTokens bounds each model call's output, MaxTurns the model calls of
	// a run (0: the deployment's MAX_TOKENS, STEP_LIMIT).
	MaxTokens int32
	MaxTurns  int
	// DefaultCostCapUSD is a run's cap when the request names none (""
	// the deployment's DEFAULT_COST_CAP_USD).
	DefaultCostCapUSD string
}

type agentsDoc struct {
	Agents map[string]agentDoc `json:"agents"`
}

type agentDoc struct {
	SystemPrompt      string   `json:"system_prompt,omitempty"`
	SystemPromptFile  string   `json:"system_prompt_file,omitempty"`
	PromptVersion     string   `json:"prompt_version"`
	ModelID           string   `json:"model_id,omitempty"`
	Tools             []string `json:"tools"`
	MaxTokens         int32    `json:"max_tokens,omitempty"`
	MaxTurns          int      `json:"max_turns,omitempty"`
	DefaultCostCapUSD string   `json:"default_cost_cap_usd,omitempty"`
}

//go:embed default_agents.json
var embeddedAgents []byte

// EmbeddedAgents is the agents document built into the binary: the
// matter assistant (AGENTS unset).
func EmbeddedAgents() (*Agents, error) { return ParseAgents(embeddedAgents, nil) }

// EmbeddedAgentsDocument is the embedded agents document's bytes.
func EmbeddedAgentsDocument() []byte { return bytes.Clone(embeddedAgents) }

// Keys are the agents' keys, sorted.
func (a *Agents) Keys() []string { return sortedKeys(a.Agents) }

var agentKey = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// IsAgentKey reports whether s has the form of an agent's key (1 to 64
// lowercase letters, digits or '_', starting with a letter): a key a
// message may quote without quoting free text.
func IsAgentKey(s string) bool { return agentKey.MatchString(s) }

var usd = regexp.MustCompile(`^(0|[1-9][0-9]{0,5})(\.[0-9]{1,9})?$`)

// ParseAgents reads and validates an agents document. readFile reads a
// system_prompt_file (nil: such files are refused). Whether each agent's
// tools exist and its model has a price is for the brain to check against
// its catalog and price table.
func ParseAgents(doc []byte, readFile func(name string) ([]byte, error)) (*Agents, error) {
	var d agentsDoc
	if err := contracts.DecodeStrict(doc, &d); err != nil {
		return nil, fmt.Errorf("agents: %w", err)
	}
	if len(d.Agents) == 0 {
		return nil, invalid("agents", "at least one agent is required")
	}
	out := &Agents{Agents: map[string]Agent{}}
	versioned := agentsDoc{Agents: map[string]agentDoc{}}
	for _, key := range sortedKeys(d.Agents) {
		at := "agents." + key
		a := d.Agents[key]
		if !agentKey.MatchString(key) {
			return nil, invalid("agents", "an agent_key is 1 to 64 lowercase letters, digits or '_', starting with a letter")
		}
		switch {
		case (a.SystemPrompt == "") == (a.SystemPromptFile == ""):
			return nil, invalid(at, "exactly one of system_prompt and system_prompt_file")
		case a.SystemPromptFile != "":
			if readFile == nil {
				return nil, invalid(at+".system_prompt_file", "files are not read here; inline the prompt")
			}
			b, err := readFile(a.SystemPromptFile)
			if err != nil {
				return nil, &Error{Path: at + ".system_prompt_file", Reason: "cannot be read", Detail: err.Error()}
			}
			a.SystemPrompt, a.SystemPromptFile = string(b), ""
		}
		if len(a.SystemPrompt) > 100_000 || !utf8Valid(a.SystemPrompt) {
			return nil, invalid(at+".system_prompt", "at most 100,000 bytes of UTF-8")
		}
		if a.PromptVersion == "" || len(a.PromptVersion) > 128 {
			return nil, invalid(at+".prompt_version", "1 to 128 bytes")
		}
		if len(a.ModelID) > 256 {
			return nil, invalid(at+".model_id", "at most 256 bytes")
		}
		if len(a.Tools) == 0 {
			return nil, invalid(at+".tools", "at least one tool")
		}
		seen := map[string]bool{}
		for _, t := range a.Tools {
			if !toolName.MatchString(t) || seen[t] {
				return nil, invalid(at+".tools", "tool names, each once")
			}
			seen[t] = true
		}
		if a.MaxTokens < 0 || a.MaxTokens > 64_000 {
			return nil, invalid(at+".max_tokens", "from 1 to 64000")
		}
		if a.MaxTurns < 0 || a.MaxTurns > 100 {
			return nil, invalid(at+".max_turns", "from 1 to 100")
		}
		if a.DefaultCostCapUSD != "" && !usd.MatchString(a.DefaultCostCapUSD) {
			return nil, invalid(at+".default_cost_cap_usd", `a decimal string of dollars ("1.00")`)
		}
		out.Agents[key] = Agent{Key: key, SystemPrompt: a.SystemPrompt, PromptVersion: a.PromptVersion, ModelID: a.ModelID,
			Tools: slices.Clone(a.Tools), MaxTokens: a.MaxTokens, MaxTurns: a.MaxTurns, DefaultCostCapUSD: a.DefaultCostCapUSD}
		versioned.Agents[key] = a
	}
	// The version covers the prompts as read, so a changed prompt file is
	// a new version though the document is the same.
	var buf bytes.Buffer
	if err := encodeJSON(&buf, versioned); err != nil {
		return nil, fmt.Errorf("agents: %w", err)
	}
	_, version, err := contracts.CanonicalInput(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("agents: %w", err)
	}
	out.Version = version
	return out, nil
}
