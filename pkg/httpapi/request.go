package httpapi

import (
	"encoding/base64"
	"errors"
	"mime"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// CorrelationHeader carries the caller's correlation id in and ours out.
const CorrelationHeader = "X-Correlation-Id"

// Body returns the decoded request body. The limit applies to the decoded
// bytes, and a base64 body whose length alone proves it too large is
// refused before anything is decoded or allocated.
func (c Config) Body(req events.APIGatewayV2HTTPRequest) ([]byte, error) {
	limit := c.withDefaults().MaxBodyBytes
	if !req.IsBase64Encoded {
		if req.Body == "" {
			return nil, errBodyRequired
		}
		if len(req.Body) > limit {
			return nil, tooLarge(limit)
		}
		return []byte(req.Body), nil
	}
	// Every 4 characters decode to 3 bytes, less at most 2 of padding; the
	// decoder skips CR and LF, so they carry nothing.
	n := len(req.Body) - strings.Count(req.Body, "\n") - strings.Count(req.Body, "\r")
	if n/4*3-2 > limit {
		return nil, tooLarge(limit)
	}
	data, err := base64.StdEncoding.DecodeString(req.Body)
	if err != nil {
		return nil, failure.Wrap(failure.KindInvalidRequest, "request body is not valid base64", err)
	}
	if len(data) == 0 {
		return nil, errBodyRequired
	}
	if len(data) > limit {
		return nil, tooLarge(limit)
	}
	return data, nil
}

var errBodyRequired = failure.New(failure.KindInvalidRequest, "request body is required")

func tooLarge(limit int) error {
	return failure.New(failure.KindPayloadTooLarge, "request body exceeds "+strconv.Itoa(limit)+" bytes")
}

// DecodeBody reads the body into v with contracts.DecodeStrict. The error
// detail is the FieldError's text, which names the JSON path and the reason
// but not the offending value (see safeDetail).
func (c Config) DecodeBody(req events.APIGatewayV2HTTPRequest, v any) error {
	if err := checkContentType(req.Headers); err != nil {
		return err
	}
	data, err := c.Body(req)
	if err != nil {
		return err
	}
	if err := contracts.DecodeStrict(data, v); err != nil {
		var fe *contracts.FieldError
		if errors.As(err, &fe) {
			return failure.Wrap(failure.KindInvalidRequest, safeDetail(fe), err)
		}
		return failure.Wrap(failure.KindInternal, "", err) // v is not a pointer: our bug
	}
	return nil
}

// strictReasons are the reasons contracts.DecodeStrict writes itself, none
// of which holds a value. Two of its paths pass encoding/json text through
// that can: a type that decodes itself (time.Time, any json.Unmarshaler)
// reports "parsing time \"<value>\" ...", and a number that does not fit
// (3.5 or 1e400 into an int) reports "wrong type: number 3.5 does not fit
// int". Any reason not listed is replaced, keeping the path: an unknown
// reason costs the client precision, never privacy.
var strictReasons = []string{
	"not valid UTF-8", "empty document", "trailing data", "invalid character",
	"expected ", "unexpected end", "unterminated", "nested deeper",
	"invalid number", "number with a leading zero", "invalid string escape",
	"control character", "duplicate key", "unknown field",
	"required field is missing", "must not be null", "wrong type: must be",
	"number a double cannot hold exactly", "unpaired UTF-16 surrogate escape",
}

// safeDetail is the client's (and the log's) text for fe. DecodeStrict
// names only short keys and renders any other key by its position (see
// contracts.FieldError), so the path holds no client text; a path of
// another form is dropped all the same, as an unknown reason is replaced.
func safeDetail(fe *contracts.FieldError) string {
	path := fe.Path
	if !contracts.ValidPath(path) {
		path = ""
	}
	for _, r := range strictReasons {
		if strings.HasPrefix(fe.Reason, r) {
			return (&contracts.FieldError{Path: path, Reason: fe.Reason}).Error()
		}
	}
	reason := "a value is not valid for its field"
	if strings.HasPrefix(fe.Reason, "wrong type") {
		reason = "wrong type or out of range"
	}
	return (&contracts.FieldError{Path: path, Reason: reason}).Error()
}

// checkContentType allows an absent Content-Type or application/json with
// parameters. The right status for anything else is 415, but the failure
// kinds are a closed list without one, so it is a 400 invalid_request whose
// detail says what to send. JSON is UTF-8 (RFC 8259 §8.1), so another
// charset is refused rather than misread.
func checkContentType(h map[string]string) error {
	v, ok := Header(h, "content-type")
	if !ok || strings.TrimSpace(v) == "" {
		return nil
	}
	mt, params, err := mime.ParseMediaType(v)
	if err == nil && mt == "application/json" {
		if cs, ok := params["charset"]; !ok || strings.EqualFold(cs, "utf-8") {
			return nil
		}
	}
	return failure.New(failure.KindInvalidRequest, "header Content-Type must be application/json (charset utf-8 if given)")
}

// Header looks a request header up by name, case-insensitively: API Gateway
// v2 lower-cases header names, but tests and other callers may not.
func Header(h map[string]string, name string) (string, bool) {
	name = strings.ToLower(name)
	if v, ok := h[name]; ok {
		return v, true
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// PathUUID returns path parameter name, which must be a canonical UUID.
func PathUUID(req events.APIGatewayV2HTTPRequest, name string) (string, error) {
	v := req.PathParameters[name]
	if !isCanonicalUUID(v) {
		return "", failure.New(failure.KindInvalidRequest, "path parameter "+name+" must be a canonical lowercase UUID")
	}
	return v, nil
}

// QueryInt returns query parameter name as an integer in [min, max], or def
// when it is absent. Only the plain decimal spelling is accepted ("7", not
// "+7" or "007"), and API Gateway joins a repeated parameter with commas,
// so repeating one is refused too.
func QueryInt(req events.APIGatewayV2HTTPRequest, name string, def, min, max int64) (int64, error) {
	v, ok := req.QueryStringParameters[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != v || n < min || n > max {
		return 0, failure.New(failure.KindInvalidRequest, "query parameter "+name+" must be an integer from "+
			strconv.FormatInt(min, 10)+" to "+strconv.FormatInt(max, 10))
	}
	return n, nil
}

// QueryEnum returns query parameter name, which must be one of allowed
// (exact match), or def when it is absent.
func QueryEnum(req events.APIGatewayV2HTTPRequest, name, def string, allowed ...string) (string, error) {
	v, ok := req.QueryStringParameters[name]
	if !ok {
		return def, nil
	}
	if !slices.Contains(allowed, v) {
		return "", failure.New(failure.KindInvalidRequest, "query parameter "+name+" must be one of: "+strings.Join(allowed, ", "))
	}
	return v, nil
}

// RejectUnknownQuery refuses any query parameter not in allowed, as strict
// decoding refuses unknown body members: a misspelt "limt" must not be
// silently ignored. The parameter is named only when its name is a short
// identifier, so arbitrary client text is never echoed.
func RejectUnknownQuery(req events.APIGatewayV2HTTPRequest, allowed ...string) error {
	var unknown []string
	for k := range req.QueryStringParameters {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown) // the same request always gets the same detail
	msg := "unknown query parameter"
	if isIdentifier(unknown[0]) {
		msg += " " + unknown[0]
	}
	if len(allowed) == 0 {
		msg += "; this endpoint takes none"
	} else {
		msg += "; allowed: " + strings.Join(allowed, ", ")
	}
	return failure.New(failure.KindInvalidRequest, msg)
}

func isIdentifier(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// CorrelationID returns the caller's x-correlation-id when it is a canonical
// UUID, and a fresh UUID otherwise: it is logged and echoed, so a client
// must not be able to put arbitrary text there.
func CorrelationID(req events.APIGatewayV2HTTPRequest) string {
	if v, ok := Header(req.Headers, "x-correlation-id"); ok && isCanonicalUUID(v) {
		return v
	}
	return uuid.NewString()
}
