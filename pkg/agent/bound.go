package agent

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
)

// The input bound of a Converse call (docs/DECISIONS.md, "Hard caps by
// reservation"). A byte-level BPE tokenizer (and a SentencePiece one with
// byte fallback) emits at most one token per byte of the text it encodes:
// every byte is in its base vocabulary and merges only make fewer tokens.
// So the UTF-8 bytes of everything the call sends bound its input tokens,
// once the text the provider adds around it is bounded too, by these fixed
// overheads:
const (
	// boundPerRequest covers the prompt the provider adds to a request
	// with tools (Anthropic documents its tool-use system prompt per model;
	// the largest figure it publishes is 530 tokens) and the conversation's
	// own framing (begin-of-text, system header).
	boundPerRequest = 1024
	// boundPerSystemBlock is the separator between system blocks.
	boundPerSystemBlock = 8
	// boundPerMessage is a message's role header and end-of-turn markers
	// (Llama 3's template spends 5 tokens on them, Claude's about 3).
	boundPerMessage = 16
	// boundPerBlock frames a text block inside a message.
	boundPerBlock = 8
	// boundPerToolBlock frames a tool use or tool result block (its type,
	// the id and name members' keys, status, punctuation).
	boundPerToolBlock = 32
	// boundPerTool frames one tool definition (the name, description and
	// input schema members' keys and punctuation).
	boundPerTool = 64
	// boundJSONFactor counts a JSON document (tool schemas, tool inputs,
	// JSON tool results) at twice its compact bytes: the provider renders
	// it again in its own layout, which may put a whitespace run next to
	// each structural character ({ } [ ] , :), each at most one token in
	// these vocabularies (they carry whitespace-run tokens), and there is
	// at most one structural character per byte.
	boundJSONFactor = 2
)

// inputBound is an upper bound of the input tokens of the call in: the
// UTF-8 bytes of its system prompt, messages (text, tool uses, tool
// results), tool names, descriptions and schemas, with the fixed overheads
// above. A block it cannot bound by its bytes (an image, a document, a
// guard or cache point: none of which the brain sends) is an error: a call
// that cannot be bounded cannot be held to a cap.
func inputBound(in *bedrockruntime.ConverseInput) (int64, error) {
	n := int64(boundPerRequest)
	for _, sb := range in.System {
		t, ok := sb.(*types.SystemContentBlockMemberText)
		if !ok {
			return 0, fmt.Errorf("agent: cannot bound a system block of type %T", sb)
		}
		n += int64(len(t.Value)) + boundPerSystemBlock
	}
	for _, m := range in.Messages {
		n += boundPerMessage
		for _, c := range m.Content {
			b, err := blockBound(c)
			if err != nil {
				return 0, err
			}
			n += b
		}
	}
	if in.ToolConfig != nil {
		for _, t := range in.ToolConfig.Tools {
			spec, ok := t.(*types.ToolMemberToolSpec)
			if !ok {
				return 0, fmt.Errorf("agent: cannot bound a tool of type %T", t)
			}
			n += boundPerTool + int64(len(aws.ToString(spec.Value.Name))+len(aws.ToString(spec.Value.Description)))
			js, ok := spec.Value.InputSchema.(*types.ToolInputSchemaMemberJson)
			if !ok {
				return 0, fmt.Errorf("agent: cannot bound a tool input schema of type %T", spec.Value.InputSchema)
			}
			d, err := jsonBound(js.Value)
			if err != nil {
				return 0, err
			}
			n += d
		}
	}
	return n, nil
}

// blockBound bounds one content block of a message.
func blockBound(c types.ContentBlock) (int64, error) {
	switch v := c.(type) {
	case *types.ContentBlockMemberText:
		return int64(len(v.Value)) + boundPerBlock, nil
	case *types.ContentBlockMemberToolUse:
		d, err := jsonBound(v.Value.Input)
		if err != nil {
			return 0, err
		}
		return d + int64(len(aws.ToString(v.Value.Name))+len(aws.ToString(v.Value.ToolUseId))) + boundPerToolBlock, nil
	case *types.ContentBlockMemberToolResult:
		n := int64(len(aws.ToString(v.Value.ToolUseId))) + boundPerToolBlock
		for _, rc := range v.Value.Content {
			switch r := rc.(type) {
			case *types.ToolResultContentBlockMemberText:
				n += int64(len(r.Value)) + boundPerBlock
			case *types.ToolResultContentBlockMemberJson:
				d, err := jsonBound(r.Value)
				if err != nil {
					return 0, err
				}
				n += d + boundPerBlock
			default:
				return 0, fmt.Errorf("agent: cannot bound a tool result block of type %T", rc)
			}
		}
		return n, nil
	case *types.ContentBlockMemberReasoningContent:
		if r, ok := v.Value.(*types.ReasoningContentBlockMemberReasoningText); ok {
			return int64(len(aws.ToString(r.Value.Text))+len(aws.ToString(r.Value.Signature))) + boundPerToolBlock, nil
		}
	}
	return 0, fmt.Errorf("agent: cannot bound a content block of type %T", c)
}

// jsonBound bounds a JSON document by its compact bytes (boundJSONFactor).
func jsonBound(d document.Interface) (int64, error) {
	if d == nil {
		return 0, nil
	}
	b, err := d.MarshalSmithyDocument()
	if err != nil {
		return 0, fmt.Errorf("agent: cannot bound a JSON document: %w", err)
	}
	return boundJSONFactor * int64(len(b)), nil
}
