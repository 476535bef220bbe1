// Command stream-reduce is the Warrant stream-reduce Lambda: configuration, clients, handler, lambda.Start.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/seed-f6d3920e/warrant/pkg/config"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

func main() {
	ctx := context.Background()
	cfg, err := config.Load(config.StreamReduce, os.LookupEnv)
	if err != nil {
		config.Fatal(config.StreamReduce, err)
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		config.Fatal(config.StreamReduce, failure.Wrap(failure.KindConfigInvalid, "AWS configuration does not load", err))
	}
	c := handlers.NewClients(cfg, awsCfg)
	h := &handlers.StreamReduce{Store: c.Store, Logger: c.Logger}
	lambda.Start(h.Handle)
}
