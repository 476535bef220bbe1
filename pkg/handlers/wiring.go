package handlers

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/bedrock"
	"github.com/seed-f6d3920e/warrant/pkg/config"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
	"github.com/seed-f6d3920e/warrant/pkg/tools"
)

// Clients are the SDK clients of one function, built once at init. Endpoints
// come from the SDK's own configuration (AWS_ENDPOINT_URL_DYNAMODB and
// AWS_ENDPOINT_URL_BEDROCK_RUNTIME on the local stack).
type Clients struct {
	Store  *dynamo.Store
	Logger *failure.Logger
	HTTP   httpapi.Config
}

// NewClients wires the store, the failure logger and the claim names.
func NewClients(cfg config.Config, awsCfg aws.Config) Clients {
	return Clients{
		Store:  dynamo.New(dynamodb.NewFromConfig(awsCfg), cfg.TableName),
		Logger: failure.NewLogger(nil),
		HTTP:   httpapi.Config{FirmClaim: cfg.FirmClaim, RolesClaim: cfg.RolesClaim},
	}
}

// NewBrain wires the brain invoke and resume share: the real Bedrock client,
// the embedded risk policy, the configured prices and the reference tools.
func NewBrain(ctx context.Context, cfg config.Config, awsCfg aws.Config, c Clients) (*agent.Brain, error) {
	policy, err := toolpolicy.Embedded()
	if err != nil {
		return nil, failure.Wrap(failure.KindConfigInvalid, "the embedded risk policy does not load", err)
	}
	model := bedrock.New(bedrock.NewRuntime(ctx, awsCfg, ""), bedrock.Options{Stream: cfg.Streaming, DefaultMaxTokens: cfg.MaxTokens})
	brain, err := agent.New(c.Store, model, policy, cfg.Prices, c.Logger,
		agent.Config{ModelID: cfg.ModelID, MaxTokens: cfg.MaxTokens, StepLimit: cfg.StepLimit, WarrantTTL: cfg.WarrantTTL},
		tools.Reference(c.Store, nil), agent.MatterAssistant)
	if err != nil {
		return nil, failure.Wrap(failure.KindConfigInvalid, "the agent registry does not build", err)
	}
	return brain, nil
}
