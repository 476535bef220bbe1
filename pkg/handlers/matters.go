package handlers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/httpapi"

	"github.com/seed-f6d3920e/warrant"
)

// MattersStore is the firm's matter registry (pkg/dynamo's Store): a
// matter's name and its client's e-mail domains (which the risk policy's
// e-mail rules read), with every version of it.
type MattersStore interface {
	GetMatter(ctx context.Context, firm, matter string) (warrant.Matter, error)
	PutMatter(ctx context.Context, m warrant.Matter, ifVersion int64) (warrant.Matter, error)
	ListMatters(ctx context.Context, firm string) ([]warrant.Matter, error)
	MatterVersions(ctx context.Context, firm, matter string, after int64, limit int) ([]warrant.MatterVersion, bool, error)
}

// The matter registry's routes: PUT on the approve function (it writes, as
// counsel's decisions do), the reads on the runs function.
const (
	PutMatterRoute      = "PUT /v1/matters/{matter_id}"
	GetMatterRoute      = "GET /v1/matters/{matter_id}"
	MatterVersionsRoute = "GET /v1/matters/{matter_id}/versions"
	ListMattersRoute    = "GET /v1/matters"
)

// RoleFirmAdmin may keep the firm's matter registry, as counsel may.
const RoleFirmAdmin = "firm_admin"

// MaxClientDomains bounds a matter's client domains.
const MaxClientDomains = 50

// MaxMatterVersions bounds a page of a matter's versions (each at most
// twice 50 domains of 253 bytes: a page stays far below Lambda's 6 MB).
const MaxMatterVersions = 100

// MatterBody is PUT /v1/matters/{matter_id}'s body: the matter whole.
type MatterBody struct {
	Name          string   `json:"name"`
	ClientDomains []string `json:"client_domains"`
	// RetentionDays is the matter's own retention: its runs' content is
	// destroyed this many days after each run ends (1 to 36500), unless
	// the matter is on hold. Absent: the firm's retention applies (and
	// with none, the content is kept).
	RetentionDays *int `json:"retention_days,omitempty"`
}

// MatterView is a matter as the registry holds it: Version counts its
// writes from 1, and ETag (the same as the answer's ETag header) is what
// the next write names in If-Match.
type MatterView struct {
	MatterID      string   `json:"matter_id"`
	Name          string   `json:"name"`
	ClientDomains []string `json:"client_domains"`
	RetentionDays *int     `json:"retention_days,omitempty"`
	UpdatedAt     string   `json:"updated_at,omitempty"`
	Version       int64    `json:"version"`
	ETag          string   `json:"etag"`
	UpdatedBy     string   `json:"updated_by,omitempty"`
	UpdatedByName string   `json:"updated_by_name,omitempty"`
}

func matterView(m warrant.Matter) MatterView {
	v := MatterView{MatterID: m.MatterID, Name: m.Title, ClientDomains: append([]string{}, m.ClientDomains...), RetentionDays: m.RetentionDays,
		Version: m.Version, ETag: matterETag(m.Version), UpdatedBy: m.UpdatedBy, UpdatedByName: m.UpdatedByName}
	if !m.UpdatedAt.IsZero() {
		v.UpdatedAt = contracts.FormatTime(m.UpdatedAt)
	}
	return v
}

// MatterState is what one version of a matter says.
type MatterState struct {
	Name          string   `json:"name"`
	ClientDomains []string `json:"client_domains"`
	RetentionDays *int     `json:"retention_days,omitempty"`
}

// MatterVersionView is one write of a matter: who (user id, and the name
// their token carried), when, and the matter before (absent: the write
// created it) and after.
type MatterVersionView struct {
	Version       int64        `json:"version"`
	UpdatedBy     string       `json:"updated_by"`
	UpdatedByName string       `json:"updated_by_name,omitempty"`
	UpdatedAt     string       `json:"updated_at"`
	Before        *MatterState `json:"before,omitempty"`
	After         MatterState  `json:"after"`
}

// MatterHistory is a page of a matter's versions, oldest first;
// NextAfterVersion is the after_version of the next page, when there is one.
type MatterHistory struct {
	MatterID         string              `json:"matter_id"`
	Versions         []MatterVersionView `json:"versions"`
	NextAfterVersion *int64              `json:"next_after_version,omitempty"`
}

