package awscalls

import (
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// Needs is what IAM authorizes for one request of service's op with params
// (the operation's input, e.g. *dynamodb.GetItemInput), made in region by
// account. An operation this package does not know is one Call with the
// action "unmapped:<service>:<op>", which no policy allows: a check that
// meets it fails naming it, rather than passing a call nobody measured.
func Needs(service, op, region, account string, params any) []Call {
	n := needs{service: service, op: op, region: region, account: account}
	switch service {
	case "DynamoDB":
		n.dynamodb(params)
	case "KMS":
		n.kms(params)
	case "S3":
		n.s3(params)
	case "SQS":
		n.sqs(params)
	case "EventBridge":
		n.eventbridge(params)
	case "Secrets Manager":
		if in, ok := params.(*secretsmanager.GetSecretValueInput); ok {
			n.add("secretsmanager:GetSecretValue", n.arnOf("secretsmanager", "secret:", aws.ToString(in.SecretId)), nil)
		}
	case "Lambda":
		if in, ok := params.(*lambda.InvokeInput); ok {
			// A qualifier is part of the ARN IAM matches.
			fn := n.arnOf("lambda", "function:", aws.ToString(in.FunctionName))
			if q := aws.ToString(in.Qualifier); q != "" {
				fn += ":" + q
			}
			n.add("lambda:InvokeFunction", fn, nil)
		}
	case "SSM":
		n.ssm(params)
	case "Bedrock Runtime":
		n.bedrock(params)
	}
	if len(n.out) == 0 {
		n.add("unmapped:"+service+":"+op, "*", nil)
	}
	return n.out
}

type needs struct {
	service, op, region, account string
	out                          []Call
}

func (n *needs) add(action, resource string, cond map[string][]string) {
	n.out = append(n.out, Call{Service: n.service, Operation: n.op, Action: action, Resource: resource, Conditions: cond})
}

// arnOf is name's ARN in service, or name itself when it is one already.
func (n *needs) arnOf(service, prefix, name string) string {
	if strings.HasPrefix(name, "arn:") {
		return name
	}
	return "arn:aws:" + service + ":" + n.region + ":" + n.account + ":" + prefix + name
}

func (n *needs) table(name string) string { return n.arnOf("dynamodb", "table/", name) }

// dynamodb: a transaction and a batch are authorized per item (per table
// for a batch), against the item's own action and table; a query or scan
// of an index, against the index's ARN.
func (n *needs) dynamodb(params any) {
	simple := func(name *string) { n.add("dynamodb:"+n.op, n.table(aws.ToString(name)), nil) }
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		simple(in.TableName)
	case *dynamodb.PutItemInput:
		simple(in.TableName)
	case *dynamodb.UpdateItemInput:
		simple(in.TableName)
	case *dynamodb.DeleteItemInput:
		simple(in.TableName)
	case *dynamodb.DescribeTableInput:
		simple(in.TableName)
	case *dynamodb.CreateTableInput:
		simple(in.TableName)
	case *dynamodb.DeleteTableInput:
		simple(in.TableName)
	case *dynamodb.QueryInput:
		n.add("dynamodb:Query", n.index(in.TableName, in.IndexName), nil)
	case *dynamodb.ScanInput:
		n.add("dynamodb:Scan", n.index(in.TableName, in.IndexName), nil)
	case *dynamodb.TransactWriteItemsInput:
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				n.add("dynamodb:PutItem", n.table(aws.ToString(it.Put.TableName)), nil)
			case it.Update != nil:
				n.add("dynamodb:UpdateItem", n.table(aws.ToString(it.Update.TableName)), nil)
			case it.Delete != nil:
				n.add("dynamodb:DeleteItem", n.table(aws.ToString(it.Delete.TableName)), nil)
			case it.ConditionCheck != nil:
				n.add("dynamodb:ConditionCheckItem", n.table(aws.ToString(it.ConditionCheck.TableName)), nil)
			}
		}
	case *dynamodb.TransactGetItemsInput:
		for _, it := range in.TransactItems {
			if it.Get != nil {
				n.add("dynamodb:GetItem", n.table(aws.ToString(it.Get.TableName)), nil)
			}
		}
	case *dynamodb.BatchGetItemInput:
		for _, t := range slices.Sorted(maps.Keys(in.RequestItems)) {
			n.add("dynamodb:BatchGetItem", n.table(t), nil)
		}
	case *dynamodb.BatchWriteItemInput:
		for _, t := range slices.Sorted(maps.Keys(in.RequestItems)) {
			n.add("dynamodb:BatchWriteItem", n.table(t), nil)
		}
	}
}

