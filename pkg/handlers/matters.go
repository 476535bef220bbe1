package handlers

import (
	"context"
	"fmt"
	"sort"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"

	"github.com/seed-f6d3920e/warrant"
)

// MattersStore is the firm's matter registry (pkg/dynamo's Store): a
// matter's name and its client's e-mail domains (which the risk policy's
// e-mail rules read).
type MattersStore interface {
	PutMatter(ctx context.Context, m warrant.Matter) error
	ListMatters(ctx context.Context, firm string) ([]warrant.Matter, error)
}

// The matter registry's routes: PUT on the approve function (it writes, as
// counsel's decisions do), GET on the runs function.
const (
	PutMatterRoute   = "PUT /v1/matters/{matter_id}"
	ListMattersRoute = "GET /v1/matters"
)

// RoleFirmAdmin may keep the firm's matter registry, as counsel may.
const RoleFirmAdmin = "firm_admin"

// MaxClientDomains bounds a matter's client domains.
const MaxClientDomains = 50

// MatterBody is PUT /v1/matters/{matter_id}'s body: the matter whole.
type MatterBody struct {
	Name          string   `json:"name"`
	ClientDomains []string `json:"client_domains"`
}

// MatterView is a matter as the registry holds it.
type MatterView struct {
	MatterID      string   `json:"matter_id"`
	Name          string   `json:"name"`
	ClientDomains []string `json:"client_domains"`
	UpdatedAt     string   `json:"updated_at,omitempty"`
}

func matterView(m warrant.Matter) MatterView {
	v := MatterView{MatterID: m.MatterID, Name: m.Title, ClientDomains: append([]string{}, m.ClientDomains...)}
	if !m.UpdatedAt.IsZero() {
		v.UpdatedAt = contracts.FormatTime(m.UpdatedAt)
	}
	return v
}

func keepsMatters(p httpapi.Principal) bool { return p.IsCounsel() || p.HasRole(RoleFirmAdmin) }

var errNotMatterKeeper = failure.New(failure.KindForbidden, "only counsel or a firm admin may read or keep the matter registry")

// putMatter saves a matter of the caller's firm whole: its name (a display
// name: at most 200 bytes, no invisible characters) and its client's e-mail
// domains (lower-case DNS names, at most 50).
func putMatter(ctx context.Context, store MattersStore, c httpapi.Config, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	if !keepsMatters(p) {
		return events.APIGatewayV2HTTPResponse{}, errNotMatterKeeper
	}
	matterID, err := httpapi.PathUUID(req, "matter_id")
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	var body MatterBody
	if err := c.DecodeBody(req, &body); err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	if body.Name == "" || contracts.DisplayName(body.Name) != body.Name {
		return events.APIGatewayV2HTTPResponse{}, inRequest(failure.New(failure.KindInvalidRequest,
			"field name: a matter's name, trimmed, at most 200 bytes, with no invisible characters"))
	}
	if len(body.ClientDomains) > MaxClientDomains {
		return events.APIGatewayV2HTTPResponse{}, inRequest(failure.New(failure.KindInvalidRequest,
			fmt.Sprintf("field client_domains: at most %d domains", MaxClientDomains)))
	}
	if err := warrant.CheckDomains("client_domains", body.ClientDomains); err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(failure.New(failure.KindInvalidRequest, err.Error()))
	}
	m := warrant.Matter{FirmID: p.FirmID, MatterID: matterID, Title: body.Name, ClientDomains: body.ClientDomains}
	if err := store.PutMatter(ctx, m); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return httpapi.JSON(200, matterView(m), id.CorrelationID), nil
}

// listMatters lists the caller's firm's matters, by name.
func listMatters(ctx context.Context, store MattersStore, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	if err := httpapi.RejectUnknownQuery(req); err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	if !keepsMatters(p) {
		return events.APIGatewayV2HTTPResponse{}, errNotMatterKeeper
	}
	ms, err := store.ListMatters(ctx, p.FirmID)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	out := struct {
		Matters []MatterView `json:"matters"`
	}{Matters: []MatterView{}}
	for _, m := range ms {
		out.Matters = append(out.Matters, matterView(m))
	}
	sort.SliceStable(out.Matters, func(i, j int) bool { return out.Matters[i].Name < out.Matters[j].Name })
	return httpapi.JSON(200, out, id.CorrelationID), nil
}
