package httpstarget_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/httpstarget"
	"github.com/seed-f6d3920e/warrant/pkg/remote"
	"github.com/seed-f6d3920e/warrant/pkg/secrets"
)

var _ remote.Secrets = (*secrets.Manager)(nil)
var _ agent.Target = (*httpstarget.Target)(nil)

// The call reaches the tool's path under the base URL as one POST: the
// input byte for byte, the effect_ref as a quoted Idempotency-Key, the run
// as the Warrant-Run dictionary, no cookie and no token (auth none).
func TestRequest(t *testing.T) {
	e := newEndpoint(t, nil)
	// Characters a careless encoder would escape or re-spell.
	input := `{"matter_id":"m-1","pages":12,"title":"<Motion> & \u2028 \"brief\""}`
	for _, tc := range []struct{ base, tool, path string }{
		{"/api", "v1/filings", "/api/v1/filings"},
		{"/api/", "filings", "/api/filings"},
		{"", "file.motion_v2~x", "/file.motion_v2~x"},
	} {
		tg := newTarget(t, e, httpstarget.Config{URL: e.URL + tc.base})
		c := call(tc.tool, input)
		res, err := tg.Call(context.Background(), c)
		if err != nil || res.IsError || string(res.Content) != `{"ok":true}` {
			t.Fatalf("%s: result %s (isError %v), err %v", tc.tool, res.Content, res.IsError, err)
		}
		seen := e.requests()
		got := seen[len(seen)-1]
		if got.Method != http.MethodPost || got.Path != tc.path {
			t.Errorf("%s %s, want POST %s", got.Method, got.Path, tc.path)
		}
		if string(got.Body) != input {
			t.Errorf("body %s, want exactly %s", got.Body, input)
		}
		want := map[string]string{
			"Content-Type":    "application/json",
			"Accept":          "application/json",
			"Idempotency-Key": `"` + c.EffectRef + `"`,
			"Warrant-Run":     `firm="` + firmID + `", run="` + runID + `", matter="` + matterID + `"`,
		}
		for k, v := range want {
			if vs := got.Header.Values(k); len(vs) != 1 || vs[0] != v {
				t.Errorf("%s: %q, want exactly %q", k, vs, v)
			}
		}
		for _, k := range []string{"Cookie", "Authorization"} {
			if v := got.Header.Get(k); v != "" {
				t.Errorf("%s: %q, want none", k, v)
			}
		}
	}

	// A run without a matter: the dictionary has no matter member.
	c := call("filings", `{}`)
	c.MatterID = ""
	if _, err := newTarget(t, e, httpstarget.Config{}).Call(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	seen := e.requests()
	if got, want := seen[len(seen)-1].Header.Get("Warrant-Run"), `firm="`+firmID+`", run="`+runID+`"`; got != want {
		t.Fatalf("Warrant-Run %q, want %q", got, want)
	}
}

func TestNewRefuses(t *testing.T) {
	sec := &fakeSecrets{get: func(context.Context, string) (string, error) { return "x", nil }}
	none := remote.Auth{Kind: remote.AuthNone}
	bearer := remote.Auth{Kind: remote.AuthBearer, TokenSecretID: "court/token"}
	cases := []struct {
		url  string
		auth remote.Auth
		ok   bool
	}{
		{"https://api.court.example/warrant", bearer, true},
		{"https://api.court.example", bearer, true},
		{"http://127.0.0.1:8080/api", none, true},
		{"http://localhost:8080/api", none, true},
		{"http://[::1]:8080/api", bearer, true},
		{"http://api.court.example/warrant", bearer, false}, // a token in the clear
		{"http://10.0.0.5/warrant", bearer, false},
		{"https://api.court.example/warrant", none, false}, // none is for loopback only
		{"https://u:pw@api.court.example/warrant", bearer, false},
		{"https://api.court.example/warrant?x=1", bearer, false},
		{"https://api.court.example/warrant?", bearer, false},
		{"https://api.court.example/warrant#f", bearer, false},
		{"ftp://api.court.example/warrant", bearer, false},
		{"/warrant", bearer, false},
		{"https://api.court.example", remote.Auth{Kind: "basic"}, false},
		{"https://api.court.example", remote.Auth{Kind: remote.AuthOAuthClientCredentials, TokenURL: "http://idp.example/token", ClientID: "c", ClientSecretID: "s"}, false},
	}
	for _, tc := range cases {
		_, err := httpstarget.New(httpstarget.Config{Name: "court", URL: tc.url, Auth: tc.auth, Secrets: sec})
		if (err == nil) != tc.ok {
			t.Errorf("New(%s, %s): err = %v, want ok %v", tc.url, tc.auth.Kind, err, tc.ok)
		}
	}
	for name, cfg := range map[string]httpstarget.Config{
		"no name":               {URL: "https://api.court.example", Auth: bearer, Secrets: sec},
		"no Secrets":            {Name: "court", URL: "https://api.court.example", Auth: bearer},
		"a negative response":   {Name: "court", URL: "https://api.court.example", Auth: bearer, Secrets: sec, MaxResponseBytes: -1},
		"an unbounded response": {Name: "court", URL: "https://api.court.example", Auth: bearer, Secrets: sec, MaxResponseBytes: 1 << 62},
	} {
		if _, err := httpstarget.New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A 2xx answer is the result: a JSON body as it is, anything else a JSON
// value that says what came.
func TestAnswers(t *testing.T) {
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		switch r.URL.Path {
		case "/api/json":
			io.WriteString(w, " {\"id\":\"f-1\",\"n\":12345678901234567890}\n")
		case "/api/created":
			w.WriteHeader(http.StatusCreated)
		case "/api/nocontent":
			w.WriteHeader(http.StatusNoContent)
		case "/api/text":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "filed <ok> \"at\" 10:00\xff")
		case "/api/cut":
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, `{"id":`)
			w.(http.Flusher).Flush()
			drop(w)
		}
	})
	tg := newTarget(t, e, httpstarget.Config{})
	for tool, want := range map[string]string{
		"json":      `{"id":"f-1","n":12345678901234567890}`,
		"created":   `{"http_status":201}`,
		"nocontent": `{"http_status":204}`,
		"text":      `{"http_status":200,"text":"filed <ok> \"at\" 10:00\ufffd"}`,
		"cut":       `{"http_status":200,"answer_incomplete":true}`,
	} {
		res, err := tg.Call(context.Background(), call(tool, `{}`))
		if err != nil || res.IsError || string(res.Content) != want {
			t.Errorf("%s: result %s (isError %v), err %v; want %s", tool, res.Content, res.IsError, err, want)
		}
	}
}

