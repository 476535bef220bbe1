package handlers

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"
	"github.com/seed-f6d3920e/warrant/pkg/pricing"

	"github.com/seed-f6d3920e/warrant"
)

// A firm's settings (issue 27 item 12: setting up a firm is an API step,
// not a hand-written DynamoDB item): PUT on the approve function (a firm
// admin), GET on the runs function (a firm admin or counsel).
const (
	PutSettingsRoute = "PUT /v1/settings"
	GetSettingsRoute = "GET /v1/settings"
)

// SettingsStore keeps firms' settings (pkg/dynamo's Store).
type SettingsStore interface {
	GetFirmSettings(ctx context.Context, firm string) (warrant.FirmSettings, error)
	PutFirmSettings(ctx context.Context, fs warrant.FirmSettings) error
}

// SettingsBody is PUT /v1/settings' body: the caller's firm's settings,
// whole (a member left out takes its default).
type SettingsBody struct {
	// Domains are the firm's own e-mail domains (lower-case DNS names).
	Domains []string `json:"domains,omitempty"`
	// SeparationOfDuties: the counsel who started a run may not decide
	// its warrant (default true when absent).
	SeparationOfDuties *bool `json:"separation_of_duties,omitempty"`
	// MonthlyBudgetUSD is the firm's monthly model budget, a decimal
	// string; absent: the deployment's default.
	MonthlyBudgetUSD string `json:"monthly_budget_usd,omitempty"`
	// RetentionDays is the firm's default retention (1 to 36500 days after
	// a run ends); absent: kept.
	RetentionDays *int `json:"retention_days,omitempty"`
}

// SettingsView is a firm's settings as stored.
type SettingsView struct {
	FirmID             string   `json:"firm_id"`
	Domains            []string `json:"domains"`
	SeparationOfDuties bool     `json:"separation_of_duties"`
	MonthlyBudgetUSD   string   `json:"monthly_budget_usd,omitempty"`
	RetentionDays      *int     `json:"retention_days,omitempty"`
	UpdatedAt          string   `json:"updated_at,omitempty"`
}

func settingsView(fs warrant.FirmSettings) SettingsView {
	v := SettingsView{FirmID: fs.FirmID, Domains: append([]string{}, fs.Domains...), SeparationOfDuties: fs.SeparationOfDuties,
		MonthlyBudgetUSD: fs.MonthlyBudgetUSD, RetentionDays: fs.RetentionDays}
	if !fs.UpdatedAt.IsZero() {
		v.UpdatedAt = contracts.FormatTime(fs.UpdatedAt)
	}
	return v
}

var errNotFirmAdmin = failure.New(failure.KindForbidden, "only a firm admin (role firm_admin) may change the firm's settings")

// putSettings saves the caller's firm's settings whole (a firm admin): the
// first PUT sets a new firm up. Bad input is 400 naming the field, and
// writes nothing.
func putSettings(ctx context.Context, store SettingsStore, c httpapi.Config, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	if err := httpapi.RejectUnknownQuery(req); err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	if !p.HasRole(RoleFirmAdmin) {
		return events.APIGatewayV2HTTPResponse{}, errNotFirmAdmin
	}
	var body SettingsBody
	if err := c.DecodeBody(req, &body); err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	bad := func(err error) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{}, inRequest(failure.New(failure.KindInvalidRequest, err.Error()))
	}
	if err := warrant.CheckDomains("domains", body.Domains); err != nil {
		return bad(err)
	}
	if err := warrant.CheckRetention("retention_days", body.RetentionDays); err != nil {
		return bad(err)
	}
	fs := warrant.DefaultFirmSettings(p.FirmID)
	fs.Domains, fs.RetentionDays = body.Domains, body.RetentionDays
	if body.SeparationOfDuties != nil {
		fs.SeparationOfDuties = *body.SeparationOfDuties
	}
	if body.MonthlyBudgetUSD != "" {
		n, err := pricing.ParseUSD(body.MonthlyBudgetUSD)
		if err != nil || n < 0 {
			return bad(fmt.Errorf("field monthly_budget_usd: a decimal string of dollars, e.g. \"2500.00\""))
		}
		v := int64(n)
		fs.MonthlyBudgetNano = &v
	}
	if err := store.PutFirmSettings(ctx, fs); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	saved, err := store.GetFirmSettings(ctx, p.FirmID)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(200, settingsView(saved), id.CorrelationID), nil
}

// getSettings answers the caller's firm's settings (a firm admin or
// counsel); a firm that saved none has the defaults.
func getSettings(ctx context.Context, store interface {
	GetFirmSettings(ctx context.Context, firm string) (warrant.FirmSettings, error)
}, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	if err := httpapi.RejectUnknownQuery(req); err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	if !keepsMatters(p) {
		return events.APIGatewayV2HTTPResponse{}, failure.New(failure.KindForbidden, "only counsel or a firm admin may read the firm's settings")
	}
	fs, err := store.GetFirmSettings(ctx, p.FirmID)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(200, settingsView(fs), id.CorrelationID), nil
}
