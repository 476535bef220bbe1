package desk_test

import (
	"encoding/json"
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/desk"
)

// The sign-in configuration is OIDC only with a client and two https
// endpoints; anything less is "none", never something weaker.
func TestOIDC(t *testing.T) {
	ok := desk.OIDC("client", "https://id.example/oauth2/authorize", "https://id.example/oauth2/token", "", "firm_id", "roles")
	if ok.Auth != "oidc" || ok.ClientID != "client" || ok.Scope == "" || ok.RolesClaim != "roles" {
		t.Fatalf("oidc: %+v", ok)
	}
	for _, c := range [][3]string{
		{"", "https://id.example/a", "https://id.example/t"},
		{"client", "http://id.example/a", "https://id.example/t"},
		{"client", "https://id.example/a", ""},
		{"client", "https://user:pw@id.example/a", "https://id.example/t"},
		{"client", "https://id.example/a#x", "https://id.example/t"},
	} {
		if got := desk.OIDC(c[0], c[1], c[2], "", "firm_id", "roles"); got.Auth != "none" || got.ClientID != "" {
			t.Errorf("%v: %+v, want none", c, got)
		}
	}
}

// The page loads only its own scripts, style sheet and icon, relative to
// itself, and nothing inline; the script never writes HTML or stores a
// token.
func TestAssetsAreCSPClean(t *testing.T) {
	page := desk.Serve("index.html", desk.Config{Auth: "none"})
	if page.Status != 200 || page.Headers["Content-Type"] != "text/html; charset=utf-8" {
		t.Fatalf("page: %d %v", page.Status, page.Headers)
	}
	srcs := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(page.Body, -1)
	var refs []string
	for _, m := range srcs {
		refs = append(refs, m[1])
	}
	if strings.Join(refs, " ") != "desk/favicon.svg desk/desk.css desk/invisible.js desk/desk.js" {
		t.Fatalf("the page references %v", refs)
	}
	for _, bad := range []string{"<script>", "<style", " style=", "javascript:"} {
		if strings.Contains(strings.ToLower(page.Body), bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	if regexp.MustCompile(`(?i)\son[a-z]+=`).MatchString(page.Body) {
		t.Error("the page holds an inline event handler")
	}
	for _, name := range []string{"desk.js", "invisible.js"} {
		js, err := fs.ReadFile(desk.Files(), name)
		if err != nil {
			t.Fatal(err)
		}
		code := regexp.MustCompile(`(?m)^\s*(//|\*|/\*).*$`).ReplaceAllString(string(js), "") // comments may name what the code avoids
		for _, bad := range []string{".innerHTML", ".outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "localStorage", "document.cookie", ".style."} {
			if strings.Contains(code, bad) {
				t.Errorf("%s uses %s", name, bad)
			}
		}
	}
}

// Every answer carries the security headers; unknown names are 404.
func TestServe(t *testing.T) {
	cfg := desk.OIDC("client", "https://id.example/a", "https://login.example:8443/token", "openid email profile api://warrant/access", "firm_id", "roles")
	for name, ct := range map[string]string{"index.html": "text/html; charset=utf-8", "desk.js": "text/javascript; charset=utf-8",
		"desk.css": "text/css; charset=utf-8", "config.json": "application/json", "favicon.svg": "image/svg+xml"} {
		r := desk.Serve(name, cfg)
		if r.Status != 200 || r.Headers["Content-Type"] != ct || r.Body == "" {
			t.Errorf("%s: %d %v", name, r.Status, r.Headers)
		}
		if csp := r.Headers["Content-Security-Policy"]; !strings.Contains(csp, "connect-src 'self' https://login.example:8443;") ||
			!strings.Contains(csp, "frame-ancestors 'none'") || r.Headers["X-Content-Type-Options"] != "nosniff" {
			t.Errorf("%s: headers %v", name, r.Headers)
		}
	}
	// The scopes the desk asks for are the deployment's (DESK_SCOPES).
	if c := desk.Serve("config.json", cfg).Body; !strings.Contains(c, `"scope":"openid email profile api://warrant/access"`) {
		t.Errorf("config.json does not carry the configured scopes: %s", c)
	}
	// The icon is an SVG image with nothing active in it: the page's
	// policy (img-src 'self') lets the browser load it.
	icon := desk.Serve("favicon.svg", cfg).Body
	if !strings.HasPrefix(icon, "<svg ") || strings.Contains(strings.ToLower(icon), "<script") || regexp.MustCompile(`(?i)\son[a-z]+=`).MatchString(icon) ||
		strings.Contains(icon, "href=") {
		t.Errorf("favicon.svg is not a plain image:\n%s", icon)
	}
	if csp := desk.Headers(cfg)["Content-Security-Policy"]; !strings.Contains(csp, "img-src 'self'") {
		t.Errorf("the policy does not let the page load its icon: %s", csp)
	}
	var c map[string]string
	if err := json.Unmarshal([]byte(desk.Serve("config.json", cfg).Body), &c); err != nil || c["token_url"] != "https://login.example:8443/token" {
		t.Errorf("config %v %v", c, err)
	}
	for _, name := range []string{"", "desk.go", "static/desk.js", "../desk.go", "index.htm", "x.json", "x.svg", "static/favicon.svg"} {
		if r := desk.Serve(name, cfg); r.Status != 404 {
			t.Errorf("%q: %d, want 404", name, r.Status)
		}
	}
}
