package dynamo_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
)

// Fidelity cases check, with the raw client, the DynamoDB behaviors the
// store relies on or works around. Each runs its strict form where the
// endpoint is faithful, and on a lenient endpoint checks that the leniency
// is still what dynamotest says, so the store's fallbacks stay tested.

func item(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		dynamo.AttrPK: &types.AttributeValueMemberS{Value: pk},
		dynamo.AttrSK: &types.AttributeValueMemberS{Value: sk},
		"v":           &types.AttributeValueMemberS{Value: "old"},
	}
}

// Authorization must never read the GSI: DynamoDB rejects a consistent read
// on it. minidyn accepts one (LenientConsistentReadOnGSI), which is why the
// store's GSI query sets no ConsistentRead and this case runs on moto.
func testFidelityConsistentReadOnGSI(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	_, err := ep.Client.Query(e.ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(e.table),
		IndexName:                 aws.String(dynamo.IndexGSI1),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": dynamo.AttrGSI1PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "x"}},
		ConsistentRead:            aws.Bool(true),
	})
	if ep.IsLenient(dynamotest.LenientConsistentReadOnGSI) {
		if err != nil {
			t.Errorf("%s is listed as accepting ConsistentRead on a GSI but rejected it: %v", ep.Name, err)
		}
		return
	}
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "ValidationException" {
		t.Errorf("ConsistentRead on a GSI: got %v, want a ValidationException", err)
	}
}

// A failed conditional PutItem with ReturnValuesOnConditionCheckFailure
// ALL_OLD returns the existing item, in PutItem and in a transaction's Put;
// the store uses it to report an existing claim in one round trip. minidyn
// ignores it on puts (LenientPutAllOld) and the store reads the item.
func testFidelityPutAllOld(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	it := item("P", "S")
	_, err := ep.Client.PutItem(e.ctx, &dynamodb.PutItemInput{TableName: aws.String(e.table), Item: it})
	must(t, err)
	cond := &dynamodb.PutItemInput{
		TableName: aws.String(e.table), Item: item("P", "S"),
		ConditionExpression:                 aws.String("attribute_not_exists(#sk)"),
		ExpressionAttributeNames:            map[string]string{"#sk": dynamo.AttrSK},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	_, err = ep.Client.PutItem(e.ctx, cond)
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("conditional put on an existing item: %v", err)
	}
	_, err = ep.Client.TransactWriteItems(e.ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Put: &types.Put{
		TableName: cond.TableName, Item: cond.Item, ConditionExpression: cond.ConditionExpression,
		ExpressionAttributeNames: cond.ExpressionAttributeNames, ReturnValuesOnConditionCheckFailure: cond.ReturnValuesOnConditionCheckFailure,
	}}}})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || len(tce.CancellationReasons) != 1 {
		t.Fatalf("conditional transaction put on an existing item: %v", err)
	}
	gotPut, gotTx := len(ccf.Item) > 0, len(tce.CancellationReasons[0].Item) > 0
	if ep.IsLenient(dynamotest.LenientPutAllOld) {
		if gotPut || gotTx {
			t.Errorf("%s is listed as ignoring ALL_OLD on puts but returned the item (put %v, txn %v)", ep.Name, gotPut, gotTx)
		}
		return
	}
	if !gotPut || !gotTx {
		t.Errorf("ALL_OLD on a failed put: item returned by PutItem %v, by the transaction %v", gotPut, gotTx)
	}
}

// A canceled transaction gives a reason per item. DynamoDB and moto fill
// in every failing item; minidyn stops at the first and says "None" for the
// rest (ReportsAllReasons false). The store's mapping takes the first failed
// condition in item order, which is the same item on both.
func testFidelityCancellationReasons(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	for _, sk := range []string{"A", "B"} {
		_, err := ep.Client.PutItem(e.ctx, &dynamodb.PutItemInput{TableName: aws.String(e.table), Item: item("P", sk)})
		must(t, err)
	}
	put := func(sk string) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(e.table), Item: item("P", sk),
			ConditionExpression: aws.String("attribute_not_exists(#sk)"), ExpressionAttributeNames: map[string]string{"#sk": dynamo.AttrSK}}}
	}
	_, err := ep.Client.TransactWriteItems(e.ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{put("new"), put("A"), put("B")},
	})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || len(tce.CancellationReasons) != 3 {
		t.Fatalf("transaction with two failing items: %v", err)
	}
	codes := make([]string, 3)
	for i, r := range tce.CancellationReasons {
		codes[i] = aws.ToString(r.Code)
	}
	want := []string{"None", "ConditionalCheckFailed", "ConditionalCheckFailed"}
	if !ep.ReportsAllReasons {
		want[2] = "None"
	}
	for i := range want {
		if codes[i] != want[i] {
			t.Errorf("cancellation reasons %v, want %v (ReportsAllReasons %v)", codes, want, ep.ReportsAllReasons)
			break
		}
	}
	// Nothing of the canceled transaction was written.
	out, err := ep.Client.GetItem(e.ctx, &dynamodb.GetItemInput{TableName: aws.String(e.table), Key: map[string]types.AttributeValue{
		dynamo.AttrPK: &types.AttributeValueMemberS{Value: "P"}, dynamo.AttrSK: &types.AttributeValueMemberS{Value: "new"}},
		ConsistentRead: aws.Bool(true)})
	must(t, err)
	if len(out.Item) != 0 {
		t.Error("a canceled transaction wrote an item")
	}
}