func (n *needs) index(table, index *string) string {
	arn := n.table(aws.ToString(table))
	if i := aws.ToString(index); i != "" {
		arn += "/index/" + i
	}
	return arn
}

// kms: every operation is kms:<Op> on the key as the request names it (a
// key ARN, a key id, an alias), with the condition keys the request sets.
// The inputs are read by field name, so every KMS operation is covered
// alike.
func (n *needs) kms(params any) {
	v := reflect.Indirect(reflect.ValueOf(params))
	if v.Kind() != reflect.Struct {
		return
	}
	str := func(field string) string {
		f := v.FieldByName(field)
		switch {
		case !f.IsValid():
			return ""
		case f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.String:
			return f.Elem().String()
		case f.Kind() == reflect.String:
			return f.String()
		}
		return ""
	}
	key := str("KeyId")
	switch {
	case key == "":
		// Decrypt of a symmetric ciphertext may leave the key to the blob:
		// the key IAM checks is not in the request.
		key = "arn:aws:kms:" + n.region + ":" + n.account + ":key/(not in the request)"
	case strings.HasPrefix(key, "alias/"):
		key = n.arnOf("kms", "", key)
	default:
		key = n.arnOf("kms", "key/", key)
	}
	cond := map[string][]string{}
	if f := v.FieldByName("EncryptionContext"); f.IsValid() && f.Kind() == reflect.Map && f.Len() > 0 {
		ctx := f.Interface().(map[string]string)
		keys := slices.Sorted(maps.Keys(ctx))
		for _, k := range keys {
			cond["kms:EncryptionContext:"+k] = []string{ctx[k]}
		}
		cond["kms:EncryptionContextKeys"] = keys
	}
	for field, ck := range map[string]string{"SigningAlgorithm": "kms:SigningAlgorithm", "MessageType": "kms:MessageType",
		"MacAlgorithm": "kms:MacAlgorithm", "KeySpec": "kms:DataKeySpec"} {
		if s := str(field); s != "" {
			cond[ck] = []string{s}
		}
	}
	if len(cond) == 0 {
		cond = nil
	}
	n.add("kms:"+n.op, key, cond)
}

// s3: an object's actions on arn:aws:s3:::bucket/key; a put that sets an
// Object Lock retention or legal hold needs those actions too; a listing is
// s3:ListBucket on the bucket, with its prefix as s3:prefix.
func (n *needs) s3(params any) {
	obj := func(b, k *string) string { return "arn:aws:s3:::" + aws.ToString(b) + "/" + aws.ToString(k) }
	switch in := params.(type) {
	case *s3.PutObjectInput:
		n.add("s3:PutObject", obj(in.Bucket, in.Key), nil)
		if in.ObjectLockMode != "" || in.ObjectLockRetainUntilDate != nil {
			n.add("s3:PutObjectRetention", obj(in.Bucket, in.Key), nil)
		}
		if in.ObjectLockLegalHoldStatus != "" {
			n.add("s3:PutObjectLegalHold", obj(in.Bucket, in.Key), nil)
		}
	case *s3.GetObjectInput:
		n.add("s3:GetObject", obj(in.Bucket, in.Key), nil)
	case *s3.HeadObjectInput:
		n.add("s3:GetObject", obj(in.Bucket, in.Key), nil)
	case *s3.DeleteObjectInput:
		n.add("s3:DeleteObject", obj(in.Bucket, in.Key), nil)
	case *s3.ListObjectsV2Input:
		var cond map[string][]string
		if p := aws.ToString(in.Prefix); p != "" {
			cond = map[string][]string{"s3:prefix": {p}}
		}
		n.add("s3:ListBucket", "arn:aws:s3:::"+aws.ToString(in.Bucket), cond)
	}
}

