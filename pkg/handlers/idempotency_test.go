package handlers_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

// A retried POST /v1/runs with the same Idempotency-Key answers with the same
// run; the key never starts a second run or a second warrant.
func TestInvokeIdempotencyKey(t *testing.T) {
	s := newStack(t, stackOptions{})
	const key = "2f9d7c1e-8a4b-4c3d-9e2f-1a0b9c8d7e6f"
	first := s.call(fixture(t, "invoke.json").set("headers.idempotency-key", key))
	if first.StatusCode != 200 {
		t.Fatalf("first: %d %s", first.StatusCode, first.Body)
	}
	a := decode[handlers.RunView](t, first)
	before := s.scan()
	retry := s.post(fixture(t, "invoke.json").set("headers.idempotency-key", key))
	b := decode[handlers.RunView](t, retry)
	if retry.StatusCode != 202 || b.RunID != a.RunID || b.PendingApproval == nil ||
		b.PendingApproval.ApprovalRequestID != a.PendingApproval.ApprovalRequestID {
		t.Fatalf("retry: %d %+v vs %+v", retry.StatusCode, b, a)
	}
	s.wantUnchanged("retry", before)
	if s.fake.Calls() != 2 {
		t.Fatalf("the retry called the model: %d calls", s.fake.Calls())
	}

	other := s.call(fixture(t, "invoke.json").set("headers.idempotency-key", key).editBody(func(m map[string]any) {
		m["counsel_message"] = "Something else entirely."
	}))
	s.wantProblem("reused key", other, 409)
	s.wantUnchanged("reused key", before)

	bad := s.call(fixture(t, "invoke.json").set("headers.idempotency-key", "not-a-uuid"))
	s.wantProblem("bad key", bad, 400)
	s.wantUnchanged("bad key", before)

	// Another user's same key is another run.
	mine := s.call(fixture(t, "invoke.json").set("headers.idempotency-key", key).claim("sub", "5e5e5e5e-1111-4222-8333-444455556666"))
	if mine.StatusCode != 200 || decode[handlers.RunView](t, mine).RunID == a.RunID {
		t.Fatalf("another user's key: %d %s", mine.StatusCode, mine.Body)
	}
}

// TestInvokeReplayOfACorruptRun: a replay whose run's first line does not
// parse is the ledger's fault (500 ledger_corrupt), not a key reused for a
// different request (409): the client did nothing wrong, and nothing is
// written.
func TestInvokeReplayOfACorruptRun(t *testing.T) {
	s := newStack(t, stackOptions{})
	const key = "6b5a4c3d-2e1f-4a0b-9c8d-7e6f5a4b3c2d"
	req := func() *event { return fixture(t, "invoke.json").set("headers.idempotency-key", key) }
	first := s.call(req())
	runID := decode[handlers.RunView](t, first).RunID
	_, err := s.client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table),
		Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: dynamo.RunKey(fixFirm, runID)},
			"SK": &types.AttributeValueMemberS{Value: "EVT#000000000001"}},
		UpdateExpression:          aws.String("SET #line = :garbage"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeNames:  map[string]string{"#line": "line"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":garbage": &types.AttributeValueMemberS{Value: `{"not":"a line"`}},
	})
	if err != nil {
		t.Fatalf("corrupting line 1: %v", err)
	}
	before := s.scan()
	if p := s.wantProblem("replay of a corrupt run", s.post(req()), 500); p.Kind != "ledger_corrupt" {
		t.Errorf("kind %q, want ledger_corrupt", p.Kind)
	}
	s.wantUnchanged("replay of a corrupt run", before)
}
