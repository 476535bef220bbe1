package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/internal/rie"
	"github.com/seed-f6d3920e/warrant/internal/walkthrough"
	"github.com/seed-f6d3920e/warrant/pkg/desk"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// Dev identity: LOCAL ONLY. API Gateway's JWT authorizer verifies a token
// and passes its claims; the local gateway verifies nothing and takes the
// claims from these headers instead (or the defaults below). The default is
// the dev firm's associate, never counsel: a request that does not ask for
// counsel (X-Dev-Roles: counsel) cannot sign a warrant. X-Dev-Name is the
// display name (the token's "name" claim), absent when the header is: the
// functions show it and record it, never authorize by it.
const (
	HeaderDevFirm  = "X-Dev-Firm"
	HeaderDevUser  = "X-Dev-User"
	HeaderDevRoles = "X-Dev-Roles"
	HeaderDevName  = "X-Dev-Name"

	DevFirm  = walkthrough.Firm
	DevUser  = walkthrough.Associate
	DevRoles = "associate"
)

// The dev identities' display names (the desk sends them as X-Dev-Name).
const (
	DevCounselName   = "Casey Counsel"
	DevAssociateName = "Avery Associate"
)

// DevDeskConfig is the desk's local sign-in: the dev firm, an associate and
// counsel (the walkthrough's identities), with their display names.
func DevDeskConfig() *desk.Config {
	return &desk.Config{Auth: "dev", FirmID: DevFirm, Identities: []desk.Identity{
		{Label: "Counsel", UserID: walkthrough.Counsel, Name: DevCounselName, Roles: "counsel"},
		{Label: "Associate", UserID: walkthrough.Associate, Name: DevAssociateName, Roles: "associate"},
	}}
}

// maxBody is API Gateway's payload limit.
const maxBody = 10 << 20

// Gateway is the local HTTP API: the template's routes, each request turned
// into an API Gateway v2 (payload format 2.0) event for its function's
// emulator.
type Gateway struct {
	Routes    []Route
	Emulators map[string]*rie.Emulator
	// Claims names the firm and roles claims per function (its FIRM_CLAIM
	// and ROLES_CLAIM); the user is always "sub".
	Claims map[string][2]string
	// IntegrationTimeout is API Gateway's: after it the client gets 503,
	// the invocation goes on. Default 30 s.
	IntegrationTimeout time.Duration
	// Invoked is called after each invocation with the caller's firm and
	// the response payload (nil when the invocation failed).
	Invoked   func(fn, firm string, req *events.APIGatewayV2HTTPRequest, resp *events.APIGatewayV2HTTPResponse)
	AccessLog io.Writer // one line per request
	ErrorLog  io.Writer // invocation failures
	// DevDesk (LOCAL ONLY) answers GET /desk/config.json in place of the
	// runs function: the desk's dev sign-in form, whose identities become
	// the X-Dev-* headers above. Nil: the function answers.
	DevDesk *desk.Config

	logMu sync.Mutex
}