// The table as created: ACTIVE (minidyn reports no status, which
// CreateTable accepts), with a NEW_IMAGE stream for stream-reduce (minidyn
// reports none: LenientStreams).
func testFidelityTableStatusAndStream(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	out, err := ep.Client.DescribeTable(e.ctx, &dynamodb.DescribeTableInput{TableName: aws.String(e.table)})
	must(t, err)
	tbl := out.Table
	var indexes []string
	for _, g := range tbl.GlobalSecondaryIndexes {
		indexes = append(indexes, aws.ToString(g.IndexName))
	}
	slices.Sort(indexes)
	if len(tbl.KeySchema) != 2 || !slices.Equal(indexes, []string{dynamo.IndexGSI1, dynamo.IndexGSI2}) {
		t.Errorf("table shape: keys %v, indexes %d", tbl.KeySchema, len(tbl.GlobalSecondaryIndexes))
	}
	if ep.IsLenient(dynamotest.LenientTableStatus) {
		if tbl.TableStatus != "" {
			t.Errorf("%s is listed as reporting no TableStatus but reported %q", ep.Name, tbl.TableStatus)
		}
	} else if tbl.TableStatus != types.TableStatusActive {
		t.Errorf("TableStatus = %q after CreateTable", tbl.TableStatus)
	}
	hasStream := tbl.StreamSpecification != nil && aws.ToBool(tbl.StreamSpecification.StreamEnabled) &&
		tbl.StreamSpecification.StreamViewType == types.StreamViewTypeNewImage && aws.ToString(tbl.LatestStreamArn) != ""
	if ep.IsLenient(dynamotest.LenientStreams) {
		if hasStream {
			t.Errorf("%s is listed as reporting no stream but reported one", ep.Name)
		}
	} else if !hasStream {
		t.Errorf("no NEW_IMAGE stream: %+v, arn %q", tbl.StreamSpecification, aws.ToString(tbl.LatestStreamArn))
	}
}

// REMOVE in an UpdateExpression deletes the attribute. minidyn ignores it
// (LenientUpdateRemove), so the store never needs REMOVE for what readers
// see: a decision re-puts the warrant without its GSI1 keys, the projection
// is one map attribute replaced whole, and a stale held_on is ignored
// unless the run is held. Where REMOVE works, the resume removes held_on.
func testFidelityUpdateRemove(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	it := item("P", "S")
	it["gone"] = &types.AttributeValueMemberS{Value: "x"}
	_, err := ep.Client.PutItem(e.ctx, &dynamodb.PutItemInput{TableName: aws.String(e.table), Item: it})
	must(t, err)
	_, err = ep.Client.UpdateItem(e.ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.table), Key: map[string]types.AttributeValue{dynamo.AttrPK: it[dynamo.AttrPK], dynamo.AttrSK: it[dynamo.AttrSK]},
		UpdateExpression:          aws.String("SET #v = :v REMOVE #gone"),
		ExpressionAttributeNames:  map[string]string{"#v": "v", "#gone": "gone"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: "new"}},
	})
	must(t, err)
	got := e.raw("P", "S")
	if v, _ := got["v"].(*types.AttributeValueMemberS); v == nil || v.Value != "new" {
		t.Errorf("SET not applied: %v", got["v"])
	}
	_, kept := got["gone"]
	if ep.IsLenient(dynamotest.LenientUpdateRemove) {
		if !kept {
			t.Errorf("%s is listed as ignoring REMOVE but removed the attribute", ep.Name)
		}
		return
	}
	if kept {
		t.Error("REMOVE did not remove the attribute")
	}

	h := e.newHeld(id())
	_, err = e.decide(h, "denied")
	must(t, err)
	c, l := e.resume(h, "denied")
	must(t, e.store.ResumeClaim(e.ctx, c, l))
	if _, ok := e.raw("FIRM#"+h.firm+"#RUN#"+h.id, "RUN")["held_on"]; ok {
		t.Error("released run still has held_on")
	}
}

func (e *env) raw(pk, sk string) map[string]types.AttributeValue {
	e.t.Helper()
	out, err := e.ep.Client.GetItem(e.ctx, &dynamodb.GetItemInput{TableName: aws.String(e.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{dynamo.AttrPK: &types.AttributeValueMemberS{Value: pk}, dynamo.AttrSK: &types.AttributeValueMemberS{Value: sk}}})
	must(e.t, err)
	return out.Item
}

// testFidelityItemSize: DynamoDB refuses an item over 400 KB; minidyn
// stores it (LenientItemSize), which is why the big-input tests run on moto
// too.
func testFidelityItemSize(t *testing.T, ep *dynamotest.Endpoint) {
	e := newEnv(t, ep)
	it := item("P", "S")
	it["v"] = &types.AttributeValueMemberS{Value: strings.Repeat("x", 400<<10)}
	_, err := ep.Client.PutItem(e.ctx, &dynamodb.PutItemInput{TableName: aws.String(e.table), Item: it})
	if ep.IsLenient(dynamotest.LenientItemSize) {
		if err != nil {
			t.Errorf("%s is listed as storing items over 400 KB but refused one: %v", ep.Name, err)
		}
		return
	}
	if err == nil {
		t.Error("an item over 400 KB was stored")
	}
}
