package deploy

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/eventbus"
	"github.com/seed-f6d3920e/warrant/pkg/notify"
)

// TestNotificationMessageThroughMoto: the same messages made by moto's
// EventBridge, an implementation of its own: NotifyCounselRule's pattern and
// input transformer on a bus, the events published by pkg/eventbus, the
// messages read from an SQS queue standing in for the topic (moto sends no
// rule's events to SNS). Moto substitutes a value into the template's text
// as it is, as EventBridge's documentation says; unlike EventBridge it
// leaves the placeholder of an empty value, so only the events whose every
// field is set go through it (warrant.pending and warrant.expiring).
func TestNotificationMessageThroughMoto(t *testing.T) {
	ep := dynamotest.Moto(t)
	raw := rawTemplate(t)
	ctx := t.Context()
	creds := credentials.NewStaticCredentialsProvider("test", "test", "")
	eb := eventbridge.New(eventbridge.Options{Region: "us-east-1", BaseEndpoint: aws.String(ep.URL), Credentials: creds})
	q := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(ep.URL), Credentials: creds})
	name := "warrant-test-" + uuid.NewString()[:8]
	if _, err := eb.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = eb.DeleteEventBus(ctx, &eventbridge.DeleteEventBusInput{Name: aws.String(name)}) })
	pattern, err := json.Marshal(get(raw, "Resources", "NotifyCounselRule", "Properties", "EventPattern"))
	if err != nil {
		t.Fatal(err)
	}
	for _, choice := range emailChoices(t, raw) {
		queue, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-" + choice)})
		if err != nil {
			t.Fatal(err)
		}
		attrs, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: queue.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatal(err)
		}
		rule := name + "-" + choice
		if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String(rule), EventBusName: aws.String(name),
			EventPattern: aws.String(string(pattern))}); err != nil {
			t.Fatal(err)
		}
		paths, tmpl := counselTransformer(t, raw, map[string]string{"NotificationEmailNames": choice})
		if _, err := eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String(rule), EventBusName: aws.String(name),
			Targets: []ebtypes.Target{{Id: aws.String("Counsel"), Arn: aws.String(attrs.Attributes["QueueArn"]),
				InputTransformer: &ebtypes.InputTransformer{InputPathsMap: paths, InputTemplate: aws.String(tmpl)}}}}); err != nil {
			t.Fatal(err)
		}
		var events []notify.Event
		var want []string
		for _, names := range hostileNames {
			for _, e := range counselEvents(names[0], names[1]) {
				if e.Type == notify.EffectOutcomeUnknown {
					continue
				}
				events = append(events, e)
				want = append(want, intendedMessage(t, paths, tmpl, e))
			}
		}
		if err := eventbus.New(eb, name).Publish(ctx, events); err != nil {
			t.Fatalf("%s: publish: %v", choice, err)
		}
		var got []string
		for tries := 0; len(got) < len(want) && tries < 10; tries++ {
			out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: queue.QueueUrl, MaxNumberOfMessages: 10})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range out.Messages {
				var text string
				if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &text); err != nil {
					t.Errorf("%s: a message is not one JSON string (%v): %s", choice, err, aws.ToString(m.Body))
					continue
				}
				got = append(got, text)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: moto made\n  %s\nwant\n  %s", choice, fmt.Sprintf("%q", got), fmt.Sprintf("%q", want))
		}
	}
}
