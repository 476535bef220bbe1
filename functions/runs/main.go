// Command runs is the Warrant runs Lambda: configuration, clients, handler, lambda.Start.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/seed-f6d3920e/warrant/pkg/config"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"
)

func main() {
	ctx := context.Background()
	cfg, err := config.Load(config.Runs, os.LookupEnv)
	if err != nil {
		config.Fatal(config.Runs, err)
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		config.Fatal(config.Runs, failure.Wrap(failure.KindConfigInvalid, "AWS configuration does not load", err))
	}
	c := handlers.NewClients(cfg, awsCfg)
	h := &handlers.Runs{Store: c.Store, HTTP: c.HTTP, Resp: httpapi.Responder{Logger: c.Logger, Component: "runs"}}
	lambda.Start(h.Handle)
}
