package deploy

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
)

func TestTableMatchesStore(t *testing.T) {
	tmpl := typedTemplate(t)
	tbl, err := tmpl.GetDynamoDBTableWithName("Table")
	if err != nil {
		t.Fatal(err)
	}
	want := dynamo.TableDefinition("x")

	attrs := func(name, typ string) string { return name + ":" + typ }
	var gotAttrs, wantAttrs []string
	for _, a := range tbl.AttributeDefinitions {
		gotAttrs = append(gotAttrs, attrs(a.AttributeName, a.AttributeType))
	}
	for _, a := range want.AttributeDefinitions {
		wantAttrs = append(wantAttrs, attrs(aws.ToString(a.AttributeName), string(a.AttributeType)))
	}
	sort.Strings(gotAttrs)
	sort.Strings(wantAttrs)
	if !slices.Equal(gotAttrs, wantAttrs) {
		t.Errorf("AttributeDefinitions = %v, pkg/dynamo has %v", gotAttrs, wantAttrs)
	}

	keySchema := func(ks []string) string { return strings.Join(ks, " ") }
	var gotKeys, wantKeys []string
	for _, k := range tbl.KeySchema {
		gotKeys = append(gotKeys, k.AttributeName+":"+k.KeyType)
	}
	for _, k := range want.KeySchema {
		wantKeys = append(wantKeys, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
	}
	if keySchema(gotKeys) != keySchema(wantKeys) {
		t.Errorf("KeySchema = %v, pkg/dynamo has %v", gotKeys, wantKeys)
	}

	// An index as "<key schema> <projection type> [<non-key attributes>]".
	index := func(keys []string, projection string, nonKey []string) string {
		nonKey = slices.Sorted(slices.Values(nonKey))
		return keySchema(keys) + " " + projection + " " + fmt.Sprint(nonKey)
	}
	gotGSI, wantGSI := map[string]string{}, map[string]string{}
	for _, g := range tbl.GlobalSecondaryIndexes {
		var ks []string
		for _, k := range g.KeySchema {
			ks = append(ks, k.AttributeName+":"+k.KeyType)
		}
		var proj string
		var nonKey []string
		if g.Projection != nil {
			proj, nonKey = aws.ToString(g.Projection.ProjectionType), g.Projection.NonKeyAttributes
		}
		gotGSI[g.IndexName] = index(ks, proj, nonKey)
	}
	for _, g := range want.GlobalSecondaryIndexes {
		var ks []string
		for _, k := range g.KeySchema {
			ks = append(ks, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
		}
		var proj string
		var nonKey []string
		if g.Projection != nil {
			proj, nonKey = string(g.Projection.ProjectionType), g.Projection.NonKeyAttributes
		}
		wantGSI[aws.ToString(g.IndexName)] = index(ks, proj, nonKey)
	}
	if fmt.Sprint(gotGSI) != fmt.Sprint(wantGSI) {
		t.Errorf("GlobalSecondaryIndexes = %v, pkg/dynamo has %v", gotGSI, wantGSI)
	}
	// And what the readers rely on: GSI1 (pending warrants) carries the
	// items, GSI2 (the sweeper's expired leases) only keys, since the sweeper
	// reads each run item itself.
	for name, shape := range map[string]string{
		dynamo.IndexGSI1: index([]string{dynamo.AttrGSI1PK + ":HASH", dynamo.AttrGSI1SK + ":RANGE"}, "ALL", nil),
		dynamo.IndexGSI2: index([]string{dynamo.AttrGSI2PK + ":HASH", dynamo.AttrGSI2SK + ":RANGE"}, "KEYS_ONLY", nil),
	} {
		if gotGSI[name] != shape {
			t.Errorf("index %s = %q, want %q", name, gotGSI[name], shape)
		}
	}
	if len(tbl.LocalSecondaryIndexes) != len(want.LocalSecondaryIndexes) {
		t.Errorf("LocalSecondaryIndexes: template %d, pkg/dynamo %d", len(tbl.LocalSecondaryIndexes), len(want.LocalSecondaryIndexes))
	}
	if got := aws.ToString(tbl.BillingMode); got != string(want.BillingMode) {
		t.Errorf("BillingMode = %q, pkg/dynamo has %q", got, want.BillingMode)
	}
	if want.StreamSpecification == nil || !aws.ToBool(want.StreamSpecification.StreamEnabled) {
		t.Fatalf("pkg/dynamo's table has no stream, but stream-reduce reads one")
	}
	if tbl.StreamSpecification == nil || tbl.StreamSpecification.StreamViewType != string(want.StreamSpecification.StreamViewType) {
		t.Errorf("StreamSpecification = %+v, pkg/dynamo has view type %s", tbl.StreamSpecification, want.StreamSpecification.StreamViewType)
	}

	// What CreateTable cannot say but the deployment promises.
	if tbl.PointInTimeRecoverySpecification == nil || !aws.ToBool(tbl.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled) {
		t.Error("point-in-time recovery must be on")
	}
	if ttl := tbl.TimeToLiveSpecification; ttl == nil || ttl.AttributeName == nil || *ttl.AttributeName != dynamo.AttrTTL || !ttl.Enabled {
		t.Errorf("TimeToLiveSpecification = %+v, want %s enabled (the policy's counters expire by it)", ttl, dynamo.AttrTTL)
	}
	if tbl.SSESpecification == nil || !tbl.SSESpecification.SSEEnabled {
		t.Error("SSESpecification.SSEEnabled must be true")
	}
	if tbl.AWSCloudFormationDeletionPolicy != "Retain" || tbl.AWSCloudFormationUpdateReplacePolicy != "Retain" {
		t.Errorf("the ledger is evidence: DeletionPolicy/UpdateReplacePolicy = %q/%q, want Retain/Retain",
			tbl.AWSCloudFormationDeletionPolicy, tbl.AWSCloudFormationUpdateReplacePolicy)
	}
	if tbl.TableName != nil {
		t.Errorf("TableName %q: let CloudFormation name the table (a fixed name blocks replacement and a second stack)", *tbl.TableName)
	}
	raw := rawTemplate(t)
	dp := get(mustResource(t, raw, "Table", "AWS::DynamoDB::Table"), "Properties", "DeletionProtectionEnabled")
	if fmt.Sprint(dp) != fmt.Sprint(object{"Fn::If": []any{"ProtectTable", true, false}}) {
		t.Errorf("DeletionProtectionEnabled must be !If [ProtectTable, true, false], got %v", dp)
	}
}

// TestStreamMapping reads the DynamoDB event raw (goformation limit 4).
func TestStreamMapping(t *testing.T) {
	raw := rawTemplate(t)
	fn := mustResource(t, raw, "StreamReduceFunction", "AWS::Serverless::Function")
	events, _ := get(fn, "Properties", "Events").(object)
	if len(events) != 1 {
		t.Fatalf("StreamReduceFunction wants exactly one event, got %v", keys(events))
	}
	for name, ev := range events {
		if get(ev, "Type") != "DynamoDB" {
			t.Fatalf("%s: Type = %v, want DynamoDB", name, get(ev, "Type"))
		}
		p, _ := get(ev, "Properties").(object)
		if id, attr, _ := getAtt(p["Stream"]); id != "Table" || attr != "StreamArn" {
			t.Errorf("%s: Stream must be !GetAtt Table.StreamArn, got %v", name, p["Stream"])
		}
		if p["StartingPosition"] != "LATEST" {
			t.Errorf("%s: StartingPosition = %v, want LATEST", name, p["StartingPosition"])
		}
		filters := list(get(p, "FilterCriteria", "Filters"))
		wantPattern := map[string]any{
			"eventName": []any{"INSERT"},
			"dynamodb":  map[string]any{"Keys": map[string]any{"SK": map[string]any{"S": []any{map[string]any{"prefix": "EVT#"}}}}},
		}
		if len(filters) != 1 {
			t.Errorf("%s: want one filter (ledger inserts), got %v", name, filters)
		} else {
			var pattern map[string]any
			if err := json.Unmarshal([]byte(str(get(filters[0], "Pattern"))), &pattern); err != nil {
				t.Errorf("%s: filter pattern is not JSON: %v", name, err)
			} else if fmt.Sprint(pattern) != fmt.Sprint(wantPattern) {
				t.Errorf("%s: filter pattern = %v, want %v", name, pattern, wantPattern)
			}
		}
		if !slices.Contains(list(p["FunctionResponseTypes"]), any("ReportBatchItemFailures")) {
			t.Errorf("%s: FunctionResponseTypes must include ReportBatchItemFailures", name)
		}
		if p["BisectBatchOnFunctionError"] != true {
			t.Errorf("%s: BisectBatchOnFunctionError must be true", name)
		}
		if n, ok := p["MaximumRetryAttempts"].(int); !ok || n < 0 || n > 10 {
			t.Errorf("%s: MaximumRetryAttempts = %v, want a bound in [0, 10]", name, p["MaximumRetryAttempts"])
		}
		if n, ok := p["MaximumRecordAgeInSeconds"].(int); !ok || n < 60 || n > 86400 {
			t.Errorf("%s: MaximumRecordAgeInSeconds = %v, want a bound within the stream's 24 h", name, p["MaximumRecordAgeInSeconds"])
		}
		q, attr, _ := getAtt(get(p, "DestinationConfig", "OnFailure", "Destination"))
		if attr != "Arn" {
			t.Fatalf("%s: DestinationConfig.OnFailure.Destination must be !GetAtt <queue>.Arn", name)
		}
		mustResource(t, raw, q, "AWS::SQS::Queue")
		queue, err := typedTemplate(t).GetSQSQueueWithName(q)
		if err != nil {
			t.Fatal(err)
		}
		// Read raw: goformation resolves the key's !GetAtt to nothing.
		if kmsKey := get(resourcesOf(raw)[q], "Properties", "KmsMasterKeyId"); !reflect.DeepEqual(kmsKey, dataKeyInUse) {
			t.Errorf("%s: dead-letter queue must be encrypted with the firm's key, got %v", q, kmsKey)
		}
		if aws.ToInt(queue.MessageRetentionPeriod) != 14*24*3600 {
			t.Errorf("%s: MessageRetentionPeriod = %d, want 14 days", q, aws.ToInt(queue.MessageRetentionPeriod))
		}
	}
}
