package dynamo

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// A matter's record of its runs' completed steps (issue 29, the matter's
// runs): FIRM#<firm>#MATTER#<matter>#STEPS / STEP#<tool>#<run>#<seq, 20
// digits>, one item per tool.completed line of a tool some rule's prior
// condition with scope "matter" asks about (warrant.MatterSteps), holding
// the line exactly as the run's ledger stores it. It is put in the
// transaction that stores the line, after every other item (so the items'
// indexes, which say which condition failed, are the write's own), without
// a condition: its key and bytes are the line's, so a retried write puts
// the same item. Its partition is the firm's and the matter's, outside
// every run's partition and the stream's EVT# filter.
func matterStepsPK(firm, matter string) string {
	return "FIRM#" + firm + "#MATTER#" + matter + "#STEPS"
}

const skStep = "STEP#"

func stepSK(tool, run string, seq int64) string {
	return fmt.Sprintf("%s%s#%s#%020d", skStep, tool, run, seq)
}

type stepItem struct {
	PK       string `dynamodbav:"PK"`
	SK       string `dynamodbav:"SK"`
	FirmID   string `dynamodbav:"firm_id"`
	MatterID string `dynamodbav:"matter_id"`
	RunID    string `dynamodbav:"run_id"`
	Seq      int64  `dynamodbav:"seq"`
	Tool     string `dynamodbav:"tool"`
	Status   string `dynamodbav:"status"`
	Line     string `dynamodbav:"line"`
}

// stepPuts are the matter's record of the completed steps among lines
// (of firm's run), as ctx asks for them (warrant.MatterStepsFromContext):
// none when it asks for none, or for another run.
func (s *Store) stepPuts(ctx context.Context, firm, run string, lines []contracts.Line) []types.TransactWriteItem {
	m, ok := warrant.MatterStepsFromContext(ctx)
	if !ok || m.FirmID != firm || m.RunID != run || !idsOK(m.MatterID) {
		return nil
	}
	var out []types.TransactWriteItem
	for _, l := range lines {
		tc, ok := l.Event.(*contracts.ToolCompleted)
		if !ok || !slices.Contains(m.Tools, tc.ToolName) || strings.Contains(tc.ToolName, "#") {
			continue
		}
		item, err := marshal(stepItem{PK: matterStepsPK(firm, m.MatterID), SK: stepSK(tc.ToolName, run, l.Seq), FirmID: firm,
			MatterID: m.MatterID, RunID: run, Seq: l.Seq, Tool: tc.ToolName, Status: tc.Status, Line: string(l.Raw)})
		if err != nil {
			continue // strings and numbers always marshal
		}
		out = append(out, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: item}})
	}
	return out
}

// MatterSteps reads the matter's record of its runs' completed steps of
// tool (consistently, every page), oldest run id and seq first within a
// run. A read that fails is an error: the caller's prior condition is then
// undecided, never false.
func (s *Store) MatterSteps(ctx context.Context, firm, matter, tool string) ([]warrant.MatterStep, error) {
	const op = "matter steps"
	if err := checkIDs(op, "firm_id", firm, "matter_id", matter); err != nil {
		return nil, err
	}
	if tool == "" || strings.Contains(tool, "#") {
		return nil, invalid(op, "tool %q cannot be in a step's key", tool)
	}
	const kc = "#PK = :pk AND begins_with(#SK, :sk)"
	in := &dynamodb.QueryInput{TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String(kc), ExpressionAttributeNames: names(kc),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(matterStepsPK(firm, matter)), ":sk": str(skStep + tool + "#")}}
	var out []warrant.MatterStep
	err := s.queryPages(ctx, in, func(m map[string]types.AttributeValue) (bool, error) {
		it, err := unmarshal[stepItem](m)
		if err != nil {
			return true, err
		}
		if it.FirmID != firm || it.MatterID != matter || it.Tool != tool {
			return true, fmt.Errorf("step item %s holds firm %s, matter %s, tool %s", it.SK, it.FirmID, it.MatterID, it.Tool)
		}
		out = append(out, warrant.MatterStep{RunID: it.RunID, Seq: it.Seq, Tool: it.Tool, Status: it.Status, Line: []byte(it.Line)})
		return false, nil
	})
	if err != nil {
		return nil, wrap(op, err)
	}
	return out, nil
}
