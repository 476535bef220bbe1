// Command enqueue sends each request's body to QUEUE_URL through the AWS
// SDK, which reaches the local queue through AWS_ENDPOINT_URL_SQS.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		panic(err)
	}
	client, url := sqs.NewFromConfig(cfg), os.Getenv("QUEUE_URL")
	lambda.Start(func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		out, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(req.Body)})
		if err != nil {
			return events.APIGatewayV2HTTPResponse{StatusCode: 502, Body: err.Error()}, nil
		}
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: aws.ToString(out.MessageId)}, nil
	})
}
