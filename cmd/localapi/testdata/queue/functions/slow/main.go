// Command slow outlives its function timeout: it answers only after its
// invocation's deadline has passed, so the emulator times it out.
package main

import (
	"context"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(ctx context.Context, _ events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		if dl, ok := ctx.Deadline(); ok {
			time.Sleep(time.Until(dl) + 5*time.Second)
		}
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: "too late"}, nil
	})
}
