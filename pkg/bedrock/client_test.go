package bedrock_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/seed-f6d3920e/warrant/pkg/bedrock"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
)

const model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

func fake(t *testing.T, script bedrocktest.Script) *bedrocktest.Server {
	t.Helper()
	s := bedrocktest.New(script)
	t.Cleanup(s.Close)
	return s
}

// client is the adapter over the real SDK client, aimed at the fake.
func client(t *testing.T, s *bedrocktest.Server, opts bedrock.Options, ropts ...bedrock.RuntimeOption) *bedrock.Client {
	t.Helper()
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}
	ropts = append([]bedrock.RuntimeOption{bedrock.WithBackoff(bedrock.NoBackoff())}, ropts...)
	return bedrock.New(bedrock.NewRuntime(context.Background(), cfg, s.URL(), ropts...), opts)
}

func input(text string) *bedrockruntime.ConverseInput {
	return &bedrockruntime.ConverseInput{
		ModelId: aws.String(model),
		System:  []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: "Matter: 7f1c2a9e-3b4d-4e5f-8a6b-9c0d1e2f3a4b"}},
		Messages: []types.Message{{
			Role:    types.ConversationRoleUser,
			Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: text}},
		}},
	}
}

// modes runs f once with Converse and once with ConverseStream.
func modes(t *testing.T, f func(t *testing.T, stream bool)) {
	for _, stream := range []bool{false, true} {
		name := "converse"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) { f(t, stream) })
	}
}

func message(t *testing.T, out *bedrockruntime.ConverseOutput) types.Message {
	t.Helper()
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok {
		t.Fatalf("output is %T", out.Output)
	}
	return msg.Value
}

func docJSON(t *testing.T, tu types.ToolUseBlock) string {
	t.Helper()
	raw, err := tu.Input.MarshalSmithyDocument()
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func jsonEqual(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("JSON %s, want %s", got, want)
	}
}

func TestTextTurn(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		s := fake(t, bedrocktest.Script{Rules: []bedrocktest.Rule{{
			When:  bedrocktest.LastUserTextContains("status"),
			Reply: bedrocktest.Reply{Text: "Discovery closes on Friday."},
		}}})
		out, err := client(t, s, bedrock.Options{Stream: stream}).Converse(context.Background(), input("What is the status?"), nil)
		if err != nil {
			t.Fatal(err)
		}
		msg := message(t, out)
		if msg.Role != types.ConversationRoleAssistant || len(msg.Content) != 1 || msg.Content[0].(*types.ContentBlockMemberText).Value != "Discovery closes on Friday." {
			t.Fatalf("message = %#v", msg)
		}
		if out.StopReason != types.StopReasonEndTurn || out.Usage == nil || aws.ToInt32(out.Usage.OutputTokens) == 0 {
			t.Errorf("stop %q usage %+v", out.StopReason, out.Usage)
		}
		if r := s.Requests()[0]; r.Stream != stream || r.ModelID != model {
			t.Errorf("request stream=%v model=%q", r.Stream, r.ModelID)
		}
	})
}

const toolInput = `{"matter_id": "7f1c2a9e-3b4d-4e5f-8a6b-9c0d1e2f3a4b", "limit": 25, "ratio": 0.5, "big": 98765432109876543210, "tags": ["a", "b"], "filters": {"privileged": false, "since": null}}`

func TestToolUseTurnRoundTripsInput(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		s := fake(t, bedrocktest.Script{Fallback: &bedrocktest.Reply{
			ToolUses: []bedrocktest.ToolUse{{Name: "search_matter_documents", Input: json.RawMessage(toolInput)}},
		}})
		c := client(t, s, bedrock.Options{Stream: stream})
		in := input("find the motion")
		out, err := c.Converse(context.Background(), in, nil)
		if err != nil {
			t.Fatal(err)
		}
		if out.StopReason != types.StopReasonToolUse {
			t.Errorf("stop reason = %q", out.StopReason)
		}
		msg := message(t, out)
		tu := msg.Content[0].(*types.ContentBlockMemberToolUse).Value
		if aws.ToString(tu.ToolUseId) != "tooluse_0" || aws.ToString(tu.Name) != "search_matter_documents" {
			t.Fatalf("tool use = %+v", tu)
		}
		jsonEqual(t, docJSON(t, tu), toolInput)
		if !strings.Contains(docJSON(t, tu), "98765432109876543210") {
			t.Errorf("big integer lost precision: %s", docJSON(t, tu))
		}

		// Sending the assistant message back, as the agent does, must put the
		// same input on the wire.
		in.Messages = append(in.Messages, msg, types.Message{Role: types.ConversationRoleUser, Content: []types.ContentBlock{
			&types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{ToolUseId: tu.ToolUseId, Status: types.ToolResultStatusSuccess,
				Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: "none"}}}},
		}})
		if _, err := c.Converse(context.Background(), in, nil); err != nil {
			t.Fatal(err)
		}
		sent := s.Requests()[1].Messages[1].Blocks[0].ToolUse
		if sent == nil || sent.ID != "tooluse_0" {
			t.Fatalf("sent back = %+v", sent)
		}
		jsonEqual(t, string(sent.Input), toolInput)

		// The agent can decode it: into its own struct through encoding/json
		// (the SDK's document decoder ignores json tags), or into a map.
		var args struct {
			MatterID string `json:"matter_id"`
			Limit    int    `json:"limit"`
		}
		if err := json.Unmarshal([]byte(docJSON(t, tu)), &args); err != nil || args.Limit != 25 || args.MatterID == "" {
			t.Errorf("json.Unmarshal = %+v, %v", args, err)
		}
		var m map[string]any
		if err := tu.Input.UnmarshalSmithyDocument(&m); err != nil || len(m) != 6 {
			t.Errorf("UnmarshalSmithyDocument = %v, %v", m, err)
		}
	})
}

