// Package remotetest is an HTTP/2 server for testing what a target sends: it
// serves an http.Handler over TLS (h2 only, on loopback) and, for the
// requests a test picks, reads the whole request and then refuses it in one
// of the ways net/http's HTTP/2 client answers by sending the request again
// (RST_STREAM with REFUSED_STREAM or PROTOCOL_ERROR, or GOAWAY), which no
// net/http server can be made to do. It is written on golang.org/x/net/http2's
// Framer. Tests count the requests that arrived whole, on the server's side,
// where no client retry can hide one.
package remotetest

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Fault is how the server answers a request it read whole.
type Fault int

const (
	// Serve answers with the Handler.
	Serve Fault = iota
	// RefusedStream resets the request's stream with REFUSED_STREAM, which
	// RFC 9113 §8.7 says a server sends for a stream it did not process.
	RefusedStream
	// ProtocolError resets the request's stream with PROTOCOL_ERROR.
	ProtocolError
	// GoAway sends GOAWAY (NO_ERROR) with last stream 0: by RFC 9113 §6.8,
	// "no stream of this connection was processed".
	GoAway
)

func (f Fault) String() string {
	switch f {
	case Serve:
		return "serve"
	case RefusedStream:
		return "RST_STREAM(REFUSED_STREAM)"
	case ProtocolError:
		return "RST_STREAM(PROTOCOL_ERROR)"
	case GoAway:
		return "GOAWAY"
	}
	return "fault(" + strconv.Itoa(int(f)) + ")"
}

// Server is an HTTP/2 server over TLS on loopback. Requests are served one
// goroutine each; an answer is written once the Handler returns (no
// streaming), at most as large as the client's flow-control window (net/http's
// client opens 4 MiB).
type Server struct {
	// URL is https://127.0.0.1:PORT.
	URL string

	ts      *httptest.Server
	handler http.Handler
	fault   func(r *http.Request, body []byte) Fault

	mu       sync.Mutex
	arrivals int
}

// NewServer starts a server answering with h, after asking fault (when not
// nil) how to answer each request, its body read whole. fault and h may be
// called from several goroutines at once. Close stops the server.
func NewServer(h http.Handler, fault func(r *http.Request, body []byte) Fault) *Server {
	s := &Server{handler: h, fault: fault}
	s.ts = httptest.NewUnstartedServer(h)
	s.ts.EnableHTTP2 = true                           // ALPN offers h2 only
	s.ts.Config.ErrorLog = log.New(io.Discard, "", 0) // connections cut at Close
	s.ts.Config.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){
		http2.NextProtoTLS: func(_ *http.Server, c *tls.Conn, _ http.Handler) { s.serveConn(c) },
	}
	s.ts.StartTLS()
	s.URL = s.ts.URL
	return s
}

// Client is an http.Client whose transport (net/http's, HTTP/2 forced)
// trusts the server's certificate.
func (s *Server) Client() *http.Client { return s.ts.Client() }

// TLSConfig trusts the server's certificate, for another transport (such as
// golang.org/x/net/http2.Transport).
func (s *Server) TLSConfig() *tls.Config {
	c := s.ts.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	c.NextProtos = []string{http2.NextProtoTLS}
	return c
}

// Arrivals is the number of requests read whole so far, served or faulted.
func (s *Server) Arrivals() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.arrivals
}

// Close closes every connection and stops the server.
func (s *Server) Close() {
	s.ts.CloseClientConnections()
	s.ts.Close()
}

// conn is one client connection: the framer, written by one goroutine at a
// time (hpack's encoder is stateful, so headers are encoded under the lock
// too).
type conn struct {
	s   *Server
	c   *tls.Conn
	ctx context.Context

	wmu sync.Mutex
	fr  *http2.Framer
	hb  bytes.Buffer
	enc *hpack.Encoder
}

// stream is a request being read.
type stream struct {
	header *http2.MetaHeadersFrame
	body   []byte
}

