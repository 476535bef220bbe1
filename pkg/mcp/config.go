package mcp

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/remote"
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
	// MaxResponseBytes bounds what is read of an answer (0:
	// DefaultMaxResponseBytes): of the body of each POST's answer, and of
	// each event on a stream. An answer to a tools/call past it is not read
	// further, and the call's outcome is unknown (it ran; its answer is
	// lost).
	MaxResponseBytes int64
}

// DefaultMaxResponseBytes is the bound on an answer when the Config names
// none: the brain keeps at most 64 KiB of a result anyway.
const DefaultMaxResponseBytes = 1 << 20

// MaxResponseBytesLimit is the largest bound a Config may set: the SDK holds
// an answer in memory whole and decodes it.
const MaxResponseBytesLimit = 64 << 20

// Auth, its kinds and Secrets are pkg/remote's, shared by every target that
// reaches a firm's system over HTTP.
type (
	AuthKind = remote.AuthKind
	Auth     = remote.Auth
	Secrets  = remote.Secrets
)

const (
	AuthNone                   = remote.AuthNone
	AuthBearer                 = remote.AuthBearer
	AuthOAuthClientCredentials = remote.AuthOAuthClientCredentials
)

func (c Config) validate() error {
	if c.Name == "" {
		return errors.New("mcp: the server needs a name")
	}
	u, err := remote.Endpoint("URL", c.URL)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	if c.ToolsMaxAge < 0 {
		return errors.New("mcp: ToolsMaxAge must not be negative")
	}
	if c.MaxResponseBytes < 0 || c.MaxResponseBytes > MaxResponseBytesLimit {
		return fmt.Errorf("mcp: MaxResponseBytes must be 0 to %d", int64(MaxResponseBytesLimit))
	}
	if err := c.Auth.Validate(c.Name, u, c.Secrets != nil); err != nil {
		return fmt.Errorf("mcp: server %w", err)
	}
	return nil
}
