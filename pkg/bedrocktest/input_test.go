package bedrocktest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
)

// render lists what a ConverseInput carries, one line a part, documents as
// their compact bytes.
func render(t *testing.T, in *bedrockruntime.ConverseInput) string {
	t.Helper()
	doc := func(d document.Interface) string {
		b, err := d.MarshalSmithyDocument()
		if err != nil {
			t.Fatal(err)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, b); err != nil {
			t.Fatalf("document %s: %v", b, err)
		}
		return c.String()
	}
	var out []string
	add := func(f string, a ...any) { out = append(out, fmt.Sprintf(f, a...)) }
	add("model %s", aws.ToString(in.ModelId))
	for _, s := range in.System {
		add("system %q", s.(*types.SystemContentBlockMemberText).Value)
	}
	for _, m := range in.Messages {
		add("message %s", m.Role)
		for _, c := range m.Content {
			switch v := c.(type) {
			case *types.ContentBlockMemberText:
				add(" text %q", v.Value)
			case *types.ContentBlockMemberToolUse:
				add(" toolUse %s %s %s", aws.ToString(v.Value.ToolUseId), aws.ToString(v.Value.Name), doc(v.Value.Input))
			case *types.ContentBlockMemberToolResult:
				add(" toolResult %s %s", aws.ToString(v.Value.ToolUseId), v.Value.Status)
				for _, rc := range v.Value.Content {
					switch r := rc.(type) {
					case *types.ToolResultContentBlockMemberText:
						add("  text %q", r.Value)
					case *types.ToolResultContentBlockMemberJson:
						add("  json %s", doc(r.Value))
					}
				}
			default:
				t.Fatalf("render: %T", c)
			}
		}
	}
	if in.InferenceConfig != nil {
		add("maxTokens %d", aws.ToInt32(in.InferenceConfig.MaxTokens))
	}
	if in.ToolConfig != nil {
		for _, tl := range in.ToolConfig.Tools {
			spec := tl.(*types.ToolMemberToolSpec).Value
			add("tool %s %q %s", aws.ToString(spec.Name), aws.ToString(spec.Description), doc(spec.InputSchema.(*types.ToolInputSchemaMemberJson).Value))
		}
	}
	return strings.Join(out, "\n")
}

// TestConverseInputIsWhatWasSent: the input rebuilt from the bytes the fake
// received carries every part the client sent, documents byte for byte, on
// both routes.
func TestConverseInputIsWhatWasSent(t *testing.T) {
	s := start(t, bedrocktest.Script{Fallback: &bedrocktest.Reply{Text: "ok"}})
	sent := input(profileID,
		userText("File it — «now», \u2028 please."),
		types.Message{Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{
			&types.ContentBlockMemberText{Value: "Searching."},
			&types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{ToolUseId: aws.String("tooluse_0"), Name: aws.String("lookup"),
				Input: document.NewLazyDocument(map[string]any{"q": "<motion> & \"compel\"", "n": 12, "list": []any{true, nil, 1.5}})}},
		}},
		types.Message{Role: types.ConversationRoleUser, Content: []types.ContentBlock{
			&types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{ToolUseId: aws.String("tooluse_0"), Status: types.ToolResultStatusSuccess,
				Content: []types.ToolResultContentBlock{
					&types.ToolResultContentBlockMemberText{Value: "found"},
					&types.ToolResultContentBlockMemberJson{Value: document.NewLazyDocument(map[string]any{"hits": []any{"a", "b"}})},
				}}},
		}})
	sent.InferenceConfig = &types.InferenceConfiguration{MaxTokens: aws.Int32(777)}
	sent.ToolConfig = &types.ToolConfiguration{Tools: []types.Tool{&types.ToolMemberToolSpec{Value: types.ToolSpecification{
		Name: aws.String("lookup"), Description: aws.String("Looks things up."),
		InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(map[string]any{"type": "object", "required": []any{"q"}})}}}}}
	if _, err := sdk(t, s).Converse(context.Background(), sent); err != nil {
		t.Fatal(err)
	}
	if _, err := streamEvents(t, s, sent); err != nil {
		t.Fatal(err)
	}
	want := render(t, sent)
	for _, r := range s.Requests() {
		got, err := r.ConverseInput()
		if err != nil {
			t.Fatalf("stream=%v: %v", r.Stream, err)
		}
		if g := render(t, got); g != want {
			t.Errorf("stream=%v: rebuilt\n%s\nsent\n%s", r.Stream, g, want)
		}
	}
}

// TestConverseInputRefusesWhatItDoesNotRead: a block it does not model is an
// error, not dropped (a measurement would miss it).
func TestConverseInputRefusesWhatItDoesNotRead(t *testing.T) {
	s := start(t, bedrocktest.Script{Fallback: &bedrocktest.Reply{Text: "ok"}})
	sent := input(profileID, types.Message{Role: types.ConversationRoleUser, Content: []types.ContentBlock{
		&types.ContentBlockMemberText{Value: "look"},
		&types.ContentBlockMemberImage{Value: types.ImageBlock{Format: types.ImageFormatPng, Source: &types.ImageSourceMemberBytes{Value: []byte{1, 2, 3}}}},
	}})
	if _, err := sdk(t, s).Converse(context.Background(), sent); err != nil {
		t.Fatal(err)
	}
	if in, err := s.Requests()[0].ConverseInput(); err == nil {
		t.Fatalf("an image block was read as %s", render(t, in))
	}
}

// TestBilledBy: every reply reports what Bill computes from the request it
// answers, on both routes.
func TestBilledBy(t *testing.T) {
	bill := func(r bedrocktest.Request) bedrocktest.Usage {
		return bedrocktest.Usage{CacheWriteInputTokens: int32(len(r.Body)), OutputTokens: r.MaxTokens}
	}
	s := start(t, bedrocktest.Script{Rules: []bedrocktest.Rule{{Name: "r", Reply: bedrocktest.Reply{Text: "ok", Usage: bedrocktest.Usage{InputTokens: 1}}}}}.BilledBy(bill))
	in := input(profileID, userText("go"))
	in.InferenceConfig = &types.InferenceConfiguration{MaxTokens: aws.Int32(321)}
	out, err := sdk(t, s).Converse(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	body := len(s.Requests()[0].Body)
	if u := out.Usage; aws.ToInt32(u.CacheWriteInputTokens) != int32(body) || aws.ToInt32(u.OutputTokens) != 321 || aws.ToInt32(u.InputTokens) != 0 {
		t.Errorf("usage %+v, want %d cache-write tokens and 321 output", u, body)
	}
	evs, err := streamEvents(t, s, in)
	if err != nil {
		t.Fatal(err)
	}
	body = len(s.Requests()[1].Body)
	if last, want := evs[len(evs)-1], fmt.Sprintf("usage:0/321/%d", body+321); last != want {
		t.Errorf("streamed %s, want %s", last, want)
	}
}