func stateView(s warrant.MatterState) MatterState {
	return MatterState{Name: s.Title, ClientDomains: append([]string{}, s.ClientDomains...), RetentionDays: s.RetentionDays}
}

// matterETag is a version's strong entity tag.
func matterETag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

func keepsMatters(p httpapi.Principal) bool { return p.IsCounsel() || p.HasRole(RoleFirmAdmin) }

var errNotMatterKeeper = failure.New(failure.KindForbidden, "only counsel or a firm admin may read or keep the matter registry")

// The answers to a write's precondition. Each names the header it is about.
var (
	errIfMatchRequired = failure.New(failure.KindPreconditionRequired,
		"header If-Match: required to change a matter; send the ETag that GET /v1/matters/{matter_id} answers (to create a new matter, If-None-Match: *)")
	errStaleMatter = "header If-Match: the matter is not at the version it names (it was changed since it was read, or it has no record); " +
		"GET /v1/matters/{matter_id} again and send the ETag it answers"
	errMatterExists = "header If-None-Match: the matter already exists; GET it and change it with If-Match: its ETag"
)

// precondition reads a write's If-Match or If-None-Match: the version the
// write replaces (0: it creates the matter). If-Match holds one or more
// strong ETags (a weak one never matches a write: RFC 9110, 13.1.1); "*"
// would match whatever the matter now says, so it is refused.
func precondition(req events.APIGatewayV2HTTPRequest) (ifVersion int64, tags []string, err error) {
	match, hasMatch := httpapi.Header(req.Headers, "If-Match")
	none, hasNone := httpapi.Header(req.Headers, "If-None-Match")
	match, none = strings.TrimSpace(match), strings.TrimSpace(none)
	switch {
	case hasMatch && hasNone:
		return 0, nil, failure.New(failure.KindInvalidRequest, "header If-None-Match: send either If-Match (to change a matter) or If-None-Match: * (to create one), not both")
	case hasNone && none != "*":
		return 0, nil, failure.New(failure.KindInvalidRequest, "header If-None-Match: only * (create the matter when it has no record) is accepted")
	case hasNone:
		return 0, nil, nil
	case !hasMatch || match == "":
		return 0, nil, errIfMatchRequired
	case match == "*":
		return 0, nil, failure.New(failure.KindInvalidRequest, "header If-Match: * names no version; send the ETag that GET /v1/matters/{matter_id} answers")
	}
	for _, t := range strings.Split(match, ",") {
		tags = append(tags, strings.TrimSpace(t))
	}
	return -1, tags, nil
}

// putMatter saves a matter of the caller's firm whole: its name (a display
// name: at most 200 bytes, no invisible characters) and its client's e-mail
// domains (lower-case DNS names, at most 50), as the version after the one
// If-Match names (201 and If-None-Match: * for a new matter). A write that
// names another version than the matter's is 412, one that names none 428,
// and neither writes anything. The answer carries the new version's ETag.
//
// A retry of a write that went through (its answer lost) names the version
// it replaced: when the matter's current version is that write (the next
// version, by the same user, saying exactly what the body says), the answer
// is the write's again, and nothing is written.
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
	if err := warrant.CheckRetention("retention_days", body.RetentionDays); err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(failure.New(failure.KindInvalidRequest, err.Error()))
	}
	ifVersion, tags, err := precondition(req)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	m := warrant.Matter{FirmID: p.FirmID, MatterID: matterID, Title: body.Name, ClientDomains: body.ClientDomains,
		RetentionDays: body.RetentionDays, UpdatedBy: p.UserID, UpdatedByName: p.Name}
	if ifVersion < 0 {
		// If-Match: the version it names, read from the matter as it is.
		// (The store's conditional write still decides: another writer
		// may get there first.)
		cur, err := store.GetMatter(ctx, p.FirmID, matterID)
		switch {
		case errors.Is(err, warrant.ErrNotFound):
			return events.APIGatewayV2HTTPResponse{}, failure.Wrap(failure.KindPreconditionFailed, errStaleMatter, err)
		case err != nil:
			return events.APIGatewayV2HTTPResponse{}, err
		case slices.Contains(tags, matterETag(cur.Version)):
			ifVersion = cur.Version
		case cur.Version > 1 && slices.Contains(tags, matterETag(cur.Version-1)) && sameWrite(cur, m):
			return matterAnswer(200, cur, id), nil
		default:
			return events.APIGatewayV2HTTPResponse{}, failure.New(failure.KindPreconditionFailed, errStaleMatter)
		}
	}
	saved, err := store.PutMatter(ctx, m, ifVersion)
	switch {
	case errors.Is(err, warrant.ErrMatterExists):
		return events.APIGatewayV2HTTPResponse{}, failure.Wrap(failure.KindPreconditionFailed, errMatterExists, err)
	case errors.Is(err, warrant.ErrMatterVersion):
		return events.APIGatewayV2HTTPResponse{}, failure.Wrap(failure.KindPreconditionFailed, errStaleMatter, err)
	case err != nil:
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if ifVersion == 0 {
		resp := matterAnswer(201, saved, id)
		resp.Headers["Location"] = "/v1/matters/" + matterID
		return resp, nil
	}
	return matterAnswer(200, saved, id), nil
}

