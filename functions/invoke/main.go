// Command invoke is the Warrant invoke Lambda: configuration, clients, handler, lambda.Start.
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
	cfg, err := config.Load(config.Invoke, os.LookupEnv)
	if err != nil {
		config.Fatal(config.Invoke, err)
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		config.Fatal(config.Invoke, failure.Wrap(failure.KindConfigInvalid, "AWS configuration does not load", err))
	}
	c := handlers.NewClients(cfg, awsCfg)
	brain, err := handlers.NewBrain(ctx, cfg, awsCfg, c)
	if err != nil {
		config.Fatal(config.Invoke, err)
	}
	h := &handlers.Invoke{Brain: brain, Store: c.Store, Config: cfg, HTTP: c.HTTP, Resp: httpapi.Responder{Logger: c.Logger, Component: "invoke"}}
	lambda.Start(h.Handle)
}
