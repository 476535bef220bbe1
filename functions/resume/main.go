// Command resume is the Warrant resume Lambda: configuration, clients, handler, lambda.Start.
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
	cfg, err := config.Load(config.Resume, os.LookupEnv)
	if err != nil {
		config.Fatal(config.Resume, err)
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		config.Fatal(config.Resume, failure.Wrap(failure.KindConfigInvalid, "AWS configuration does not load", err))
	}
	c := handlers.NewClients(cfg, awsCfg)
	brain, err := handlers.NewBrain(ctx, cfg, awsCfg, c)
	if err != nil {
		config.Fatal(config.Resume, err)
	}
	h := &handlers.Resume{Brain: brain, HTTP: c.HTTP, Resp: httpapi.Responder{Logger: c.Logger, Component: "resume"}}
	lambda.Start(h.Handle)
}
