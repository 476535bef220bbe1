package failure_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

func TestStatus(t *testing.T) {
	want := map[failure.Kind]int{
		failure.KindInvalidRequest:       400,
		failure.KindUnauthenticated:      401,
		failure.KindForbidden:            403,
		failure.KindSelfApproval:         403,
		failure.KindNotFound:             404,
		failure.KindConflict:             409,
		failure.KindStoreConflict:        409,
		failure.KindExpired:              410,
		failure.KindWarrantExpired:       410,
		failure.KindPolicyDenied:         422,
		failure.KindPolicyChanged:        409,
		failure.KindPayloadTooLarge:      413,
		failure.KindUnknownAgent:         422,
		failure.KindUnknownModel:         422,
		failure.KindCostCapExceeded:      422,
		failure.KindFirmBudgetExceeded:   422,
		failure.KindPreconditionFailed:   412,
		failure.KindPreconditionRequired: 428,
		failure.KindModelThrottled:       503,
		failure.KindStoreThrottled:       503,
		failure.KindStoreUnavailable:     503,
		failure.KindModelTimeout:         504,
		failure.KindTimeout:              504,
		failure.Kind("not_a_kind"):       500,
		failure.KindInternal:             500,
		failure.KindEffectOutcomeUnknown: 500,
	}
	for _, k := range failure.AllKinds() {
		if _, ok := want[k]; !ok {
			want[k] = 500
		}
	}
	for k, status := range want {
		got, _, body := failure.ProblemFrom(failure.Envelope{FailureKind: k})
		var p failure.Problem
		if got != status || json.Unmarshal(body, &p) != nil || p.Status != status {
			t.Errorf("ProblemFrom(%s) status %d, body %s; want %d", k, got, body, status)
		}
	}
}

func TestProblemFrom(t *testing.T) {
	env := fixed.Build(failure.New(failure.KindNotFound, "matter matter-9 not found"), failure.StageRequest, "api", ident)
	status, headers, body := failure.ProblemFrom(env)
	if status != http.StatusNotFound {
		t.Errorf("status = %d", status)
	}
	if headers["Content-Type"] != "application/problem+json" {
		t.Errorf("Content-Type = %q", headers["Content-Type"])
	}
	if _, ok := headers["Retry-After"]; ok {
		t.Error("Retry-After on a non-retryable failure")
	}
	var p map[string]any
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"type":           "https://warrant.dev/problems/not_found",
		"title":          "Not found",
		"status":         float64(404),
		"detail":         "matter matter-9 not found",
		"instance":       "urn:uuid:7d444840-9dc0-4d5c-a4a1-1e2b3c4d5e6f",
		"kind":           "not_found",
		"failure_id":     "7d444840-9dc0-4d5c-a4a1-1e2b3c4d5e6f",
		"correlation_id": "corr-1",
		"retryable":      false,
	}
	if len(p) != len(want) {
		t.Errorf("body has %d members, want %d: %s", len(p), len(want), body)
	}
	for k, v := range want {
		if p[k] != v {
			t.Errorf("%s = %v, want %v", k, p[k], v)
		}
	}
}

// Every kind, plus the transient model_error codes, must agree between the
// envelope's retryable flag and the Retry-After header.
func TestRetryAfterIffRetryable(t *testing.T) {
	var errs []error
	for _, k := range failure.AllKinds() {
		errs = append(errs, failure.New(k, ""))
	}
	errs = append(errs,
		failure.Transient(failure.KindModelError, 5*time.Second, code("InternalServerException")),
		failure.Classified(failure.KindModelError, code("ModelErrorException")))
	for _, err := range errs {
		env := fixed.Build(err, failure.StageInvoke, "c", ident)
		status, headers, body := failure.ProblemFrom(env)
		ra, has := headers["Retry-After"]
		if has != env.Retryable {
			t.Errorf("%s: Retry-After present=%v, retryable=%v", env.FailureKind, has, env.Retryable)
		}
		if has && (ra == "" || ra == "0" || env.RetryAfterSeconds < 1) {
			t.Errorf("%s: Retry-After %q, retry_after_seconds %d", env.FailureKind, ra, env.RetryAfterSeconds)
		}
		if !env.Retryable && env.RetryAfterSeconds != 0 {
			t.Errorf("%s: retry_after_seconds %d on non-retryable", env.FailureKind, env.RetryAfterSeconds)
		}
		var p failure.Problem
		if err := json.Unmarshal(body, &p); err != nil || p.Status != status || p.Retryable != env.Retryable || p.Detail == "" || p.Title == "" {
			t.Errorf("%s: problem %+v (%v)", env.FailureKind, p, err)
		}
	}
}