func (g *Gateway) logf(w io.Writer, format string, args ...any) {
	if w == nil {
		return
	}
	g.logMu.Lock()
	defer g.logMu.Unlock()
	fmt.Fprintf(w, format+"\n", args...)
}

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	reqID := newRequestID()
	w.Header().Set("Apigw-Requestid", reqID)
	if err := fromThisMachine(r); err != nil {
		writeProblem(w, err)
		g.logf(g.AccessLog, "%s %s %s -> 403 refused: %v (%s)", start.Format(time.RFC3339Nano), r.Method, r.URL.RequestURI(), err, time.Since(start).Round(time.Millisecond))
		return
	}
	if g.DevDesk != nil && r.Method == http.MethodGet && r.URL.Path == "/desk/config.json" {
		resp := desk.Serve("config.json", *g.DevDesk)
		for k, v := range resp.Headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(resp.Status)
		io.WriteString(w, resp.Body)
		g.logf(g.AccessLog, "%s %s %s -> %d dev desk config (%s)", start.Format(time.RFC3339Nano), r.Method, r.URL.RequestURI(), resp.Status, time.Since(start).Round(time.Millisecond))
		return
	}
	route, params := match(g.Routes, r.Method, r.URL.Path)
	if route == nil {
		writeProblem(w, failure.New(failure.KindNotFound, "no route for "+r.Method+" "+r.URL.Path))
		g.logf(g.AccessLog, "%s %s %s -> 404 no route (%s)", start.Format(time.RFC3339Nano), r.Method, r.URL.RequestURI(), time.Since(start).Round(time.Millisecond))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		writeProblem(w, failure.Wrap(failure.KindInvalidRequest, "request body could not be read", err))
		return
	}
	if len(body) > maxBody {
		writeProblem(w, failure.New(failure.KindPayloadTooLarge, "request body exceeds 10 MiB"))
		return
	}
	claims := g.Claims[route.Function]
	if claims[0] == "" {
		claims[0] = "firm_id"
	}
	if claims[1] == "" {
		claims[1] = "roles"
	}
	ev := toEvent(r, route, params, body, reqID, start, claims[0], claims[1])
	firm := ev.RequestContext.Authorizer.JWT.Claims[claims[0]]
	payload, err := json.Marshal(ev)
	if err != nil {
		writeProblem(w, failure.Wrap(failure.KindInternal, "", err))
		return
	}
	emu := g.Emulators[route.Function]
	timeout := g.IntegrationTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		// Not the request's context: like Lambda behind API Gateway, an
		// invocation runs to its end even when the client has gone.
		out, err := emu.Invoke(context.Background(), payload)
		var resp *events.APIGatewayV2HTTPResponse
		if err == nil {
			resp = decodeResponse(out)
		}
		if g.Invoked != nil {
			g.Invoked(route.Function, firm, &ev, resp)
		}
		done <- result{out, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(timeout):
		writeGatewayError(w, http.StatusServiceUnavailable, "Service Unavailable")
		g.logf(g.ErrorLog, "api: %s: no answer from lambda %s within %s (503; the invocation goes on)", route.Key(), route.Function, timeout)
		g.logf(g.AccessLog, "%s %s %s -> 503 integration timeout (%s)", start.Format(time.RFC3339Nano), r.Method, r.URL.RequestURI(), time.Since(start).Round(time.Millisecond))
		return
	}
	if res.err != nil {
		// API Gateway answers a function error with a bare 500.
		writeGatewayError(w, http.StatusInternalServerError, "Internal Server Error")
		g.logf(g.ErrorLog, "api: %s: lambda %s failed: %v (see %s.log)", route.Key(), route.Function, res.err, route.Function)
		g.logf(g.AccessLog, "%s %s %s -> 500 lambda error (%s)", start.Format(time.RFC3339Nano), r.Method, r.URL.RequestURI(), time.Since(start).Round(time.Millisecond))
		return
	}
	status := writeResponse(w, res.out)
	g.logf(g.AccessLog, "%s %s %s -> %d %s (%s)", start.Format(time.RFC3339Nano), r.Method, r.URL.RequestURI(), status, route.Function, time.Since(start).Round(time.Millisecond))
}

