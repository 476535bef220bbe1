package bedrocktest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/seed-f6d3920e/warrant/pkg/bedrock"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
)

const profileID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

// sdk is the real SDK client aimed at the fake, without retries so that each
// call is exactly one request. It is built by bedrock.NewRuntime for that
// package's workaround of an SDK race that otherwise breaks about 1% of
// streamed responses from a loopback server.
func sdk(t *testing.T, s *bedrocktest.Server) *bedrockruntime.Client {
	t.Helper()
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}
	return bedrock.NewRuntime(context.Background(), cfg, s.URL(), bedrock.WithMaxAttempts(1))
}

func start(t *testing.T, script bedrocktest.Script) *bedrocktest.Server {
	t.Helper()
	s := bedrocktest.New(script)
	t.Cleanup(s.Close)
	return s
}

func userText(text string) types.Message {
	return types.Message{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: text}}}
}

func input(model string, msgs ...types.Message) *bedrockruntime.ConverseInput {
	return &bedrockruntime.ConverseInput{
		ModelId:  aws.String(model),
		System:   []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: "You are a paralegal. Matter: 7f1c2a9e-3b4d-4e5f-8a6b-9c0d1e2f3a4b"}},
		Messages: msgs,
	}
}

func streamInput(in *bedrockruntime.ConverseInput) *bedrockruntime.ConverseStreamInput {
	return &bedrockruntime.ConverseStreamInput{ModelId: in.ModelId, System: in.System, Messages: in.Messages, InferenceConfig: in.InferenceConfig, ToolConfig: in.ToolConfig}
}

func content(t *testing.T, out *bedrockruntime.ConverseOutput) []types.ContentBlock {
	t.Helper()
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok {
		t.Fatalf("output is %T, want message", out.Output)
	}
	if msg.Value.Role != types.ConversationRoleAssistant {
		t.Fatalf("role = %q", msg.Value.Role)
	}
	return msg.Value.Content
}

func jsonEqual(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got is not JSON: %v", err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want is not JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("JSON = %s, want %s", got, want)
	}
}

func TestConverseTextWithInferenceProfileID(t *testing.T) {
	s := start(t, bedrocktest.Script{
		KnownModels: []string{profileID},
		Rules: []bedrocktest.Rule{{
			Name:  "hello",
			When:  bedrocktest.LastUserTextContains("HELLO"),
			Reply: bedrocktest.Reply{Text: "Hi there.", Usage: bedrocktest.Usage{InputTokens: 11, OutputTokens: 3, CacheReadInputTokens: 5}},
		}},
	})
	in := input(profileID, userText("hello, model"))
	in.InferenceConfig = &types.InferenceConfiguration{MaxTokens: aws.Int32(77)}
	in.ToolConfig = &types.ToolConfiguration{Tools: []types.Tool{&types.ToolMemberToolSpec{Value: types.ToolSpecification{
		Name:        aws.String("get_matter_summary"),
		InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(map[string]any{"type": "object"})},
	}}}}
	out, err := sdk(t, s).Converse(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	c := content(t, out)
	if len(c) != 1 || c[0].(*types.ContentBlockMemberText).Value != "Hi there." {
		t.Fatalf("content = %#v", c)
	}
	if out.StopReason != types.StopReasonEndTurn {
		t.Errorf("stop reason = %q", out.StopReason)
	}
	u := out.Usage
	if aws.ToInt32(u.InputTokens) != 11 || aws.ToInt32(u.OutputTokens) != 3 || aws.ToInt32(u.CacheReadInputTokens) != 5 || aws.ToInt32(u.TotalTokens) != 19 || u.CacheWriteInputTokens != nil {
		t.Errorf("usage = %+v", u)
	}
	if out.Metrics == nil || aws.ToInt64(out.Metrics.LatencyMs) == 0 {
		t.Errorf("metrics = %+v", out.Metrics)
	}

	reqs := s.Requests()
	if len(reqs) != 1 || s.Calls() != 1 {
		t.Fatalf("requests = %d, calls = %d", len(reqs), s.Calls())
	}
	r := reqs[0]
	if r.ModelID != profileID || r.Stream || r.Rule != "hello" || r.MaxTokens != 77 {
		t.Errorf("request = %+v", r)
	}
	if !strings.Contains(r.Path, "%3A") {
		t.Errorf("path %q: want the SDK's escaped colon", r.Path)
	}
	if !reflect.DeepEqual(r.ToolNames, []string{"get_matter_summary"}) {
		t.Errorf("tool names = %v", r.ToolNames)
	}
	if len(r.System) != 1 || !strings.Contains(r.System[0], "Matter: ") {
		t.Errorf("system = %v", r.System)
	}
	want := []bedrocktest.Message{{Role: "user", Blocks: []bedrocktest.Block{{Text: "hello, model"}}}}
	if !reflect.DeepEqual(r.Messages, want) {
		t.Errorf("messages = %+v", r.Messages)
	}
}

