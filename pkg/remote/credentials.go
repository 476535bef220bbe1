package remote

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Credentials give the bearer token for a target's requests. They are
// safe for concurrent use.
type Credentials interface {
	// Token returns the current token, reading or fetching it when none is
	// held. Its errors are *TokenError: no request left with a token.
	Token(ctx context.Context) (string, error)
	// Invalidate drops tok after the server refused it (HTTP 401), so the
	// next request reads or fetches a new one.
	Invalidate(tok string)
	// Known lists the tokens and secrets held so far, to keep them out of
	// error texts (Redact).
	Known() []string
}

// NewCredentials returns the credentials a describes (nil for AuthNone):
// a bearer token read from secrets, or tokens from the OAuth 2.0 client
// credentials grant, asked for resource (RFC 8707; a.Resource overrides it)
// and fetched through base without redirects. a must be valid
// (Auth.Validate).
func NewCredentials(a Auth, resource string, secrets Secrets, base http.RoundTripper) Credentials {
	switch a.Kind {
	case AuthBearer:
		return &bearerToken{tokenCache: newTokenCache(), secrets: secrets, id: a.TokenSecretID}
	case AuthOAuthClientCredentials:
		return newClientCredentials(a, resource, secrets, base)
	}
	return nil
}

// TokenError: no token could be had; no request left with it. Its text
// names the secret or the token endpoint, never a value, and it unwraps
// only to a context error.
type TokenError struct {
	text string
	ctx  error
}

func (e *TokenError) Error() string { return e.text }
func (e *TokenError) Unwrap() error { return e.ctx }

func newTokenError(ctx context.Context, text string, cause error) error {
	return &TokenError{text: "no token for the server: " + text, ctx: CtxErr(ctx, cause)}
}

// tokenCache keeps one token until it expires or is invalidated; one
// caller fetches at a time, the others wait for it (or for their ctx).
type tokenCache struct {
	fetching chan struct{}
	mu       sync.Mutex
	tok      string
	expiry   time.Time // zero: until invalidated
	seen     []string  // the last few tokens, for redaction
}

func newTokenCache() *tokenCache { return &tokenCache{fetching: make(chan struct{}, 1)} }

func (c *tokenCache) valid() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tok == "" || (!c.expiry.IsZero() && !time.Now().Before(c.expiry)) {
		return "", false
	}
	return c.tok, true
}

func (c *tokenCache) get(ctx context.Context, fetch func(context.Context) (string, time.Time, error)) (string, error) {
	if tok, ok := c.valid(); ok {
		return tok, nil
	}
	select {
	case c.fetching <- struct{}{}:
	case <-ctx.Done():
		return "", newTokenError(ctx, "waiting for another caller's fetch", ctx.Err())
	}
	defer func() { <-c.fetching }()
	if tok, ok := c.valid(); ok {
		return tok, nil
	}
	tok, expiry, err := fetch(ctx)
	if err != nil {
		return "", err
	}
	if !usable(tok) {
		return "", newTokenError(ctx, "the token is empty or holds spaces or control characters", nil)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tok, c.expiry = tok, expiry
	c.seen = append(c.seen, tok)
	if len(c.seen) > 8 {
		c.seen = c.seen[1:]
	}
	return tok, nil
}

// Invalidate drops tok if it is the token held.
func (c *tokenCache) Invalidate(tok string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tok == tok {
		c.tok = ""
	}
}

// Known lists the last few tokens held.
func (c *tokenCache) Known() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...)
}

// usable: a token that can go in an Authorization header as it is.
func usable(tok string) bool {
	if tok == "" {
		return false
	}
	for _, r := range tok {
		if r <= ' ' || r == 0x7f {
			return false
		}
	}
	return true
}

// bearerToken reads the token from Secrets and keeps it until the server
// refuses it (a rotated token is read again after its first 401).
type bearerToken struct {
	*tokenCache
	secrets Secrets
	id      string
}

// Token reads the token from the secret, or returns the one held.
func (b *bearerToken) Token(ctx context.Context) (string, error) {
	return b.get(ctx, func(ctx context.Context) (string, time.Time, error) {
		v, err := b.secrets.GetSecret(ctx, b.id)
		if err != nil {
			return "", time.Time{}, newTokenError(ctx, fmt.Sprintf("could not read secret %q: %v", b.id, err), err)
		}
		// A secret pasted from a file often ends in a newline.
		return strings.TrimSpace(v), time.Time{}, nil
	})
}