func TestStreamAssemblesSameOutputAsConverse(t *testing.T) {
	s := fake(t, bedrocktest.Script{Fallback: &bedrocktest.Reply{
		Text: "I will search, then summarize — “quoted” text.",
		ToolUses: []bedrocktest.ToolUse{
			{Name: "search_matter_documents", Input: json.RawMessage(toolInput)},
			{Name: "get_matter_summary", Input: json.RawMessage(`{}`)},
		},
		Usage: bedrocktest.Usage{InputTokens: 1200, OutputTokens: 85, CacheReadInputTokens: 300, CacheWriteInputTokens: 40},
	}})
	plain, err := client(t, s, bedrock.Options{}).Converse(context.Background(), input("go"), nil)
	if err != nil {
		t.Fatal(err)
	}
	streamed, err := client(t, s, bedrock.Options{Stream: true}).Converse(context.Background(), input("go"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain.StopReason != streamed.StopReason {
		t.Errorf("stop reason %q vs %q", plain.StopReason, streamed.StopReason)
	}
	if !reflect.DeepEqual(plain.Usage, streamed.Usage) {
		t.Errorf("usage %+v vs %+v", plain.Usage, streamed.Usage)
	}
	if aws.ToInt64(plain.Metrics.LatencyMs) != aws.ToInt64(streamed.Metrics.LatencyMs) {
		t.Errorf("latency differs")
	}
	pm, sm := message(t, plain), message(t, streamed)
	if pm.Role != sm.Role || len(pm.Content) != 3 || len(sm.Content) != 3 {
		t.Fatalf("messages %#v vs %#v", pm, sm)
	}
	for i := range pm.Content {
		switch p := pm.Content[i].(type) {
		case *types.ContentBlockMemberText:
			st, ok := sm.Content[i].(*types.ContentBlockMemberText)
			if !ok || st.Value != p.Value {
				t.Errorf("block %d: %#v vs %#v", i, p, sm.Content[i])
			}
		case *types.ContentBlockMemberToolUse:
			st, ok := sm.Content[i].(*types.ContentBlockMemberToolUse)
			if !ok || aws.ToString(st.Value.ToolUseId) != aws.ToString(p.Value.ToolUseId) || aws.ToString(st.Value.Name) != aws.ToString(p.Value.Name) {
				t.Fatalf("block %d: %#v vs %#v", i, p, sm.Content[i])
			}
			jsonEqual(t, docJSON(t, st.Value), docJSON(t, p.Value))
			var pv, sv map[string]any
			if err := p.Value.Input.UnmarshalSmithyDocument(&pv); err != nil {
				t.Fatal(err)
			}
			if err := st.Value.Input.UnmarshalSmithyDocument(&sv); err != nil {
				t.Fatal(err)
			}
			pj, _ := json.Marshal(pv)
			sj, _ := json.Marshal(sv)
			jsonEqual(t, string(sj), string(pj))
		default:
			t.Fatalf("block %d is %T", i, p)
		}
	}
}

func TestDeltasDeliveredInOrder(t *testing.T) {
	text := "The motion to compel was filed at 10:42 this morning."
	s := fake(t, bedrocktest.Script{Fallback: &bedrocktest.Reply{Text: text, StreamChunks: 7}})
	var deltas []string
	out, err := client(t, s, bedrock.Options{Stream: true}).Converse(context.Background(), input("go"), func(d string) {
		deltas = append(deltas, d)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(deltas) != 7 || strings.Join(deltas, "") != text {
		t.Fatalf("deltas = %q", deltas)
	}
	if got := message(t, out).Content[0].(*types.ContentBlockMemberText).Value; got != text {
		t.Errorf("assembled = %q", got)
	}
}

func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault bedrocktest.Fault
		times int
	}{
		{"throttle", bedrocktest.FaultThrottle, 2},
		{"model timeout", bedrocktest.FaultModelTimeout, 2},
		{"service unavailable", bedrocktest.FaultServiceUnavailable, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			modes(t, func(t *testing.T, stream bool) {
				s := fake(t, bedrocktest.Script{Rules: []bedrocktest.Rule{
					{Name: "fault", Reply: bedrocktest.Reply{Fault: tc.fault}, Times: tc.times},
					{Name: "ok", Reply: bedrocktest.Reply{Text: "recovered"}},
				}})
				out, err := client(t, s, bedrock.Options{Stream: stream}).Converse(context.Background(), input("go"), nil)
				if err != nil {
					t.Fatal(err)
				}
				if got := message(t, out).Content[0].(*types.ContentBlockMemberText).Value; got != "recovered" {
					t.Errorf("text = %q", got)
				}
				if s.Calls() != tc.times+1 {
					t.Errorf("calls = %d, want %d", s.Calls(), tc.times+1)
				}
			})
		})
	}
}

func TestRetriesExhausted(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		s := fake(t, bedrocktest.Script{Fallback: &bedrocktest.Reply{Fault: bedrocktest.FaultThrottle}})
		_, err := client(t, s, bedrock.Options{Stream: stream}).Converse(context.Background(), input("go"), nil)
		var te *types.ThrottlingException
		if !errors.As(err, &te) {
			t.Fatalf("err = %v", err)
		}
		if !strings.Contains(err.Error(), model) {
			t.Errorf("error %q does not name the model", err)
		}
		if s.Calls() != bedrock.DefaultMaxAttempts {
			t.Errorf("calls = %d", s.Calls())
		}

		s = fake(t, bedrocktest.Script{Fallback: &bedrocktest.Reply{Fault: bedrocktest.FaultModelTimeout}})
		_, err = client(t, s, bedrock.Options{Stream: stream}, bedrock.WithMaxAttempts(5)).Converse(context.Background(), input("go"), nil)
		var mte *types.ModelTimeoutException
		if !errors.As(err, &mte) {
			t.Fatalf("err = %v", err)
		}
		if s.Calls() != 5 {
			t.Errorf("calls = %d, want 5", s.Calls())
		}
	})
}

