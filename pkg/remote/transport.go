package remote

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

// A Probe watches the HTTP request that carries one call, so its caller
// can tell from the HTTP layer, not from error texts, whether the call
// left. The request is framed by its length: a server that did not receive
// the whole body cannot have the call. So it was sent once the transport
// wrote the whole request to the connection (httptrace's WroteRequest
// without an error), or, while no write has finished, once the transport
// read the whole body to write it: that write may still complete.
//
// The verdict is sealed (Seal) when the caller's client returns; from then
// on a body not wholly read gives the transport nothing more, so the call
// cannot leave after it was judged unsent. A Probe watches the first POST
// made under the context WithProbe gives it, through a Transport.
type Probe struct {
	mu       sync.Mutex
	armed    bool // the first POST under the probe's context is the call
	sealed   bool
	wrote    bool // a write of the whole request succeeded
	fullRead bool // the current attempt's body was read whole, its write not failed
	status   int  // the answer's status, 0 if no answer came
	tooLarge bool // the answer's body passed the Transport's bound
	header   http.Header
}

// Verdict is what a sealed Probe saw.
type Verdict struct {
	// Sent: the call may have reached the server.
	Sent bool
	// Status is the answer's HTTP status, 0 when no answer came.
	Status int
	// Header is the call's request header as the Transport sent it, less
	// Authorization (nil when no request was made).
	Header http.Header
	// TooLarge: the answer's body was longer than the Transport's
	// MaxResponseBytes, and was not read further.
	TooLarge bool
}

type probeKey struct{}

// WithProbe returns ctx with p watching the first POST made under it.
func WithProbe(ctx context.Context, p *Probe) context.Context {
	return context.WithValue(ctx, probeKey{}, p)
}

// arm claims req as the call's request if it is the first POST made under
// the probe's context. (The MCP SDK writes the tools/call before anything
// else under that context; a notifications/cancelled after it is not the
// call.)
func (p *Probe) arm(req *http.Request) bool {
	if req.Method != http.MethodPost {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.armed || p.sealed {
		return false
	}
	p.armed = true
	p.header = req.Header.Clone()
	p.header.Del("Authorization")
	return true
}

func (p *Probe) overflowed() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tooLarge = true
}

func (p *Probe) answered(status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.sealed {
		p.status = status
	}
}

// wroteRequest is httptrace's WroteRequest: called after each attempt to
// write the request, err saying whether the whole of it was written.
func (p *Probe) wroteRequest(info httptrace.WroteRequestInfo) {
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

// Seal fixes the verdict and returns it.
func (p *Probe) Seal() Verdict {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sealed = true
	return Verdict{Sent: p.wrote || p.fullRead, Status: p.status, Header: p.header, TooLarge: p.tooLarge}
}

var errSealed = errors.New("remote: the call was judged unsent; its body is withheld")

// watchedBody counts what the transport reads of the call's body.
type watchedBody struct {
	p    *Probe
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

// watch makes req's body and its writes report to the probe. It returns
// req with the trace in its context.
func (p *Probe) watch(req *http.Request) *http.Request {
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{WroteRequest: p.wroteRequest}))
	size := req.ContentLength
	if size == 0 && req.Body != nil && req.Body != http.NoBody {
		size = -1
	}
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = &watchedBody{p: p, r: req.Body, size: size}
	}
	return req
}

// errSpent: a transport read a request's body again after it had ended.
var errSpent = errors.New("remote: the request's body was read whole once; it is not sent again")

// onceBody is a request's body as a transport may read it: once. It has no
// Seek or WriteTo for a transport to rewind it or copy it around the count,
// and after its end (or an error) every read fails, so a transport that
// reused it for another attempt would send no second request: an empty
// body in place of the call fails instead of ending a request.
type onceBody struct {
	r     io.ReadCloser
	ended bool // guarded by the transport's one reader at a time
}

func (b *onceBody) Read(buf []byte) (int, error) {
	if b.ended {
		return 0, errSpent
	}
	n, err := b.r.Read(buf)
	if err != nil {
		b.ended = true
	}
	return n, err
}

func (b *onceBody) Close() error { return b.r.Close() }

