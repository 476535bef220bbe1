package failure_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

var (
	fixedTime = time.Date(2026, 3, 4, 5, 6, 7, 891_234_567, time.FixedZone("CET", 3600))
	fixed     = failure.Builder{
		Now:   func() time.Time { return fixedTime },
		NewID: func() string { return "7d444840-9dc0-4d5c-a4a1-1e2b3c4d5e6f" },
	}
	ident = failure.Identity{RunID: "run-1", FirmID: "firm-1", MatterID: "matter-1", CorrelationID: "corr-1"}
)

func ref(class, msg string) string {
	sum := sha256.Sum256([]byte(class + "\n" + msg))
	return hex.EncodeToString(sum[:])[:16]
}

func TestEnvelopeFields(t *testing.T) {
	// What pkg/dynamo returns for a throttled write.
	err := fmt.Errorf("dynamo: append events: %w", failure.Classified(failure.KindStoreThrottled, code("ThrottlingException")))
	env := fixed.Build(err, failure.StageLedgerWrite, "ledger.Writer", ident)
	want := failure.Envelope{
		SchemaVersion:          "1",
		FailureID:              "7d444840-9dc0-4d5c-a4a1-1e2b3c4d5e6f",
		RunID:                  "run-1",
		FirmID:                 "firm-1",
		MatterID:               "matter-1",
		CorrelationID:          "corr-1",
		FailureStage:           failure.StageLedgerWrite,
		FailureKind:            failure.KindStoreThrottled,
		FailedComponent:        "ledger.Writer",
		Retryable:              true,
		RetryAfterSeconds:      1,
		SanitizedSummary:       "The ledger store throttled the request during a ledger write.",
		RecoveryRecommendation: "Retry after the indicated delay; if this persists, review the table's capacity.",
		UserVisibleMessage:     "The service is busy. Please try again shortly.",
		InternalDebugRef:       ref("ThrottlingException", "m"),
		CreatedAt:              "2026-03-04T04:06:07.891Z",
	}
	if env != want {
		t.Errorf("Build =\n%+v\nwant\n%+v", env, want)
	}

	raw, _ := json.Marshal(env)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{"schema_version", "failure_id", "run_id", "firm_id", "matter_id", "correlation_id",
		"failure_stage", "failure_kind", "failed_component", "retryable", "retry_after_seconds",
		"sanitized_summary", "recovery_recommendation", "user_visible_message", "internal_debug_ref", "created_at"}
	if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, slices.Sorted(slices.Values(wantKeys))) {
		t.Errorf("JSON keys = %v", got)
	}
	if _, ok := m["retry_after_seconds"].(float64); !ok {
		t.Errorf("retry_after_seconds is %T, want number", m["retry_after_seconds"])
	}
}

func TestEnvelopeRules(t *testing.T) {
	tests := []struct {
		name                            string
		err                             error
		stage                           failure.Stage
		kind                            failure.Kind
		userMsg, recommend, summaryPart string
		retryAfter                      int
	}{
		{name: "Msg is user message", err: failure.New(failure.KindNotFound, "matter matter-9 not found"),
			stage: failure.StageRequest, kind: failure.KindNotFound, userMsg: "matter matter-9 not found"},
		{name: "empty Msg uses table", err: failure.New(failure.KindNotFound, ""),
			stage: failure.StageRequest, kind: failure.KindNotFound, userMsg: "The requested resource was not found."},
		{name: "internal Msg is replaced", err: failure.New(failure.KindInternal, "nil map in reducer"),
			stage: failure.StageReduce, kind: failure.KindInternal,
			userMsg: "An internal error occurred. Please contact support and quote the failure ID."},
		{name: "Msg of other kind ignored", err: failure.Wrap(failure.Kind("bogus"), "x", errors.New("y")),
			stage: failure.StageReduce, kind: failure.KindInternal,
			userMsg: "An internal error occurred. Please contact support and quote the failure ID."},
		{name: "stage override", err: failure.Classified(failure.KindStoreConflict, code("ConditionalCheckFailedException")),
			stage: failure.StageEffectClaim, kind: failure.KindStoreConflict,
			recommend: "The warrant or effect was already claimed; do not repeat the action, and obtain a new warrant if it is still needed."},
		{name: "invalid stage", err: errors.New("x"), stage: "", kind: failure.KindInternal,
			summaryPart: "during an unrecorded stage."},
		{name: "retry seconds", err: failure.Classified(failure.KindModelThrottled, code("ThrottlingException")), stage: failure.StageModelCall,
			kind: failure.KindModelThrottled, retryAfter: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := fixed.Build(tt.err, tt.stage, "c", ident)
			if env.FailureKind != tt.kind {
				t.Errorf("kind = %s, want %s", env.FailureKind, tt.kind)
			}
			if tt.userMsg != "" && env.UserVisibleMessage != tt.userMsg {
				t.Errorf("user message = %q, want %q", env.UserVisibleMessage, tt.userMsg)
			}
			if tt.recommend != "" && env.RecoveryRecommendation != tt.recommend {
				t.Errorf("recommendation = %q", env.RecoveryRecommendation)
			}
			if tt.summaryPart != "" && !strings.Contains(env.SanitizedSummary, tt.summaryPart) {
				t.Errorf("summary = %q", env.SanitizedSummary)
			}
			if !env.FailureStage.Valid() {
				t.Errorf("stage %q not valid", env.FailureStage)
			}
			if env.RetryAfterSeconds != tt.retryAfter {
				t.Errorf("retry_after_seconds = %d, want %d", env.RetryAfterSeconds, tt.retryAfter)
			}
		})
	}
}

