package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// AuthKind names how Warrant authenticates to a firm's system.
type AuthKind string

const (
	// AuthNone sends no credentials. Only a loopback URL may use it.
	AuthNone AuthKind = "none"
	// AuthBearer sends a token read from Secrets.
	AuthBearer AuthKind = "bearer"
	// AuthOAuthClientCredentials sends a token obtained with the OAuth 2.0
	// client credentials grant (RFC 6749 §4.4), the client secret read from
	// Secrets; the token is kept until it expires or the server refuses it.
	AuthOAuthClientCredentials AuthKind = "oauth_client_credentials"
)

// Auth is how Warrant authenticates to a system. Secrets are named by their
// ids in Secrets, never given as values.
type Auth struct {
	Kind AuthKind
	// TokenSecretID (bearer) names the secret that holds the token.
	TokenSecretID string
	// TokenURL (oauth_client_credentials) is the token endpoint; plain
	// http only on loopback.
	TokenURL string
	// ClientID (oauth_client_credentials) is the OAuth client's id.
	ClientID string
	// ClientSecretID (oauth_client_credentials) names the secret that holds
	// the client secret.
	ClientSecretID string
	// Scopes (oauth_client_credentials) are the scopes asked for.
	Scopes []string
	// Resource (oauth_client_credentials) is the RFC 8707 resource
	// indicator sent to the token endpoint. Empty sends the system's URL:
	// MCP's authorization specification asks clients to name the server so.
	Resource string
}

// Secrets reads a secret's current value by its id (pkg/secrets reads AWS
// Secrets Manager). Its errors must not contain the value.
type Secrets interface {
	GetSecret(ctx context.Context, id string) (string, error)
}

// Validate checks a for a system named name at u; haveSecrets says whether
// a Secrets reader is configured. Errors name the system, never a value.
func (a Auth) Validate(name string, u *url.URL, haveSecrets bool) error {
	switch a.Kind {
	case AuthNone:
		if !Loopback(u) {
			return fmt.Errorf("%q: auth none is for loopback servers only (127.0.0.0/8, ::1, localhost)", name)
		}
	case AuthBearer:
		if a.TokenSecretID == "" {
			return fmt.Errorf("%q: bearer auth needs TokenSecretID", name)
		}
	case AuthOAuthClientCredentials:
		if _, err := Endpoint("TokenURL", a.TokenURL); err != nil {
			return fmt.Errorf("%q: %w", name, err)
		}
		if a.ClientID == "" || a.ClientSecretID == "" {
			return fmt.Errorf("%q: oauth_client_credentials needs ClientID and ClientSecretID", name)
		}
	default:
		return fmt.Errorf("%q: auth kind must be one of none, bearer, oauth_client_credentials", name)
	}
	if a.Kind != AuthNone && !haveSecrets {
		return fmt.Errorf("%q: %s auth needs Secrets", name, a.Kind)
	}
	return nil
}

// Endpoint parses an http(s) URL that carries no credentials; plain http
// only to a loopback host, so no token crosses a network in the clear.
// field names the URL in errors.
func Endpoint(field, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("%s must be an absolute http or https URL", field)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%s must not carry credentials", field)
	}
	if u.Scheme == "http" && !Loopback(u) {
		return nil, fmt.Errorf("%s must use https unless its host is loopback", field)
	}
	return u, nil
}

// Loopback reports whether u's host is this machine by name or address:
// localhost, 127.0.0.0/8 or ::1.
func Loopback(u *url.URL) bool {
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CtxErr is the context's error when a failure was the context's: cause's
// if it is one, else ctx.Err() (nil while ctx lives).
func CtxErr(ctx context.Context, cause error) error {
	switch {
	case errors.Is(cause, context.DeadlineExceeded):
		return context.DeadlineExceeded
	case errors.Is(cause, context.Canceled):
		return context.Canceled
	}
	return ctx.Err()
}

// Redact cuts every token and secret c has held out of s (a server may echo
// the Authorization header in its error text). A nil c changes nothing.
func Redact(s string, c Credentials) string {
	if c == nil {
		return s
	}
	for _, secret := range c.Known() {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return s
}

// Error is a target's failed call. Its text is the only place the network's
// or the system's own words appear, as the target chose them (with every
// token and secret it held cut out); it unwraps to its class
// (warrant.ErrTargetUnreachable or warrant.ErrTargetOutcomeUnknown) and to
// the context's error when the context ended, never to the raw cause.
type Error struct {
	text  string
	class error
	ctx   error
}

// NewError builds an Error of class with text (redacted of what creds
// held; nil creds: none), its context error taken from ctx and cause (which
// is otherwise dropped).
func NewError(ctx context.Context, class error, text string, cause error, creds Credentials) *Error {
	return &Error{text: Redact(text, creds), class: class, ctx: CtxErr(ctx, cause)}
}

func (e *Error) Error() string { return e.text }

// Unwrap gives the class and, when the context ended, its error.
func (e *Error) Unwrap() []error {
	if e.ctx == nil {
		return []error{e.class}
	}
	return []error{e.class, e.ctx}
}
