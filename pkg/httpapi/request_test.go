package httpapi

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

func TestBody(t *testing.T) {
	const limit = DefaultMaxBodyBytes
	b64 := base64.StdEncoding.EncodeToString
	tests := []struct {
		name string
		cfg  Config
		req  events.APIGatewayV2HTTPRequest
		want string       // decoded body when kind is ""
		kind failure.Kind // expected error kind
		msg  string       // substring of the error
	}{
		{name: "plain", req: events.APIGatewayV2HTTPRequest{Body: `{"a":1}`}, want: `{"a":1}`},
		{name: "base64", req: events.APIGatewayV2HTTPRequest{Body: b64([]byte(`{"a":1}`)), IsBase64Encoded: true}, want: `{"a":1}`},
		{name: "base64 with line breaks", req: events.APIGatewayV2HTTPRequest{Body: "eyJh\r\nIjox\nfQ==", IsBase64Encoded: true}, want: `{"a":1}`},
		{name: "empty", req: events.APIGatewayV2HTTPRequest{}, kind: failure.KindInvalidRequest, msg: "request body is required"},
		{name: "empty base64", req: events.APIGatewayV2HTTPRequest{IsBase64Encoded: true}, kind: failure.KindInvalidRequest, msg: "request body is required"},
		{name: "base64 of nothing but a newline", req: events.APIGatewayV2HTTPRequest{Body: "\n", IsBase64Encoded: true}, kind: failure.KindInvalidRequest, msg: "request body is required"},
		{name: "invalid base64", req: events.APIGatewayV2HTTPRequest{Body: "not base64!", IsBase64Encoded: true}, kind: failure.KindInvalidRequest, msg: "not valid base64"},
		{name: "exactly the limit", req: events.APIGatewayV2HTTPRequest{Body: strings.Repeat("x", limit)}, want: strings.Repeat("x", limit)},
		{name: "limit + 1", req: events.APIGatewayV2HTTPRequest{Body: strings.Repeat("x", limit+1)}, kind: failure.KindPayloadTooLarge, msg: "262144 bytes"},
		{name: "base64 exactly the limit", req: events.APIGatewayV2HTTPRequest{Body: b64([]byte(strings.Repeat("x", limit))), IsBase64Encoded: true}, want: strings.Repeat("x", limit)},
		// limit+1 decoded bytes: the length check alone cannot prove oversize, so this exercises the post-decode check.
		{name: "base64 limit + 1", req: events.APIGatewayV2HTTPRequest{Body: b64([]byte(strings.Repeat("x", limit+1))), IsBase64Encoded: true}, kind: failure.KindPayloadTooLarge},
		{name: "base64 300 KiB", req: events.APIGatewayV2HTTPRequest{Body: b64([]byte(strings.Repeat("x", 300<<10))), IsBase64Encoded: true}, kind: failure.KindPayloadTooLarge},
		// Invalid base64 that is too long: refused on length, so before decoding.
		{name: "oversize rejected before decoding", req: events.APIGatewayV2HTTPRequest{Body: strings.Repeat("!", 4*(limit/3+2)), IsBase64Encoded: true}, kind: failure.KindPayloadTooLarge},
		{name: "custom limit", cfg: Config{MaxBodyBytes: 4}, req: events.APIGatewayV2HTTPRequest{Body: "12345"}, kind: failure.KindPayloadTooLarge, msg: "exceeds 4 bytes"},
		{name: "custom limit base64 boundary", cfg: Config{MaxBodyBytes: 4}, req: events.APIGatewayV2HTTPRequest{Body: b64([]byte("1234")), IsBase64Encoded: true}, want: "1234"},
		{name: "custom limit base64 over", cfg: Config{MaxBodyBytes: 4}, req: events.APIGatewayV2HTTPRequest{Body: b64([]byte("12345")), IsBase64Encoded: true}, kind: failure.KindPayloadTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.cfg.Body(tc.req)
			if tc.kind == "" {
				if err != nil {
					t.Fatalf("Body: %v", err)
				}
				if string(got) != tc.want {
					t.Fatalf("Body = %.40q (%d bytes), want %.40q (%d bytes)", got, len(got), tc.want, len(tc.want))
				}
				return
			}
			if k := kindOf(err); err == nil || k != tc.kind {
				t.Fatalf("Body err = %v (kind %s), want kind %s", err, k, tc.kind)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not contain %q", err, tc.msg)
			}
		})
	}
}

