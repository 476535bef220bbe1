package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

func problemOf(t *testing.T, resp events.APIGatewayV2HTTPResponse) failure.Problem {
	t.Helper()
	if ct := resp.Headers["Content-Type"]; ct != "application/problem+json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var p failure.Problem
	dec := json.NewDecoder(strings.NewReader(resp.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("problem body %q: %v", resp.Body, err)
	}
	return p
}

func TestJSON(t *testing.T) {
	resp := JSON(201, map[string]string{"run_id": firmID}, userID)
	if resp.StatusCode != 201 || resp.Body != `{"run_id":"`+firmID+`"}` || resp.IsBase64Encoded {
		t.Errorf("JSON = %+v", resp)
	}
	if resp.Headers["Content-Type"] != "application/json" || resp.Headers["X-Correlation-Id"] != userID {
		t.Errorf("headers = %v", resp.Headers)
	}

	// An unencodable value is our bug: a 500 problem, still correlated.
	resp = JSON(200, math.Inf(1), userID)
	if p := problemOf(t, resp); resp.StatusCode != 500 || p.Kind != failure.KindInternal || p.CorrelationID != userID ||
		resp.Headers["X-Correlation-Id"] != userID {
		t.Errorf("unencodable: %d %v %s", resp.StatusCode, resp.Headers, resp.Body)
	}
}

func TestNDJSON(t *testing.T) {
	lines := [][]byte{[]byte(`{"seq":1}`), []byte(`{"seq":2}`)}
	resp := NDJSON(200, lines, userID, map[string]string{
		"x-next-after-seq": "2",
		"content-type":     "text/html", // must not win
		"X-CORRELATION-ID": "spoofed",   // must not win
	})
	if resp.StatusCode != 200 || resp.Body != "{\"seq\":1}\n{\"seq\":2}\n" {
		t.Errorf("NDJSON = %d %q", resp.StatusCode, resp.Body)
	}
	want := map[string]string{"Cache-Control": "no-store", "Content-Type": "application/x-ndjson", "X-Correlation-Id": userID, "X-Next-After-Seq": "2"}
	if fmt.Sprint(resp.Headers) != fmt.Sprint(want) {
		t.Errorf("headers = %v, want %v", resp.Headers, want)
	}
	if empty := NDJSON(200, nil, userID, nil); empty.Body != "" {
		t.Errorf("no lines: body %q", empty.Body)
	}
}

func TestResponderError(t *testing.T) {
	const secret = "PRIVILEGED: client admitted liability in the draft"
	tests := []struct {
		name   string
		err    error
		status int
		kind   failure.Kind
		detail string
	}{
		{"wrapped safe message keeps it, hides the cause",
			failure.Wrap(failure.KindInvalidRequest, "field name: wrong type", errors.New(secret)), 400, failure.KindInvalidRequest, "field name: wrong type"},
		{"raw error becomes internal",
			fmt.Errorf("bedrock said: %s", secret), 500, failure.KindInternal, ""},
		{"unauthenticated", failure.New(failure.KindUnauthenticated, "claim firm_id is missing"), 401, failure.KindUnauthenticated, "claim firm_id is missing"},
		{"too large", failure.Wrap(failure.KindPayloadTooLarge, "request body exceeds 262144 bytes", errors.New(secret)), 413, failure.KindPayloadTooLarge, "262144"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			r := Responder{Logger: failure.NewLogger(&log), Component: "httpapi.test"}
			resp := r.Error(t.Context(), tc.err, failure.StageRequest, failure.Identity{FirmID: firmID, CorrelationID: userID})
			p := problemOf(t, resp)
			if resp.StatusCode != tc.status || p.Status != tc.status || p.Kind != tc.kind {
				t.Errorf("status %d, problem %+v", resp.StatusCode, p)
			}
			if !strings.Contains(p.Detail, tc.detail) {
				t.Errorf("detail %q does not contain %q", p.Detail, tc.detail)
			}
			if resp.Headers["X-Correlation-Id"] != userID || p.CorrelationID != userID {
				t.Errorf("correlation: header %q, body %q", resp.Headers["X-Correlation-Id"], p.CorrelationID)
			}
			if strings.Contains(resp.Body, "PRIVILEGED") || strings.Contains(log.String(), "PRIVILEGED") {
				t.Errorf("secret leaked:\nbody: %s\nlog: %s", resp.Body, log.String())
			}
			if n := strings.Count(log.String(), "\n"); n != 1 {
				t.Fatalf("want one log line, got %d: %s", n, log.String())
			}
			var line map[string]any
			if err := json.Unmarshal(log.Bytes(), &line); err != nil {
				t.Fatal(err)
			}
			if line["correlation_id"] != userID || line["failure_id"] != p.FailureID || line["firm_id"] != firmID ||
				line["failed_component"] != "httpapi.test" || line["failure_stage"] != "request" {
				t.Errorf("log line = %v", line)
			}
		})
	}
}

