package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"

	"github.com/seed-f6d3920e/warrant"
)

// editKey is the key of the item that holds counsel's edit beside the
// warrant (docs/DECISIONS.md, "Big inputs").
func (h *harness) editKey(res agent.Result) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "FIRM#" + h.firm + "#RUN#" + res.State.RunID},
		"SK": &types.AttributeValueMemberS{Value: "APR#" + res.State.PendingApproval.ApprovalRequestID + "#EDIT"}}
}

// An edit item changed or removed behind the ledger's back is refused at
// resume and nothing runs, as a change to the warrant item is
// (TestTamperedEditIsRefused): the resume holds the warrant's edit to the
// approval.decided line under the signed head.
func TestTamperedEditItemIsRefused(t *testing.T) {
	other, _ := json.Marshal(map[string]any{"matter_id": "m", "to": "evil@x.example", "subject": "s", "body": "x"})
	canonical, hash, err := contracts.CanonicalInput(other)
	if err != nil {
		t.Fatal(err)
	}
	for name, tamper := range map[string]func(h *harness, res agent.Result){
		"edit item removed": func(h *harness, res agent.Result) {
			_, err := h.ep.Client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(h.table), Key: h.editKey(res),
				ConditionExpression: aws.String("attribute_exists(PK)")})
			if err != nil {
				t.Fatal(err)
			}
		},
		"edit item changed": func(h *harness, res agent.Result) {
			_, err := h.ep.Client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(h.table), Key: h.editKey(res),
				UpdateExpression:          aws.String("SET edited_input = :i"),
				ConditionExpression:       aws.String("attribute_exists(PK)"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":i": &types.AttributeValueMemberS{Value: string(canonical)}}})
			if err != nil {
				t.Fatal(err)
			}
		},
		"edit item and both hashes changed": func(h *harness, res agent.Result) {
			set := "SET edited_input = :i, edited_hash = :h"
			vals := map[string]types.AttributeValue{":i": &types.AttributeValueMemberS{Value: string(canonical)}, ":h": &types.AttributeValueMemberS{Value: hash}}
			_, err := h.ep.Client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(h.table), Key: h.editKey(res),
				UpdateExpression: aws.String(set), ConditionExpression: aws.String("attribute_exists(PK)"), ExpressionAttributeValues: vals})
			if err != nil {
				t.Fatal(err)
			}
			h.tamperWarrant(res, "SET edited_hash = :h", nil, map[string]types.AttributeValue{":h": vals[":h"]})
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, demo, options{})
			res := h.start("Please e-mail the client an update.", "")
			if _, err := h.decideEdit(res, warrant.CounselDecision{Decision: warrant.DecisionApproved, EditedInput: h.emailEdit()}); err != nil {
				t.Fatal(err)
			}
			tamper(h, res)
			h.wantResumeRefused(res)
		})
	}
}