// sendOnce makes req (a clone the caller owns) impossible to send twice:
// net/http's HTTP/1 and HTTP/2 clients, and golang.org/x/net/http2's, send a
// request again by themselves, after a connection loss or an HTTP/2
// RST_STREAM(REFUSED_STREAM or PROTOCOL_ERROR) or GOAWAY, only when they
// can rewind its body (GetBody) or have not read any of it. Without
// GetBody, a body read even in part is never sent again; a retry of a
// request whose body nobody read (a connection found unusable before the
// request was written) sends it for the first time, and stays.
func sendOnce(req *http.Request) {
	req.GetBody = nil
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = &onceBody{r: req.Body}
	}
}

// Transport is a target's HTTP layer: it puts the token on requests to
// the system's origin (only there), drops a token the system refuses (HTTP
// 401), lets a call's Probe watch its request, and sends no request twice:
// whatever Base is (net/http's Transport speaking HTTP/1 or HTTP/2,
// golang.org/x/net/http2's), a request whose body the transport began to
// read is never sent again by it (see sendOnce). Base must send what it is
// given: a round tripper that buffers a body to retry it on its own is not
// one a target may use.
type Transport struct {
	Base   http.RoundTripper
	Origin *url.URL
	Auth   Credentials // nil: none
	// MaxResponseBytes bounds what a reader of the answer to a POST gets
	// of its body (0: no bound): past it, a read fails with
	// ErrAnswerTooLarge and nothing more is read from the connection, so
	// an answer is bounded before anything decodes it. (A GET's answer is
	// a stream of events, bounded by its reader.)
	MaxResponseBytes int64
}

// RoundTrip implements http.RoundTripper.
func (rt *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var tok string
	if rt.Auth != nil && SameOrigin(req.URL, rt.Origin) {
		var err error
		if tok, err = rt.Auth.Token(req.Context()); err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
	}
	p, _ := req.Context().Value(probeKey{}).(*Probe)
	watched := p != nil && p.arm(req)
	req = req.Clone(req.Context()) // a RoundTripper must not change its request
	sendOnce(req)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if watched {
		req = p.watch(req)
	}
	resp, err := rt.Base.RoundTrip(req)
	if resp != nil {
		if watched {
			p.answered(resp.StatusCode)
		}
		if rt.MaxResponseBytes > 0 && req.Method == http.MethodPost {
			b := &boundedBody{r: resp.Body, left: rt.MaxResponseBytes}
			if watched {
				b.p = p
			}
			resp.Body = b
		}
		if resp.StatusCode == http.StatusUnauthorized && tok != "" {
			rt.Auth.Invalidate(tok)
		}
	}
	return resp, err
}

// ErrAnswerTooLarge: an answer's body was longer than the Transport's
// MaxResponseBytes.
var ErrAnswerTooLarge = errors.New("remote: the answer is larger than the bound on what is read of it")

// boundedBody gives at most left more bytes of an answer; a read past them
// fails, telling the call's probe (when there is one).
type boundedBody struct {
	r    io.ReadCloser
	left int64
	over bool
	p    *Probe
}

func (b *boundedBody) Read(buf []byte) (int, error) {
	if b.over {
		return 0, ErrAnswerTooLarge
	}
	if b.left <= 0 {
		// Whether anything follows the bound's last byte: one byte more.
		var one [1]byte
		n, err := b.r.Read(one[:])
		if n == 0 {
			return 0, err
		}
		b.over = true
		if b.p != nil {
			b.p.overflowed()
		}
		return 0, ErrAnswerTooLarge
	}
	if int64(len(buf)) > b.left {
		buf = buf[:b.left]
	}
	n, err := b.r.Read(buf)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.r.Close() }

// SameOrigin reports whether a and b have the same scheme and host.
func SameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

// TransportOf is the round tripper a target sends through: the configured
// client's Transport, else DefaultTransport.
func TransportOf(c *http.Client) http.RoundTripper {
	if c != nil && c.Transport != nil {
		return c.Transport
	}
	return DefaultTransport()
}

// DefaultTransport bounds connecting and the TLS handshake; nothing else:
// a call's time is its ctx's.
func DefaultTransport() http.RoundTripper {
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