func TestResponderRetryAfterAndGeneratedCorrelation(t *testing.T) {
	resp := Responder{Logger: failure.NewLogger(&bytes.Buffer{})}.Error(t.Context(),
		failure.New(failure.KindModelThrottled, ""), failure.StageModelCall, failure.Identity{})
	p := problemOf(t, resp)
	if resp.StatusCode != 503 || resp.Headers["Retry-After"] == "" || !p.Retryable {
		t.Errorf("throttled: %d %v", resp.StatusCode, resp.Headers)
	}
	if cid := resp.Headers["X-Correlation-Id"]; !isCanonicalUUID(cid) || p.CorrelationID != cid {
		t.Errorf("generated correlation: header %q, body %q", cid, p.CorrelationID)
	}
}

// Every way a request can be refused reaches the client as problem+json
// with the request's correlation id in the header and the body.
func TestEveryRequestErrorIsCorrelated(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	base := events.APIGatewayV2HTTPRequest{Headers: map[string]string{"x-correlation-id": userID}}
	with := func(f func(*events.APIGatewayV2HTTPRequest)) events.APIGatewayV2HTTPRequest {
		r := base
		f(&r)
		return r
	}
	var v target
	tests := []struct {
		name   string
		err    error
		status int
	}{
		{"no authorizer", func() error { _, err := Config{}.Principal(base); return err }(), 401},
		{"empty body", Config{}.DecodeBody(base, &v), 400},
		{"300 KiB base64 body", Config{}.DecodeBody(with(func(r *events.APIGatewayV2HTTPRequest) {
			r.Body, r.IsBase64Encoded = b64(bytes.Repeat([]byte("x"), 300<<10)), true
		}), &v), 413},
		{"300 KiB plain body", Config{}.DecodeBody(with(func(r *events.APIGatewayV2HTTPRequest) {
			r.Body = strings.Repeat("x", 300<<10)
		}), &v), 413},
		{"unknown field", Config{}.DecodeBody(with(func(r *events.APIGatewayV2HTTPRequest) {
			r.Body = `{"name":"a","count":1,"firm_id":"` + firmID + `"}`
		}), &v), 400},
		{"content type", Config{}.DecodeBody(with(func(r *events.APIGatewayV2HTTPRequest) {
			r.Headers = map[string]string{"x-correlation-id": userID, "content-type": "text/plain"}
			r.Body = `{}`
		}), &v), 400},
		{"path", func() error { _, err := PathUUID(base, "run_id"); return err }(), 400},
		{"query int", func() error {
			_, err := QueryInt(with(func(r *events.APIGatewayV2HTTPRequest) { r.QueryStringParameters = map[string]string{"limit": "x"} }), "limit", 1, 1, 2)
			return err
		}(), 400},
		{"unknown query", RejectUnknownQuery(with(func(r *events.APIGatewayV2HTTPRequest) { r.QueryStringParameters = map[string]string{"q": "1"} })), 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("no error")
			}
			cid := CorrelationID(base)
			resp := Responder{Logger: failure.NewLogger(&bytes.Buffer{})}.Error(t.Context(), tc.err, failure.StageRequest, failure.Identity{CorrelationID: cid})
			p := problemOf(t, resp)
			if resp.StatusCode != tc.status || resp.Headers["X-Correlation-Id"] != userID || p.CorrelationID != userID {
				t.Errorf("status %d headers %v body %s", resp.StatusCode, resp.Headers, resp.Body)
			}
		})
	}
}
