package dynamo_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
)

func TestTableDefinition(t *testing.T) {
	d := dynamo.TableDefinition("t")
	if aws.ToString(d.TableName) != "t" || d.BillingMode != types.BillingModePayPerRequest {
		t.Errorf("name/billing: %q %s", aws.ToString(d.TableName), d.BillingMode)
	}
	if len(d.KeySchema) != 2 || aws.ToString(d.KeySchema[0].AttributeName) != dynamo.AttrPK || d.KeySchema[0].KeyType != types.KeyTypeHash ||
		aws.ToString(d.KeySchema[1].AttributeName) != dynamo.AttrSK || d.KeySchema[1].KeyType != types.KeyTypeRange {
		t.Errorf("key schema %+v", d.KeySchema)
	}
	if len(d.GlobalSecondaryIndexes) != 2 {
		t.Fatalf("%d GSIs", len(d.GlobalSecondaryIndexes))
	}
	g2 := d.GlobalSecondaryIndexes[1]
	if aws.ToString(g2.IndexName) != dynamo.IndexGSI2 || aws.ToString(g2.KeySchema[0].AttributeName) != dynamo.AttrGSI2PK ||
		aws.ToString(g2.KeySchema[1].AttributeName) != dynamo.AttrGSI2SK || g2.Projection.ProjectionType != types.ProjectionTypeKeysOnly {
		t.Errorf("GSI2 %+v", g2)
	}
	g := d.GlobalSecondaryIndexes[0]
	if aws.ToString(g.IndexName) != dynamo.IndexGSI1 || aws.ToString(g.KeySchema[0].AttributeName) != dynamo.AttrGSI1PK ||
		aws.ToString(g.KeySchema[1].AttributeName) != dynamo.AttrGSI1SK || g.Projection.ProjectionType != types.ProjectionTypeAll {
		t.Errorf("GSI1 %+v", g)
	}
	if d.StreamSpecification == nil || !aws.ToBool(d.StreamSpecification.StreamEnabled) || d.StreamSpecification.StreamViewType != types.StreamViewTypeNewImage {
		t.Errorf("stream %+v", d.StreamSpecification)
	}
	for _, a := range d.AttributeDefinitions {
		if a.AttributeType != types.ScalarAttributeTypeS {
			t.Errorf("attribute %s is %s", aws.ToString(a.AttributeName), a.AttributeType)
		}
	}
}