// A 4xx is a tool error when the catalog says the endpoint's 4xx answers
// are final, and an outcome unknown when it does not: under the
// idempotency draft a 409 says a request with the key is still running.
func TestClientErrors(t *testing.T) {
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		var status int
		fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/api/s"), "%d", &status)
		w.WriteHeader(status)
		io.WriteString(w, `{"detail":"refused"}`)
	})
	for _, final := range []bool{true, false} {
		tg := newTarget(t, e, httpstarget.Config{FinalClientErrors: final})
		for _, status := range []int{400, 403, 404, 409, 422, 429} {
			res, err := tg.Call(context.Background(), call(fmt.Sprintf("s%d", status), `{}`))
			if !final {
				wantClass(t, err, "unknown")
				if !strings.Contains(err.Error(), fmt.Sprintf("HTTP %d", status)) || strings.Contains(err.Error(), "refused\"") {
					t.Errorf("error %q: want the status and not the body", err)
				}
				continue
			}
			if want := fmt.Sprintf(`{"http_status":%d}`, status); err != nil || !res.IsError || string(res.Content) != want {
				t.Errorf("HTTP %d, final: result %s (isError %v), err %v; want %s as a tool error", status, res.Content, res.IsError, err, want)
			}
		}
	}
	if n := len(e.requests()); n != 12 {
		t.Fatalf("the endpoint saw %d requests, want 12 (none retried)", n)
	}
	// A 401 (here with no token at all), final: a tool error, not retried.
	res, err := newTarget(t, e, httpstarget.Config{FinalClientErrors: true}).Call(context.Background(), call("s401", `{}`))
	if err != nil || !res.IsError || string(res.Content) != `{"http_status":401}` {
		t.Fatalf("HTTP 401, final: result %s (isError %v), err %v; want a tool error", res.Content, res.IsError, err)
	}
	if n := len(e.requests()); n != 13 {
		t.Fatalf("the endpoint saw %d requests, want 13", n)
	}
}