func TestDefaultBuilder(t *testing.T) {
	before := time.Now().Add(-time.Second)
	env := failure.Build(errors.New("x"), failure.StageInvoke, "c", ident)
	id, err := uuid.Parse(env.FailureID)
	if err != nil || id.Version() != 4 || id.Variant() != uuid.RFC4122 {
		t.Errorf("failure_id %q is not a UUID v4 (%v)", env.FailureID, err)
	}
	ts, err := time.Parse(time.RFC3339, env.CreatedAt)
	if err != nil || ts.Before(before) || !strings.HasSuffix(env.CreatedAt, "Z") || len(env.CreatedAt) != len("2006-01-02T15:04:05.000Z") {
		t.Errorf("created_at %q (%v)", env.CreatedAt, err)
	}
}

func TestDebugRef(t *testing.T) {
	root := errors.New("root cause")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"plain", root, ref("*errors.errorString", "root cause")},
		{"wrapping does not change it", failure.Wrap(failure.KindToolError, "t", fmt.Errorf("a: %w", root)), ref("*errors.errorString", "root cause")},
		{"joined takes first", errors.Join(root, errors.New("other")), ref("*errors.errorString", "root cause")},
		{"api code and message", fmt.Errorf("op: %w", apiErr{"ValidationException", "bad"}), ref("ValidationException", "bad")},
		{"classified api error", fmt.Errorf("op: %w", failure.Classified(failure.KindStoreConflict, fmt.Errorf("x: %w", apiErr{"ConditionalCheckFailedException", "cc"}))), ref("ConditionalCheckFailedException", "cc")},
		{"classified plain error", failure.Transient(failure.KindModelError, time.Second, root), ref("*errors.errorString", "root cause")},
		{"failure.Error alone", failure.New(failure.KindNotFound, "run_id"), ref("*failure.Error", "not_found: run_id")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := failure.DebugRef(tt.err); got != tt.want {
				t.Errorf("DebugRef = %q, want %q", got, tt.want)
			}
		})
	}
}

type privilegedKinder struct{ msg string }

func (e privilegedKinder) Error() string {
	return e.msg
}

func (e privilegedKinder) FailureKind() failure.Kind {
	return failure.KindToolError
}

func TestSanitization(t *testing.T) {
	const secret = "privileged: client SSN 078-05-1120 and prompt text"
	fragments := []string{secret, "078-05-1120", "prompt text", "SSN"}
	errs := map[string]error{
		"plain":              errors.New(secret),
		"fmt wrapped":        fmt.Errorf("converse for run-1: %w", errors.New(secret)),
		"api error":          fmt.Errorf("op: %w", apiErr{"ValidationException", secret}),
		"unclassified api":   apiErr{secret, secret},
		"classified":         failure.Classified(failure.KindStoreConflict, apiErr{"ConditionalCheckFailedException", secret}),
		"transient":          failure.Transient(failure.KindModelError, time.Second, errors.New(secret)),
		"failure.Error":      failure.Wrap(failure.KindToolError, "tool lookup_docket failed", errors.New(secret)),
		"failure.Error deep": fmt.Errorf("%s: %w", secret, failure.Wrap(failure.KindModelMalformedOutput, "", apiErr{secret, secret})),
		"kinder":             privilegedKinder{secret},
		"joined":             errors.Join(errors.New(secret), context.DeadlineExceeded),
	}
	for name, err := range errs {
		t.Run(name, func(t *testing.T) {
			env := fixed.Build(err, failure.StageToolExecute, "tools.Runner", ident)
			var logBuf bytes.Buffer
			failure.NewLogger(&logBuf).Log(context.Background(), env)
			_, headers, body := failure.ProblemFrom(env)
			envJSON, _ := json.Marshal(env)
			outputs := map[string]string{
				"log":      logBuf.String(),
				"problem":  string(body),
				"headers":  fmt.Sprint(headers),
				"envelope": string(envJSON),
			}
			for where, out := range outputs {
				for _, f := range fragments {
					if strings.Contains(out, f) {
						t.Errorf("%s contains %q:\n%s", where, f, out)
					}
				}
			}
			if logBuf.Len() == 0 || len(body) == 0 {
				t.Error("nothing written")
			}
		})
	}
}
