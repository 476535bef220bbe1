package witness

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoAPI is what DynamoStore calls of a DynamoDB client.
type DynamoAPI interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// DynamoStore keeps each log's State in one item of a DynamoDB table whose
// partition key is the string attribute "origin" (no sort key; TableInput),
// with the attributes size (N), head (S), note (S) and updated_at (S). A Swap
// is one conditional PutItem (the size kept is the old size, or no item for
// old size 0), so concurrent submissions to several instances of the
// function cannot both win.
type DynamoStore struct {
	Client DynamoAPI
	Table  string
}

// TableInput is the witness table's definition (on demand).
func TableInput(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("origin"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("origin"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}
}

// Load reads origin's item, strongly consistent.
func (s DynamoStore) Load(ctx context.Context, origin string) (State, error) {
	var st State
	out, err := s.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.Table),
		Key:            map[string]types.AttributeValue{"origin": &types.AttributeValueMemberS{Value: origin}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return st, fmt.Errorf("witness: reading the state of %s: %w", origin, err)
	}
	if out.Item == nil {
		return st, nil
	}
	n, ok1 := out.Item["size"].(*types.AttributeValueMemberN)
	h, ok2 := out.Item["head"].(*types.AttributeValueMemberS)
	nt, ok3 := out.Item["note"].(*types.AttributeValueMemberS)
	if !ok1 || !ok2 || !ok3 {
		return st, fmt.Errorf("witness: the state item of %s is not a witness state", origin)
	}
	if st.Size, err = strconv.ParseInt(n.Value, 10, 64); err != nil {
		return st, fmt.Errorf("witness: the state item of %s has a malformed size", origin)
	}
	st.Head, st.Note = h.Value, nt.Value
	return st, nil
}

// Swap puts next if the item's size is still oldSize.
func (s DynamoStore) Swap(ctx context.Context, origin string, oldSize int64, next State) error {
	cond := "#size = :old"
	if oldSize == 0 {
		cond = "attribute_not_exists(origin) OR #size = :old"
	}
	_, err := s.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.Table),
		Item: map[string]types.AttributeValue{
			"origin":     &types.AttributeValueMemberS{Value: origin},
			"size":       &types.AttributeValueMemberN{Value: strconv.FormatInt(next.Size, 10)},
			"head":       &types.AttributeValueMemberS{Value: next.Head},
			"note":       &types.AttributeValueMemberS{Value: next.Note},
			"updated_at": &types.AttributeValueMemberS{Value: time.Now().UTC().Format(time.RFC3339)},
		},
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#size": "size"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":old": &types.AttributeValueMemberN{Value: strconv.FormatInt(oldSize, 10)}},
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		cur, lerr := s.Load(ctx, origin)
		switch {
		case lerr != nil:
			return &SizeChanged{Size: -1}
		case cur == next:
			// The SDK retried a put that had landed: the item is ours
			// (the note holds this very cosignature, timestamped).
			return nil
		}
		return &SizeChanged{Size: cur.Size}
	}
	if err != nil {
		return fmt.Errorf("witness: writing the state of %s: %w", origin, err)
	}
	return nil
}
