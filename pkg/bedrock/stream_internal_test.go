package bedrock

import (
	"errors"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
)

func TestParseToolInput(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		want string
	}{
		{``, true, `{}`},
		{"  \n", true, `{}`},
		{`{}`, true, `{}`},
		{`{"n": 1.50, "big": 123456789012345678901234567890}`, true, `{"big":123456789012345678901234567890,"n":1.50}`},
		{`{"a": {"b": [1, {"c": null}]}}`, true, `{"a":{"b":[1,{"c":null}]}}`},
		{`{"a": 1} {"b": 2}`, false, ""},
		{`{"a": 1`, false, ""},
		{`null`, false, ""},
		{`[1, 2]`, false, ""},
		{`"text"`, false, ""},
		{`42`, false, ""},
	} {
		doc, ok := parseToolInput(tc.in)
		if ok != tc.ok {
			t.Errorf("%q: ok = %v", tc.in, ok)
			continue
		}
		if !ok {
			continue
		}
		got, err := doc.MarshalSmithyDocument()
		if err != nil || string(got) != tc.want {
			t.Errorf("%q: marshal = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestAssemblerRequiresMessageStop(t *testing.T) {
	var a assembler
	a.add(&types.ConverseStreamOutputMemberMessageStart{Value: types.MessageStartEvent{Role: types.ConversationRoleAssistant}}, nil)
	a.add(&types.ConverseStreamOutputMemberContentBlockDelta{Value: types.ContentBlockDeltaEvent{
		ContentBlockIndex: aws.Int32(0), Delta: &types.ContentBlockDeltaMemberText{Value: "cut off"},
	}}, nil)
	if out, err := a.output(); !errors.Is(err, io.ErrUnexpectedEOF) || out != nil {
		t.Fatalf("truncated stream: %v, %v", out, err)
	}
}
