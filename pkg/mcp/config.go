package mcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Config says how to reach one MCP server. New copies it.
type Config struct {
	// Name is the server's name in the catalog; errors name the server by it.
	Name string
	// URL is the server's MCP endpoint (Streamable HTTP). Plain http is for
	// loopback hosts only; it must not carry credentials (user:password@):
	// a token belongs in Auth.
	URL string
	// HTTPClient's Transport carries every request (nil: one that bounds
	// dialing and the TLS handshake at 10 s each). Its Timeout, Jar and
	// CheckRedirect are not used: a call's time comes from its ctx, and
	// redirects are never followed, so a call reaches one server only.
	HTTPClient *http.Client
	// Auth is how Warrant authenticates to the server.
	Auth Auth
	// Secrets reads the secrets Auth names (bearer, oauth_client_credentials).
	Secrets Secrets
	// OnServerRequest, when set, is told the method of each request the
	// server made of Warrant and Warrant refused (elicitation/create,
	// sampling/createMessage, roots/list), never its content. It may be
	// called from several goroutines at once.
	OnServerRequest func(method string)
	// ToolsMaxAge is how long a tools/list answer is trusted before a call
	// lists again (0: one minute). A new session, or a
	// notifications/tools/list_changed from the server, lists again sooner.
	ToolsMaxAge time.Duration
}

// AuthKind names how Warrant authenticates to an MCP server.
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

// Auth is how Warrant authenticates to an MCP server. Secrets are named by
// their ids in Secrets, never given as values.
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
	// indicator sent to the token endpoint. Empty sends URL: MCP's
	// authorization specification asks clients to name the server so.
	Resource string
}

// Secrets reads a secret's current value by its id (pkg/secrets reads AWS
// Secrets Manager). Its errors must not contain the value.
type Secrets interface {
	GetSecret(ctx context.Context, id string) (string, error)
}

func (c Config) validate() error {
	if c.Name == "" {
		return errors.New("mcp: the server needs a name")
	}
	u, err := endpoint("URL", c.URL)
	if err != nil {
		return err
	}
	if c.ToolsMaxAge < 0 {
		return errors.New("mcp: ToolsMaxAge must not be negative")
	}
	a := c.Auth
	switch a.Kind {
	case AuthNone:
		if !loopback(u) {
			return fmt.Errorf("mcp: server %q: auth none is for loopback servers only (127.0.0.0/8, ::1, localhost)", c.Name)
		}
	case AuthBearer:
		if a.TokenSecretID == "" {
			return fmt.Errorf("mcp: server %q: bearer auth needs TokenSecretID", c.Name)
		}
	case AuthOAuthClientCredentials:
		if _, err := endpoint("TokenURL", a.TokenURL); err != nil {
			return fmt.Errorf("mcp: server %q: %w", c.Name, err)
		}
		if a.ClientID == "" || a.ClientSecretID == "" {
			return fmt.Errorf("mcp: server %q: oauth_client_credentials needs ClientID and ClientSecretID", c.Name)
		}
	default:
		return fmt.Errorf("mcp: server %q: auth kind must be one of none, bearer, oauth_client_credentials", c.Name)
	}
	if a.Kind != AuthNone && c.Secrets == nil {
		return fmt.Errorf("mcp: server %q: %s auth needs Secrets", c.Name, a.Kind)
	}
	return nil
}

// endpoint parses an http(s) URL that carries no credentials; plain http
// only to a loopback host, so no token crosses a network in the clear.
func endpoint(field, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("mcp: %s must be an absolute http or https URL", field)
	}
	if u.User != nil {
		return nil, fmt.Errorf("mcp: %s must not carry credentials", field)
	}
	if u.Scheme == "http" && !loopback(u) {
		return nil, fmt.Errorf("mcp: %s must use https unless its host is loopback", field)
	}
	return u, nil
}

// loopback reports whether u's host is this machine by name or address:
// localhost, 127.0.0.0/8 or ::1.
func loopback(u *url.URL) bool {
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
