package bedrocktest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithydocument "github.com/aws/smithy-go/document"
)

// ConverseInput rebuilds the SDK input from the bytes the fake received
// (Body), so a test can measure what was sent with the code that measured
// what the client meant to send. A JSON document (a tool's input or schema,
// a JSON tool result) marshals to its bytes as received, compacted.
//
// It reads the members Warrant sends: system text blocks; text, toolUse and
// toolResult (text or json) content; inferenceConfig.maxTokens; toolSpecs
// with JSON schemas. Any other member is an error, never dropped: a
// measurement must not miss part of a request.
func (r Request) ConverseInput() (*bedrockruntime.ConverseInput, error) {
	var w struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
		System []struct {
			Text *string `json:"text"`
		} `json:"system"`
		InferenceConfig *struct {
			MaxTokens *int32 `json:"maxTokens"`
		} `json:"inferenceConfig"`
		ToolConfig *struct {
			Tools []struct {
				ToolSpec *struct {
					Name        *string `json:"name"`
					Description *string `json:"description"`
					InputSchema struct {
						JSON json.RawMessage `json:"json"`
					} `json:"inputSchema"`
				} `json:"toolSpec"`
			} `json:"tools"`
		} `json:"toolConfig"`
	}
	if err := strict(r.Body, &w); err != nil {
		return nil, fmt.Errorf("bedrocktest: request body: %w", err)
	}
	in := &bedrockruntime.ConverseInput{ModelId: aws.String(r.ModelID)}
	for i, s := range w.System {
		if s.Text == nil {
			return nil, fmt.Errorf("bedrocktest: system[%d] is not a text block", i)
		}
		in.System = append(in.System, &types.SystemContentBlockMemberText{Value: *s.Text})
	}
	for i, m := range w.Messages {
		msg := types.Message{Role: types.ConversationRole(m.Role)}
		for j, raw := range m.Content {
			b, err := contentBlock(raw)
			if err != nil {
				return nil, fmt.Errorf("bedrocktest: messages[%d].content[%d]: %w", i, j, err)
			}
			msg.Content = append(msg.Content, b)
		}
		in.Messages = append(in.Messages, msg)
	}
	if w.InferenceConfig != nil {
		in.InferenceConfig = &types.InferenceConfiguration{MaxTokens: w.InferenceConfig.MaxTokens}
	}
	if w.ToolConfig != nil {
		in.ToolConfig = &types.ToolConfiguration{}
		for i, t := range w.ToolConfig.Tools {
			if t.ToolSpec == nil {
				return nil, fmt.Errorf("bedrocktest: toolConfig.tools[%d] is not a toolSpec", i)
			}
			schema, err := receivedDocument(t.ToolSpec.InputSchema.JSON)
			if err != nil {
				return nil, fmt.Errorf("bedrocktest: toolConfig.tools[%d].toolSpec.inputSchema.json: %w", i, err)
			}
			in.ToolConfig.Tools = append(in.ToolConfig.Tools, &types.ToolMemberToolSpec{Value: types.ToolSpecification{
				Name: t.ToolSpec.Name, Description: t.ToolSpec.Description, InputSchema: &types.ToolInputSchemaMemberJson{Value: schema}}})
		}
	}
	return in, nil
}

// contentBlock is one message content block: exactly one of text, toolUse,
// toolResult.
func contentBlock(raw json.RawMessage) (types.ContentBlock, error) {
	var c struct {
		Text    *string `json:"text"`
		ToolUse *struct {
			ToolUseID *string         `json:"toolUseId"`
			Name      *string         `json:"name"`
			Input     json.RawMessage `json:"input"`
		} `json:"toolUse"`
		ToolResult *struct {
			ToolUseID *string `json:"toolUseId"`
			Status    string  `json:"status"`
			Content   []struct {
				Text *string         `json:"text"`
				JSON json.RawMessage `json:"json"`
			} `json:"content"`
		} `json:"toolResult"`
	}
	if err := strict(raw, &c); err != nil {
		return nil, err
	}
	switch {
	case c.Text != nil && c.ToolUse == nil && c.ToolResult == nil:
		return &types.ContentBlockMemberText{Value: *c.Text}, nil
	case c.Text == nil && c.ToolUse != nil && c.ToolResult == nil:
		doc, err := receivedDocument(c.ToolUse.Input)
		if err != nil {
			return nil, fmt.Errorf("toolUse.input: %w", err)
		}
		return &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{ToolUseId: c.ToolUse.ToolUseID, Name: c.ToolUse.Name, Input: doc}}, nil
	case c.Text == nil && c.ToolUse == nil && c.ToolResult != nil:
		tr := types.ToolResultBlock{ToolUseId: c.ToolResult.ToolUseID, Status: types.ToolResultStatus(c.ToolResult.Status)}
		for k, rc := range c.ToolResult.Content {
			switch {
			case rc.Text != nil && rc.JSON == nil:
				tr.Content = append(tr.Content, &types.ToolResultContentBlockMemberText{Value: *rc.Text})
			case rc.Text == nil && rc.JSON != nil:
				doc, err := receivedDocument(rc.JSON)
				if err != nil {
					return nil, fmt.Errorf("toolResult.content[%d].json: %w", k, err)
				}
				tr.Content = append(tr.Content, &types.ToolResultContentBlockMemberJson{Value: doc})
			default:
				return nil, fmt.Errorf("toolResult.content[%d] is neither text nor json", k)
			}
		}
		return &types.ContentBlockMemberToolResult{Value: tr}, nil
	}
	return nil, errors.New("not exactly one of text, toolUse, toolResult")
}

// strict decodes a JSON object, refusing members v does not name.
func strict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

// received is a JSON document as it arrived. It embeds a document decoded
// from the bytes (for UnmarshalSmithyDocument, and the SDK's unexported
// marker method) and marshals to the bytes themselves.
type received struct {
	document.Interface
	raw []byte
}

func (d received) MarshalSmithyDocument() ([]byte, error) { return d.raw, nil }

func receivedDocument(raw json.RawMessage) (document.Interface, error) {
	if raw == nil {
		return nil, errors.New("missing")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return received{Interface: document.NewLazyDocument(smithyNumbers(v)), raw: compact.Bytes()}, nil
}

// smithyNumbers makes json.Number values smithy document numbers (the
// document encoder writes a json.Number as a string).
func smithyNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		return smithydocument.Number(t)
	case map[string]any:
		for k, e := range t {
			t[k] = smithyNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = smithyNumbers(e)
		}
	}
	return v
}
