package bedrock

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// DefaultMaxTokens bounds a turn's output when neither the request nor
// Options says otherwise.
const DefaultMaxTokens int32 = 1024

// Options configures a Client.
type Options struct {
	// Stream makes Converse use ConverseStream, delivering text deltas as the
	// model produces them.
	Stream bool
	// DefaultMaxTokens is used when a request sets no maxTokens; 0 means
	// DefaultMaxTokens.
	DefaultMaxTokens int32
}

// Client runs Converse turns against Bedrock.
type Client struct {
	rt   *bedrockruntime.Client
	opts Options
}

// New wraps a Bedrock Runtime client (see NewRuntime).
func New(rt *bedrockruntime.Client, opts Options) *Client {
	if opts.DefaultMaxTokens <= 0 {
		opts.DefaultMaxTokens = DefaultMaxTokens
	}
	return &Client{rt: rt, opts: opts}
}

// MaxTokens is the maxTokens Converse will send for in: the request's own
// value, else the client default. Cost pre-flight checks rely on it being the
// exact bound that goes on the wire.
func (c *Client) MaxTokens(in *bedrockruntime.ConverseInput) int32 {
	if in != nil && in.InferenceConfig != nil && in.InferenceConfig.MaxTokens != nil {
		return *in.InferenceConfig.MaxTokens
	}
	return c.opts.DefaultMaxTokens
}

// Converse runs one turn. in is not modified; the request sent is a copy
// with maxTokens set to MaxTokens(in).
//
// With Options.Stream, onDelta (if non-nil) receives each text delta in
// order, and the returned output is assembled from the stream to look like a
// non-streamed one. A stream that fails part-way returns the error, never a
// partial output, though onDelta will have seen the text streamed so far.
//
// Errors from the SDK are wrapped, so errors.As finds the modeled
// *types.ThrottlingException etc., and classified, so failure.Classify gives
// their kind (model_throttled...). Tool use without an id or name, or whose
// input is not a JSON object, yields *MalformedToolUseError.
func (c *Client) Converse(ctx context.Context, in *bedrockruntime.ConverseInput, onDelta func(text string)) (*bedrockruntime.ConverseOutput, error) {
	if in == nil {
		return nil, errors.New("bedrock converse: nil input")
	}
	req := *in
	ic := types.InferenceConfiguration{}
	if in.InferenceConfig != nil {
		ic = *in.InferenceConfig
	}
	ic.MaxTokens = aws.Int32(c.MaxTokens(in))
	req.InferenceConfig = &ic
	modelID := aws.ToString(in.ModelId)

	if c.opts.Stream {
		return c.converseStream(ctx, &req, modelID, onDelta)
	}
	out, err := c.rt.Converse(ctx, &req)
	if err != nil {
		return nil, fmt.Errorf("bedrock converse %s: %w", modelID, classify(err))
	}
	if err := validateToolUses(out); err != nil {
		return nil, err
	}
	return out, nil
}

// MalformedToolUseError reports a toolUse block the agent cannot act on.
// It deliberately carries no tool input: the input may be privileged.
type MalformedToolUseError struct {
	ToolUseID string
	Name      string
	// Reason is a fixed description of what is wrong, never model output.
	Reason string
}

func (e *MalformedToolUseError) Error() string {
	return fmt.Sprintf("bedrock: malformed tool use %q (id %q): %s", e.Name, e.ToolUseID, e.Reason)
}

func validateToolUses(out *bedrockruntime.ConverseOutput) error {
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok {
		return nil
	}
	for _, b := range msg.Value.Content {
		tu, ok := b.(*types.ContentBlockMemberToolUse)
		if !ok {
			continue
		}
		id, name := aws.ToString(tu.Value.ToolUseId), aws.ToString(tu.Value.Name)
		if err := checkToolUse(id, name); err != nil {
			return err
		}
		if tu.Value.Input == nil {
			return &MalformedToolUseError{ToolUseID: id, Name: name, Reason: "input missing"}
		}
		raw, err := tu.Value.Input.MarshalSmithyDocument()
		if err != nil || !isJSONObject(raw) {
			return &MalformedToolUseError{ToolUseID: id, Name: name, Reason: "input is not a JSON object"}
		}
	}
	return nil
}

func checkToolUse(id, name string) error {
	switch {
	case id == "":
		return &MalformedToolUseError{ToolUseID: id, Name: name, Reason: "toolUseId missing"}
	case name == "":
		return &MalformedToolUseError{ToolUseID: id, Name: name, Reason: "name missing"}
	}
	return nil
}

// FailureKind classifies the error for failure envelopes.
func (e *MalformedToolUseError) FailureKind() failure.Kind { return failure.KindModelMalformedOutput }