func TestServerErrors(t *testing.T) {
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		var status int
		fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/api/s"), "%d", &status)
		w.WriteHeader(status)
	})
	tg := newTarget(t, e, httpstarget.Config{FinalClientErrors: true})
	for _, status := range []int{500, 502, 503, 504} {
		_, err := tg.Call(context.Background(), call(fmt.Sprintf("s%d", status), `{}`))
		wantClass(t, err, "unknown")
	}
	if n := len(e.requests()); n != 4 {
		t.Fatalf("the endpoint saw %d requests, want 4 (none retried)", n)
	}
}

// The endpoint applies the call, then the connection drops before its
// answer: outcome unknown, applied once, on a new connection and on one
// kept from an earlier call (where net/http would resend a request it
// took for idempotent).
func TestDroppedAfterTheCallRan(t *testing.T) {
	var mu sync.Mutex
	applied := map[string]int{}
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		mu.Lock()
		applied[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		if r.URL.Path == "/api/drop" {
			drop(w)
			return
		}
		io.WriteString(w, `{"filed":true}`)
	})
	count := func(c agent.TargetCall) int {
		mu.Lock()
		defer mu.Unlock()
		return applied[`"`+c.EffectRef+`"`]
	}
	t.Run("new connection", func(t *testing.T) {
		tg := newTarget(t, e, httpstarget.Config{HTTPClient: &http.Client{Transport: e.Client().Transport.(*http.Transport).Clone()}})
		c := call("drop", `{"to":"court"}`)
		_, err := tg.Call(context.Background(), c)
		wantClass(t, err, "unknown")
		if n := count(c); n != 1 {
			t.Fatalf("applied %d times, want once", n)
		}
	})
	t.Run("kept-alive connection", func(t *testing.T) {
		tg := newTarget(t, e, httpstarget.Config{HTTPClient: &http.Client{Transport: e.Client().Transport.(*http.Transport).Clone()}})
		if _, err := tg.Call(context.Background(), call("file", `{}`)); err != nil {
			t.Fatal(err)
		}
		c := call("drop", `{"to":"court"}`)
		_, err := tg.Call(context.Background(), c)
		wantClass(t, err, "unknown")
		if n := count(c); n != 1 {
			t.Fatalf("applied %d times, want once", n)
		}
		if _, err := tg.Call(context.Background(), call("file", `{}`)); err != nil {
			t.Fatalf("the call after the drop: %v", err)
		}
	})
}

func TestNothingListening(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	tg, err := httpstarget.New(httpstarget.Config{Name: "court", URL: "https://" + addr + "/api", Auth: remote.Auth{Kind: remote.AuthNone}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tg.Call(context.Background(), call("filings", `{}`))
	wantClass(t, err, "unreachable")
	if !strings.Contains(err.Error(), `"court"`) || !strings.Contains(err.Error(), "not sent") {
		t.Fatalf("error %q: want the server's name and \"not sent\"", err)
	}
}

// A redirect is an answer after the call was sent ("created, see there"):
// outcome unknown, whatever the catalog says of 4xx answers. Its target is
// never reached, so neither the call nor the token (which goes to the base
// URL's origin only) leaves for another origin.
func TestRedirectNotFollowed(t *testing.T) {
	elsewhere := newEndpoint(t, nil)
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		var status int
		fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/api/s"), "%d", &status)
		http.Redirect(w, r, elsewhere.URL+"/api/filings", status)
	})
	sec := &fakeSecrets{get: func(context.Context, string) (string, error) { return "tok-1", nil }}
	tg := newTarget(t, e, httpstarget.Config{FinalClientErrors: true, Auth: remote.Auth{Kind: remote.AuthBearer, TokenSecretID: "court/token"}, Secrets: sec})
	for _, status := range []int{301, 302, 303, 307, 308} {
		_, err := tg.Call(context.Background(), call(fmt.Sprintf("s%d", status), `{}`))
		wantClass(t, err, "unknown")
	}
	if got := e.requests()[0].Header.Get("Authorization"); got != "Bearer tok-1" {
		t.Fatalf("the system got Authorization %q", got)
	}
	if n := len(elsewhere.requests()); n != 0 {
		t.Fatalf("the redirect's target was reached %d times", n)
	}
}