// clientCredentials obtains tokens with the OAuth 2.0 client credentials
// grant (golang.org/x/oauth2/clientcredentials) and keeps each until shortly
// before it expires. The client secret is read from Secrets once, and again
// after the token endpoint refuses it.
type clientCredentials struct {
	*tokenCache
	secrets  Secrets
	secretID string
	base     http.RoundTripper
	cfg      *clientcredentials.Config // fetches are serialized by tokenCache

	mu     sync.Mutex
	secret string
}

// expiryMargin: a token this close to its expiry is fetched anew, so it
// does not expire on its way to the server.
const expiryMargin = 30 * time.Second

func newClientCredentials(a Auth, resource string, secrets Secrets, base http.RoundTripper) *clientCredentials {
	if a.Resource != "" {
		resource = a.Resource
	}
	return &clientCredentials{
		tokenCache: newTokenCache(),
		secrets:    secrets,
		secretID:   a.ClientSecretID,
		base:       base,
		cfg: &clientcredentials.Config{
			ClientID:       a.ClientID,
			TokenURL:       a.TokenURL,
			Scopes:         a.Scopes,
			EndpointParams: url.Values{"resource": {resource}},
		},
	}
}

// Token fetches a token, or returns the one held until shortly before it expires.
func (o *clientCredentials) Token(ctx context.Context) (string, error) {
	return o.get(ctx, o.fetch)
}

func (o *clientCredentials) fetch(ctx context.Context) (string, time.Time, error) {
	secret, err := o.clientSecret(ctx)
	if err != nil {
		return "", time.Time{}, err
	}
	o.cfg.ClientSecret = secret
	// The token endpoint is reached with the base transport (no server
	// token on it) and no redirects (the client secret goes to TokenURL
	// only); rec keeps what the network said, which oauth2 flattens.
	rec := &recorder{base: o.base}
	hc := &http.Client{Transport: rec, CheckRedirect: NoRedirect}
	tok, err := o.cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, hc))
	o.cfg.ClientSecret = ""
	if err != nil {
		var re *oauth2.RetrieveError
		switch {
		case errors.As(err, &re) && re.Response != nil:
			code := rfc6749Code(re.ErrorCode)
			if code == "invalid_client" || re.Response.StatusCode == http.StatusUnauthorized {
				o.forgetSecret()
			}
			text := fmt.Sprintf("the token endpoint refused the request (HTTP %d", re.Response.StatusCode)
			if code != "" {
				text += ", " + code
			}
			return "", time.Time{}, newTokenError(ctx, text+")", nil)
		case rec.err != nil:
			return "", time.Time{}, newTokenError(ctx, fmt.Sprintf("could not reach the token endpoint: %v", rec.err), rec.err)
		}
		return "", time.Time{}, newTokenError(ctx, "the token endpoint's answer held no usable token", ctx.Err())
	}
	if tt := tok.TokenType; tt != "" && !strings.EqualFold(tt, "bearer") {
		return "", time.Time{}, newTokenError(ctx, "the token endpoint gave a token that is not a bearer token", nil)
	}
	expiry := tok.Expiry
	if !expiry.IsZero() {
		expiry = expiry.Add(-expiryMargin)
	}
	return tok.AccessToken, expiry, nil
}

func (o *clientCredentials) clientSecret(ctx context.Context) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.secret != "" {
		return o.secret, nil
	}
	v, err := o.secrets.GetSecret(ctx, o.secretID)
	if err != nil {
		return "", newTokenError(ctx, fmt.Sprintf("could not read secret %q: %v", o.secretID, err), err)
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return "", newTokenError(ctx, fmt.Sprintf("secret %q is empty", o.secretID), nil)
	}
	o.secret = v
	return v, nil
}

func (o *clientCredentials) forgetSecret() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.secret = ""
}

// Known lists the tokens held and the client secret.
func (o *clientCredentials) Known() []string {
	o.mu.Lock()
	secret := o.secret
	o.mu.Unlock()
	return append(o.tokenCache.Known(), secret)
}

// rfc6749Code returns code if it is one of RFC 6749 §5.2's error codes,
// else "": the endpoint's other words stay out of errors.
func rfc6749Code(code string) string {
	switch code {
	case "invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type", "invalid_scope":
		return code
	}
	return ""
}

// recorder keeps the network error of the last request it carried.
type recorder struct {
	base http.RoundTripper
	err  error
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	r.err = err
	return resp, err
}

// NoRedirect is an http.Client's CheckRedirect that follows none: a call
// reaches one server only, and a secret goes to its endpoint only.
func NoRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
