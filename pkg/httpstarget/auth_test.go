package httpstarget_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/httpstarget"
	"github.com/seed-f6d3920e/warrant/pkg/remote"
)

// guarded is an endpoint that takes only the tokens accept allows: a
// refused one gets 401 with the Authorization header echoed in its body,
// as a careless server does.
type guarded struct {
	*endpoint
	mu     sync.Mutex
	accept func(tok string) bool
	status int      // the answer to an accepted call (0: 200)
	tokens []string // the tokens of the calls that ran
}

func newGuarded(t *testing.T, accept func(string) bool) *guarded {
	g := &guarded{accept: accept}
	g.endpoint = newEndpoint(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		auth := r.Header.Get("Authorization")
		tok, _ := strings.CutPrefix(auth, "Bearer ")
		g.mu.Lock()
		ok, status := g.accept(tok), g.status
		if ok {
			g.tokens = append(g.tokens, tok)
		}
		g.mu.Unlock()
		switch {
		case !ok:
			w.WriteHeader(http.StatusUnauthorized)
		case status != 0:
			w.WriteHeader(status)
		}
		fmt.Fprintf(w, `{"echo":%q}`, auth)
	})
	return g
}

func (g *guarded) set(f func(g *guarded)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f(g)
}

// ran returns the tokens of the calls that ran.
func (g *guarded) ran() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.tokens...)
}