// sameWrite reports whether cur is the write m would make: same writer,
// same name, same domains in the same order.
func sameWrite(cur, m warrant.Matter) bool {
	sameDays := (cur.RetentionDays == nil) == (m.RetentionDays == nil) && (cur.RetentionDays == nil || *cur.RetentionDays == *m.RetentionDays)
	return cur.UpdatedBy == m.UpdatedBy && cur.Title == m.Title && slices.Equal(cur.ClientDomains, m.ClientDomains) && sameDays
}

// matterAnswer is a matter's view with its ETag.
func matterAnswer(status int, m warrant.Matter, id *failure.Identity) events.APIGatewayV2HTTPResponse {
	resp := httpapi.JSON(status, matterView(m), id.CorrelationID)
	resp.Headers["ETag"] = matterETag(m.Version)
	return resp
}

// getMatter answers one matter of the caller's firm, with its ETag.
func getMatter(ctx context.Context, store MattersStore, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	matterID, err := matterRead(req, p)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	m, err := store.GetMatter(ctx, p.FirmID, matterID)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return matterAnswer(200, m, id), nil
}

// matterRead checks a read of one matter: the path's matter id, no query
// beyond allowed, a keeper of the registry.
func matterRead(req events.APIGatewayV2HTTPRequest, p httpapi.Principal, allowed ...string) (string, error) {
	if err := httpapi.RejectUnknownQuery(req, allowed...); err != nil {
		return "", inRequest(err)
	}
	matterID, err := httpapi.PathUUID(req, "matter_id")
	if err != nil {
		return "", inRequest(err)
	}
	if !keepsMatters(p) {
		return "", errNotMatterKeeper
	}
	return matterID, nil
}

// matterVersions answers a page of a matter's versions, oldest first:
// after_version (default 0) and limit (default and at most
// MaxMatterVersions). A matter with no record is not found.
func matterVersions(ctx context.Context, store MattersStore, req events.APIGatewayV2HTTPRequest, p httpapi.Principal, id *failure.Identity) (events.APIGatewayV2HTTPResponse, error) {
	matterID, err := matterRead(req, p, "after_version", "limit")
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	after, err := httpapi.QueryInt(req, "after_version", 0, 0, 1<<40)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	limit, err := httpapi.QueryInt(req, "limit", MaxMatterVersions, 1, MaxMatterVersions)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, inRequest(err)
	}
	if _, err := store.GetMatter(ctx, p.FirmID, matterID); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	vs, more, err := store.MatterVersions(ctx, p.FirmID, matterID, after, int(limit))
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	out := MatterHistory{MatterID: matterID, Versions: []MatterVersionView{}}
	for _, v := range vs {
		mv := MatterVersionView{Version: v.Version, UpdatedBy: v.UpdatedBy, UpdatedByName: v.UpdatedByName,
			UpdatedAt: contracts.FormatTime(v.UpdatedAt), After: stateView(v.After)}
		if v.Before != nil {
			b := stateView(*v.Before)
			mv.Before = &b
		}
		out.Versions = append(out.Versions, mv)
	}
	if more && len(vs) > 0 {
		next := vs[len(vs)-1].Version
		out.NextAfterVersion = &next
	}
	return httpapi.JSON(200, out, id.CorrelationID), nil
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
