package agent

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// byteLevelTokens is the most tokens a byte-level BPE tokenizer whose
// vocabulary holds whitespace-run tokens can emit for text: one per byte,
// except that a run of whitespace is one token.
func byteLevelTokens(text string) int64 {
	var n int64
	inSpace := false
	for _, r := range text {
		if unicode.IsSpace(r) {
			if !inSpace {
				n++
			}
			inSpace = true
			continue
		}
		inSpace = false
		n += int64(len(string(r)))
	}
	return n
}

// rendered is a provider's rendering of a request as the model reads it:
// a tool-use system prompt of the largest size Anthropic publishes (530
// tokens, here 530 bytes), then the system prompt, the tools and the
// conversation as indented JSON (whitespace next to every structural
// character), with role markers.
func rendered(t *testing.T, in *bedrockruntime.ConverseInput) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(strings.Repeat("x", 530))
	for _, sb := range in.System {
		b.WriteString("\n\nSystem: " + sb.(*types.SystemContentBlockMemberText).Value)
	}
	for _, tl := range in.ToolConfig.Tools {
		spec := tl.(*types.ToolMemberToolSpec).Value
		raw, err := spec.InputSchema.(*types.ToolInputSchemaMemberJson).Value.MarshalSmithyDocument()
		if err != nil {
			t.Fatal(err)
		}
		doc, _ := json.MarshalIndent(map[string]any{"name": aws.ToString(spec.Name), "description": aws.ToString(spec.Description),
			"input_schema": json.RawMessage(raw)}, "", "    ")
		b.Write(doc)
	}
	for _, m := range in.Messages {
		b.WriteString("<|start_header_id|>" + string(m.Role) + "<|end_header_id|>\n\n")
		for _, c := range m.Content {
			switch v := c.(type) {
			case *types.ContentBlockMemberText:
				b.WriteString(v.Value)
			case *types.ContentBlockMemberToolUse:
				raw, _ := v.Value.Input.MarshalSmithyDocument()
				doc, _ := json.MarshalIndent(map[string]any{"type": "tool_use", "id": aws.ToString(v.Value.ToolUseId),
					"name": aws.ToString(v.Value.Name), "input": json.RawMessage(raw)}, "", "    ")
				b.Write(doc)
			case *types.ContentBlockMemberToolResult:
				var parts []any
				for _, rc := range v.Value.Content {
					switch r := rc.(type) {
					case *types.ToolResultContentBlockMemberText:
						parts = append(parts, r.Value)
					case *types.ToolResultContentBlockMemberJson:
						raw, _ := r.Value.MarshalSmithyDocument()
						parts = append(parts, json.RawMessage(raw))
					}
				}
				doc, _ := json.MarshalIndent(map[string]any{"type": "tool_result", "tool_use_id": aws.ToString(v.Value.ToolUseId),
					"status": string(v.Value.Status), "content": parts}, "", "    ")
				b.Write(doc)
			}
		}
		b.WriteString("<|eot_id|>")
	}
	return b.String()
}

// request is a turn of a run as the brain sends it: the system prompt,
// six tools with their schemas, the counsel's message (multi-byte text), a
// tool use and its JSON and error results.
func request(t *testing.T) *bedrockruntime.ConverseInput {
	t.Helper()
	doc := func(s string) *types.ContentBlockMemberToolUse {
		d, err := documentOf(json.RawMessage(s))
		if err != nil {
			t.Fatal(err)
		}
		return &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{ToolUseId: aws.String("tooluse_1"), Name: aws.String("search_matter_documents"), Input: d}}
	}
	result, err := documentOf(json.RawMessage(`{"documents":[{"id":"d1","title":"Motion to compel — 第一","excerpt":"Plaintiff moves to compel."}],"count":1}`))
	if err != nil {
		t.Fatal(err)
	}
	var specs []types.Tool
	for _, name := range MatterAssistant.Tools {
		schema, err := documentOf(json.RawMessage(`{"type":"object","additionalProperties":false,"required":["matter_id"],"properties":{"matter_id":{"type":"string","format":"uuid"},"query":{"type":"string","maxLength":500}}}`))
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, &types.ToolMemberToolSpec{Value: types.ToolSpecification{Name: aws.String(name),
			Description: aws.String("Does " + name + " for the matter."), InputSchema: &types.ToolInputSchemaMemberJson{Value: schema}}})
	}
	return &bedrockruntime.ConverseInput{
		ModelId: aws.String("m"),
		System:  []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: MatterAssistant.SystemPrompt}},
		Messages: []types.Message{
			{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "契約書の要約をお願いします。 Please summarize the engagement letter."}}},
			{Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "Searching."}, doc(`{"matter_id":"3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99","query":"engagement letter"}`)}},
			{Role: types.ConversationRoleUser, Content: []types.ContentBlock{
				&types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{ToolUseId: aws.String("tooluse_1"), Status: types.ToolResultStatusSuccess,
					Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberJson{Value: result}}}},
				toolResultBlock(&contracts.ToolCompleted{ToolUseID: "tooluse_2", Status: contracts.ToolDenied, Result: errorResult("denied by policy")}),
			}},
		},
		InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(1024)},
		ToolConfig:      &types.ToolConfiguration{Tools: specs},
	}
}