// sqs: the queue's ARN from its URL (https://sqs.<region>.amazonaws.com/
// <account>/<name>); a batch is authorized as its single-message action.
func (n *needs) sqs(params any) {
	var queueURL string
	action := "sqs:" + n.op
	switch in := params.(type) {
	case *sqs.SendMessageInput:
		queueURL = aws.ToString(in.QueueUrl)
	case *sqs.SendMessageBatchInput:
		queueURL, action = aws.ToString(in.QueueUrl), "sqs:SendMessage"
	case *sqs.ReceiveMessageInput:
		queueURL = aws.ToString(in.QueueUrl)
	case *sqs.DeleteMessageInput:
		queueURL = aws.ToString(in.QueueUrl)
	case *sqs.DeleteMessageBatchInput:
		queueURL, action = aws.ToString(in.QueueUrl), "sqs:DeleteMessage"
	case *sqs.ChangeMessageVisibilityInput:
		queueURL = aws.ToString(in.QueueUrl)
	case *sqs.GetQueueAttributesInput:
		queueURL = aws.ToString(in.QueueUrl)
	case *sqs.GetQueueUrlInput:
		n.add(action, n.arnOf("sqs", "", aws.ToString(in.QueueName)), nil)
		return
	default:
		return
	}
	n.add(action, n.queueARN(queueURL), nil)
}

func (n *needs) queueARN(queueURL string) string {
	u, err := url.Parse(queueURL)
	if err != nil {
		return n.arnOf("sqs", "", queueURL)
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) != 2 {
		return n.arnOf("sqs", "", queueURL)
	}
	region := n.region
	// sqs.<region>.amazonaws.com, or the legacy <region>.queue.amazonaws.com.
	if h := strings.Split(u.Hostname(), "."); len(h) >= 4 && h[0] == "sqs" {
		region = h[1]
	} else if len(h) >= 4 && h[1] == "queue" {
		region = h[0]
	}
	return "arn:aws:sqs:" + region + ":" + parts[0] + ":" + parts[1]
}

// eventbridge: PutEvents on each entry's bus (no bus: the account's
// default bus).
func (n *needs) eventbridge(params any) {
	in, ok := params.(*eventbridge.PutEventsInput)
	if !ok {
		return
	}
	var buses []string
	for _, e := range in.Entries {
		bus := aws.ToString(e.EventBusName)
		if bus == "" {
			bus = "default"
		}
		buses = append(buses, n.arnOf("events", "event-bus/", bus))
	}
	slices.Sort(buses)
	for _, b := range slices.Compact(buses) {
		n.add("events:PutEvents", b, nil)
	}
}

// ssm: a parameter's ARN has its path without the leading slash after
// "parameter/".
func (n *needs) ssm(params any) {
	param := func(name string) string {
		if strings.HasPrefix(name, "arn:") {
			return name
		}
		return n.arnOf("ssm", "parameter/", strings.TrimPrefix(name, "/"))
	}
	switch in := params.(type) {
	case *ssm.GetParameterInput:
		n.add("ssm:GetParameter", param(aws.ToString(in.Name)), nil)
	case *ssm.GetParametersInput:
		for _, name := range in.Names {
			n.add("ssm:GetParameters", param(name), nil)
		}
	}
}

// bedrock: Converse is authorized as bedrock:InvokeModel, ConverseStream as
// bedrock:InvokeModelWithResponseStream. A cross-Region inference profile
// id (us., eu., apac., global. before provider.model) is checked on the
// profile and on the foundation model it routes to; here the model in the
// caller's Region, one of the Regions a profile may route to.
func (n *needs) bedrock(params any) {
	var model *string
	action := ""
	switch in := params.(type) {
	case *bedrockruntime.ConverseInput:
		model, action = in.ModelId, "bedrock:InvokeModel"
	case *bedrockruntime.ConverseStreamInput:
		model, action = in.ModelId, "bedrock:InvokeModelWithResponseStream"
	case *bedrockruntime.InvokeModelInput:
		model, action = in.ModelId, "bedrock:InvokeModel"
	case *bedrockruntime.InvokeModelWithResponseStreamInput:
		model, action = in.ModelId, "bedrock:InvokeModelWithResponseStream"
	default:
		return
	}
	id := aws.ToString(model)
	if strings.HasPrefix(id, "arn:") {
		n.add(action, id, nil)
		return
	}
	if parts := strings.Split(id, "."); len(parts) >= 3 {
		n.add(action, n.arnOf("bedrock", "inference-profile/", id), nil)
		id = strings.Join(parts[1:], ".")
	}
	n.add(action, "arn:aws:bedrock:"+n.region+"::foundation-model/"+id, nil)
}