func TestClientErrorsNotRetried(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		for _, tc := range []struct {
			fault  bedrocktest.Fault
			target any
		}{
			{bedrocktest.FaultValidation, new(*types.ValidationException)},
			{bedrocktest.FaultAccessDenied, new(*types.AccessDeniedException)},
		} {
			s := fake(t, bedrocktest.Script{Fallback: &bedrocktest.Reply{Fault: tc.fault}})
			_, err := client(t, s, bedrock.Options{Stream: stream}).Converse(context.Background(), input("go"), nil)
			if !errors.As(err, tc.target) {
				t.Fatalf("%s: err = %v", tc.fault, err)
			}
			if s.Calls() != 1 {
				t.Errorf("%s: calls = %d", tc.fault, s.Calls())
			}
		}
	})
}

func TestMalformedToolUse(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		s := fake(t, bedrocktest.Script{Fallback: &bedrocktest.Reply{
			Fault:    bedrocktest.FaultMalformedToolUse,
			ToolUses: []bedrocktest.ToolUse{{ID: "tu-1", Name: "file_court_document"}},
		}})
		out, err := client(t, s, bedrock.Options{Stream: stream}).Converse(context.Background(), input("go"), nil)
		var me *bedrock.MalformedToolUseError
		if !errors.As(err, &me) || out != nil {
			t.Fatalf("out %v, err = %v", out, err)
		}
		if me.ToolUseID != "tu-1" || me.Name != "file_court_document" {
			t.Errorf("error = %+v", me)
		}
		// The fake's broken inputs are `"not an object"` and
		// `{"matter_id": "unterminated`; neither may leak into the message.
		for _, leak := range []string{"not an object", "matter_id", "unterminated"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("error %q leaks the tool input", err)
			}
		}
	})
}