// TestInputBoundIsAnUpperBound: the bound is at least the tokens a
// byte-level tokenizer could make of the request as a provider renders it
// (its own tool prompt, indented JSON, role markers). The old estimate
// (bytes / 3) was under both.
func TestInputBoundIsAnUpperBound(t *testing.T) {
	in := request(t)
	bound, err := inputBound(in)
	if err != nil {
		t.Fatal(err)
	}
	text := rendered(t, in)
	worst := byteLevelTokens(text)
	if bound < worst {
		t.Fatalf("bound %d is below the %d tokens a byte-level tokenizer can make of the rendered request", bound, worst)
	}
	raw := int64(len(text))
	if old := raw/3 + 1; old >= worst {
		t.Fatalf("the rendering is too small to tell: bytes/3 = %d, worst %d", old, worst)
	}
	// Not absurdly loose either: within 3x of what it bounds.
	if bound > 3*worst {
		t.Errorf("bound %d is over 3x the %d tokens it bounds", bound, worst)
	}
	t.Logf("bound %d tokens; rendered request %d bytes, at most %d byte-level tokens", bound, raw, worst)
}

// Every part of the request counts: more text anywhere raises the bound
// by at least its bytes.
func TestInputBoundCountsEveryPart(t *testing.T) {
	base, err := inputBound(request(t))
	if err != nil {
		t.Fatal(err)
	}
	const extra = "€€€€€" // 15 bytes
	for name, edit := range map[string]func(*bedrockruntime.ConverseInput){
		"system": func(in *bedrockruntime.ConverseInput) {
			in.System[0] = &types.SystemContentBlockMemberText{Value: MatterAssistant.SystemPrompt + extra}
		},
		"message text": func(in *bedrockruntime.ConverseInput) {
			in.Messages[0].Content = append(in.Messages[0].Content, &types.ContentBlockMemberText{Value: extra})
		},
		"tool result text": func(in *bedrockruntime.ConverseInput) {
			in.Messages[2].Content = append(in.Messages[2].Content, toolResultBlock(&contracts.ToolCompleted{ToolUseID: "t3",
				Status: contracts.ToolError, Result: errorResult(extra)}))
		},
		"tool description": func(in *bedrockruntime.ConverseInput) {
			spec := in.ToolConfig.Tools[0].(*types.ToolMemberToolSpec)
			spec.Value.Description = aws.String(aws.ToString(spec.Value.Description) + extra)
		},
	} {
		in := request(t)
		edit(in)
		got, err := inputBound(in)
		if err != nil {
			t.Fatal(err)
		}
		if got < base+int64(len(extra)) {
			t.Errorf("%s: %d more bytes raised the bound from %d to %d", name, len(extra), base, got)
		}
	}
}

// A block the bound cannot measure by its bytes fails the bound (and so
// the call), rather than being guessed.
func TestInputBoundRefusesWhatItCannotMeasure(t *testing.T) {
	in := request(t)
	in.Messages[0].Content = append(in.Messages[0].Content, &types.ContentBlockMemberImage{Value: types.ImageBlock{Format: types.ImageFormatPng}})
	if _, err := inputBound(in); err == nil {
		t.Fatal("an image block was bounded")
	}
	in = request(t)
	in.System = append(in.System, &types.SystemContentBlockMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointTypeDefault}})
	if _, err := inputBound(in); err == nil {
		t.Fatal("a cache point was bounded")
	}
}
