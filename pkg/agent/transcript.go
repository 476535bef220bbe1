package agent

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithydocument "github.com/aws/smithy-go/document"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"

	"github.com/seed-f6d3920e/warrant"
)

// openingMessages turns history + counsel_message into Converse messages.
// Converse wants alternating roles starting with the user, so consecutive
// messages of one role are merged, and the conversation must end with the user.
func openingMessages(history []contracts.HistoryMessage, counsel string) ([]types.Message, error) {
	all := append([]contracts.HistoryMessage{}, history...)
	if counsel != "" {
		all = append(all, contracts.HistoryMessage{Role: contracts.RoleUser, Text: counsel})
	}
	var msgs []types.Message
	for _, h := range all {
		role := types.ConversationRoleUser
		if h.Role == contracts.RoleAssistant {
			role = types.ConversationRoleAssistant
		}
		block := &types.ContentBlockMemberText{Value: h.Text}
		if n := len(msgs); n > 0 && msgs[n-1].Role == role {
			msgs[n-1].Content = append(msgs[n-1].Content, block)
			continue
		}
		msgs = append(msgs, types.Message{Role: role, Content: []types.ContentBlock{block}})
	}
	switch {
	case len(msgs) == 0:
		return nil, failure.New(failure.KindInvalidRequest, "field counsel_message: a run needs a user message (history or counsel_message)")
	case msgs[0].Role != types.ConversationRoleUser:
		return nil, failure.New(failure.KindInvalidRequest, "field history[0].role: the conversation must start with a user message")
	case msgs[len(msgs)-1].Role != types.ConversationRoleUser:
		return nil, failure.New(failure.KindInvalidRequest, "field counsel_message: the conversation must end with a user message")
	}
	return msgs, nil
}

// contentFromModel converts an assistant message into ledger blocks, with tool
// inputs as JSON objects.
func contentFromModel(content []types.ContentBlock) ([]contracts.ContentBlock, string, error) {
	var blocks []contracts.ContentBlock
	var text bytes.Buffer
	for _, c := range content {
		switch v := c.(type) {
		case *types.ContentBlockMemberText:
			blocks = append(blocks, contracts.ContentBlock{Type: contracts.BlockText, Text: v.Value})
			text.WriteString(v.Value)
		case *types.ContentBlockMemberToolUse:
			if v.Value.Input == nil {
				return nil, "", fmt.Errorf("tool use without input")
			}
			raw, err := v.Value.Input.MarshalSmithyDocument()
			if err != nil {
				return nil, "", err
			}
			raw = bytes.TrimSpace(raw)
			if len(raw) == 0 || raw[0] != '{' {
				return nil, "", fmt.Errorf("tool use input is not an object")
			}
			if aws.ToString(v.Value.ToolUseId) == "" || aws.ToString(v.Value.Name) == "" {
				return nil, "", fmt.Errorf("tool use without id or name")
			}
			blocks = append(blocks, contracts.ContentBlock{Type: contracts.BlockToolUse,
				ToolUseID: aws.ToString(v.Value.ToolUseId), Name: aws.ToString(v.Value.Name), Input: raw})
		default:
			// Reasoning and other blocks are not part of the governed transcript.
		}
	}
	return blocks, text.String(), nil
}

// contentToModel is the inverse, used when the transcript is rebuilt.
func contentToModel(blocks []contracts.ContentBlock) ([]types.ContentBlock, error) {
	var out []types.ContentBlock
	for _, b := range blocks {
		switch b.Type {
		case contracts.BlockText:
			out = append(out, &types.ContentBlockMemberText{Value: b.Text})
		case contracts.BlockToolUse:
			doc, err := documentOf(b.Input)
			if err != nil {
				return nil, err
			}
			out = append(out, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
				ToolUseId: aws.String(b.ToolUseID), Name: aws.String(b.Name), Input: doc}})
		}
	}
	return out, nil
}

// toolResultBlock is the one mapping from a tool.completed line to what the
// model sees, used live and on rebuild, so both transcripts are identical.
func toolResultBlock(tc *contracts.ToolCompleted) types.ContentBlock {
	r := types.ToolResultBlock{ToolUseId: aws.String(tc.ToolUseID)}
	if tc.ExecutedInputSHA256 != "" {
		// The model must not believe its own input ran.
		r.Content = append(r.Content, &types.ToolResultContentBlockMemberText{Value: NoteEditedByCounsel})
	}
	if tc.Status == contracts.ToolSuccess {
		doc, err := documentOf(tc.Result)
		if err == nil {
			r.Status = types.ToolResultStatusSuccess
			r.Content = append(r.Content, &types.ToolResultContentBlockMemberJson{Value: doc})
			return &types.ContentBlockMemberToolResult{Value: r}
		}
	}
	r.Status = types.ToolResultStatusError
	r.Content = append(r.Content, &types.ToolResultContentBlockMemberText{Value: resultMessage(tc)})
	return &types.ContentBlockMemberToolResult{Value: r}
}