type target struct {
	Name  string     `json:"name"`
	Count int        `json:"count"`
	Note  string     `json:"note,omitempty"`
	At    *time.Time `json:"at,omitempty"`
}

func TestDecodeBody(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		detail string // "" means success
	}{
		{"valid", `{"name":"a","count":1}`, ""},
		{"duplicate key", `{"name":"a","count":1,"name":"b"}`, "field name: duplicate key"},
		{"case-variant key", `{"Name":"a","count":1}`, "field Name: unknown field"},
		{"unknown field", `{"name":"a","count":1,"extra":true}`, "field extra: unknown field"},
		{"trailing data", `{"name":"a","count":1} {}`, "invalid JSON: trailing data"},
		{"wrong type", `{"name":"PRIVILEGED-NAME","count":"PRIVILEGED-COUNT"}`, "field count: wrong type"},
		{"missing required", `{"name":"a"}`, "field count: required field is missing"},
		{"empty body", ``, "request body is required"},
		{"not JSON", `PRIVILEGED`, "invalid JSON"},
		{"bad null", `{"name":null,"count":1}`, "field name: must not be null"},
		{"deep nesting", `{"name":"a","count":1,"note":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`, "nested deeper"},
		// time.Time's own error quotes the value; the detail must not.
		// A number a double cannot hold is refused before any field sees it
		// (it would hash ambiguously); the detail names the path, not the value.
		{"number out of range", `{"name":"a","count":123456789012345678901234567890}`, "field count: number a double cannot hold exactly"},
		{"fraction into int", `{"name":"a","count":3.25}`, "field count: wrong type or out of range"},
		{"self-decoding type", `{"name":"a","count":1,"at":"PRIVILEGED-DATE"}`, "invalid JSON: a value is not valid for its field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var v target
			err := Config{}.DecodeBody(events.APIGatewayV2HTTPRequest{Body: tc.body}, &v)
			if tc.detail == "" {
				if err != nil || v.Name != "a" || v.Count != 1 {
					t.Fatalf("DecodeBody = %+v, %v", v, err)
				}
				return
			}
			if kindOf(err) != failure.KindInvalidRequest {
				t.Fatalf("DecodeBody err = %v, want invalid_request", err)
			}
			resp := Responder{Logger: failure.NewLogger(&strings.Builder{})}.Error(t.Context(), err, failure.StageRequest,
				failure.Identity{CorrelationID: userID})
			p := problemOf(t, resp)
			if resp.StatusCode != 400 || p.Status != 400 || p.Kind != failure.KindInvalidRequest {
				t.Errorf("status %d, problem %+v", resp.StatusCode, p)
			}
			if !strings.Contains(p.Detail, tc.detail) {
				t.Errorf("detail %q does not contain %q", p.Detail, tc.detail)
			}
			if strings.Contains(resp.Body, "PRIVILEGED") || strings.Contains(resp.Body, "3.25") || strings.Contains(resp.Body, "1234567890") {
				t.Errorf("problem echoes a body value: %s", resp.Body)
			}
		})
	}
}