func TestModelIDWithSlash(t *testing.T) {
	arn := "arn:aws:bedrock:us-east-1:123456789012:inference-profile/" + profileID
	s := start(t, bedrocktest.Script{KnownModels: []string{arn}, Fallback: &bedrocktest.Reply{Text: "ok"}})
	if _, err := sdk(t, s).Converse(context.Background(), input(arn, userText("hi"))); err != nil {
		t.Fatal(err)
	}
	if got := s.Requests()[0].ModelID; got != arn {
		t.Fatalf("model id = %q", got)
	}
}

func TestToolUseAndToolResultsRoundTrip(t *testing.T) {
	s := start(t, bedrocktest.Script{Rules: []bedrocktest.Rule{{
		When: bedrocktest.AfterToolResultFrom("lookup", "error"),
		Reply: bedrocktest.Reply{ToolUses: []bedrocktest.ToolUse{
			{Name: "first", Input: json.RawMessage(`{"n": 12345678901234567890, "list": [1, "two", null], "nested": {"ok": true}}`)},
			{ID: "fixed", Name: "second", InputFunc: func(c bedrocktest.Conversation) json.RawMessage {
				return json.RawMessage(`{"tool": "` + c.ToolName("tooluse_0") + `"}`)
			}},
		}},
	}}})
	history := []types.Message{
		userText("look it up"),
		{Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{
			&types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{ToolUseId: aws.String("tooluse_0"), Name: aws.String("lookup"), Input: document.NewLazyDocument(map[string]any{"q": "x"})}},
		}},
		{Role: types.ConversationRoleUser, Content: []types.ContentBlock{
			&types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{
				ToolUseId: aws.String("tooluse_0"),
				Status:    types.ToolResultStatusError,
				Content: []types.ToolResultContentBlock{
					&types.ToolResultContentBlockMemberText{Value: "not found"},
					&types.ToolResultContentBlockMemberJson{Value: document.NewLazyDocument(map[string]any{"code": 404})},
				},
			}},
		}},
	}
	out, err := sdk(t, s).Converse(context.Background(), input("m", history...))
	if err != nil {
		t.Fatal(err)
	}
	if out.StopReason != types.StopReasonToolUse {
		t.Errorf("stop reason = %q", out.StopReason)
	}
	c := content(t, out)
	if len(c) != 2 {
		t.Fatalf("content = %#v", c)
	}
	first, second := c[0].(*types.ContentBlockMemberToolUse).Value, c[1].(*types.ContentBlockMemberToolUse).Value
	// One assistant turn precedes the reply, so generated ids start at 1.
	if aws.ToString(first.ToolUseId) != "tooluse_1" || aws.ToString(first.Name) != "first" || aws.ToString(second.ToolUseId) != "fixed" {
		t.Errorf("tool uses = %+v / %+v", first, second)
	}
	raw, err := first.Input.MarshalSmithyDocument()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "12345678901234567890") {
		t.Errorf("big number lost precision: %s", raw)
	}
	jsonEqual(t, raw, []byte(`{"n": 12345678901234567890, "list": [1, "two", null], "nested": {"ok": true}}`))
	raw, _ = second.Input.MarshalSmithyDocument()
	jsonEqual(t, raw, []byte(`{"tool": "lookup"}`))

	r := s.Requests()[0]
	tu := r.Messages[1].Blocks[0].ToolUse
	if tu == nil || tu.ID != "tooluse_0" || tu.Name != "lookup" {
		t.Fatalf("recorded tool use = %+v", tu)
	}
	jsonEqual(t, tu.Input, []byte(`{"q":"x"}`))
	res := r.LastToolResults()
	if len(res) != 1 || res[0].ToolUseID != "tooluse_0" || res[0].Status != "error" || !reflect.DeepEqual(res[0].Texts, []string{"not found"}) || len(res[0].JSON) != 1 {
		t.Fatalf("recorded tool results = %+v", res)
	}
	jsonEqual(t, res[0].JSON[0], []byte(`{"code":404}`))
	if !r.HasToolResult("lookup") || !r.HasToolResult("tooluse_0") || r.HasToolResult("other") {
		t.Error("HasToolResult")
	}
	if r.LastUserText() != "look it up" {
		t.Errorf("LastUserText = %q", r.LastUserText())
	}
}

