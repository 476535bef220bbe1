package bedrocktest

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// The JSON shapes below are the restJson1 bodies of ConverseRequest /
// ConverseResponse (member names as in the SDK's schemas package), trimmed to
// what the fake models. Unknown members are ignored, as the SDK does.

type wireRequest struct {
	Messages []wireMessage `json:"messages"`
	System   []struct {
		Text *string `json:"text"`
	} `json:"system"`
	InferenceConfig *struct {
		MaxTokens *int32 `json:"maxTokens"`
	} `json:"inferenceConfig"`
	ToolConfig *struct {
		Tools []struct {
			ToolSpec *struct {
				Name string `json:"name"`
			} `json:"toolSpec"`
		} `json:"tools"`
	} `json:"toolConfig"`
}

type wireMessage struct {
	Role    string        `json:"role"`
	Content []wireContent `json:"content"`
}

type wireContent struct {
	Text       *string         `json:"text,omitempty"`
	ToolUse    *wireToolUse    `json:"toolUse,omitempty"`
	ToolResult *wireToolResult `json:"toolResult,omitempty"`
}

type wireToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

type wireToolResult struct {
	ToolUseID string `json:"toolUseId"`
	Status    string `json:"status,omitempty"`
	Content   []struct {
		Text *string         `json:"text"`
		JSON json.RawMessage `json:"json"`
	} `json:"content"`
}

type wireUsage struct {
	InputTokens           int32  `json:"inputTokens"`
	OutputTokens          int32  `json:"outputTokens"`
	TotalTokens           int32  `json:"totalTokens"`
	CacheReadInputTokens  *int32 `json:"cacheReadInputTokens,omitempty"`
	CacheWriteInputTokens *int32 `json:"cacheWriteInputTokens,omitempty"`
}

type wireMetrics struct {
	LatencyMs int64 `json:"latencyMs"`
}

type wireResponse struct {
	Output struct {
		Message wireMessage `json:"message"`
	} `json:"output"`
	StopReason string      `json:"stopReason"`
	Usage      wireUsage   `json:"usage"`
	Metrics    wireMetrics `json:"metrics"`
}

// fakeLatencyMs is reported as the model latency; a constant keeps recorded
// outputs reproducible.
const fakeLatencyMs = 120

// decodeRequest turns a Converse / ConverseStream body into a Request (minus
// the routing fields the handler fills in).
func decodeRequest(body []byte) (Request, error) {
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		return Request{}, fmt.Errorf("decode request body: %w", err)
	}
	var req Request
	for _, s := range wr.System {
		if s.Text != nil {
			req.System = append(req.System, *s.Text)
		}
	}
	for _, wm := range wr.Messages {
		m := Message{Role: wm.Role}
		for _, wc := range wm.Content {
			switch {
			case wc.Text != nil:
				m.Blocks = append(m.Blocks, Block{Text: *wc.Text})
			case wc.ToolUse != nil:
				m.Blocks = append(m.Blocks, Block{ToolUse: &ToolUse{
					ID: wc.ToolUse.ToolUseID, Name: wc.ToolUse.Name, Input: wc.ToolUse.Input,
				}})
			case wc.ToolResult != nil:
				tr := &ToolResult{ToolUseID: wc.ToolResult.ToolUseID, Status: wc.ToolResult.Status}
				for _, c := range wc.ToolResult.Content {
					if c.Text != nil {
						tr.Texts = append(tr.Texts, *c.Text)
					}
					if c.JSON != nil {
						tr.JSON = append(tr.JSON, c.JSON)
					}
				}
				m.Blocks = append(m.Blocks, Block{ToolResult: tr})
			}
		}
		req.Messages = append(req.Messages, m)
	}
	if wr.InferenceConfig != nil && wr.InferenceConfig.MaxTokens != nil {
		req.MaxTokens = *wr.InferenceConfig.MaxTokens
	}
	if wr.ToolConfig != nil {
		for _, t := range wr.ToolConfig.Tools {
			if t.ToolSpec != nil {
				req.ToolNames = append(req.ToolNames, t.ToolSpec.Name)
			}
		}
	}
	return req, nil
}

// answer is a Reply resolved against one conversation: ids assigned, inputs
// computed, defaults applied.
type answer struct {
	text       string
	toolUses   []wireToolUse
	stopReason string
	usage      wireUsage
	chunks     int
}

func resolve(r Reply, req Request) (answer, error) {
	c := req.Conversation
	a := answer{text: r.Text, stopReason: r.StopReason, chunks: r.StreamChunks}
	toolUses := r.ToolUses
	if r.Fault == FaultMalformedToolUse && len(toolUses) == 0 {
		toolUses = []ToolUse{{Name: "malformed_tool"}}
	}
	outBytes := len(r.Text)
	for i, tu := range toolUses {
		in := tu.Input
		if in == nil && tu.InputFunc != nil {
			in = tu.InputFunc(c)
		}
		if in == nil {
			in = json.RawMessage(`{}`)
		}
		if !json.Valid(in) {
			return answer{}, fmt.Errorf("script tool use %q: input is not valid JSON", tu.Name)
		}
		id := tu.ID
		if id == "" {
			id = fmt.Sprintf("tooluse_%d", c.assistantTurns()+i)
		}
		outBytes += len(in)
		a.toolUses = append(a.toolUses, wireToolUse{ToolUseID: id, Name: tu.Name, Input: in})
	}
	if a.stopReason == "" {
		a.stopReason = "end_turn"
		if len(a.toolUses) > 0 {
			a.stopReason = "tool_use"
		}
	}
	if a.chunks <= 0 {
		a.chunks = 3
	}
	u := r.Usage
	switch {
	case r.Bill != nil:
		u = r.Bill(req)
	case u == (Usage{}):
		u = Usage{InputTokens: int32(len(req.Body) / 4), OutputTokens: int32(outBytes/4 + 1)}
	}
	a.usage = wireUsage{
		InputTokens:  u.InputTokens,
		OutputTokens: u.OutputTokens,
		TotalTokens:  u.InputTokens + u.OutputTokens + u.CacheReadInputTokens + u.CacheWriteInputTokens,
	}
	if u.CacheReadInputTokens != 0 {
		a.usage.CacheReadInputTokens = &u.CacheReadInputTokens
	}
	if u.CacheWriteInputTokens != 0 {
		a.usage.CacheWriteInputTokens = &u.CacheWriteInputTokens
	}
	return a, nil
}

// splitRunes splits s into at most n non-empty pieces of roughly equal length
// without cutting a UTF-8 sequence (a cut rune would be re-encoded as U+FFFD
// by encoding/json and corrupt the reassembled text).
func splitRunes(s string, n int) []string {
	runes := utf8.RuneCountInString(s)
	if runes == 0 {
		return nil
	}
	n = max(1, min(n, runes))
	per := (runes + n - 1) / n
	var out []string
	start, count := 0, 0
	for i := range s {
		if count == per {
			out = append(out, s[start:i])
			start, count = i, 0
		}
		count++
	}
	return append(out, s[start:])
}
