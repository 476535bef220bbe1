package main

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/internal/walkthrough"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
)

// Local data the risk policy's rules weigh (LOCAL ONLY): the dev firm's own
// e-mail domain and the demo matter's client. A practice-management sync
// writes these items in a real deployment (docs/DEPLOY.md).
const (
	DevFirmDomain    = "warrant-law.example"
	DemoClientDomain = "ridgeway-logistics.example"
	// SeedWriter is who the demo matter's first version names as its
	// writer: the seed, not a user.
	SeedWriter = "localapi-seed"
)

// seed writes the dev firm's settings and the demo matter's record unless
// the table already has them (another endpoint's table is left as it is).
func seed(ctx context.Context, ddb *dynamodb.Client, table string) (wrote []string, err error) {
	store := dynamo.New(ddb, table)
	fs, err := store.GetFirmSettings(ctx, DevFirm)
	if err != nil {
		return nil, err
	}
	if fs.UpdatedAt.IsZero() {
		fs.Domains = []string{DevFirmDomain}
		if err := store.PutFirmSettings(ctx, fs); err != nil {
			return nil, err
		}
		wrote = append(wrote, "firm settings (domain "+DevFirmDomain+")")
	}
	_, err = store.GetMatter(ctx, DevFirm, walkthrough.DemoMatter)
	if errors.Is(err, warrant.ErrNotFound) {
		_, err = store.PutMatter(ctx, warrant.Matter{FirmID: DevFirm, MatterID: walkthrough.DemoMatter,
			Title: "Ridgeway Logistics v. Harbor Freight Systems", ClientDomains: []string{DemoClientDomain}, UpdatedBy: SeedWriter}, 0)
		wrote = append(wrote, "matter "+walkthrough.DemoMatter+" (client "+DemoClientDomain+")")
	}
	return wrote, err
}
