package bedrocktest

import (
	"encoding/json"
	"strings"
	"time"
)

// Script is the scripted model the Server answers from.
type Script struct {
	// Rules are tried in order; the first whose When matches (and whose
	// Times budget is not spent) supplies the reply.
	Rules []Rule
	// Fallback answers when no rule matches. When nil, an unmatched request
	// gets a 400 ValidationException "no script rule matched" so that a test
	// with an incomplete script fails loudly instead of hanging on a loop.
	Fallback *Reply
	// KnownModels, when non-empty, is the set of model ids accepted; any other
	// id gets a 400 ValidationException, as Bedrock does for a bad id.
	KnownModels []string
}

// BilledBy returns the script with every reply billing what bill computes
// from the request it answers (Reply.Bill): the same conversation, a model
// that bills what the test says, e.g. exactly each request's worst case.
func (s Script) BilledBy(bill func(Request) Usage) Script {
	return s.eachReply(func(r *Reply) { r.Bill = bill })
}

// WithDelay returns the script with every reply taking d (Reply.Delay): the
// same conversation, a slower model.
func (s Script) WithDelay(d time.Duration) Script {
	return s.eachReply(func(r *Reply) { r.Delay = d })
}

// eachReply returns a copy of the script with f applied to every reply, the
// fallback's included; s itself is unchanged.
func (s Script) eachReply(f func(*Reply)) Script {
	out := s
	out.Rules = append([]Rule(nil), s.Rules...)
	for i := range out.Rules {
		f(&out.Rules[i].Reply)
	}
	if s.Fallback != nil {
		r := *s.Fallback
		f(&r)
		out.Fallback = &r
	}
	return out
}

// Rule is one scripted behaviour.
type Rule struct {
	// Name is recorded on the Request that the rule answered.
	Name string
	// When selects the conversations this rule answers; nil matches all.
	When  func(Conversation) bool
	Reply Reply
	// Times limits how often the rule fires: 0 is unlimited, N > 0 lets it
	// fire at most N times, after which it is skipped. Pairing a faulting rule
	// with Times and a later succeeding rule scripts "fail, then recover".
	Times int
}

// Reply is what the scripted model answers.
//
// When Usage is zero and Bill is nil, usage is derived from the request so cost accounting
// has something proportional to check: InputTokens = request body bytes / 4,
// OutputTokens = (len(Text) + bytes of all tool inputs) / 4 + 1. TotalTokens
// is always the sum of the four counts.
type Reply struct {
	Text     string
	ToolUses []ToolUse
	// StopReason defaults to "tool_use" when ToolUses is non-empty, else
	// "end_turn".
	StopReason string
	Usage      Usage
	// Bill, when set, is the usage reported instead of Usage, computed
	// from the request being answered (its body, MaxTokens, ...).
	Bill  func(Request) Usage
	Fault Fault
	// StreamChunks is how many contentBlockDelta events Text is split into on
	// the streaming route; default 3.
	StreamChunks int
	// Delay is how long the model takes before it answers (real time: a
	// slow turn, for the tests of runs that outlive an API call).
	Delay time.Duration
}

// ToolUse is a toolUse content block, in a Reply or in a recorded message.
type ToolUse struct {
	// ID defaults (in a Reply) to "tooluse_<n>", n = prior assistant messages
	// in the conversation + the index of this tool use in the reply, which is
	// unique within a conversation and stable across runs.
	ID   string
	Name string
	// Input is the tool input JSON (an object). When nil, InputFunc is used,
	// and when that is nil too, {}.
	Input json.RawMessage
	// InputFunc computes Input from the conversation (e.g. to echo an id
	// taken from the system prompt). Ignored in recorded messages.
	InputFunc func(Conversation) json.RawMessage
}

// Usage is a token usage report.
type Usage struct {
	InputTokens, OutputTokens, CacheReadInputTokens, CacheWriteInputTokens int32
}

// Fault makes a reply fail in a way real Bedrock does.
type Fault string

const (
	// FaultThrottle answers 429 ThrottlingException (retryable).
	FaultThrottle Fault = "throttle"
	// FaultModelTimeout answers 408 ModelTimeoutException.
	FaultModelTimeout Fault = "model_timeout"
	// FaultMalformedToolUse streams tool input fragments that do not join into
	// valid JSON; on the non-streaming route the toolUse input is a JSON
	// string instead of an object. A reply without ToolUses gets one.
	FaultMalformedToolUse Fault = "malformed_tool_use"
	// FaultMidStream streams messageStart and one text delta, then a
	// modelStreamErrorException; on the non-streaming route it answers 500
	// InternalServerException.
	FaultMidStream Fault = "mid_stream"
	// FaultAccessDenied answers 403 AccessDeniedException.
	FaultAccessDenied Fault = "access_denied"
	// FaultValidation answers 400 ValidationException.
	FaultValidation Fault = "validation"
	// FaultInternal answers 500 InternalServerException (retryable).
	FaultInternal Fault = "internal"
	// FaultServiceUnavailable answers 503 ServiceUnavailableException
	// (retryable).
	FaultServiceUnavailable Fault = "service_unavailable"
)

