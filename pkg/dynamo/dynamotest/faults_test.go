package dynamotest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
)

// TestFaults: a fault fires at the armed write (failing it, or applying it
// and losing its answer), every request after it fails until Revive, and
// reads do not count as writes (nor do requests of the dead process).
func TestFaults(t *testing.T) {
	ctx := context.Background()
	ep := dynamotest.Minidyn(t)
	table := dynamotest.NewTable(t, ep)
	put := func(pk string) error {
		_, err := ep.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: "x"}}})
		return err
	}
	exists := func(pk string) bool {
		out, err := ep.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: "x"}}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item != nil
	}
	for _, tc := range []struct {
		mode    dynamotest.FaultMode
		applied bool
	}{{dynamotest.FaultFail, false}, {dynamotest.FaultLose, true}} {
		ep.Faults.Arm(2, tc.mode)
		if err := put(string(tc.mode) + "-1"); err != nil {
			t.Fatal(err)
		}
		exists(string(tc.mode) + "-1") // a read: not counted
		if err := put(string(tc.mode) + "-2"); !errors.Is(err, dynamotest.ErrCrashed) {
			t.Fatalf("%s: the armed write answered %v", tc.mode, err)
		}
		if err := put(string(tc.mode) + "-3"); !errors.Is(err, dynamotest.ErrCrashed) || !ep.Faults.Fired() {
			t.Fatalf("%s: a write after the crash answered %v", tc.mode, err)
		}
		ep.Faults.Revive()
		if got := exists(string(tc.mode) + "-2"); got != tc.applied {
			t.Errorf("%s: the armed write applied = %v, want %v", tc.mode, got, tc.applied)
		}
		if exists(string(tc.mode) + "-3") {
			t.Errorf("%s: a write after the crash was applied", tc.mode)
		}
		if ops := ep.Faults.Ops(); len(ops) != 2 || ops[0] != "PutItem" {
			t.Errorf("%s: ops %v", tc.mode, ops)
		}
	}
}

// TestTransientFault: the armed write is throttled through every retry the
// SDK makes of it and never applied; the process lives on, and the next
// write goes through.
func TestTransientFault(t *testing.T) {
	ctx := context.Background()
	ep := dynamotest.Minidyn(t)
	table := dynamotest.NewTable(t, ep)
	put := func(pk string) error {
		_, err := ep.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: pk}, "SK": &types.AttributeValueMemberS{Value: "x"}}})
		return err
	}
	ep.Faults.Arm(1, dynamotest.FaultTransient)
	err := put("refused")
	var throttled *types.ProvisionedThroughputExceededException
	if !errors.As(err, &throttled) || !ep.Faults.Fired() {
		t.Fatalf("the armed write answered %v, want a throttle after the SDK's retries", err)
	}
	if err := put("next"); err != nil {
		t.Fatalf("the write after a transient fault: %v", err)
	}
	out, err := ep.Client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil || len(out.Items) != 1 {
		t.Fatalf("items after a transient fault: %d %v, want only the next write", len(out.Items), err)
	}
	if ops := ep.Faults.Ops(); len(ops) != 2 {
		t.Errorf("ops %v: the refused call counts once, its SDK retries not at all", ops)
	}
}

// TestRoundTripsOfRetriedReads: a read the endpoint answered and the SDK
// sent again (RetryReads: the answer broke as it was read) is one round
// trip, the store's one call; two calls are two, retried or not.
func TestRoundTripsOfRetriedReads(t *testing.T) {
	ctx := context.Background()
	ep := dynamotest.Minidyn(t)
	table := dynamotest.NewTable(t, ep)
	key := map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "a"}, "SK": &types.AttributeValueMemberS{Value: "x"}}
	get := func() {
		t.Helper()
		if _, err := ep.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)}); err != nil {
			t.Fatal(err)
		}
	}
	ep.Faults.RetryReads(true)
	for calls := 1; calls <= 2; calls++ {
		ep.Counter.Reset()
		before := ep.Faults.CutAnswers()
		for range calls {
			get()
		}
		if cut := ep.Faults.CutAnswers() - before; cut != calls {
			t.Fatalf("%d calls: %d answers cut, want each call's first", calls, cut)
		}
		if n, byOp := ep.Counter.Count(), ep.Counter.ByOp(); n != calls || byOp["GetItem"] != calls {
			t.Errorf("%d GetItem calls, each answered twice: %d round trips %v, want %d", calls, n, byOp, calls)
		}
	}
	ep.Faults.RetryReads(false)
	ep.Counter.Reset()
	get()
	if n, cut := ep.Counter.Count(), ep.Faults.CutAnswers(); n != 1 || cut != 3 {
		t.Errorf("after RetryReads(false): %d round trips, %d answers cut in all; want 1 and 3", n, cut)
	}
}
