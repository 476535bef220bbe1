// Command work consumes the queue: "ok" succeeds, "flaky" fails its first
// receive, "fail" is always reported in batchItemFailures, "error" always
// fails the invocation.
package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, r := range ev.Records {
			n := r.Attributes["ApproximateReceiveCount"]
			fmt.Printf("work: %s receive %s from %s (%s)\n", r.Body, n, r.EventSourceARN, r.EventSource)
			switch {
			case r.Body == "error":
				return resp, errors.New("boom")
			case r.Body == "fail", r.Body == "flaky" && n == "1":
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
		}
		return resp, nil
	})
}