// Conversation is the decoded request a rule is matched against.
type Conversation struct {
	System   []string
	Messages []Message
	ModelID  string
}

// Message is one conversation turn.
type Message struct {
	Role   string // "user" or "assistant"
	Blocks []Block
}

// Block is one content block; exactly one field is set. Block kinds the fake
// does not model (images, documents, cache points...) are dropped.
type Block struct {
	Text       string
	ToolUse    *ToolUse
	ToolResult *ToolResult
}

// ToolResult is a toolResult content block.
type ToolResult struct {
	ToolUseID string
	Status    string // "success", "error", or "" when the caller omitted it
	Texts     []string
	JSON      []json.RawMessage
}

// LastUserText returns the text of the most recent user message that has
// text, its text blocks joined by newlines.
func (c Conversation) LastUserText() string {
	for i := len(c.Messages) - 1; i >= 0; i-- {
		m := c.Messages[i]
		if m.Role != "user" {
			continue
		}
		var texts []string
		for _, b := range m.Blocks {
			if b.Text != "" {
				texts = append(texts, b.Text)
			}
		}
		if len(texts) > 0 {
			return strings.Join(texts, "\n")
		}
	}
	return ""
}

// LastToolResults returns the tool results carried by the last message, when
// it is a user message.
func (c Conversation) LastToolResults() []ToolResult {
	if len(c.Messages) == 0 {
		return nil
	}
	last := c.Messages[len(c.Messages)-1]
	if last.Role != "user" {
		return nil
	}
	var out []ToolResult
	for _, b := range last.Blocks {
		if b.ToolResult != nil {
			out = append(out, *b.ToolResult)
		}
	}
	return out
}

// ToolName returns the name of the tool use with the given id, found in the
// assistant messages of the conversation, or "".
func (c Conversation) ToolName(toolUseID string) string {
	for _, m := range c.Messages {
		for _, b := range m.Blocks {
			if b.ToolUse != nil && b.ToolUse.ID == toolUseID {
				return b.ToolUse.Name
			}
		}
	}
	return ""
}

// HasToolResult reports whether any message carries a tool result whose tool
// use id, or whose tool's name, is nameOrID.
func (c Conversation) HasToolResult(nameOrID string) bool {
	for _, m := range c.Messages {
		for _, b := range m.Blocks {
			if b.ToolResult != nil && c.resultIs(*b.ToolResult, nameOrID) {
				return true
			}
		}
	}
	return false
}

func (c Conversation) resultIs(r ToolResult, nameOrID string) bool {
	return r.ToolUseID == nameOrID || c.ToolName(r.ToolUseID) == nameOrID
}

func (c Conversation) assistantTurns() int {
	n := 0
	for _, m := range c.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// Always matches every conversation.
func Always(Conversation) bool { return true }

// LastUserTextContains matches when LastUserText contains substr, ignoring
// case.
func LastUserTextContains(substr string) func(Conversation) bool {
	substr = strings.ToLower(substr)
	return func(c Conversation) bool {
		return strings.Contains(strings.ToLower(c.LastUserText()), substr)
	}
}

// AfterToolResult matches when the last message carries a tool result with
// the given status ("" matches any). A result without a status counts as
// "success", which is how Bedrock treats it.
func AfterToolResult(status string) func(Conversation) bool {
	return AfterToolResultFrom("", status)
}

// AfterToolResultFrom is AfterToolResult restricted to results for the named
// tool (or tool use id); tool "" matches any tool.
func AfterToolResultFrom(tool, status string) func(Conversation) bool {
	return func(c Conversation) bool {
		for _, r := range c.LastToolResults() {
			if tool != "" && !c.resultIs(r, tool) {
				continue
			}
			got := r.Status
			if got == "" {
				got = "success"
			}
			if status == "" || got == status {
				return true
			}
		}
		return false
	}
}

// And matches when every predicate matches.
func And(preds ...func(Conversation) bool) func(Conversation) bool {
	return func(c Conversation) bool {
		for _, p := range preds {
			if !p(c) {
				return false
			}
		}
		return true
	}
}
