package handlers_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// pageReq is a GET of the desk's page, as API Gateway sends a public route:
// no authorizer context at all.
func pageReq(t *testing.T) *event {
	return fixture(t, "list-approvals.json").set("requestContext.authorizer", nil).set("rawQueryString", "").
		set("queryStringParameters", nil).set("routeKey", "GET /desk").set("rawPath", "/desk").
		set("requestContext.http.path", "/desk").set("requestContext.routeKey", "GET /desk")
}

// deskReq is a GET of one of the desk's assets.
func deskReq(t *testing.T, asset string) *event {
	return fixture(t, "list-approvals.json").set("requestContext.authorizer", nil).set("rawQueryString", "").
		set("queryStringParameters", nil).set("routeKey", "GET /desk/{proxy+}").set("rawPath", "/desk/"+asset).set("requestContext.http.path", "/desk/"+asset).
		set("requestContext.routeKey", "GET /desk/{proxy+}").set("pathParameters", map[string]any{"proxy": asset})
}

func wantDeskHeaders(t *testing.T, name string, resp events.APIGatewayV2HTTPResponse, contentType string) {
	t.Helper()
	h := resp.Headers
	csp := h["Content-Security-Policy"]
	for _, d := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, d) {
			t.Errorf("%s: CSP %q lacks %s", name, csp, d)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "*") {
		t.Errorf("%s: CSP %q is not strict", name, csp)
	}
	if h["X-Content-Type-Options"] != "nosniff" || h["X-Frame-Options"] != "DENY" || h["Referrer-Policy"] != "no-referrer" {
		t.Errorf("%s: headers %v", name, h)
	}
	if h["Content-Type"] != contentType {
		t.Errorf("%s: Content-Type %q, want %q", name, h["Content-Type"], contentType)
	}
}

// The desk is served without claims: the page, its script and style
// sheet, and a config that says sign-in is not configured; nothing else.
func TestDeskAssets(t *testing.T) {
	s := newStack(t, stackOptions{})
	page := s.call(pageReq(t))
	if page.StatusCode != 200 || !strings.Contains(page.Body, `<script src="desk/desk.js" defer></script>`) ||
		strings.Contains(page.Body, "<script>") || strings.Contains(page.Body, " onclick=") || strings.Contains(page.Body, "style=") {
		t.Fatalf("page: %d %s", page.StatusCode, page.Body)
	}
	wantDeskHeaders(t, "page", page, "text/html; charset=utf-8")
	for asset, ct := range map[string]string{"desk.js": "text/javascript; charset=utf-8", "desk.css": "text/css; charset=utf-8"} {
		resp := s.call(deskReq(t, asset))
		if resp.StatusCode != 200 || len(resp.Body) < 100 {
			t.Fatalf("%s: %d (%d bytes)", asset, resp.StatusCode, len(resp.Body))
		}
		wantDeskHeaders(t, asset, resp, ct)
	}
	cfg := s.call(deskReq(t, "config.json"))
	var c map[string]any
	if cfg.StatusCode != 200 || json.Unmarshal([]byte(cfg.Body), &c) != nil || c["auth"] != "none" || len(c) != 1 {
		t.Fatalf("config: %d %s", cfg.StatusCode, cfg.Body)
	}
	wantDeskHeaders(t, "config", cfg, "application/json")
	for _, asset := range []string{"", "secrets.txt", "static/desk.js", "..%2Fdesk.go", "desk.go", "index.htm"} {
		resp := s.call(deskReq(t, asset))
		if resp.StatusCode != 404 {
			t.Errorf("%s: %d, want 404", asset, resp.StatusCode)
		}
		wantDeskHeaders(t, asset, resp, "application/problem+json")
	}
}

// With the OIDC endpoints configured, config.json names them and the CSP
// lets the page reach the token endpoint, and nothing else.
func TestDeskOIDCConfig(t *testing.T) {
	s := newStack(t, stackOptions{env: map[string]string{"DESK_CLIENT_ID": "4k1dmn2b3c",
		"DESK_AUTHORIZE_URL": "https://warrant.auth.us-east-1.amazoncognito.com/oauth2/authorize",
		"DESK_TOKEN_URL":     "https://warrant.auth.us-east-1.amazoncognito.com/oauth2/token"}})
	resp := s.call(deskReq(t, "config.json"))
	var c map[string]string
	if resp.StatusCode != 200 || json.Unmarshal([]byte(resp.Body), &c) != nil {
		t.Fatalf("config: %d %s", resp.StatusCode, resp.Body)
	}
	if c["auth"] != "oidc" || c["client_id"] != "4k1dmn2b3c" || c["token_url"] != "https://warrant.auth.us-east-1.amazoncognito.com/oauth2/token" ||
		c["firm_claim"] != "firm_id" || c["roles_claim"] != "roles" {
		t.Fatalf("config %v", c)
	}
	if csp := resp.Headers["Content-Security-Policy"]; !strings.Contains(csp, "connect-src 'self' https://warrant.auth.us-east-1.amazoncognito.com;") {
		t.Fatalf("CSP %q", csp)
	}
}