// fromThisMachine refuses what a web page could make a browser send to the
// local stack, which holds a dev identity for anyone who asks and may point
// at a real table and real Bedrock:
//
//   - a Host that is not a loopback name (127.0.0.1, localhost or [::1], any
//     port): a page that rebinds its own DNS name to 127.0.0.1 reaches this
//     port as same-origin, but its requests carry its name in Host;
//   - an Origin other than this gateway's own (http:// and the Host): a
//     cross-site page's fetch or form post says where it comes from.
//
// A cross-site GET can still arrive without Origin (an image, a link); it
// changes nothing and, with no CORS headers, the page cannot read the answer.
// The problem names the header, never its value.
func fromThisMachine(r *http.Request) error {
	name := r.Host
	if h, _, err := net.SplitHostPort(r.Host); err == nil {
		name = h
	}
	switch strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")) {
	case "127.0.0.1", "localhost", "::1":
	default:
		return failure.New(failure.KindForbidden, "header Host must name this machine's loopback (127.0.0.1, localhost or [::1]): the local gateway serves nothing else")
	}
	if origins, ok := r.Header["Origin"]; ok && (len(origins) != 1 || !strings.EqualFold(origins[0], "http://"+r.Host)) {
		return failure.New(failure.KindForbidden, "header Origin is not the local gateway's own origin: it answers no other site's pages")
	}
	return nil
}

// toEvent renders r as API Gateway's payload format 2.0, with the dev
// claims as the JWT authorizer's.
func toEvent(r *http.Request, route *Route, params map[string]string, body []byte, reqID string, now time.Time, firmClaim, rolesClaim string) events.APIGatewayV2HTTPRequest {
	if firmClaim == "" {
		firmClaim = "firm_id"
	}
	if rolesClaim == "" {
		rolesClaim = "roles"
	}
	headers := map[string]string{}
	var cookies []string
	for k, vs := range r.Header {
		lk := strings.ToLower(k)
		switch lk {
		case "x-dev-firm", "x-dev-user", "x-dev-roles", "x-dev-name":
			continue // local identity, not a header the function would see
		case "cookie":
			for _, v := range vs {
				for _, c := range strings.Split(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		headers[lk] = strings.Join(vs, ",")
	}
	if r.Host != "" {
		headers["host"] = r.Host
	}
	sourceIP := r.RemoteAddr
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		sourceIP = h
	}
	headers["x-forwarded-for"] = sourceIP
	headers["x-forwarded-proto"] = "http"
	if len(body) > 0 {
		headers["content-length"] = strconv.Itoa(len(body))
	}
	var query map[string]string
	if q := r.URL.Query(); len(q) > 0 {
		query = map[string]string{}
		for k, vs := range q {
			query[k] = strings.Join(vs, ",")
		}
	}
	var pathParams map[string]string
	if len(params) > 0 {
		pathParams = map[string]string{}
		for k, v := range params {
			if u, err := url.PathUnescape(v); err == nil {
				v = u
			}
			pathParams[k] = v
		}
	}
	firm, user := r.Header.Get(HeaderDevFirm), r.Header.Get(HeaderDevUser)
	if firm == "" {
		firm = DevFirm
	}
	if user == "" {
		user = DevUser
	}
	roles := devRoles(r.Header.Get(HeaderDevRoles))
	// The token the authorizer would have verified, carrying the claims:
	// the functions read the roles from it (httpapi.Config.Principal).
	// Unsigned: API Gateway checks signatures, the functions never do.
	token := map[string]any{
		"sub":      user,
		firmClaim:  firm,
		rolesClaim: roles,
		"iss":      devIssuer,
		"aud":      devAudience,
		"iat":      now.Unix(),
		"exp":      now.Add(time.Hour).Unix(),
	}
	claims := map[string]string{
		"sub":      user,
		firmClaim:  firm,
		rolesClaim: renderClaim(roles),
		"iss":      devIssuer,
		"aud":      devAudience,
		"iat":      strconv.FormatInt(now.Unix(), 10),
		"exp":      strconv.FormatInt(now.Add(time.Hour).Unix(), 10),
	}
	// The display name, as an identity provider's "name" claim: passed as
	// sent (the functions drop a name unfit to show); a header that is not
	// UTF-8 is no name at all.
	if name := strings.TrimSpace(r.Header.Get(HeaderDevName)); name != "" && utf8.ValidString(name) {
		token["name"], claims["name"] = name, name
	}
	headers["authorization"] = "Bearer " + unsignedJWT(token)
	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              route.Key(),
		RawPath:               r.URL.EscapedPath(),
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		PathParameters:        pathParams,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     route.Key(),
			AccountID:    "000000000000",
			Stage:        "$default",
			RequestID:    reqID,
			APIID:        "localapi",
			DomainName:   r.Host,
			DomainPrefix: strings.Split(r.Host, ".")[0],
			Time:         now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  sourceIP,
				UserAgent: r.UserAgent(),
			},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims},
			},
		},
	}
	if len(body) > 0 {
		if utf8.Valid(body) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	return ev
}