func (s *Server) serveConn(c *tls.Conn) {
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var handlers sync.WaitGroup
	defer handlers.Wait()
	defer cancel()

	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	sc := &conn{s: s, c: c, ctx: ctx, fr: http2.NewFramer(c, c)}
	sc.enc = hpack.NewEncoder(&sc.hb)
	sc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if sc.write(func(fr *http2.Framer) error { return fr.WriteSettings() }) != nil {
		return
	}
	streams := map[uint32]*stream{}
	for {
		f, err := sc.fr.ReadFrame()
		if err != nil {
			return
		}
		var done *stream
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				err = sc.write(func(fr *http2.Framer) error { return fr.WriteSettingsAck() })
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				err = sc.write(func(fr *http2.Framer) error { return fr.WritePing(true, f.Data) })
			}
		case *http2.MetaHeadersFrame:
			st := &stream{header: f}
			streams[f.StreamID] = st
			if f.StreamEnded() {
				done = st
			}
		case *http2.DataFrame:
			st := streams[f.StreamID]
			if st == nil {
				continue
			}
			st.body = append(st.body, f.Data()...) // the frame's buffer is reused
			if n := uint32(len(f.Data())); n > 0 {
				err = sc.write(func(fr *http2.Framer) error {
					if err := fr.WriteWindowUpdate(0, n); err != nil {
						return err
					}
					return fr.WriteWindowUpdate(f.StreamID, n)
				})
			}
			if f.StreamEnded() {
				done = st
			}
		}
		if err != nil {
			return
		}
		if done == nil {
			continue
		}
		id := done.header.StreamID
		delete(streams, id)
		req := sc.request(done)
		s.mu.Lock()
		s.arrivals++
		s.mu.Unlock()
		fault := Serve
		if s.fault != nil {
			fault = s.fault(req, done.body)
		}
		switch fault {
		case RefusedStream:
			err = sc.write(func(fr *http2.Framer) error { return fr.WriteRSTStream(id, http2.ErrCodeRefusedStream) })
		case ProtocolError:
			err = sc.write(func(fr *http2.Framer) error { return fr.WriteRSTStream(id, http2.ErrCodeProtocol) })
		case GoAway:
			err = sc.write(func(fr *http2.Framer) error { return fr.WriteGoAway(0, http2.ErrCodeNo, nil) })
		default:
			req.Body = io.NopCloser(bytes.NewReader(done.body))
			handlers.Go(func() { sc.serve(id, req) })
		}
		if err != nil {
			return
		}
	}
}

// request is what arrived as an http.Request for the server's side.
func (sc *conn) request(st *stream) *http.Request {
	var method, scheme, authority, path string
	header := http.Header{}
	for _, hf := range st.header.Fields {
		switch hf.Name {
		case ":method":
			method = hf.Value
		case ":scheme":
			scheme = hf.Value
		case ":authority":
			authority = hf.Value
		case ":path":
			path = hf.Value
		default:
			header.Add(hf.Name, hf.Value)
		}
	}
	req := httptest.NewRequestWithContext(sc.ctx, method, scheme+"://"+authority+path, bytes.NewReader(st.body))
	req.Proto, req.ProtoMajor, req.ProtoMinor = "HTTP/2.0", 2, 0
	req.Header = header
	req.RemoteAddr = sc.c.RemoteAddr().String()
	return req
}

// serve answers the request on stream id with the Handler.
func (sc *conn) serve(id uint32, req *http.Request) {
	rec := httptest.NewRecorder()
	sc.s.handler.ServeHTTP(rec, req)
	res := rec.Result()
	body := rec.Body.Bytes()
	_ = sc.write(func(fr *http2.Framer) error {
		sc.hb.Reset()
		fields := []hpack.HeaderField{{Name: ":status", Value: strconv.Itoa(res.StatusCode)}}
		for k, vs := range res.Header {
			switch strings.ToLower(k) {
			case "content-length", "connection", "transfer-encoding", "keep-alive":
				continue // set below, or not allowed in HTTP/2
			}
			for _, v := range vs {
				fields = append(fields, hpack.HeaderField{Name: strings.ToLower(k), Value: v})
			}
		}
		fields = append(fields, hpack.HeaderField{Name: "content-length", Value: strconv.Itoa(len(body))})
		for _, f := range fields {
			if err := sc.enc.WriteField(f); err != nil {
				return err
			}
		}
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: sc.hb.Bytes(), EndHeaders: true, EndStream: len(body) == 0}); err != nil {
			return err
		}
		for len(body) > 0 {
			n := min(len(body), 16<<10) // the smallest SETTINGS_MAX_FRAME_SIZE
			if err := fr.WriteData(id, n == len(body), body[:n]); err != nil {
				return err
			}
			body = body[n:]
		}
		return nil
	})
}

func (sc *conn) write(f func(*http2.Framer) error) error {
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	return f(sc.fr)
}
