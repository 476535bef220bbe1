package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// JSON renders v as an application/json response. If v cannot be encoded
// (a bug, not bad input) the client gets a logged 500 problem instead.
func JSON(status int, v any, correlationID string) events.APIGatewayV2HTTPResponse {
	body, err := json.Marshal(v)
	if err != nil {
		return Responder{Component: "httpapi.JSON"}.Error(context.Background(),
			failure.Wrap(failure.KindInternal, "", err), failure.StageUnknown,
			failure.Identity{CorrelationID: correlationID})
	}
	return response(status, "application/json", body, correlationID, nil)
}

// NDJSON renders lines as application/x-ndjson, each followed by "\n".
// Every line must be one compact JSON value (json.Marshal output never
// holds a raw newline). extra headers are added but cannot replace
// Content-Type or X-Correlation-Id.
func NDJSON(status int, lines [][]byte, correlationID string, extra map[string]string) events.APIGatewayV2HTTPResponse {
	var b bytes.Buffer
	for _, l := range lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	return response(status, "application/x-ndjson", b.Bytes(), correlationID, extra)
}

func response(status int, contentType string, body []byte, correlationID string, extra map[string]string) events.APIGatewayV2HTTPResponse {
	h := make(map[string]string, len(extra)+2)
	for k, v := range extra {
		// Canonical keys, so "content-type" cannot sit beside "Content-Type".
		h[http.CanonicalHeaderKey(k)] = v
	}
	h["Content-Type"] = contentType
	// Run views and ledgers may hold privileged text: no cache may keep them.
	h["Cache-Control"] = "no-store"
	if correlationID != "" {
		h[CorrelationHeader] = correlationID
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: h, Body: string(body)}
}

// Responder turns errors into logged problem responses. Component names
// the handler in envelopes (a code identifier, never data); a nil Logger
// logs to stdout.
type Responder struct {
	Logger    *failure.Logger
	Component string
}

// Error builds err's failure envelope, logs it as one line and returns it
// as application/problem+json. The body holds only the envelope's fixed
// texts, ids and safe message, never err's text; its correlation_id and
// the X-Correlation-Id header are the same id, generated if id has none.
func (r Responder) Error(ctx context.Context, err error, stage failure.Stage, id failure.Identity) events.APIGatewayV2HTTPResponse {
	if id.CorrelationID == "" {
		id.CorrelationID = uuid.NewString()
	}
	component := r.Component
	if component == "" {
		component = "httpapi"
	}
	env := failure.Build(err, stage, component, id)
	r.Logger.Log(ctx, env)
	status, headers, body := failure.ProblemFrom(env)
	headers[CorrelationHeader] = id.CorrelationID
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: headers, Body: string(body)}
}
