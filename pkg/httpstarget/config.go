package httpstarget

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/seed-f6d3920e/warrant/pkg/remote"
)

// Config says how to reach one HTTPS system. New copies it.
type Config struct {
	// Name is the server's name in the catalog; errors name it by it.
	Name string
	// URL is the system's base URL: each tool is a path under it. https,
	// or plain http to a loopback host only; no credentials (user:pw@), no
	// query or fragment.
	URL string
	// Auth is how Warrant authenticates to the system; Secrets reads the
	// secrets it names. A firm with credentials of its own gets a Target of
	// its own.
	Auth    remote.Auth
	Secrets remote.Secrets
	// HTTPClient's Transport carries every request (nil: one that bounds
	// dialing and the TLS handshake at 10 s each). Its Timeout, Jar and
	// CheckRedirect are not used: a call's time comes from its ctx, no
	// cookie is kept, and no redirect is followed.
	HTTPClient *http.Client
	// FinalClientErrors is the catalog's statement that the endpoint's 4xx
	// answers mean nothing happened: a 4xx is then a tool error, and
	// otherwise an outcome unknown (see the package doc).
	FinalClientErrors bool
	// MaxResponseBytes bounds what is read of a 2xx answer's body (0:
	// DefaultMaxResponseBytes).
	MaxResponseBytes int64
}

// DefaultMaxResponseBytes is the bound on an answer's body when the Config
// names none.
const DefaultMaxResponseBytes = 1 << 20

// MaxResponseBytesLimit is the largest bound a Config may set: an answer is
// held in memory whole, and the brain keeps at most 64 KiB of it anyway.
const MaxResponseBytesLimit = 64 << 20

func (c Config) validate() error {
	if c.Name == "" {
		return errors.New("httpstarget: the server needs a name")
	}
	u, err := remote.Endpoint("URL", c.URL)
	if err != nil {
		return fmt.Errorf("httpstarget: server %q: %w", c.Name, err)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return fmt.Errorf("httpstarget: server %q: URL must not carry a query or fragment", c.Name)
	}
	if c.MaxResponseBytes < 0 || c.MaxResponseBytes > MaxResponseBytesLimit {
		return fmt.Errorf("httpstarget: server %q: MaxResponseBytes must be 0 to %d", c.Name, int64(MaxResponseBytesLimit))
	}
	if err := c.Auth.Validate(c.Name, u, c.Secrets != nil); err != nil {
		return fmt.Errorf("httpstarget: server %w", err)
	}
	return nil
}