// The bearer token is read from Secrets once and kept; after a rotation
// the endpoint's 401 drops it and the call is not made again (the endpoint
// may have acted before refusing: outcome unknown, its 4xx not being
// final); the next call reads the secret again and goes through. No token
// is in an error.
func TestBearerAuth(t *testing.T) {
	current := "tok-1\n" // as pasted from a file
	var mu sync.Mutex
	sec := &fakeSecrets{get: func(_ context.Context, id string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if id != "court/token" {
			return "", fmt.Errorf("no secret %q", id)
		}
		return current, nil
	}}
	rotate := func(v string) {
		mu.Lock()
		defer mu.Unlock()
		current = v
	}
	valid := "tok-1"
	g := newGuarded(t, func(tok string) bool { return tok == valid })
	auth := remote.Auth{Kind: remote.AuthBearer, TokenSecretID: "court/token"}
	tg := newTarget(t, g.endpoint, httpstarget.Config{Auth: auth, Secrets: sec})
	ctx := context.Background()
	for range 3 {
		if _, err := tg.Call(ctx, call("filings", `{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if n := sec.reads.Load(); n != 1 {
		t.Fatalf("the secret was read %d times for 3 calls, want once", n)
	}

	// Rotation: the endpoint takes only the new token.
	rotate("tok-2")
	g.set(func(*guarded) { valid = "tok-2" })
	_, err := tg.Call(ctx, call("filings", `{}`))
	wantClass(t, err, "unknown")
	if _, err := tg.Call(ctx, call("filings", `{}`)); err != nil {
		t.Fatalf("the call after the 401: %v", err)
	}
	if n, reads := len(g.requests()), sec.reads.Load(); n != 5 || reads != 2 {
		t.Fatalf("%d requests and %d secret reads, want 5 (the 401 not made again) and 2", n, reads)
	}

	// A wrong token, echoed back by the endpoint, is in no error.
	rotate("tok-wrong-5ecret")
	g.set(func(*guarded) { valid = "tok-3" })
	for range 2 { // the held token refused, then the wrong one read
		_, err = tg.Call(ctx, call("filings", `{}`))
		wantClass(t, err, "unknown")
		if strings.Contains(err.Error(), "5ecret") || !strings.Contains(err.Error(), "401") {
			t.Fatalf("error %q: want HTTP 401 and no token", err)
		}
	}
	if n := len(g.requests()); n != 7 {
		t.Fatalf("%d requests, want 7 (none made again)", n)
	}
	if n := len(g.ran()); n != 4 {
		t.Fatalf("%d calls ran, want 4", n)
	}
}

// tokenEndpoint is a fake OAuth token endpoint: each fetch issues a new
// token, "at-<n>", living expiresIn seconds.
type tokenEndpoint struct {
	*httptest.Server
	mu        sync.Mutex
	expiresIn int
	issued    []string
	form      map[string]string
	refuse    bool
}

func newTokenEndpoint(t *testing.T, clientSecret string, expiresIn int) *tokenEndpoint {
	e := &tokenEndpoint{expiresIn: expiresIn}
	e.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		e.form = map[string]string{"grant_type": r.PostForm.Get("grant_type"), "scope": r.PostForm.Get("scope"), "resource": r.PostForm.Get("resource"), "client_id": id}
		w.Header().Set("Content-Type", "application/json")
		if e.refuse || secret != clientSecret {
			w.WriteHeader(http.StatusUnauthorized)
			// A careless endpoint echoes the secret and leaks a token.
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": "bad secret " + secret, "access_token": "at-leaked-5ecret"})
			return
		}
		tok := fmt.Sprintf("at-%d", len(e.issued)+1)
		e.issued = append(e.issued, tok)
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": e.expiresIn})
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *tokenEndpoint) isIssued(tok string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, t := range e.issued {
		if t == tok {
			return true
		}
	}
	return false
}

func (e *tokenEndpoint) fetches() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.issued)
}

// OAuth 2.1 client credentials: the token is fetched with the client
// secret, asked for the base URL, and kept until 30 s before it expires. A
// token issued for 30 s is inside that margin at once, so each call
// fetches a fresh one: a token is never used close to its expiry.
func TestOAuthClientCredentials(t *testing.T) {
	const clientSecret = "cs-5ecret-value"
	sec := &fakeSecrets{get: func(context.Context, string) (string, error) { return clientSecret, nil }}
	ctx := context.Background()
	for _, tc := range []struct {
		expiresIn, wantFetches int
	}{
		{3600, 1},
		{30, 3},
	} {
		t.Run(fmt.Sprintf("expires_in %d", tc.expiresIn), func(t *testing.T) {
			idp := newTokenEndpoint(t, clientSecret, tc.expiresIn)
			g := newGuarded(t, idp.isIssued)
			auth := remote.Auth{Kind: remote.AuthOAuthClientCredentials, TokenURL: idp.URL + "/token", ClientID: "warrant", ClientSecretID: "court/client", Scopes: []string{"filings.write"}}
			tg := newTarget(t, g.endpoint, httpstarget.Config{Auth: auth, Secrets: sec})
			for range 3 {
				if _, err := tg.Call(ctx, call("filings", `{}`)); err != nil {
					t.Fatal(err)
				}
			}
			if n := idp.fetches(); n != tc.wantFetches {
				t.Fatalf("%d token fetches for 3 calls, want %d", n, tc.wantFetches)
			}
			if got := g.ran(); tc.wantFetches == 3 && strings.Join(got, ",") != "at-1,at-2,at-3" {
				t.Errorf("the calls carried %v, want a fresh token each", got)
			}
			idp.mu.Lock()
			form := idp.form
			idp.mu.Unlock()
			want := map[string]string{"grant_type": "client_credentials", "scope": "filings.write", "resource": g.URL + "/api", "client_id": "warrant"}
			for k, v := range want {
				if form[k] != v {
					t.Errorf("token request %s = %q, want %q", k, form[k], v)
				}
			}
		})
	}

	t.Run("tokens stay out of errors", func(t *testing.T) {
		idp := newTokenEndpoint(t, clientSecret, 3600)
		g := newGuarded(t, idp.isIssued)
		g.set(func(g *guarded) { g.status = http.StatusBadGateway })
		auth := remote.Auth{Kind: remote.AuthOAuthClientCredentials, TokenURL: idp.URL + "/token", ClientID: "warrant", ClientSecretID: "court/client"}
		tg := newTarget(t, g.endpoint, httpstarget.Config{Auth: auth, Secrets: sec})
		// The endpoint echoes the Authorization header into a 502.
		_, err := tg.Call(ctx, call("filings", `{}`))
		wantClass(t, err, "unknown")
		if msg := err.Error(); strings.Contains(msg, "at-1") || strings.Contains(msg, "echo") || !strings.Contains(msg, "502") {
			t.Fatalf("error %q: want HTTP 502, no token and no body", msg)
		}

		// The token endpoint refuses and echoes the secret: unreachable,
		// nothing reached the system, and neither secret nor token is in
		// the error.
		idp.mu.Lock()
		idp.refuse = true
		idp.mu.Unlock()
		before := len(g.requests())
		_, err = newTarget(t, g.endpoint, httpstarget.Config{Auth: auth, Secrets: sec}).Call(ctx, call("filings", `{}`))
		wantClass(t, err, "unreachable")
		if msg := err.Error(); strings.Contains(msg, "5ecret") || !strings.Contains(msg, "HTTP 401") || !strings.Contains(msg, "invalid_client") {
			t.Fatalf("error %q: want HTTP 401 and invalid_client, and no secret or token", msg)
		}
		if n := len(g.requests()); n != before {
			t.Fatalf("%d requests reached the system without a token", n-before)
		}
	})
}

// A target per firm, each with the firm's secret, on one endpoint: each
// firm's calls carry its own token, and nothing is shared between them.
func TestTargetPerFirm(t *testing.T) {
	e := newEndpoint(t, nil)
	sec := &fakeSecrets{get: func(_ context.Context, id string) (string, error) {
		return "tok-" + strings.TrimPrefix(id, "court/"), nil
	}}
	targets := map[string]*httpstarget.Target{}
	for _, firm := range []string{"firm-a", "firm-b"} {
		targets[firm] = newTarget(t, e, httpstarget.Config{Auth: remote.Auth{Kind: remote.AuthBearer, TokenSecretID: "court/" + firm}, Secrets: sec})
	}
	for range 2 {
		for _, firm := range []string{"firm-a", "firm-b"} {
			c := call("filings", `{}`)
			c.FirmID = firm
			if _, err := targets[firm].Call(context.Background(), c); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, r := range e.requests() {
		firm := strings.TrimSuffix(strings.TrimPrefix(r.Header.Get("Warrant-Run"), `firm="`), `", run="`+runID+`", matter="`+matterID+`"`)
		if got, want := r.Header.Get("Authorization"), "Bearer tok-"+firm; got != want {
			t.Fatalf("a call of %s carried %q, want %q", firm, got, want)
		}
	}
	if n := sec.reads.Load(); n != 2 {
		t.Fatalf("%d secret reads, want 2 (one per firm)", n)
	}
}
