package handlers_test

import (
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

func settingsReq(t *testing.T, body any) *event {
	e := fixture(t, "approve.json").roles("firm_admin").claim("sub", firmAdmin)
	e.m["routeKey"] = handlers.PutSettingsRoute
	e.obj("requestContext")["routeKey"] = handlers.PutSettingsRoute
	e.obj("requestContext.http")["method"] = "PUT"
	e.m["rawPath"] = "/v1/settings"
	e.obj("requestContext.http")["path"] = "/v1/settings"
	delete(e.m, "pathParameters")
	return e.bodyJSON(body)
}

// Issue 27 item 12: a firm is set up by its admin through the API (not a
// hand-written DynamoDB item); its settings read back; bad input names
// the field and writes nothing; nobody but a firm admin writes them.
func TestFirmSetUpThroughTheAPI(t *testing.T) {
	s := newStack(t, stackOptions{})
	get := func() handlers.SettingsView {
		t.Helper()
		resp := s.post(getRoute(t, handlers.GetSettingsRoute, "/v1/settings", nil, nil).roles("counsel"))
		if resp.StatusCode != 200 {
			t.Fatalf("get settings: %d %s", resp.StatusCode, resp.Body)
		}
		return decode[handlers.SettingsView](t, resp)
	}
	if v := get(); !v.SeparationOfDuties || len(v.Domains) != 0 || v.RetentionDays != nil || v.UpdatedAt != "" {
		t.Fatalf("a firm never set up: %+v", v)
	}
	body := map[string]any{"domains": []string{"warrant-law.example"}, "monthly_budget_usd": "2500.00", "retention_days": 2190}
	resp := s.post(settingsReq(t, body))
	v := decode[handlers.SettingsView](t, resp)
	if resp.StatusCode != 200 || !v.SeparationOfDuties || v.MonthlyBudgetUSD != "2500.00" || v.RetentionDays == nil || *v.RetentionDays != 2190 ||
		len(v.Domains) != 1 || v.UpdatedAt == "" || v.FirmID != fixFirm {
		t.Fatalf("set up: %d %s", resp.StatusCode, resp.Body)
	}
	if got := get(); got.UpdatedAt != v.UpdatedAt || got.MonthlyBudgetUSD != "2500.00" {
		t.Fatalf("read back: %+v", got)
	}
	for _, c := range []struct {
		name   string
		req    *event
		status int
		says   string
	}{
		{"counsel writes", settingsReq(t, body).roles("counsel"), 403, "firm admin"},
		{"a domain in capitals", settingsReq(t, map[string]any{"domains": []string{"Warrant-Law.example"}}), 400, "field domains[0]"},
		{"a retention of 0 days", settingsReq(t, map[string]any{"retention_days": 0}), 400, "field retention_days"},
		{"a budget that is not dollars", settingsReq(t, map[string]any{"monthly_budget_usd": "lots"}), 400, "field monthly_budget_usd"},
		{"an unknown member", settingsReq(t, map[string]any{"firm_id": otherFirm}), 400, "firm_id"},
		{"an associate reads", getRoute(t, handlers.GetSettingsRoute, "/v1/settings", nil, nil).roles("associate"), 403, "counsel or a firm admin"},
		{"a query on the read", getRoute(t, handlers.GetSettingsRoute, "/v1/settings", nil, map[string]string{"firm_id": otherFirm}).roles("counsel"), 400, "firm_id"},
		{"another user's token on the read", getRoute(t, handlers.GetSettingsRoute, "/v1/settings", nil, nil).roles("counsel").tokenMember("sub", counselB), 401, ""},
		{"another user's token on the write", settingsReq(t, body).tokenMember("sub", counselB), 401, ""},
	} {
		wantProblem(t, s, c.name, c.req, c.status, c.says)
	}
	if got := get(); got.UpdatedAt != v.UpdatedAt {
		t.Fatal("a refused request changed the settings")
	}
	// The settings are the caller's firm's: another firm's admin sets up
	// its own.
	other := s.post(settingsReq(t, map[string]any{"domains": []string{"other-firm.example"}}).claim("firm_id", otherFirm))
	if o := decode[handlers.SettingsView](t, other); other.StatusCode != 200 || o.FirmID != otherFirm {
		t.Fatalf("another firm: %d %s", other.StatusCode, other.Body)
	}
	if got := get(); len(got.Domains) != 1 || !strings.HasSuffix(got.Domains[0], "warrant-law.example") {
		t.Fatalf("another firm's write reached this one: %+v", got)
	}
}

// Issue 27 item 12: tokens of each identity provider's shape run the whole
// flow (start, hold, decide, resume): Cognito (sub a UUID, the fixtures'),
// Okta (sub 00u…), Auth0 (sub auth0|…), and Entra ID with USER_CLAIM=oid
// (its sub is pairwise and ignored). The ledger records the ids as the
// provider issued them.
func TestTokensOfEachProvider(t *testing.T) {
	for _, p := range []struct {
		name, claim, requester, counsel string
		env                             map[string]string
	}{
		{"okta", "sub", "00u1ab2cd3EF4gh5i6j7", "00u9zy8xw7VU6ts5r4q3", nil},
		{"auth0", "sub", "auth0|5fe435b5c0ffee00", "google-oauth2|104857600000000000000", nil},
		{"entra", "oid", "6f1d2c3b-4a59-4e68-8d7c-6b5a49382716", "7a2e3d4c-5b6a-4f79-9e8d-7c6b5a493827", map[string]string{"USER_CLAIM": "oid"}},
	} {
		t.Run(p.name, func(t *testing.T) {
			s := newStack(t, stackOptions{env: p.env})
			as := func(e *event, user string) *event {
				e.claim(p.claim, user)
				if p.claim != "sub" {
					e.claim("sub", "AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ"+user[:4]) // pairwise: not the user
				}
				return e
			}
			v := decode[handlers.RunView](t, s.call(as(fixture(t, "invoke.json"), p.requester)))
			if v.Status != "held" || v.PendingApproval == nil || v.PendingApproval.RequestedBy != p.requester {
				t.Fatalf("invoke: %+v", v)
			}
			h := held{runID: v.RunID, approvalID: v.PendingApproval.ApprovalRequestID, hash: v.PendingApproval.ToolInputHash}
			if resp := s.call(as(approveReq(t, h, "approve", h.hash), p.counsel)); resp.StatusCode != 200 ||
				!strings.Contains(resp.Body, `"decided_by":"`+p.counsel+`"`) {
				t.Fatalf("approve: %d %s", resp.StatusCode, resp.Body)
			}
			if done := decode[handlers.RunView](t, s.call(as(resumeReq(t, h), p.requester))); done.Status != "completed" || done.ActionsNotDone != 0 {
				t.Fatalf("resume: %+v", done)
			}
			// The requester may not decide their own run's warrant, by
			// the provider's id.
			h2v := decode[handlers.RunView](t, s.call(as(fixture(t, "invoke.json").set("headers.idempotency-key", nil), p.requester)))
			if h2v.PendingApproval == nil {
				t.Fatalf("second run: %+v", h2v)
			}
			h2 := held{runID: h2v.RunID, approvalID: h2v.PendingApproval.ApprovalRequestID, hash: h2v.PendingApproval.ToolInputHash}
			wantProblem(t, s, "self-approval by the provider's id", as(approveReq(t, h2, "approve", h2.hash), p.requester), 403, "")
		})
	}
}