func TestDecodeBodyContentType(t *testing.T) {
	tests := []struct {
		headers map[string]string
		ok      bool
	}{
		{nil, true},
		{map[string]string{"content-type": "application/json"}, true},
		{map[string]string{"content-type": "application/json; charset=utf-8"}, true},
		{map[string]string{"content-type": "Application/JSON; Charset=UTF-8"}, true},
		{map[string]string{"Content-Type": "application/json"}, true},
		{map[string]string{"CONTENT-TYPE": "application/json;charset=\"utf-8\""}, true},
		{map[string]string{"content-type": ""}, true},
		{map[string]string{"content-type": "text/plain"}, false},
		{map[string]string{"Content-Type": "text/plain"}, false},
		{map[string]string{"content-type": "application/json; charset=latin1"}, false},
		{map[string]string{"content-type": "application/jsonx"}, false},
		{map[string]string{"content-type": "application/x-www-form-urlencoded"}, false},
		// API Gateway joins repeated headers with commas.
		{map[string]string{"content-type": "application/json,text/plain"}, false},
		{map[string]string{"content-type": "application/json; charset"}, false},
	}
	for _, tc := range tests {
		var v target
		err := Config{}.DecodeBody(events.APIGatewayV2HTTPRequest{Headers: tc.headers, Body: `{"name":"a","count":1}`}, &v)
		if tc.ok != (err == nil) {
			t.Errorf("headers %v: err = %v, want ok=%v", tc.headers, err, tc.ok)
		}
		if err != nil && (kindOf(err) != failure.KindInvalidRequest || !strings.Contains(err.Error(), "Content-Type")) {
			t.Errorf("headers %v: err = %v, want invalid_request naming Content-Type", tc.headers, err)
		}
	}
}

func TestDecodeBodyNeedsPointer(t *testing.T) {
	err := Config{}.DecodeBody(events.APIGatewayV2HTTPRequest{Body: `{}`}, target{})
	if kindOf(err) != failure.KindInternal {
		t.Fatalf("err = %v, want internal (a programming error, not the client's)", err)
	}
}

func TestPathUUID(t *testing.T) {
	tests := []struct {
		params map[string]string
		ok     bool
	}{
		{map[string]string{"run_id": firmID}, true},
		{nil, false},
		{map[string]string{"run_id": ""}, false},
		{map[string]string{"run_id": strings.ToUpper(firmID)}, false},
		{map[string]string{"run_id": "../../etc"}, false},
		{map[string]string{"other": firmID}, false},
	}
	for _, tc := range tests {
		got, err := PathUUID(events.APIGatewayV2HTTPRequest{PathParameters: tc.params}, "run_id")
		if tc.ok {
			if err != nil || got != firmID {
				t.Errorf("%v: PathUUID = %q, %v", tc.params, got, err)
			}
			continue
		}
		if kindOf(err) != failure.KindInvalidRequest || !strings.Contains(err.Error(), "path parameter run_id must be a canonical lowercase UUID") {
			t.Errorf("%v: err = %v", tc.params, err)
		}
	}
}

func TestQueryInt(t *testing.T) {
	tests := []struct {
		val  *string
		want int64
		ok   bool
	}{
		{nil, 50, true},
		{ptr("1"), 1, true},
		{ptr("100"), 100, true},
		{ptr("0"), 0, false},
		{ptr("101"), 0, false},
		{ptr(""), 0, false},
		{ptr("abc"), 0, false},
		{ptr("+5"), 0, false},
		{ptr("007"), 0, false},
		{ptr("5.0"), 0, false},
		{ptr("1,2"), 0, false}, // ?limit=1&limit=2 as API Gateway delivers it
		{ptr("99999999999999999999"), 0, false},
	}
	for _, tc := range tests {
		req := events.APIGatewayV2HTTPRequest{}
		if tc.val != nil {
			req.QueryStringParameters = map[string]string{"limit": *tc.val}
		}
		got, err := QueryInt(req, "limit", 50, 1, 100)
		if tc.ok {
			if err != nil || got != tc.want {
				t.Errorf("limit=%v: %d, %v; want %d", deref(tc.val), got, err, tc.want)
			}
			continue
		}
		if kindOf(err) != failure.KindInvalidRequest || err.Error() != "invalid_request: query parameter limit must be an integer from 1 to 100" {
			t.Errorf("limit=%v: err = %v", deref(tc.val), err)
		}
	}
	// after_seq: zero allowed, the whole int64 range above it.
	got, err := QueryInt(events.APIGatewayV2HTTPRequest{QueryStringParameters: map[string]string{"after_seq": "9223372036854775807"}},
		"after_seq", 0, 0, 1<<63-1)
	if err != nil || got != 1<<63-1 {
		t.Errorf("after_seq max: %d, %v", got, err)
	}
}