func TestToolUseMissingName(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		s := fake(t, bedrocktest.Script{Fallback: &bedrocktest.Reply{ToolUses: []bedrocktest.ToolUse{{ID: "tu-9"}}}})
		_, err := client(t, s, bedrock.Options{Stream: stream}).Converse(context.Background(), input("go"), nil)
		var me *bedrock.MalformedToolUseError
		if !errors.As(err, &me) || me.ToolUseID != "tu-9" {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestMidStreamException(t *testing.T) {
	s := fake(t, bedrocktest.Script{Fallback: &bedrocktest.Reply{Text: "Partial text that never completes", Fault: bedrocktest.FaultMidStream}})
	var deltas []string
	out, err := client(t, s, bedrock.Options{Stream: true}).Converse(context.Background(), input("go"), func(d string) {
		deltas = append(deltas, d)
	})
	var mse *types.ModelStreamErrorException
	if !errors.As(err, &mse) || out != nil {
		t.Fatalf("out %v, err = %v", out, err)
	}
	if !strings.HasPrefix(err.Error(), "bedrock converse-stream") {
		t.Errorf("err = %q", err)
	}
	if len(deltas) != 1 {
		t.Errorf("deltas before the exception = %q", deltas)
	}
	// The request itself succeeded, so the SDK does not retry it.
	if s.Calls() != 1 {
		t.Errorf("calls = %d", s.Calls())
	}
}

func TestMaxTokensOnTheWire(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		s := fake(t, bedrocktest.Script{Fallback: &bedrocktest.Reply{Text: "ok"}})
		for _, tc := range []struct {
			opts   bedrock.Options
			config *types.InferenceConfiguration
			want   int32
		}{
			{bedrock.Options{}, nil, bedrock.DefaultMaxTokens},
			{bedrock.Options{DefaultMaxTokens: 300}, nil, 300},
			{bedrock.Options{DefaultMaxTokens: 300}, &types.InferenceConfiguration{Temperature: aws.Float32(0.2)}, 300},
			{bedrock.Options{DefaultMaxTokens: 300}, &types.InferenceConfiguration{MaxTokens: aws.Int32(50)}, 50},
		} {
			opts := tc.opts
			opts.Stream = stream
			c := client(t, s, opts)
			in := input("go")
			in.InferenceConfig = tc.config
			var callerMax *int32
			if tc.config != nil {
				callerMax = tc.config.MaxTokens
			}
			if got := c.MaxTokens(in); got != tc.want {
				t.Errorf("MaxTokens = %d, want %d", got, tc.want)
			}
			if _, err := c.Converse(context.Background(), in, nil); err != nil {
				t.Fatal(err)
			}
			reqs := s.Requests()
			last := reqs[len(reqs)-1]
			if last.MaxTokens != tc.want {
				t.Errorf("maxTokens on the wire = %d, want %d", last.MaxTokens, tc.want)
			}
			if tc.config != nil && !strings.Contains(string(last.Body), `"temperature"`) == (tc.config.Temperature != nil) {
				t.Errorf("other inference settings dropped: %s", last.Body)
			}
			if in.InferenceConfig != tc.config || (tc.config != nil && tc.config.MaxTokens != callerMax) {
				t.Errorf("caller's input was modified")
			}
		}
	})
}

func TestNilInput(t *testing.T) {
	s := fake(t, bedrocktest.Script{})
	if _, err := client(t, s, bedrock.Options{}).Converse(context.Background(), nil, nil); err == nil {
		t.Fatal("nil input accepted")
	}
}

// TestStreamSurvivesFastServer guards the readOnlyBodies workaround: before
// it, roughly 1% of streamed calls on a fresh loopback connection lost the
// connection mid-stream, so 300 such calls fail almost surely without it.
func TestStreamSurvivesFastServer(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test")
	}
	for i := range 300 {
		s := bedrocktest.New(bedrocktest.Script{Fallback: &bedrocktest.Reply{Text: "a short streamed answer"}})
		c := client(t, s, bedrock.Options{Stream: true}, bedrock.WithMaxAttempts(1))
		_, err := c.Converse(context.Background(), input("go"), nil)
		s.Close()
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
}

func TestRuntimeNeverLogsBodies(t *testing.T) {
	cfg := aws.Config{
		Region:        "us-east-1",
		Credentials:   credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		ClientLogMode: aws.LogRetries | aws.LogRequestWithBody | aws.LogResponseWithBody | aws.LogResponseEventMessage,
	}
	mode := bedrock.NewRuntime(context.Background(), cfg, "").Options().ClientLogMode
	if mode.IsRequestWithBody() || mode.IsResponseWithBody() || mode.IsResponseEventMessage() || !mode.IsRetries() {
		t.Fatalf("log mode = %b", mode)
	}
}
