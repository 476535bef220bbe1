// Command toolfn is Warrant's reference tools as a Lambda function
// (pkg/tools/lambdafn): the function the local stack runs under the Lambda
// Runtime Interface Emulator when a catalog names a lambda server, and the
// example of what a firm's own tool function receives and answers. Its
// effects are recorded as the MCP server's are: one OUT#<effect_ref> item
// in the run's partition of TABLE_NAME, at most once per effect_ref.
//
// Environment: TABLE_NAME (required) and the AWS SDK's own configuration
// (AWS_REGION, AWS_ENDPOINT_URL_DYNAMODB on the local stack, credentials).
// Its log (JSON lines) names each call's tool, outcome and run ids, never an
// input or a result.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/seed-f6d3920e/warrant/internal/wire"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/tools"
	"github.com/seed-f6d3920e/warrant/pkg/tools/lambdafn"
	"github.com/seed-f6d3920e/warrant/pkg/tools/serve"
)

func main() {
	ctx := context.Background()
	logger := failure.NewLogger(os.Stderr)
	outbox, err := wire.Outbox(ctx, os.LookupEnv)
	if err != nil {
		logger.Log(ctx, failure.Build(err, failure.StageConfig, lambdafn.Name, failure.Identity{}))
		os.Exit(1)
	}
	set, err := serve.New(tools.Reference(outbox, nil))
	if err != nil {
		logger.Log(ctx, failure.Build(err, failure.StageConfig, lambdafn.Name, failure.Identity{}))
		os.Exit(1)
	}
	lambda.Start(lambdafn.Handler(set, logger, nil))
}
