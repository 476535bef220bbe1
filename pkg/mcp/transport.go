package mcp

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"time"
)

// A probe watches the HTTP request that carries one tools/call, so Call can
// tell from the HTTP layer, not from error texts, whether the call left.
// The request is framed by its length: a server that did not receive the
// whole body cannot have the call. So it was sent once the transport wrote
// the whole request to the connection (httptrace's WroteRequest without an
// error), or, while no write has finished, once the transport read the whole
// body to write it: that write may still complete.
//
// The verdict is sealed when the SDK's call returns; from then on a body not
// wholly read gives the transport nothing more, so the call cannot leave
// after it was judged unsent.
type probe struct {
	mu       sync.Mutex
	armed    bool // the first POST under the probe's context is the call
	sealed   bool
	wrote    bool // a write of the whole request succeeded
	fullRead bool // the current attempt's body was read whole, its write not failed
	status   int  // the answer's status, 0 if no answer came
	session  bool // the request named a server session (Mcp-Session-Id)
}

type probeKey struct{}

func withProbe(ctx context.Context, p *probe) context.Context {
	return context.WithValue(ctx, probeKey{}, p)
}

// arm claims req as the call's request if it is the first POST made under
// the probe's context. The SDK writes the tools/call before anything else
// under that context; a notifications/cancelled after it is not the call.
func (p *probe) arm(req *http.Request) bool {
	if req.Method != http.MethodPost {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.armed || p.sealed {
		return false
	}
	p.armed = true
	p.session = req.Header.Get("Mcp-Session-Id") != ""
	return true
}

func (p *probe) answered(status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.sealed {
		p.status = status
	}
}

// wroteRequest is httptrace's WroteRequest: called after each attempt to
// write the request, err saying whether the whole of it was written.
func (p *probe) wroteRequest(info httptrace.WroteRequestInfo) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.sealed:
	case info.Err == nil:
		p.wrote = true
	default:
		p.fullRead = false // that attempt's bytes did not all reach the connection
	}
}

// seal fixes the verdict.
func (p *probe) seal() (sent bool, status int, session bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sealed = true
	return p.wrote || p.fullRead, p.status, p.session
}

var errSealed = errors.New("mcp: the call was judged unsent; its body is withheld")

// watchedBody counts what the transport reads of the call's body.
type watchedBody struct {
	p    *probe
	r    io.ReadCloser
	n    int64
	size int64 // the body's length, -1 if unknown
}

func (b *watchedBody) Read(buf []byte) (int, error) {
	b.p.mu.Lock()
	defer b.p.mu.Unlock()
	if b.p.sealed && !b.p.wrote && !b.p.fullRead {
		return 0, errSealed
	}
	n, err := b.r.Read(buf)
	b.n += int64(n)
	if err == io.EOF || (b.size >= 0 && b.n >= b.size) {
		b.p.fullRead = true
	}
	return n, err
}

func (b *watchedBody) Close() error { return b.r.Close() }

// watch makes req's body (and any copy the transport takes to retry it on
// a fresh connection) and its writes report to the probe. It returns req
// with the trace in its context.
func (p *probe) watch(req *http.Request) *http.Request {
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{WroteRequest: p.wroteRequest}))
	size := req.ContentLength
	if size == 0 && req.Body != nil && req.Body != http.NoBody {
		size = -1
	}
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = &watchedBody{p: p, r: req.Body, size: size}
	}
	if get := req.GetBody; get != nil {
		req.GetBody = func() (io.ReadCloser, error) {
			body, err := get()
			if err != nil {
				return nil, err
			}
			return &watchedBody{p: p, r: body, size: size}, nil
		}
	}
	return req
}

// roundTripper is the target's HTTP layer: it puts the token on requests to
// the server's origin (only there) and lets a call's probe watch its
// request.
type roundTripper struct {
	base   http.RoundTripper
	origin *url.URL
	auth   tokenSource // nil: none
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	var tok string
	if rt.auth != nil && sameOrigin(req.URL, rt.origin) {
		var err error
		if tok, err = rt.auth.token(req.Context()); err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
	}
	p, _ := req.Context().Value(probeKey{}).(*probe)
	watched := p != nil && p.arm(req)
	if tok != "" || watched {
		req = req.Clone(req.Context()) // a RoundTripper must not change its request
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		if watched {
			req = p.watch(req)
		}
	}
	resp, err := rt.base.RoundTrip(req)
	if resp != nil {
		if watched {
			p.answered(resp.StatusCode)
		}
		if resp.StatusCode == http.StatusUnauthorized && tok != "" {
			rt.auth.invalidate(tok)
		}
	}
	return resp, err
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

// defaultTransport bounds connecting and the TLS handshake; nothing else:
// a call's time is its ctx's.
func defaultTransport() http.RoundTripper {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: 1 * time.Second,
	}
}
