package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Key attribute and index names of the table. TableDefinition is the only
// place the table's shape is written down; the template test and local stack
// read it from here.
const (
	AttrPK     = "PK"
	AttrSK     = "SK"
	AttrGSI1PK = "GSI1PK"
	AttrGSI1SK = "GSI1SK"
	IndexGSI1  = "GSI1"
	AttrGSI2PK = "GSI2PK"
	AttrGSI2SK = "GSI2SK"
	IndexGSI2  = "GSI2"
)

// TableDefinition is the CreateTableInput of the store's single table:
// PK/SK strings, on-demand, streams with NEW_IMAGE (stream-reduce reads new
// ledger lines from it), the sparse GSI1 listing a firm's pending warrants,
// and GSI2 listing unfinished runs by lease expiry (the sweeper's).
// Point-in-time recovery is not part of CreateTable; the template turns it
// on.
func TableDefinition(name string) *dynamodb.CreateTableInput {
	str := types.ScalarAttributeTypeS
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(AttrPK), AttributeType: str},
			{AttributeName: aws.String(AttrSK), AttributeType: str},
			{AttributeName: aws.String(AttrGSI1PK), AttributeType: str},
			{AttributeName: aws.String(AttrGSI1SK), AttributeType: str},
			{AttributeName: aws.String(AttrGSI2PK), AttributeType: str},
			{AttributeName: aws.String(AttrGSI2SK), AttributeType: str},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(AttrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(AttrSK), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(IndexGSI1),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(AttrGSI1PK), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(AttrGSI1SK), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}, {
			// Unfinished runs by shard and lease expiry, for the sweeper:
			// keys only, it reads each run item before acting.
			IndexName: aws.String(IndexGSI2),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(AttrGSI2PK), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(AttrGSI2SK), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
		StreamSpecification: &types.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: types.StreamViewTypeNewImage,
		},
	}
}

// CreateTable creates the table (an existing one is fine) and waits until it
// and its index are ACTIVE. An empty status counts as ready: minidyn does not
// report one. It polls DescribeTable itself instead of using the SDK's
// table-exists waiter, which would wait forever on an empty status.
func CreateTable(ctx context.Context, client *dynamodb.Client, name string) error {
	_, err := client.CreateTable(ctx, TableDefinition(name))
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("dynamo: create table %s: %w", name, classify(err))
	}
	delay := 20 * time.Millisecond
	for {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return fmt.Errorf("dynamo: describe table %s: %w", name, classify(err))
		}
		if tableReady(out.Table) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dynamo: table %s not active: %w", name, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

func tableReady(t *types.TableDescription) bool {
	if t == nil {
		return false
	}
	if t.TableStatus != "" && t.TableStatus != types.TableStatusActive {
		return false
	}
	for _, g := range t.GlobalSecondaryIndexes {
		if g.IndexStatus != "" && g.IndexStatus != types.IndexStatusActive {
			return false
		}
	}
	return true
}
