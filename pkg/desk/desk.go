// Package desk is the counsel's desk: the static web page counsel use to see
// and decide the firm's pending warrants, and the run page. Its assets are
// embedded in the binary (no build step) and served by the runs function at
// /desk/. The page signs counsel in (OIDC authorization code + PKCE against
// the API's JWT issuer), keeps the token in memory only and calls the API
// with it; it holds no authority of its own, so serving it needs none.
package desk

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/url"
	"path"
	"strings"
)

// static/invisible.js is generated from contracts.InvisibleRanges, the table
// of characters the desk makes visible (TestInvisibleScript checks it).
//go:generate go test -run ^TestInvisibleScript$ -update .

//go:embed static/index.html static/desk.js static/desk.css static/invisible.js static/favicon.svg
var static embed.FS

// Files are the desk's assets, by the name they are served under.
func Files() fs.FS {
	sub, _ := fs.Sub(static, "static") // the embed pattern names the folder
	return sub
}

// Config is how the page signs counsel in: what GET /desk/config.json says.
type Config struct {
	// Auth is "oidc", "dev" (local stack only) or "none" (sign-in not
	// configured: the page says so).
	Auth string `json:"auth"`
	// OIDC (auth "oidc"): the app client and the issuer's endpoints.
	ClientID     string `json:"client_id,omitempty"`
	AuthorizeURL string `json:"authorize_url,omitempty"`
	TokenURL     string `json:"token_url,omitempty"`
	Scope        string `json:"scope,omitempty"`
	FirmClaim    string `json:"firm_claim,omitempty"`
	RolesClaim   string `json:"roles_claim,omitempty"`
	// Dev (auth "dev"): the identities the local sign-in form offers.
	FirmID     string     `json:"firm_id,omitempty"`
	Identities []Identity `json:"identities,omitempty"`
}

// Identity is one dev sign-in choice (local stack only). Name, when set, is
// sent as the display name (X-Dev-Name, the token's "name" claim).
type Identity struct {
	Label  string `json:"label"`
	UserID string `json:"user_id"`
	Name   string `json:"name,omitempty"`
	Roles  string `json:"roles"`
}

// OIDC is the page's configuration for a deployment: OIDC when the client
// and both endpoints are set (https URLs), otherwise sign-in is not
// configured. It never falls back to anything weaker.
func OIDC(clientID, authorizeURL, tokenURL, scopes, firmClaim, rolesClaim string) Config {
	if clientID == "" || !httpsURL(authorizeURL) || !httpsURL(tokenURL) {
		return Config{Auth: "none"}
	}
	if scopes == "" {
		scopes = "openid email profile"
	}
	return Config{Auth: "oidc", ClientID: clientID, AuthorizeURL: authorizeURL, TokenURL: tokenURL,
		Scope: scopes, FirmClaim: firmClaim, RolesClaim: rolesClaim}
}

func httpsURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.User == nil && u.Fragment == ""
}

// Response is one asset as the API answers it.
type Response struct {
	Status  int
	Headers map[string]string
	Body    string
}

// contentTypes are the assets' types; nothing else is served.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".json": "application/json",
	".svg":  "image/svg+xml",
}

// Serve answers GET /desk (name "index.html") and GET /desk/<name>: the
// page's scripts, style sheet and icon (favicon.svg), or config.json (cfg).
// Every answer carries the security headers; anything else is 404. The page
// links its assets relative to itself, so it is served at /desk only (under
// an API stage, <stage>/desk), never at /desk/.
func Serve(name string, cfg Config) Response {
	h := Headers(cfg)
	if name == "config.json" {
		b, _ := json.Marshal(cfg) // plain strings: always marshals
		h["Content-Type"] = contentTypes[".json"]
		return Response{Status: 200, Headers: h, Body: string(b)}
	}
	ct, ok := contentTypes[path.Ext(name)]
	if !ok || strings.Contains(name, "/") {
		return notFound(h)
	}
	b, err := fs.ReadFile(Files(), name)
	if err != nil {
		return notFound(h)
	}
	h["Content-Type"] = ct
	return Response{Status: 200, Headers: h, Body: string(b)}
}

func notFound(h map[string]string) Response {
	h["Content-Type"] = "text/plain; charset=utf-8"
	return Response{Status: 404, Headers: h, Body: "not found\n"}
}

// Headers are the security headers of every desk answer: a strict
// Content-Security-Policy (the page's own script and style only, no inline
// code, API calls to its own origin and the token endpoint, never framed),
// no MIME sniffing, no referrer, and no caching of a page that may change
// with a deployment.
func Headers(cfg Config) map[string]string {
	connect := "'self'"
	if cfg.Auth == "oidc" {
		if u, err := url.Parse(cfg.TokenURL); err == nil {
			connect += " " + u.Scheme + "://" + u.Host
		}
	}
	csp := "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src " + connect +
		"; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
	return map[string]string{
		"Content-Security-Policy":    csp,
		"X-Content-Type-Options":     "nosniff",
		"X-Frame-Options":            "DENY",
		"Referrer-Policy":            "no-referrer",
		"Cache-Control":              "no-cache",
		"Cross-Origin-Opener-Policy": "same-origin",
	}
}