// The local token's issuer and audience.
const (
	devIssuer   = "http://localapi.invalid/"
	devAudience = "warrant-local"
)

// devRoles reads X-Dev-Roles: a JSON array of strings, taken exactly (the
// way to send a role with a space in it, ["associate counsel"]), or names
// separated by commas or spaces. Absent or blank: DevRoles. A value that
// starts like an array but is not one is passed on as a string, and the
// function refuses the token's malformed roles claim (401), as it would a
// real one.
func devRoles(h string) any {
	h = strings.TrimSpace(h)
	if h == "" {
		h = DevRoles
	}
	if strings.HasPrefix(h, "[") {
		var list []string
		if json.Unmarshal([]byte(h), &list) != nil || list == nil {
			return h
		}
		return list
	}
	return strings.FieldsFunc(h, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
}

// renderClaim is what API Gateway's payload format 2.0 makes of a claim: a
// string as it is, an array as its elements in brackets, separated by
// single spaces: ["counsel","associate"] is "[counsel associate]".
func renderClaim(v any) string {
	if list, ok := v.([]string); ok {
		return "[" + strings.Join(list, " ") + "]"
	}
	s, _ := v.(string)
	return s
}

// unsignedJWT is a compact JWT of payload with alg "none" and no signature.
func unsignedJWT(payload map[string]any) string {
	b, err := json.Marshal(payload)
	if err != nil {
		panic(err) // strings, string slices and integers always marshal
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc.EncodeToString(b) + "."
}

// decodeResponse reads a payload format 2.0 response; a payload without a
// statusCode is, as API Gateway infers it, a 200 JSON body.
func decodeResponse(out []byte) *events.APIGatewayV2HTTPResponse {
	var probe map[string]json.RawMessage
	if json.Unmarshal(out, &probe) == nil {
		if _, ok := probe["statusCode"]; ok {
			var resp events.APIGatewayV2HTTPResponse
			if json.Unmarshal(out, &resp) == nil {
				return &resp
			}
		}
	}
	return &events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "application/json"}, Body: string(out)}
}

func writeResponse(w http.ResponseWriter, out []byte) int {
	resp := decodeResponse(out)
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			writeGatewayError(w, http.StatusInternalServerError, "Internal Server Error")
			return http.StatusInternalServerError
		}
		body = b
	}
	status := resp.StatusCode
	if status < 100 || status > 599 {
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
	return status
}

// writeGatewayError is API Gateway's own error body.
func writeGatewayError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "{\"message\":%q}\n", msg)
}

// writeProblem answers the gateway's own errors (no route, body too large)
// as problem+json, the way the functions answer theirs.
func writeProblem(w http.ResponseWriter, err error) {
	env := failure.Build(err, failure.StageRequest, "localapi", failure.Identity{CorrelationID: uuid.NewString()})
	status, headers, body := failure.ProblemFrom(env)
	for k, v := range headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("X-Correlation-Id", env.CorrelationID)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func newRequestID() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// routeList renders the routes for the start-up banner.
func routeList(rs []Route) []string {
	width := 0
	for _, r := range rs {
		width = max(width, len(r.Path))
	}
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%-6s %-*s -> %s", r.Method, width, r.Path, r.Function)
	}
	sort.Strings(out)
	return out
}