// NoteEditedByCounsel precedes the result of a call counsel edited before
// approving it.
const NoteEditedByCounsel = "Counsel edited this call before approving it: the edited call ran, not the input you requested."

func resultMessage(tc *contracts.ToolCompleted) string {
	var m struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(tc.Result, &m) == nil && m.Error != "" {
		return m.Error
	}
	return string(tc.Result)
}

func errorResult(msg string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"error": msg})
	return b
}

// documentOf makes a request document of a JSON object, keeping numbers exact.
func documentOf(raw json.RawMessage) (document.Interface, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("not a JSON object")
	}
	return lazyDocument(v), nil
}

func lazyDocument(v any) document.Interface { return document.NewLazyDocument(exactNumbers(v)) }

func exactNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		return smithydocument.Number(t)
	case map[string]any:
		for k, e := range t {
			t[k] = exactNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = exactNumbers(e)
		}
	}
	return v
}

// ledgerView is what a resume needs from the ledger: the transcript up to the
// held turn, that turn's blocks, and the tool calls of it already completed.
type ledgerView struct {
	lines     []contracts.Line
	started   *contracts.RunStarted
	msgs      []types.Message
	lastTurn  *contracts.TurnCompleted
	requested map[string]*contracts.ToolRequested
	done      map[string]*contracts.ToolCompleted
	// executed is the input hash a released warrant claimed for its call
	// (by tool_use_id), where it is not the requested one: counsel's edit.
	executed map[string]string
	// unanswered is the usage of a model call that was made and paid for
	// whose answer (its turn.completed) is not on the ledger: the worker
	// was lost, or the turn's write failed, after the usage was settled.
	unanswered *contracts.ModelUsage
	// sealed: some line's content was not opened (the sweeper reads a
	// sealed run without its key). Its ids, hashes and statuses are all
	// here; msgs and the calls' inputs are not, so nothing may be sent to
	// the model or re-decided on them.
	sealed bool
}

// claimedHash is the input hash under which req's effect was claimed: the
// edit counsel approved for it, or the requested input. Every lookup of a
// call's claim (recovery, the sweeper, reconciliation) goes by it.
func (v ledgerView) claimedHash(req *contracts.ToolRequested) string {
	if h, ok := v.executed[req.ToolUseID]; ok {
		return h
	}
	return req.InputSHA256
}

// rebuild replays the ledger into a transcript. It is the only copy of the
// conversation a resume uses.
func rebuild(lines []contracts.Line) (ledgerView, error) {
	v := ledgerView{lines: lines, executed: map[string]string{}}
	blocked := map[string]string{} // approval id -> tool_use_id
	edits := map[string]string{}   // approval id -> counsel's edit's hash
	flush := func() {
		if v.lastTurn == nil {
			return
		}
		var results []types.ContentBlock
		for _, b := range v.lastTurn.Content {
			if tc, ok := v.done[b.ToolUseID]; ok && b.Type == contracts.BlockToolUse {
				results = append(results, toolResultBlock(tc))
			}
		}
		if len(results) > 0 {
			v.msgs = append(v.msgs, types.Message{Role: types.ConversationRoleUser, Content: results})
		}
	}
	for _, l := range lines {
		if l.Sealed {
			v.sealed = true
			v.msgs = nil
		}
		switch e := l.Event.(type) {
		case *contracts.RunStarted:
			if l.Sealed {
				v.started = e
				continue
			}
			msgs, err := openingMessages(e.History, e.CounselMessage)
			if err != nil {
				return v, err
			}
			v.started, v.msgs = e, msgs
		case *contracts.TurnCompleted:
			if v.sealed {
				v.lastTurn, v.unanswered = e, nil
				v.requested = map[string]*contracts.ToolRequested{}
				v.done = map[string]*contracts.ToolCompleted{}
				continue
			}
			flush()
			content, err := contentToModel(e.Content)
			if err != nil {
				return v, err
			}
			v.msgs = append(v.msgs, types.Message{Role: types.ConversationRoleAssistant, Content: content})
			v.lastTurn, v.unanswered = e, nil
			v.requested = map[string]*contracts.ToolRequested{}
			v.done = map[string]*contracts.ToolCompleted{}
		case *contracts.ModelUsage:
			v.unanswered = e
		case *contracts.ToolRequested:
			v.requested[e.ToolUseID] = e
		case *contracts.ToolCompleted:
			v.done[e.ToolUseID] = e
		case *contracts.RunBlocked:
			blocked[e.Approval.ApprovalRequestID] = e.Approval.ToolUseID
		case *contracts.ApprovalDecided:
			if e.EditedInputSHA256 != "" {
				edits[e.ApprovalRequestID] = e.EditedInputSHA256
			}
		case *contracts.RunReleased:
			if h, ok := edits[e.ApprovalRequestID]; ok && e.Decision == warrant.DecisionApproved {
				v.executed[blocked[e.ApprovalRequestID]] = h
			}
		}
	}
	if v.started == nil {
		return v, fmt.Errorf("ledger has no run.started")
	}
	return v, nil
}