// An answer past MaxResponseBytes is not read further: the call ran, so it
// is a result that says so. The endpoint tries to write 1 GiB and is cut
// off long before.
func TestAnswerTooLarge(t *testing.T) {
	const bound, huge = 1 << 10, 1 << 30
	type outcome struct {
		written int64
		err     error
	}
	done := make(chan outcome, 1)
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		chunk := []byte(`["` + strings.Repeat("x", 32<<10-4) + `",`)
		var o outcome
		for o.written < huge && o.err == nil {
			var n int
			n, o.err = w.Write(chunk)
			o.written += int64(n)
		}
		done <- o
	})
	tg := newTarget(t, e, httpstarget.Config{MaxResponseBytes: bound})
	res, err := tg.Call(context.Background(), call("export", `{}`))
	if err != nil || res.IsError || string(res.Content) != `{"http_status":200,"answer_too_large":true}` {
		t.Fatalf("result %s (isError %v), err %v", res.Content, res.IsError, err)
	}
	o := <-done
	if o.err == nil || o.written >= huge {
		t.Fatalf("the endpoint wrote %d bytes (err %v): the answer was read on", o.written, o.err)
	}
}

// A tool that is not a plain path under the base URL is refused before
// anything is sent.
func TestPathEscapesRefused(t *testing.T) {
	e := newEndpoint(t, nil)
	tg := newTarget(t, e, httpstarget.Config{})
	for _, tool := range []string{
		"", ".", "..", "../admin", "a/../../admin", "a/./b", "/abs", "a/", "a//b",
		"//evil.example/x", "https://evil.example/x", "evil.example:443/x", "a?x=1", "a#f", "a;p=1",
		"a%2Fb", "%2e%2e/admin", "a%00", `a\b`, "a b", "a\n", "caf\u00e9", "a@evil.example",
	} {
		_, err := tg.Call(context.Background(), call(tool, `{}`))
		wantClass(t, err, "unreachable")
		if !strings.Contains(err.Error(), "nothing sent") {
			t.Errorf("%q: error %q should say nothing was sent", tool, err)
		}
	}
	if n := len(e.requests()); n != 0 {
		t.Fatalf("%d requests reached the endpoint, want none", n)
	}
}

