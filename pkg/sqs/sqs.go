// Package sqs is the worker queue: it hands a run to the worker Lambda as one
// SQS message (contracts.WorkerMessage as JSON). The queue, its visibility
// timeout and its dead-letter queue are the template's; this is only the
// sending side. The worker receives through Lambda's SQS event source.
package sqs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/seed-f6d3920e/warrant/pkg/awserr"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// Sender is the part of the SQS client a Queue uses.
type Sender interface {
	SendMessage(ctx context.Context, in *awssqs.SendMessageInput, optFns ...func(*awssqs.Options)) (*awssqs.SendMessageOutput, error)
}

// Queue sends worker messages to one queue.
type Queue struct {
	client Sender
	url    string
}

// New returns the queue at url.
func New(client Sender, url string) *Queue { return &Queue{client: client, url: url} }

// Enqueue sends m. A queue that cannot take it now is store_unavailable
// (retryable): the caller answers 503 and the client retries, which is safe
// because the run was recorded first and a replayed request hands it over
// again.
func (q *Queue) Enqueue(ctx context.Context, m contracts.WorkerMessage) error {
	if err := m.Validate(); err != nil {
		return fmt.Errorf("sqs: invalid worker message: %w", err)
	}
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = q.client.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(q.url), MessageBody: aws.String(string(body))})
	return classify(err)
}

func classify(err error) error {
	if failure.Settled(err) {
		return err
	}
	code, noAnswer := awserr.Read(err)
	switch {
	case noAnswer, code == "AWS.SimpleQueueService.RequestThrottled", code == "RequestThrottled", code == "ThrottlingException",
		code == "KmsThrottled", code == "InternalError", code == "ServiceUnavailable":
		return failure.Classified(failure.KindStoreUnavailable, fmt.Errorf("sqs: send: %w", err))
	}
	return errors.Join(errors.New("sqs: send"), err)
}
