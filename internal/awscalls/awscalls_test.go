package awscalls_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	brtypes "github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/seed-f6d3920e/warrant/internal/awscalls"
)

// want is one recorded Call, without the fields every case shares.
type want struct {
	action, resource string
	cond             map[string][]string
}

// TestNeeds makes each kind of request through a real SDK client (an
// httptest server answering "{}": the call is recorded before it is sent,
// after the SDK validated it, so a request that never leaves the client is
// not one IAM sees) and wants the actions and ARNs IAM checks.
func TestNeeds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte("{}"))
	}))
	defer srv.Close()
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1}
	const table = "arn:aws:dynamodb:us-east-1:123456789012:table/T"
	const keyARN = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	ctx := context.Background()
	key := map[string]ddbtypes.AttributeValue{"PK": &ddbtypes.AttributeValueMemberS{Value: "a"}}
	for _, c := range []struct {
		name string
		call func(aws.Config)
		want []want
	}{
		{"dynamodb GetItem", func(c aws.Config) {
			dynamodb.NewFromConfig(c).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("T"), Key: key})
		}, []want{{"dynamodb:GetItem", table, nil}}},
		{"dynamodb Query of an index", func(c aws.Config) {
			dynamodb.NewFromConfig(c).Query(ctx, &dynamodb.QueryInput{TableName: aws.String("T"), IndexName: aws.String("GSI1")})
		}, []want{{"dynamodb:Query", table + "/index/GSI1", nil}}},
		{"dynamodb Scan of the table", func(c aws.Config) {
			dynamodb.NewFromConfig(c).Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("T")})
		}, []want{{"dynamodb:Scan", table, nil}}},
		{"dynamodb TransactWriteItems, item by item", func(c aws.Config) {
			dynamodb.NewFromConfig(c).TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
				{Put: &ddbtypes.Put{TableName: aws.String("T"), Item: key}},
				{Update: &ddbtypes.Update{TableName: aws.String("T"), Key: key, UpdateExpression: aws.String("SET a = :a")}},
				{Delete: &ddbtypes.Delete{TableName: aws.String("U"), Key: key}},
				{ConditionCheck: &ddbtypes.ConditionCheck{TableName: aws.String("T"), Key: key, ConditionExpression: aws.String("attribute_exists(PK)")}},
			}})
		}, []want{{"dynamodb:ConditionCheckItem", table, nil}, {"dynamodb:DeleteItem", "arn:aws:dynamodb:us-east-1:123456789012:table/U", nil},
			{"dynamodb:PutItem", table, nil}, {"dynamodb:UpdateItem", table, nil}}},
		{"dynamodb BatchGetItem, per table", func(c aws.Config) {
			dynamodb.NewFromConfig(c).BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]ddbtypes.KeysAndAttributes{
				"T": {Keys: []map[string]ddbtypes.AttributeValue{{"PK": &ddbtypes.AttributeValueMemberS{Value: "a"}}}},
				"U": {Keys: []map[string]ddbtypes.AttributeValue{{"PK": &ddbtypes.AttributeValueMemberS{Value: "a"}}}}}})
		}, []want{{"dynamodb:BatchGetItem", table, nil}, {"dynamodb:BatchGetItem", "arn:aws:dynamodb:us-east-1:123456789012:table/U", nil}}},
		{"dynamodb BatchWriteItem, per table", func(c aws.Config) {
			dynamodb.NewFromConfig(c).BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{
				"T": {{DeleteRequest: &ddbtypes.DeleteRequest{Key: map[string]ddbtypes.AttributeValue{"PK": &ddbtypes.AttributeValueMemberS{Value: "a"}}}}}}})
		}, []want{{"dynamodb:BatchWriteItem", table, nil}}},
		{"kms GenerateDataKey with an encryption context", func(c aws.Config) {
			kms.NewFromConfig(c).GenerateDataKey(ctx, &kms.GenerateDataKeyInput{KeyId: aws.String(keyARN), KeySpec: kmstypes.DataKeySpecAes256,
				EncryptionContext: map[string]string{"warrant:run_id": "r", "warrant:firm_id": "f"}})
		}, []want{{"kms:GenerateDataKey", keyARN, map[string][]string{"kms:EncryptionContext:warrant:firm_id": {"f"},
			"kms:EncryptionContext:warrant:run_id": {"r"}, "kms:EncryptionContextKeys": {"warrant:firm_id", "warrant:run_id"},
			"kms:DataKeySpec": {"AES_256"}}}}},
		{"kms Decrypt by key id", func(c aws.Config) {
			kms.NewFromConfig(c).Decrypt(ctx, &kms.DecryptInput{KeyId: aws.String("1234abcd"), CiphertextBlob: []byte("x")})
		}, []want{{"kms:Decrypt", "arn:aws:kms:us-east-1:123456789012:key/1234abcd", nil}}},
		{"kms Sign by alias", func(c aws.Config) {
			kms.NewFromConfig(c).Sign(ctx, &kms.SignInput{KeyId: aws.String("alias/receipts"), Message: []byte("d"),
				MessageType: kmstypes.MessageTypeDigest, SigningAlgorithm: kmstypes.SigningAlgorithmSpecEcdsaSha256})
		}, []want{{"kms:Sign", "arn:aws:kms:us-east-1:123456789012:alias/receipts", map[string][]string{"kms:MessageType": {"DIGEST"},
			"kms:SigningAlgorithm": {"ECDSA_SHA_256"}}}}},
		{"kms GenerateMac", func(c aws.Config) {
			kms.NewFromConfig(c).GenerateMac(ctx, &kms.GenerateMacInput{KeyId: aws.String(keyARN), Message: []byte("m"),
				MacAlgorithm: kmstypes.MacAlgorithmSpecHmacSha256})
		}, []want{{"kms:GenerateMac", keyARN, map[string][]string{"kms:MacAlgorithm": {"HMAC_SHA_256"}}}}},
		{"s3 PutObject with Object Lock", func(c aws.Config) {
			s3.NewFromConfig(c, func(o *s3.Options) { o.UsePathStyle = true }).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("b"),
				Key: aws.String("checkpoints/f/1.json"), ObjectLockMode: s3types.ObjectLockModeCompliance,
				ObjectLockRetainUntilDate: aws.Time(time.Now().Add(time.Hour)), Body: strings.NewReader("{}")})
		}, []want{{"s3:PutObject", "arn:aws:s3:::b/checkpoints/f/1.json", nil}, {"s3:PutObjectRetention", "arn:aws:s3:::b/checkpoints/f/1.json", nil}}},
		{"s3 ListObjectsV2 with a prefix", func(c aws.Config) {
			s3.NewFromConfig(c, func(o *s3.Options) { o.UsePathStyle = true }).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("b"),
				Prefix: aws.String("checkpoints/f/")})
		}, []want{{"s3:ListBucket", "arn:aws:s3:::b", map[string][]string{"s3:prefix": {"checkpoints/f/"}}}}},
		{"sqs SendMessage to a queue URL", func(c aws.Config) {
			sqs.NewFromConfig(c).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String("https://sqs.eu-west-1.amazonaws.com/111122223333/work"),
				MessageBody: aws.String("{}")})
		}, []want{{"sqs:SendMessage", "arn:aws:sqs:eu-west-1:111122223333:work", nil}}},
		{"eventbridge PutEvents per bus", func(c aws.Config) {
			eventbridge.NewFromConfig(c).PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{
				{EventBusName: aws.String("warrant-dev-notifications")}, {EventBusName: aws.String("warrant-dev-notifications")}, {}}})
		}, []want{{"events:PutEvents", "arn:aws:events:us-east-1:123456789012:event-bus/default", nil},
			{"events:PutEvents", "arn:aws:events:us-east-1:123456789012:event-bus/warrant-dev-notifications", nil}}},
		{"secretsmanager GetSecretValue", func(c aws.Config) {
			secretsmanager.NewFromConfig(c).GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("tools/token")})
		}, []want{{"secretsmanager:GetSecretValue", "arn:aws:secretsmanager:us-east-1:123456789012:secret:tools/token", nil}}},
		{"lambda Invoke with a qualifier", func(c aws.Config) {
			lambda.NewFromConfig(c).Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("docket"), Qualifier: aws.String("live")})
		}, []want{{"lambda:InvokeFunction", "arn:aws:lambda:us-east-1:123456789012:function:docket:live", nil}}},
		{"ssm GetParameter of a path", func(c aws.Config) {
			ssm.NewFromConfig(c).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/warrant/prod/tool-catalog")})
		}, []want{{"ssm:GetParameter", "arn:aws:ssm:us-east-1:123456789012:parameter/warrant/prod/tool-catalog", nil}}},
		{"bedrock Converse through an inference profile", func(c aws.Config) {
			bedrockruntime.NewFromConfig(c).Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String("us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
				Messages: []brtypes.Message{{Role: brtypes.ConversationRoleUser, Content: []brtypes.ContentBlock{&brtypes.ContentBlockMemberText{Value: "hi"}}}}})
		}, []want{{"bedrock:InvokeModel", "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0", nil},
			{"bedrock:InvokeModel", "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0", nil}}},
		{"bedrock ConverseStream of a foundation model", func(c aws.Config) {
			bedrockruntime.NewFromConfig(c).ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{ModelId: aws.String("anthropic.claude-3-haiku-20240307-v1:0")})
		}, []want{{"bedrock:InvokeModelWithResponseStream", "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-haiku-20240307-v1:0", nil}}},
		{"an operation nobody mapped", func(c aws.Config) {
			dynamodb.NewFromConfig(c).ListTables(ctx, &dynamodb.ListTablesInput{})
		}, []want{{"unmapped:DynamoDB:ListTables", "*", nil}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &awscalls.Recorder{}
			cc := cfg.Copy()
			cc.APIOptions = append(cc.APIOptions, rec.APIOption("Fn"))
			c.call(cc)
			c.call(cc) // the same call again is the same Call
			var got []want
			for _, call := range rec.Calls() {
				if call.Function != "Fn" || call.Service == "" || call.Operation == "" {
					t.Errorf("call %+v: no function, service or operation", call)
				}
				got = append(got, want{call.Action, call.Resource, call.Conditions})
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("recorded\n%+v\nwant\n%+v", got, c.want)
			}
		})
	}
}