// A call that could not be what counsel signed, or whose ids a header
// cannot carry, is refused before anything is sent.
func TestInvalidCallsRefused(t *testing.T) {
	e := newEndpoint(t, nil)
	tg := newTarget(t, e, httpstarget.Config{})
	for name, edit := range map[string]func(*agent.TargetCall){
		"input not JSON":       func(c *agent.TargetCall) { c.Input = []byte(`{"a":`) },
		"input not an object":  func(c *agent.TargetCall) { c.Input = []byte(`[1]`) },
		"no effect_ref":        func(c *agent.TargetCall) { c.EffectRef = "" },
		"no firm":              func(c *agent.TargetCall) { c.FirmID = "" },
		"no run":               func(c *agent.TargetCall) { c.RunID = "" },
		"effect_ref non-ASCII": func(c *agent.TargetCall) { c.EffectRef = "caf\u00e9" },
		"matter with a CRLF":   func(c *agent.TargetCall) { c.MatterID = "m\r\nX-Evil: 1" },
	} {
		c := call("filings", `{}`)
		edit(&c)
		_, err := tg.Call(context.Background(), c)
		if class(err) != "unreachable" {
			t.Errorf("%s: class %s (%v), want unreachable", name, class(err), err)
		}
	}
	if n := len(e.requests()); n != 0 {
		t.Fatalf("%d requests reached the endpoint, want none", n)
	}

	// Quotes and backslashes are escaped, not refused.
	c := call("filings", `{}`)
	c.EffectRef = `a"b\c`
	if _, err := tg.Call(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if got := e.requests()[0].Header.Get("Idempotency-Key"); got != `"a\"b\\c"` {
		t.Fatalf("Idempotency-Key %s, want \"a\\\"b\\\\c\"", got)
	}
}

// A canceled call that had not left is unreachable; one canceled after the
// endpoint applied it is unknown. Both match the context's error.
func TestContextEnds(t *testing.T) {
	applied := make(chan struct{}, 1)
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		applied <- struct{}{}
		<-r.Context().Done() // the client went away
		// and it answers nothing: a 200 written now could still race the
		// client's own cancellation to it on a loaded machine.
		panic(http.ErrAbortHandler)
	})
	tg := newTarget(t, e, httpstarget.Config{})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tg.Call(ctx, call("slow", `{}`))
	wantClass(t, err, "unreachable")
	if !errors.Is(err, context.Canceled) || len(e.requests()) != 0 {
		t.Fatalf("err = %v after %d requests, want context.Canceled and none", err, len(e.requests()))
	}

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-applied
		cancel()
	}()
	_, err = tg.Call(ctx, call("slow", `{}`))
	wantClass(t, err, "unknown")
	if !errors.Is(err, context.Canceled) || len(e.requests()) != 1 {
		t.Fatalf("err = %v after %d requests, want context.Canceled and one", err, len(e.requests()))
	}

	// A token that cannot be had before the call is canceled: nothing leaves.
	reading := make(chan struct{})
	blocked := &fakeSecrets{get: func(ctx context.Context, _ string) (string, error) {
		close(reading)
		<-ctx.Done()
		return "", ctx.Err()
	}}
	tb := newTarget(t, e, httpstarget.Config{Auth: remote.Auth{Kind: remote.AuthBearer, TokenSecretID: "court/token"}, Secrets: blocked})
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-reading
		cancel()
	}()
	_, err = tb.Call(ctx, call("filings", `{}`))
	wantClass(t, err, "unreachable")
	if !errors.Is(err, context.Canceled) || len(e.requests()) != 1 {
		t.Fatalf("err = %v after %d requests, want context.Canceled and no more", err, len(e.requests()))
	}
}

// 64 calls at once through one target: each answered, each applied once.
func TestConcurrentCalls(t *testing.T) {
	var mu sync.Mutex
	keys := map[string]int{}
	e := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		mu.Lock()
		keys[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		w.Write(body) // the answer echoes the input
	})
	tg := newTarget(t, e, httpstarget.Config{})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			in := fmt.Sprintf(`{"matter_id":"m-%d"}`, i)
			res, err := tg.Call(context.Background(), call("filings", in))
			if err == nil && string(res.Content) != in {
				err = fmt.Errorf("call %d: result %s", i, res.Content)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(keys) != 64 {
		t.Fatalf("%d idempotency keys reached the endpoint, want 64", len(keys))
	}
	for k, n := range keys {
		if n != 1 {
			t.Fatalf("key %s applied %d times", k, n)
		}
	}
}

// An endpoint that refuses a call before reading it (413 on a body far
// larger than any socket buffer) did not run it: unreachable, even though
// its 4xx answers are not final. (Whether the client sees the 413 or its
// write failing first, the request was not wholly sent.)
func TestRefusedBeforeTheCallWasSent(t *testing.T) {
	e := &endpoint{Server: httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
	}))}
	t.Cleanup(e.Close)
	tg := newTarget(t, e, httpstarget.Config{})
	_, err := tg.Call(context.Background(), call("filings", `{"blob":"`+strings.Repeat("x", 64<<20)+`"}`))
	wantClass(t, err, "unreachable")
}
