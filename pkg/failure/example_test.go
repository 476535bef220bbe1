package failure_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// throttled stands in for the Bedrock SDK's *types.ThrottlingException: like
// every AWS API error it has ErrorCode and ErrorMessage, which DebugRef
// hashes. Its message could echo privileged prompt text; it never reaches
// output.
type throttled struct{}

func (throttled) Error() string        { return "ThrottlingException: Too many requests" }
func (throttled) ErrorCode() string    { return "ThrottlingException" }
func (throttled) ErrorMessage() string { return "Too many requests" }

func Example() {
	// pkg/bedrock knows what its SDK's errors mean and classifies them
	// before returning; this is what it returns for a throttled model.
	err := fmt.Errorf("bedrock converse: %w", failure.Classified(failure.KindModelThrottled, throttled{}))

	// Production code calls failure.Build; a Builder pins clock and id here.
	b := failure.Builder{
		Now:   func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC) },
		NewID: func() string { return "0b7c2f4e-3c1d-4a8e-9f6b-2d5e8a1c7f90" },
	}
	env := b.Build(err, failure.StageModelCall, "agent.Loop", failure.Identity{
		RunID: "run-42", FirmID: "firm-7", MatterID: "matter-3", CorrelationID: "req-abc",
	})

	failure.NewLogger(os.Stdout).Log(context.Background(), env)

	status, headers, body := failure.ProblemFrom(env)
	fmt.Println(status, headers["Content-Type"], "Retry-After:", headers["Retry-After"])
	fmt.Println(string(body))
	// Output:
	// {"level":"ERROR","msg":"failure","schema_version":"1","failure_id":"0b7c2f4e-3c1d-4a8e-9f6b-2d5e8a1c7f90","run_id":"run-42","firm_id":"firm-7","matter_id":"matter-3","correlation_id":"req-abc","failure_stage":"model_call","failure_kind":"model_throttled","failed_component":"agent.Loop","retryable":true,"retry_after_seconds":5,"sanitized_summary":"The model provider throttled the request or a service quota was reached during the model call.","recovery_recommendation":"Retry after the indicated delay; if this persists, request a Bedrock quota increase.","user_visible_message":"The AI model is busy. Please try again shortly.","internal_debug_ref":"11e933ff411509c0","created_at":"2026-01-02T03:04:05.678Z","_aws":{"Timestamp":1767323045678,"CloudWatchMetrics":[{"Namespace":"Warrant","Dimensions":[["failure_kind","failure_stage"]],"Metrics":[{"Name":"Failures","Unit":"Count"}]}]},"Failures":1}
	// 503 application/problem+json Retry-After: 5
	// {"type":"https://warrant.dev/problems/model_throttled","title":"Model temporarily unavailable","status":503,"detail":"The AI model is busy. Please try again shortly.","instance":"urn:uuid:0b7c2f4e-3c1d-4a8e-9f6b-2d5e8a1c7f90","kind":"model_throttled","failure_id":"0b7c2f4e-3c1d-4a8e-9f6b-2d5e8a1c7f90","correlation_id":"req-abc","retryable":true}
}
