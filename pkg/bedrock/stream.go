package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithydocumentjson "github.com/aws/smithy-go/document/json"
)

func (c *Client) converseStream(ctx context.Context, in *bedrockruntime.ConverseInput, modelID string, onDelta func(string)) (*bedrockruntime.ConverseOutput, error) {
	out, err := c.rt.ConverseStream(ctx, streamInput(in))
	if err != nil {
		return nil, fmt.Errorf("bedrock converse-stream %s: %w", modelID, classify(err))
	}
	stream := out.GetStream()
	defer stream.Close()

	var a assembler
	for ev := range stream.Events() {
		a.add(ev, onDelta)
	}
	// Exception events (modelStreamErrorException, throttlingException...)
	// end the event channel and surface here as the modeled error type,
	// without an OperationError; classify needs none to place them.
	if err := stream.Err(); err != nil {
		return nil, fmt.Errorf("bedrock converse-stream %s: %w", modelID, classify(err))
	}
	res, err := a.output()
	if err != nil {
		return nil, fmt.Errorf("bedrock converse-stream %s: %w", modelID, err)
	}
	res.ResultMetadata = out.ResultMetadata
	return res, nil
}

func streamInput(in *bedrockruntime.ConverseInput) *bedrockruntime.ConverseStreamInput {
	s := &bedrockruntime.ConverseStreamInput{
		ModelId:                           in.ModelId,
		AdditionalModelRequestFields:      in.AdditionalModelRequestFields,
		AdditionalModelResponseFieldPaths: in.AdditionalModelResponseFieldPaths,
		InferenceConfig:                   in.InferenceConfig,
		Messages:                          in.Messages,
		OutputConfig:                      in.OutputConfig,
		PerformanceConfig:                 in.PerformanceConfig,
		PromptVariables:                   in.PromptVariables,
		RequestMetadata:                   in.RequestMetadata,
		ServiceTier:                       in.ServiceTier,
		System:                            in.System,
		ToolConfig:                        in.ToolConfig,
	}
	if g := in.GuardrailConfig; g != nil {
		s.GuardrailConfig = &types.GuardrailStreamConfiguration{
			GuardrailIdentifier: g.GuardrailIdentifier,
			GuardrailVersion:    g.GuardrailVersion,
			Trace:               g.Trace,
		}
	}
	return s
}

// assembler rebuilds a ConverseOutput from ConverseStream events.
type assembler struct {
	role   types.ConversationRole
	blocks map[int32]*block
	stop   *types.MessageStopEvent
	meta   *types.ConverseStreamMetadataEvent
}

type block struct {
	text     strings.Builder
	tool     bool
	id, name string
	toolType types.ToolUseType
	input    strings.Builder
}

func (a *assembler) block(i *int32) *block {
	if a.blocks == nil {
		a.blocks = map[int32]*block{}
	}
	k := aws.ToInt32(i)
	b := a.blocks[k]
	if b == nil {
		b = &block{}
		a.blocks[k] = b
	}
	return b
}

func (a *assembler) add(ev types.ConverseStreamOutput, onDelta func(string)) {
	switch v := ev.(type) {
	case *types.ConverseStreamOutputMemberMessageStart:
		a.role = v.Value.Role
	case *types.ConverseStreamOutputMemberContentBlockStart:
		if s, ok := v.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
			b := a.block(v.Value.ContentBlockIndex)
			b.tool = true
			b.id, b.name = aws.ToString(s.Value.ToolUseId), aws.ToString(s.Value.Name)
			b.toolType = s.Value.Type
		}
	case *types.ConverseStreamOutputMemberContentBlockDelta:
		switch d := v.Value.Delta.(type) {
		case *types.ContentBlockDeltaMemberText:
			a.block(v.Value.ContentBlockIndex).text.WriteString(d.Value)
			if onDelta != nil {
				onDelta(d.Value)
			}
		case *types.ContentBlockDeltaMemberToolUse:
			b := a.block(v.Value.ContentBlockIndex)
			b.tool = true
			b.input.WriteString(aws.ToString(d.Value.Input))
		}
		// Reasoning, citation and image deltas are not requested by the
		// agent, so they are not assembled.
	case *types.ConverseStreamOutputMemberMessageStop:
		a.stop = &v.Value
	case *types.ConverseStreamOutputMemberMetadata:
		a.meta = &v.Value
	}
}

func (a *assembler) output() (*bedrockruntime.ConverseOutput, error) {
	if a.stop == nil {
		// The connection ended cleanly but the model never finished: treat
		// as a failure rather than act on a truncated turn.
		return nil, io.ErrUnexpectedEOF
	}
	role := a.role
	if role == "" {
		role = types.ConversationRoleAssistant
	}
	msg := types.Message{Role: role}
	for _, i := range slices.Sorted(maps.Keys(a.blocks)) {
		b := a.blocks[i]
		if !b.tool {
			if b.text.Len() > 0 {
				msg.Content = append(msg.Content, &types.ContentBlockMemberText{Value: b.text.String()})
			}
			continue
		}
		if err := checkToolUse(b.id, b.name); err != nil {
			return nil, err
		}
		input, ok := parseToolInput(b.input.String())
		if !ok {
			return nil, &MalformedToolUseError{ToolUseID: b.id, Name: b.name, Reason: "input is not a JSON object"}
		}
		msg.Content = append(msg.Content, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
			ToolUseId: aws.String(b.id), Name: aws.String(b.name), Input: input, Type: b.toolType,
		}})
	}
	out := &bedrockruntime.ConverseOutput{
		Output:                        &types.ConverseOutputMemberMessage{Value: msg},
		StopReason:                    a.stop.StopReason,
		AdditionalModelResponseFields: a.stop.AdditionalModelResponseFields,
	}
	if m := a.meta; m != nil {
		out.Usage = m.Usage
		out.PerformanceConfig = m.PerformanceConfig
		out.ServiceTier = m.ServiceTier
		if m.Metrics != nil {
			out.Metrics = &types.ConverseMetrics{LatencyMs: m.Metrics.LatencyMs}
		}
		if m.Trace != nil {
			out.Trace = &types.ConverseTrace{Guardrail: m.Trace.Guardrail, PromptRouter: m.Trace.PromptRouter}
		}
	}
	return out, nil
}

// parseToolInput parses the concatenated input fragments of a streamed tool
// use into a document holding a JSON object.
func parseToolInput(s string) (document.Interface, bool) {
	if strings.TrimSpace(s) == "" {
		// A tool without parameters streams no input fragments; Converse
		// reports {} for it.
		s = "{}"
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber() // as the SDK's response decoder does: no float64 rounding
	var v map[string]any
	if err := dec.Decode(&v); err != nil || v == nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // trailing data after the object
	}
	return receivedDocument{Interface: document.NewLazyDocument(v), value: v}, true
}

// receivedDocument behaves like the tool input documents the SDK decodes from
// a Converse response, so callers cannot tell a streamed turn from a plain
// one. A bare document.NewLazyDocument would not do: it is the SDK's
// request-side type, and its UnmarshalSmithyDocument always fails. The
// embedded lazy document only supplies document.Interface's unexported
// marker method; both exported methods are overridden to match the SDK's
// response-side document.
type receivedDocument struct {
	document.Interface
	value any // decoded with json.Number, like the SDK's
}

func (d receivedDocument) MarshalSmithyDocument() ([]byte, error) { return json.Marshal(d.value) }

func (d receivedDocument) UnmarshalSmithyDocument(v any) error {
	return smithydocumentjson.NewDecoder().DecodeJSONInterface(d.value, v)
}

func isJSONObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{' && json.Valid(raw)
}