// streamEvent is a compact rendering of one ConverseStream event.
func streamEvents(t *testing.T, s *bedrocktest.Server, in *bedrockruntime.ConverseInput) ([]string, error) {
	t.Helper()
	out, err := sdk(t, s).ConverseStream(context.Background(), streamInput(in))
	if err != nil {
		return nil, err
	}
	stream := out.GetStream()
	defer stream.Close()
	var evs []string
	for ev := range stream.Events() {
		switch v := ev.(type) {
		case *types.ConverseStreamOutputMemberMessageStart:
			evs = append(evs, "start:"+string(v.Value.Role))
		case *types.ConverseStreamOutputMemberContentBlockStart:
			tu := v.Value.Start.(*types.ContentBlockStartMemberToolUse).Value
			evs = append(evs, "blockStart:"+aws.ToString(tu.ToolUseId)+":"+aws.ToString(tu.Name))
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			switch d := v.Value.Delta.(type) {
			case *types.ContentBlockDeltaMemberText:
				evs = append(evs, "text:"+d.Value)
			case *types.ContentBlockDeltaMemberToolUse:
				evs = append(evs, "input:"+aws.ToString(d.Value.Input))
			}
		case *types.ConverseStreamOutputMemberContentBlockStop:
			evs = append(evs, "blockStop")
		case *types.ConverseStreamOutputMemberMessageStop:
			evs = append(evs, "stop:"+string(v.Value.StopReason))
		case *types.ConverseStreamOutputMemberMetadata:
			u := v.Value.Usage
			evs = append(evs, "usage:"+strings.Join([]string{itoa(u.InputTokens), itoa(u.OutputTokens), itoa(u.TotalTokens)}, "/"))
		default:
			t.Fatalf("unexpected event %T", ev)
		}
	}
	return evs, stream.Err()
}

func itoa(p *int32) string { b, _ := json.Marshal(aws.ToInt32(p)); return string(b) }

func TestStreamFraming(t *testing.T) {
	s := start(t, bedrocktest.Script{Fallback: &bedrocktest.Reply{
		Text:     "Résumé … done",
		ToolUses: []bedrocktest.ToolUse{{Name: "t", Input: json.RawMessage(`{"k":"é"}`)}},
		Usage:    bedrocktest.Usage{InputTokens: 4, OutputTokens: 2},
	}})
	evs, err := streamEvents(t, s, input(profileID, userText("go")))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"start:assistant",
		"text:Résum", "text:é … d", "text:one", // split by runes, never inside one
		"blockStop",
		"blockStart:tooluse_0:t",
		`input:{"k":`, `input:"é"}`,
		"blockStop",
		"stop:tool_use",
		"usage:4/2/6",
	}
	if !reflect.DeepEqual(evs, want) {
		t.Fatalf("events:\n got %q\nwant %q", evs, want)
	}
	r := s.Requests()[0]
	if !r.Stream || r.ModelID != profileID || !strings.HasSuffix(r.Path, "/converse-stream") {
		t.Errorf("request = %+v", r)
	}
}

