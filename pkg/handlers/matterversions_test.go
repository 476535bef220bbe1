package handlers_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

const (
	keeperA = "a1a1a1a1-1111-4111-8111-111111111111"
	keeperB = "b2b2b2b2-2222-4222-8222-222222222222"
)

// putMatterAs is PUT /v1/matters/{matter} by counsel user, with the
// precondition headers given ("if-match", "if-none-match": API Gateway
// lower-cases header names).
func putMatterAs(t *testing.T, user, matter string, body any, headers map[string]string) *event {
	e := putMatterReq(t, matter, body).claim("sub", user)
	for k, v := range headers {
		e.set("headers."+k, v)
	}
	return e
}

func getMatterReq(t *testing.T, matter string) *event {
	return getRoute(t, handlers.GetMatterRoute, "/v1/matters/"+matter, map[string]string{"matter_id": matter}, nil).roles("counsel")
}

func matterVersionsReq(t *testing.T, matter string, query map[string]string) *event {
	return getRoute(t, handlers.MatterVersionsRoute, "/v1/matters/"+matter+"/versions", map[string]string{"matter_id": matter}, query).roles("counsel")
}

// Issue 25, item 4: the matter registry keeps every version of a matter
// (who changed it, when, from what to what) and a write names the version
// it replaces: PUT needs If-Match with the ETag GET answered (412 when the
// matter moved on, 428 without it) or, to create a matter, If-None-Match: *.
// A refused write writes nothing; a retry of a write that went through is
// answered as it was.
func TestMatterVersions(t *testing.T) {
	s := newStack(t, stackOptions{})
	const matter = "6e5d4c3b-2a19-4807-96f5-e4d3c2b1a0f9"
	first := map[string]any{"name": "Ridgeway Logistics v. Harbor Freight", "client_domains": []string{"ridgeway-logistics.example"}}
	second := map[string]any{"name": "Ridgeway Logistics v. Harbor Freight", "client_domains": []string{"ridgeway-holdings.example"}}

	// Created with If-None-Match: *: version 1, its ETag.
	created := s.post(putMatterAs(t, keeperA, matter, first, map[string]string{"if-none-match": "*"}))
	if created.StatusCode != 201 || created.Headers["ETag"] != `"1"` || decode[handlers.MatterView](t, created).Version != 1 {
		t.Fatalf("create: %d %v %s", created.StatusCode, created.Headers, created.Body)
	}
	got := s.post(getMatterReq(t, matter))
	if got.StatusCode != 200 || got.Headers["ETag"] != `"1"` || decode[handlers.MatterView](t, got).ETag != `"1"` {
		t.Fatalf("get: %d %v %s", got.StatusCode, got.Headers, got.Body)
	}

	// Refused, each writing nothing.
	before := s.scan()
	for _, c := range []struct {
		name    string
		req     *event
		status  int
		kind    string
		headers string // the problem's detail names it
	}{
		{"no precondition", putMatterAs(t, keeperB, matter, second, nil), 428, "precondition_required", "If-Match"},
		{"a stale ETag", putMatterAs(t, keeperB, matter, second, map[string]string{"if-match": `"0"`}), 412, "precondition_failed", "If-Match"},
		{"a weak ETag", putMatterAs(t, keeperB, matter, second, map[string]string{"if-match": `W/"1"`}), 412, "precondition_failed", "If-Match"},
		{"another version's ETag", putMatterAs(t, keeperB, matter, second, map[string]string{"if-match": `"7"`}), 412, "precondition_failed", "If-Match"},
		{"create over an existing matter", putMatterAs(t, keeperB, matter, second, map[string]string{"if-none-match": "*"}), 412, "precondition_failed", "If-None-Match"},
		{"If-Match on a matter with no record", putMatterAs(t, keeperB, "0a9b8c7d-6e5f-4a3b-9c2d-1e0f9a8b7c6d", second, map[string]string{"if-match": `"1"`}), 412, "precondition_failed", "If-Match"},
		{"If-Match: *", putMatterAs(t, keeperB, matter, second, map[string]string{"if-match": "*"}), 400, "invalid_request", "If-Match"},
		{"both headers", putMatterAs(t, keeperB, matter, second, map[string]string{"if-match": `"1"`, "if-none-match": "*"}), 400, "invalid_request", "If-None-Match"},
		{"If-None-Match of an ETag", putMatterAs(t, keeperB, matter, second, map[string]string{"if-none-match": `"1"`}), 400, "invalid_request", "If-None-Match"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := s.post(c.req)
			p := s.wantProblem(c.name, resp, c.status)
			if p.Kind != c.kind || !strings.Contains(p.Detail, c.headers) {
				t.Errorf("%s: kind %q, detail %q; want %s naming %s", c.name, p.Kind, p.Detail, c.kind, c.headers)
			}
		})
	}
	s.wantUnchanged("refused matter writes", before)

	// Another keeper changes the client's domains, naming version 1.
	put := func() *event {
		return putMatterAs(t, keeperB, matter, second, map[string]string{"if-match": `"1"`}).roles("firm_admin")
	}
	changed := s.post(put())
	if changed.StatusCode != 200 || changed.Headers["ETag"] != `"2"` {
		t.Fatalf("update: %d %v %s", changed.StatusCode, changed.Headers, changed.Body)
	}
	// Its retry (the answer was lost) is answered as it was, writing nothing.
	before = s.scan()
	if again := s.post(put()); again.StatusCode != 200 || again.Headers["ETag"] != `"2"` || again.Body != changed.Body {
		t.Fatalf("retry: %d %v %s", again.StatusCode, again.Headers, again.Body)
	}
	s.wantUnchanged("a retried write", before)
	// The same stale write by someone else is refused.
	s.wantProblem("the same write by another keeper", s.post(putMatterAs(t, keeperA, matter, second, map[string]string{"if-match": `"1"`})), 412)

	// The history: who, when, from what, to what.
	resp := s.post(matterVersionsReq(t, matter, nil))
	h := decode[handlers.MatterHistory](t, resp)
	if resp.StatusCode != 200 || h.MatterID != matter || len(h.Versions) != 2 || h.NextAfterVersion != nil {
		t.Fatalf("versions: %d %s", resp.StatusCode, resp.Body)
	}
	v1, v2 := h.Versions[0], h.Versions[1]
	if v1.Version != 1 || v1.UpdatedBy != keeperA || v1.Before != nil || v1.After.Name != first["name"] ||
		!slices.Equal(v1.After.ClientDomains, []string{"ridgeway-logistics.example"}) || v1.UpdatedAt == "" {
		t.Errorf("version 1: %+v", v1)
	}
	if v2.Version != 2 || v2.UpdatedBy != keeperB || v2.Before == nil || !slices.Equal(v2.Before.ClientDomains, []string{"ridgeway-logistics.example"}) ||
		!slices.Equal(v2.After.ClientDomains, []string{"ridgeway-holdings.example"}) || v2.UpdatedAt < v1.UpdatedAt {
		t.Errorf("version 2: %+v", v2)
	}
	// Paged: one at a time.
	page := decode[handlers.MatterHistory](t, s.post(matterVersionsReq(t, matter, map[string]string{"after_version": "0", "limit": "1"})))
	if len(page.Versions) != 1 || page.Versions[0].Version != 1 || page.NextAfterVersion == nil || *page.NextAfterVersion != 1 {
		t.Errorf("first page: %+v", page)
	}
	page = decode[handlers.MatterHistory](t, s.post(matterVersionsReq(t, matter, map[string]string{"after_version": "1", "limit": "1"})))
	if len(page.Versions) != 1 || page.Versions[0].Version != 2 || page.NextAfterVersion != nil {
		t.Errorf("second page: %+v", page)
	}

	// Reading is counsel's or a firm admin's, in the caller's firm only.
	for _, c := range []struct {
		name   string
		req    *event
		status int
	}{
		{"an associate reads a matter", getMatterReq(t, matter).roles("associate"), 403},
		{"an associate reads its versions", matterVersionsReq(t, matter, nil).roles("associate"), 403},
		{"another firm's matter", getMatterReq(t, matter).claim("firm_id", otherFirm), 404},
		{"another firm's versions", matterVersionsReq(t, matter, nil).claim("firm_id", otherFirm), 404},
		{"no such matter", getMatterReq(t, "0a9b8c7d-6e5f-4a3b-9c2d-1e0f9a8b7c6d"), 404},
		{"a matter id that is no UUID", getMatterReq(t, secret), 400},
		{"versions after a bad number", matterVersionsReq(t, matter, map[string]string{"after_version": "-1"}), 400},
		{"versions with a limit of 0", matterVersionsReq(t, matter, map[string]string{"limit": "0"}), 400},
		{"versions with an unknown query", matterVersionsReq(t, matter, map[string]string{"firm_id": otherFirm}), 400},
		{"a matter read without claims", with2(getMatterReq(t, matter), func(e *event) { e.set("requestContext.authorizer", nil) }), 401},
		{"versions read without claims", with2(matterVersionsReq(t, matter, nil), func(e *event) { e.set("requestContext.authorizer", nil) }), 401},
		{"a write without claims", with2(putMatterAs(t, keeperB, matter, second, map[string]string{"if-match": `"2"`}),
			func(e *event) { e.set("requestContext.authorizer.jwt.claims", nil) }), 401},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := s.post(c.req)
			s.wantProblem(c.name, resp, c.status)
			if strings.Contains(resp.Body, secret) || (c.status == 404 && strings.Contains(resp.Body, "ridgeway")) {
				t.Errorf("the answer says too much: %s", resp.Body)
			}
		})
	}
}