func TestQueryEnum(t *testing.T) {
	tests := []struct {
		val  *string
		want string
		ok   bool
	}{
		{nil, "eventual", true},
		{ptr("strong"), "strong", true},
		{ptr("eventual"), "eventual", true},
		{ptr("Strong"), "", false},
		{ptr(""), "", false},
		{ptr("strong,eventual"), "", false},
	}
	for _, tc := range tests {
		req := events.APIGatewayV2HTTPRequest{}
		if tc.val != nil {
			req.QueryStringParameters = map[string]string{"consistent": *tc.val}
		}
		got, err := QueryEnum(req, "consistent", "eventual", "strong", "eventual")
		if tc.ok {
			if err != nil || got != tc.want {
				t.Errorf("consistent=%v: %q, %v", deref(tc.val), got, err)
			}
			continue
		}
		if kindOf(err) != failure.KindInvalidRequest || !strings.Contains(err.Error(), "query parameter consistent must be one of: strong, eventual") {
			t.Errorf("consistent=%v: err = %v", deref(tc.val), err)
		}
	}
}

func TestRejectUnknownQuery(t *testing.T) {
	allowed := []string{"after_seq", "limit"}
	tests := []struct {
		params  map[string]string
		allowed []string
		msg     string // "" means accepted
	}{
		{nil, allowed, ""},
		{map[string]string{"limit": "5", "after_seq": "1"}, allowed, ""},
		{map[string]string{"limt": "5"}, allowed, "unknown query parameter limt; allowed: after_seq, limit"},
		{map[string]string{"zz": "1", "aa": "1", "limit": "1"}, allowed, "unknown query parameter aa;"},
		{map[string]string{"<script>PRIVILEGED</script>": "1"}, allowed, "unknown query parameter; allowed: after_seq, limit"},
		{map[string]string{"x": "1"}, nil, "unknown query parameter x; this endpoint takes none"},
	}
	for _, tc := range tests {
		err := RejectUnknownQuery(events.APIGatewayV2HTTPRequest{QueryStringParameters: tc.params}, tc.allowed...)
		if tc.msg == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.params, err)
			}
			continue
		}
		if kindOf(err) != failure.KindInvalidRequest || !strings.Contains(err.Error(), tc.msg) || strings.Contains(err.Error(), "PRIVILEGED") {
			t.Errorf("%v: err = %v, want %q", tc.params, err, tc.msg)
		}
	}
}

func TestCorrelationID(t *testing.T) {
	tests := []struct {
		headers map[string]string
		echo    bool
	}{
		{map[string]string{"x-correlation-id": userID}, true},
		{map[string]string{"X-Correlation-Id": userID}, true},
		{nil, false},
		{map[string]string{"x-correlation-id": ""}, false},
		{map[string]string{"x-correlation-id": strings.ToUpper(userID)}, false},
		{map[string]string{"x-correlation-id": "req-123\nFAKE LOG LINE"}, false},
		{map[string]string{"x-correlation-id": userID + "," + firmID}, false},
	}
	for _, tc := range tests {
		got := CorrelationID(events.APIGatewayV2HTTPRequest{Headers: tc.headers})
		if tc.echo {
			if got != userID {
				t.Errorf("%v: got %q, want the caller's id", tc.headers, got)
			}
			continue
		}
		u, err := uuid.Parse(got)
		if err != nil || u.Version() != 4 || u.String() != got || got == userID {
			t.Errorf("%v: got %q, want a fresh canonical UUIDv4", tc.headers, got)
		}
	}
}

func ptr(s string) *string { return &s }

func deref(s *string) string {
	if s == nil {
		return "<absent>"
	}
	return *s
}