func TestStreamChunks(t *testing.T) {
	s := start(t, bedrocktest.Script{Fallback: &bedrocktest.Reply{Text: "abcdef", StreamChunks: 6}})
	evs, err := streamEvents(t, s, input("m", userText("go")))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.Join(evs, "|"), "text:"); n != 6 {
		t.Fatalf("%d text deltas in %q", n, evs)
	}
}

func TestFaults(t *testing.T) {
	cases := []struct {
		fault  bedrocktest.Fault
		stream bool
		target any
		status int
	}{
		{bedrocktest.FaultThrottle, false, new(*types.ThrottlingException), 429},
		{bedrocktest.FaultThrottle, true, new(*types.ThrottlingException), 429},
		{bedrocktest.FaultModelTimeout, false, new(*types.ModelTimeoutException), 408},
		{bedrocktest.FaultModelTimeout, true, new(*types.ModelTimeoutException), 408},
		{bedrocktest.FaultAccessDenied, false, new(*types.AccessDeniedException), 403},
		{bedrocktest.FaultValidation, false, new(*types.ValidationException), 400},
		{bedrocktest.FaultValidation, true, new(*types.ValidationException), 400},
		{bedrocktest.FaultInternal, false, new(*types.InternalServerException), 500},
		{bedrocktest.FaultServiceUnavailable, false, new(*types.ServiceUnavailableException), 503},
		{bedrocktest.FaultMidStream, false, new(*types.InternalServerException), 500},
		{bedrocktest.FaultMidStream, true, new(*types.ModelStreamErrorException), 0},
	}
	for _, tc := range cases {
		name := string(tc.fault)
		if tc.stream {
			name += "/stream"
		}
		t.Run(name, func(t *testing.T) {
			s := start(t, bedrocktest.Script{Fallback: &bedrocktest.Reply{Text: "never seen in full", Fault: tc.fault}})
			in := input("m", userText("go"))
			var err error
			var evs []string
			if tc.stream {
				evs, err = streamEvents(t, s, in)
			} else {
				_, err = sdk(t, s).Converse(context.Background(), in)
			}
			if !errors.As(err, tc.target) {
				t.Fatalf("err = %v (%T), want %T", err, err, tc.target)
			}
			var httpErr interface{ HTTPStatusCode() int }
			if tc.status != 0 && (!errors.As(err, &httpErr) || httpErr.HTTPStatusCode() != tc.status) {
				t.Errorf("status: %v", err)
			}
			if tc.fault == bedrocktest.FaultMidStream && tc.stream {
				if want := []string{"start:assistant", "text:never "}; !reflect.DeepEqual(evs, want) {
					t.Errorf("events before the exception = %q, want %q", evs, want)
				}
			}
			if s.Calls() != 1 {
				t.Errorf("calls = %d", s.Calls())
			}
		})
	}
}

func TestMalformedToolUseFault(t *testing.T) {
	s := start(t, bedrocktest.Script{Fallback: &bedrocktest.Reply{Fault: bedrocktest.FaultMalformedToolUse}})
	out, err := sdk(t, s).Converse(context.Background(), input("m", userText("go")))
	if err != nil {
		t.Fatal(err)
	}
	tu := content(t, out)[0].(*types.ContentBlockMemberToolUse).Value
	raw, _ := tu.Input.MarshalSmithyDocument()
	if string(raw) != `"not an object"` || aws.ToString(tu.Name) == "" || aws.ToString(tu.ToolUseId) == "" {
		t.Fatalf("tool use %+v input %s", tu, raw)
	}

	evs, err := streamEvents(t, s, input("m", userText("go")))
	if err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	for _, e := range evs {
		if s, ok := strings.CutPrefix(e, "input:"); ok {
			in.WriteString(s)
		}
	}
	if in.Len() == 0 || json.Valid([]byte(in.String())) {
		t.Fatalf("streamed input %q should be non-empty invalid JSON", in.String())
	}
}

