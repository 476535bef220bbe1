package desk_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seed-f6d3920e/warrant/internal/browsertest"
	"github.com/seed-f6d3920e/warrant/pkg/desk"
)

// idp is a fake OIDC provider: /authorize hands a code back to the
// redirect URI, /token exchanges it for an access token only against the
// PKCE verifier whose S256 challenge came with the code.
type idp struct {
	mu        sync.Mutex
	challenge map[string]string // code -> code_challenge
	redirect  map[string]string // code -> redirect_uri
	token     string
	exchanges int
	srv       *httptest.Server
}

func newIDP(t *testing.T, token string) *idp {
	p := &idp{challenge: map[string]string{}, redirect: map[string]string{}, token: token}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("response_type") != "code" || q.Get("client_id") != "desk-client" || q.Get("code_challenge_method") != "S256" ||
			len(q.Get("code_challenge")) != 43 || q.Get("state") == "" {
			http.Error(w, "bad authorization request", 400)
			return
		}
		p.mu.Lock()
		code := "code-" + q.Get("state")
		p.challenge[code], p.redirect[code] = q.Get("code_challenge"), q.Get("redirect_uri")
		p.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+url.QueryEscape(code)+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*") // the desk's origin calls it from the browser
		w.Header().Set("Content-Type", "application/json")
		if err := r.ParseForm(); err != nil {
			http.Error(w, `{"error":"invalid_request"}`, 400)
			return
		}
		code := r.PostForm.Get("code")
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		p.mu.Lock()
		defer p.mu.Unlock()
		want, ok := p.challenge[code]
		if !ok || r.PostForm.Get("grant_type") != "authorization_code" || r.PostForm.Get("redirect_uri") != p.redirect[code] ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != want {
			http.Error(w, `{"error":"invalid_grant"}`, 400)
			return
		}
		delete(p.challenge, code) // a code is used once
		p.exchanges++
		json.NewEncoder(w).Encode(map[string]any{"access_token": p.token, "token_type": "Bearer", "expires_in": 3600})
	})
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

// jwt is an unsigned token with claims (the page reads them for display;
// the API's authorizer verifies tokens, the page never does).
func jwt(claims map[string]any) string {
	h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	b, _ := json.Marshal(claims)
	return h + "." + base64.RawURLEncoding.EncodeToString(b) + ".sig"
}

// TestOIDCSignInInABrowser: the desk signs counsel in with the
// authorization code flow and PKCE against the configured provider, under
// an API stage prefix, keeps the token in memory only (nothing in
// localStorage, sessionStorage or cookies, the code gone from the address
// bar) and calls the API with it as a bearer token.
func TestOIDCSignInInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser; skipped with -short")
	}
	ctx := browsertest.Browser(t)
	token := jwt(map[string]any{"sub": "c0c0c0c0-1111-4222-8333-444455556666", "email": "counsel@warrant-law.example",
		"firm_id": "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b", "roles": []string{"counsel", "associate counsel"}})
	p := newIDP(t, token)
	cfg := desk.Config{Auth: "oidc", ClientID: "desk-client", AuthorizeURL: p.srv.URL + "/authorize", TokenURL: p.srv.URL + "/token",
		Scope: "openid email profile", FirmClaim: "firm_id", RolesClaim: "roles"}
	var mu sync.Mutex
	var bearer []string
	api := http.NewServeMux()
	serve := func(w http.ResponseWriter, r desk.Response) {
		for k, v := range r.Headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(r.Status)
		w.Write([]byte(r.Body))
	}
	// The API under a stage prefix, as API Gateway serves a named stage.
	api.HandleFunc("GET /prod/desk", func(w http.ResponseWriter, r *http.Request) { serve(w, desk.Serve("index.html", cfg)) })
	api.HandleFunc("GET /prod/desk/{name}", func(w http.ResponseWriter, r *http.Request) { serve(w, desk.Serve(r.PathValue("name"), cfg)) })
	api.HandleFunc("GET /prod/v1/approvals", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		bearer = append(bearer, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"approvals":[]}`))
	})
	srv := httptest.NewServer(api)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/prod/desk"),
		chromedp.WaitVisible(chromedp.CSS("#signin")),
		chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS("#whoami")),
		chromedp.WaitVisible(chromedp.CSS("#no-warrants")))
	if err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	who, _ := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS("#whoami")))
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	stored, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify([localStorage.length, sessionStorage.length, document.cookie])`))
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if p.exchanges != 1 || len(bearer) == 0 || bearer[0] != "Bearer "+token {
		t.Fatalf("token exchanges %d, API saw Authorization %q", p.exchanges, bearer)
	}
	// The roles claim is an exact array, as the API reads it (issue 17,
	// item 4): the title "associate counsel" is one role, not two.
	if !strings.Contains(who, "counsel@warrant-law.example") || !strings.Contains(who, "counsel, associate counsel") {
		t.Errorf("whoami %q", who)
	}
	if strings.Contains(loc, "code=") || strings.Contains(loc, "state=") || !strings.HasPrefix(loc, srv.URL+"/prod/desk") {
		t.Errorf("address bar after sign-in: %s", loc)
	}
	if stored != `[0,0,""]` {
		t.Errorf("the browser stored something (localStorage, sessionStorage, cookie): %s", stored)
	}
}
