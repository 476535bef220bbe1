package bedrocktest_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
)

const matter = "7f1c2a9e-3b4d-4e5f-8a6b-9c0d1e2f3a4b" // in input()'s system prompt

// demoTurn sends history to the demo model and returns the assistant message
// with the tool use it asked for, if any.
func demoTurn(t *testing.T, s *bedrocktest.Server, history []types.Message) (types.Message, *types.ToolUseBlock) {
	t.Helper()
	out, err := sdk(t, s).Converse(context.Background(), input(profileID, history...))
	if err != nil {
		t.Fatal(err)
	}
	msg := out.Output.(*types.ConverseOutputMemberMessage).Value
	for _, b := range msg.Content {
		if tu, ok := b.(*types.ContentBlockMemberToolUse); ok {
			return msg, &tu.Value
		}
	}
	return msg, nil
}

func toolResult(id string, status types.ToolResultStatus, text string) types.Message {
	return types.Message{Role: types.ConversationRoleUser, Content: []types.ContentBlock{
		&types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{
			ToolUseId: aws.String(id),
			Status:    status,
			Content:   []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: text}},
		}},
	}}
}

func inputOf(t *testing.T, tu *types.ToolUseBlock) map[string]string {
	t.Helper()
	raw, err := tu.Input.MarshalSmithyDocument()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func finalText(t *testing.T, s *bedrocktest.Server, history []types.Message) string {
	t.Helper()
	msg, tu := demoTurn(t, s, history)
	if tu != nil {
		t.Fatalf("unexpected tool use %q", aws.ToString(tu.Name))
	}
	return msg.Content[0].(*types.ContentBlockMemberText).Value
}

func TestDemoFilingFlow(t *testing.T) {
	for _, tc := range []struct {
		status types.ToolResultStatus
		want   string
	}{
		{types.ToolResultStatusSuccess, bedrocktest.DemoFiledText},
		{types.ToolResultStatusError, bedrocktest.DemoDeclinedText},
	} {
		t.Run(string(tc.status), func(t *testing.T) {
			s := start(t, bedrocktest.DemoScript())
			history := []types.Message{userText("Please file the motion to compel.")}

			msg, tu := demoTurn(t, s, history)
			if aws.ToString(tu.Name) != bedrocktest.ToolSearchMatterDocuments || aws.ToString(tu.ToolUseId) != "tooluse_0" {
				t.Fatalf("turn 1: %s %s", aws.ToString(tu.Name), aws.ToString(tu.ToolUseId))
			}
			if in := inputOf(t, tu); in["matter_id"] != matter || in["query"] != "motion" {
				t.Fatalf("search input = %v", in)
			}
			history = append(history, msg, toolResult(*tu.ToolUseId, types.ToolResultStatusSuccess, "2 documents"))

			msg, tu = demoTurn(t, s, history)
			if aws.ToString(tu.Name) != bedrocktest.ToolFileCourtDocument || aws.ToString(tu.ToolUseId) != "tooluse_1" {
				t.Fatalf("turn 2: %s %s", aws.ToString(tu.Name), aws.ToString(tu.ToolUseId))
			}
			in := inputOf(t, tu)
			if in["matter_id"] != matter || in["document_title"] != "Motion to Compel Discovery" ||
				in["court"] != "Superior Court of California, County of San Francisco" || in["document_text"] == "" {
				t.Fatalf("filing input = %v", in)
			}
			history = append(history, msg, toolResult(*tu.ToolUseId, tc.status, "result"))

			if got := finalText(t, s, history); got != tc.want {
				t.Fatalf("final = %q", got)
			}
			var rules []string
			for _, r := range s.Requests() {
				rules = append(rules, r.Rule)
			}
			final := map[types.ToolResultStatus]string{types.ToolResultStatusSuccess: "filed", types.ToolResultStatusError: "declined"}[tc.status]
			if want := []string{"search-before-filing", "file-after-search", final}; !reflect.DeepEqual(rules, want) {
				t.Errorf("rules = %v, want %v", rules, want)
			}
		})
	}
}

func TestDemoSummaryFlow(t *testing.T) {
	s := start(t, bedrocktest.DemoScript())
	history := []types.Message{userText("Summarize this matter for me.")}
	msg, tu := demoTurn(t, s, history)
	if aws.ToString(tu.Name) != bedrocktest.ToolGetMatterSummary {
		t.Fatalf("tool = %q", aws.ToString(tu.Name))
	}
	if in := inputOf(t, tu); in["matter_id"] != matter {
		t.Fatalf("input = %v", in)
	}
	history = append(history, msg, toolResult(*tu.ToolUseId, types.ToolResultStatusSuccess, "summary"))
	if got := finalText(t, s, history); got != bedrocktest.DemoSummaryText {
		t.Fatalf("final = %q", got)
	}
}