func TestTimesAndFallThrough(t *testing.T) {
	s := start(t, bedrocktest.Script{Rules: []bedrocktest.Rule{
		{Name: "throttle", Reply: bedrocktest.Reply{Fault: bedrocktest.FaultThrottle}, Times: 2},
		{Name: "ok", When: bedrocktest.Always, Reply: bedrocktest.Reply{Text: "ok"}},
	}})
	c := sdk(t, s)
	for i, wantErr := range []bool{true, true, false, false} {
		_, err := c.Converse(context.Background(), input("m", userText("go")))
		if (err != nil) != wantErr {
			t.Fatalf("call %d: err = %v", i, err)
		}
	}
	var rules []string
	for _, r := range s.Requests() {
		rules = append(rules, r.Rule)
	}
	if want := []string{"throttle", "throttle", "ok", "ok"}; !reflect.DeepEqual(rules, want) {
		t.Fatalf("rules = %v", rules)
	}
}

func TestTimesUnderConcurrency(t *testing.T) {
	s := start(t, bedrocktest.Script{
		Rules:    []bedrocktest.Rule{{Name: "once", Reply: bedrocktest.Reply{Text: "once"}, Times: 1}},
		Fallback: &bedrocktest.Reply{Text: "later"},
	})
	c := sdk(t, s)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := c.Converse(context.Background(), input("m", userText("go"))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	n := 0
	for _, r := range s.Requests() {
		if r.Rule == "once" {
			n++
		}
	}
	if n != 1 || s.Calls() != 8 {
		t.Fatalf("once fired %d times in %d calls", n, s.Calls())
	}
}

func TestNoRuleMatched(t *testing.T) {
	s := start(t, bedrocktest.Script{Rules: []bedrocktest.Rule{{When: bedrocktest.LastUserTextContains("nope")}}})
	_, err := sdk(t, s).Converse(context.Background(), input("m", userText("go")))
	var ve *types.ValidationException
	if !errors.As(err, &ve) || !strings.Contains(ve.ErrorMessage(), "no script rule matched") {
		t.Fatalf("err = %v", err)
	}
	if s.Calls() != 1 {
		t.Errorf("calls = %d", s.Calls())
	}
}

func TestUnknownModel(t *testing.T) {
	s := start(t, bedrocktest.Script{KnownModels: []string{profileID}, Fallback: &bedrocktest.Reply{Text: "ok"}})
	_, err := sdk(t, s).Converse(context.Background(), input("anthropic.claude-nonexistent", userText("go")))
	var ve *types.ValidationException
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	if r := s.Requests()[0]; r.ModelID != "anthropic.claude-nonexistent" || r.Rule != "" {
		t.Errorf("request = %+v", r)
	}
}

func TestDefaultUsage(t *testing.T) {
	s := start(t, bedrocktest.Script{Fallback: &bedrocktest.Reply{Text: strings.Repeat("x", 40)}})
	out, err := sdk(t, s).Converse(context.Background(), input("m", userText(strings.Repeat("long prompt ", 50))))
	if err != nil {
		t.Fatal(err)
	}
	body := s.Requests()[0].Body
	if got, want := aws.ToInt32(out.Usage.InputTokens), int32(len(body)/4); got != want || got < 150 {
		t.Errorf("input tokens = %d, want %d", got, want)
	}
	if got := aws.ToInt32(out.Usage.OutputTokens); got != 11 {
		t.Errorf("output tokens = %d, want 11", got)
	}
}

func TestMissingAuthorization(t *testing.T) {
	s := start(t, bedrocktest.Script{Fallback: &bedrocktest.Reply{Text: "ok"}})
	resp, err := http.Post(s.URL()+"/model/m/converse", "application/json", strings.NewReader(`{"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Amzn-ErrorType") != "AccessDeniedException" {
		t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"))
	}
}

func TestNewOn(t *testing.T) {
	s, err := bedrocktest.NewOn("127.0.0.1:0", bedrocktest.Script{Fallback: &bedrocktest.Reply{Text: "ok"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := sdk(t, s).Converse(context.Background(), input("m", userText("go"))); err != nil {
		t.Fatal(err)
	}
	taken := strings.TrimPrefix(s.URL(), "http://")
	if _, err := bedrocktest.NewOn(taken, bedrocktest.Script{}); err == nil || !strings.Contains(err.Error(), taken) {
		t.Errorf("taken port: err = %v", err)
	}
	if _, err := bedrocktest.NewOn(":0", bedrocktest.Script{}); err == nil {
		t.Error("all-interfaces address accepted")
	}
	if _, err := bedrocktest.NewOn(net.JoinHostPort("8.8.8.8", "0"), bedrocktest.Script{}); err == nil {
		t.Error("non-loopback address accepted")
	}
}

func TestPredicates(t *testing.T) {
	c := bedrocktest.Conversation{Messages: []bedrocktest.Message{
		{Role: "user", Blocks: []bedrocktest.Block{{Text: "Please FILE it"}}},
		{Role: "assistant", Blocks: []bedrocktest.Block{{ToolUse: &bedrocktest.ToolUse{ID: "a", Name: "tool_a"}}}},
		{Role: "user", Blocks: []bedrocktest.Block{{ToolResult: &bedrocktest.ToolResult{ToolUseID: "a"}}}},
	}}
	checks := []struct {
		name string
		p    func(bedrocktest.Conversation) bool
		want bool
	}{
		{"contains", bedrocktest.LastUserTextContains("file"), true},
		{"not contains", bedrocktest.LastUserTextContains("summar"), false},
		{"any result", bedrocktest.AfterToolResult(""), true},
		{"missing status is success", bedrocktest.AfterToolResult("success"), true},
		{"error", bedrocktest.AfterToolResult("error"), false},
		{"from tool", bedrocktest.AfterToolResultFrom("tool_a", "success"), true},
		{"from other tool", bedrocktest.AfterToolResultFrom("tool_b", ""), false},
		{"and", bedrocktest.And(bedrocktest.Always, bedrocktest.AfterToolResult("")), true},
		{"and false", bedrocktest.And(bedrocktest.Always, bedrocktest.AfterToolResult("error")), false},
	}
	for _, ck := range checks {
		if got := ck.p(c); got != ck.want {
			t.Errorf("%s = %v", ck.name, got)
		}
	}
	if bedrocktest.AfterToolResult("")(bedrocktest.Conversation{Messages: c.Messages[:2]}) {
		t.Error("AfterToolResult matched when the last message is the assistant's")
	}
}

// TestDelay: a reply with Delay answers only after it: a caller whose
// deadline comes first gets no answer, one who waits gets it.
func TestDelay(t *testing.T) {
	s := start(t, bedrocktest.Script{Rules: []bedrocktest.Rule{
		{Name: "slow", Reply: bedrocktest.Reply{Text: "late", Delay: time.Minute}, Times: 1},
		{Name: "brief", Reply: bedrocktest.Reply{Text: "soon", Delay: 20 * time.Millisecond}},
	}})
	c := sdk(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := c.Converse(ctx, input("m", userText("go"))); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a minute's delay answered within 200 ms: %v", err)
	}
	out, err := c.Converse(context.Background(), input("m", userText("go")))
	if err != nil {
		t.Fatal(err)
	}
	if tb, ok := content(t, out)[0].(*types.ContentBlockMemberText); !ok || tb.Value != "soon" {
		t.Fatalf("content %+v", content(t, out))
	}
}
