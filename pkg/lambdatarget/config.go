package lambdatarget

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/seed-f6d3920e/warrant/pkg/remote"
)

// Config says which function serves a tool and how to reach it. New copies
// it.
type Config struct {
	// Name is the system's name in the catalog; errors name it.
	Name string
	// Function is the function's ARN, or its qualified ARN (a version or an
	// alias): arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER]. An
	// ARN names the account, so a call cannot reach a function of the same
	// name elsewhere; patterns and wildcards are refused. A plain NAME (or
	// NAME:QUALIFIER) is accepted only when Client's BaseEndpoint is a
	// loopback URL (the local stack, internal/lambdalocal).
	Function string
	// Client makes the Invoke: the SDK's Lambda client, its region the
	// ARN's. Its retryer, logger and HTTP client are replaced for each
	// Invoke (see HTTPClient): the target alone decides retries, and
	// nothing is logged.
	Client *lambda.Client
	// HTTPClient's Transport carries every Invoke (nil: one that bounds
	// dialing and the TLS handshake at 10 s each). Its Timeout, Jar and
	// CheckRedirect are not used: a call's time is its ctx's, and redirects
	// are never followed.
	HTTPClient *http.Client
	// MaxAttempts bounds the attempts of a call that did not run (not sent,
	// or throttled); 0: 3.
	MaxAttempts int
	// RetryDelay is the pause before the first retry, doubled before each
	// next one and jittered; 0: 100 ms. A throttle's Retry-After, when
	// longer, is waited instead.
	RetryDelay time.Duration
}

var (
	// functionARN: arn:PARTITION:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER].
	functionARN = regexp.MustCompile(`^arn:aws[a-z-]*:lambda:([a-z]{2}(?:-[a-z]+)+-[0-9]+):[0-9]{12}:function:[A-Za-z0-9_-]{1,64}(?::(?:\$LATEST|[A-Za-z0-9_-]{1,128}))?$`)
	// localName: NAME[:QUALIFIER], for a loopback endpoint only.
	localName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}(?::(?:\$LATEST|[A-Za-z0-9_-]{1,128}))?$`)
)

func (c Config) validate() error {
	if c.Name == "" {
		return errors.New("lambdatarget: the system needs a name")
	}
	if c.Client == nil {
		return fmt.Errorf("lambdatarget: %q: no Lambda client", c.Name)
	}
	if c.MaxAttempts < 0 || c.RetryDelay < 0 {
		return fmt.Errorf("lambdatarget: %q: MaxAttempts and RetryDelay must not be negative", c.Name)
	}
	opts := c.Client.Options()
	if m := functionARN.FindStringSubmatch(c.Function); m != nil {
		// The client calls its own region's endpoint, and Lambda invokes
		// only that region's functions.
		if m[1] != opts.Region {
			return fmt.Errorf("lambdatarget: %q: the function is in region %s, the client's region is %q", c.Name, m[1], opts.Region)
		}
		return nil
	}
	if localName.MatchString(c.Function) && loopback(opts.BaseEndpoint) {
		return nil
	}
	return fmt.Errorf("lambdatarget: %q: Function must be a function ARN, arn:aws:lambda:REGION:ACCOUNT:function:NAME[:VERSION_OR_ALIAS] (a plain name only with a loopback endpoint)", c.Name)
}

// loopback reports whether endpoint is a URL of this machine.
func loopback(endpoint *string) bool {
	u, err := url.Parse(aws.ToString(endpoint))
	return err == nil && u.Host != "" && remote.Loopback(u)
}
