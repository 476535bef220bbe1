package failure_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	brtypes "github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// The ServiceIDs come from the SDK packages themselves, so a renamed
// ServiceID breaks these tests instead of silently misclassifying.
func bedrockOp(err error) error {
	return &smithy.OperationError{ServiceID: bedrockruntime.ServiceID, OperationName: "Converse", Err: err}
}

func dynamoOp(err error) error {
	return &smithy.OperationError{ServiceID: dynamodb.ServiceID, OperationName: "TransactWriteItems", Err: err}
}

func code(c string) error { return &smithy.GenericAPIError{Code: c, Message: "m"} }

// sdkShaped wraps an API error the way the SDK's middleware stack does.
func sdkShaped(api error) error {
	resp := &smithyhttp.Response{Response: &http.Response{StatusCode: 400}}
	return &retry.MaxAttemptsError{Attempt: 3, Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: resp, Err: api},
		RequestID:     "req-1",
	}}
}

type docketError struct{ kind failure.Kind }

func (e docketError) Error() string {
	return "docket"
}

func (e docketError) FailureKind() failure.Kind {
	return e.kind
}

func canceledTx(reasons ...string) error {
	tce := &ddbtypes.TransactionCanceledException{}
	for _, r := range reasons {
		tce.CancellationReasons = append(tce.CancellationReasons, ddbtypes.CancellationReason{Code: aws.String(r)})
	}
	return tce
}

func TestClassify(t *testing.T) {
	const s5, s1, s2 = 5 * time.Second, time.Second, 2 * time.Second
	tests := []struct {
		name      string
		err       error
		kind      failure.Kind
		retryable bool
		after     time.Duration
	}{
		{"nil", nil, failure.KindInternal, false, 0},
		{"plain", errors.New("boom"), failure.KindInternal, false, 0},
		{"failure.Error", failure.New(failure.KindNotFound, "run_id"), failure.KindNotFound, false, 0},
		{"wrapped failure.Error", fmt.Errorf("load: %w", failure.New(failure.KindExpired, "")), failure.KindExpired, false, 0},
		{"Kinder", fmt.Errorf("x: %w", docketError{failure.KindToolError}), failure.KindToolError, false, 0},
		{"invalid Kinder falls through", fmt.Errorf("%w: %w", docketError{"bogus"}, context.DeadlineExceeded), failure.KindTimeout, true, s1},
		{"declared kind beats cause", failure.Wrap(failure.KindToolError, "", bedrockOp(code("ThrottlingException"))), failure.KindToolError, false, 0},
		{"declared kind keeps cause retryability", failure.Wrap(failure.KindModelError, "", bedrockOp(code("InternalServerException"))), failure.KindModelError, true, s5},
		{"deadline", context.DeadlineExceeded, failure.KindTimeout, true, s1},
		{"wrapped deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), failure.KindTimeout, true, s1},
		{"canceled", context.Canceled, failure.KindCanceled, false, 0},
		{"sdk canceled", bedrockOp(&smithy.CanceledError{Err: context.Canceled}), failure.KindCanceled, false, 0},

		{"bedrock throttling", bedrockOp(code("ThrottlingException")), failure.KindModelThrottled, true, s5},
		{"bedrock throttling typed", bedrockOp(sdkShaped(&brtypes.ThrottlingException{})), failure.KindModelThrottled, true, s5},
		{"bedrock quota", bedrockOp(&brtypes.ServiceQuotaExceededException{}), failure.KindModelThrottled, true, s5},
		{"bedrock model timeout", bedrockOp(&brtypes.ModelTimeoutException{}), failure.KindModelTimeout, true, s5},
		{"bedrock validation", bedrockOp(&brtypes.ValidationException{}), failure.KindModelValidation, false, 0},
		{"bedrock access denied", bedrockOp(&brtypes.AccessDeniedException{}), failure.KindModelAccessDenied, false, 0},
		{"bedrock model error", bedrockOp(&brtypes.ModelErrorException{}), failure.KindModelError, false, 0},
		{"bedrock stream error", bedrockOp(&brtypes.ModelStreamErrorException{}), failure.KindModelError, false, 0},
		{"bedrock internal", bedrockOp(&brtypes.InternalServerException{}), failure.KindModelError, true, s5},
		{"bedrock unavailable", bedrockOp(&brtypes.ServiceUnavailableException{}), failure.KindModelError, true, s5},
		{"bedrock not ready", bedrockOp(&brtypes.ModelNotReadyException{}), failure.KindModelError, true, s5},
		{"bedrock unmapped code", bedrockOp(code("ResourceNotFoundException")), failure.KindInternal, false, 0},
		{"bedrock transport", bedrockOp(errors.New("connection reset")), failure.KindModelError, true, s5},
		{"bedrock client validation", bedrockOp(smithy.InvalidParamsError{Context: "ConverseInput"}), failure.KindInternal, false, 0},

		{"ddb condition", dynamoOp(sdkShaped(&ddbtypes.ConditionalCheckFailedException{})), failure.KindStoreConflict, false, 0},
		{"ddb tx canceled", dynamoOp(canceledTx()), failure.KindStoreConflict, false, 0},
		{"ddb tx canceled by condition", dynamoOp(canceledTx("None", "ConditionalCheckFailed", "ThrottlingError")), failure.KindStoreConflict, false, 0},
		{"ddb tx canceled by throttling", dynamoOp(canceledTx("None", "ThrottlingError")), failure.KindStoreThrottled, true, s1},
		{"ddb throughput", dynamoOp(&ddbtypes.ProvisionedThroughputExceededException{}), failure.KindStoreThrottled, true, s1},
		{"ddb request limit", dynamoOp(&ddbtypes.RequestLimitExceeded{}), failure.KindStoreThrottled, true, s1},
		{"ddb throttling", dynamoOp(&ddbtypes.ThrottlingException{}), failure.KindStoreThrottled, true, s1},
		{"ddb throttling generic", dynamoOp(code("ThrottlingException")), failure.KindStoreThrottled, true, s1},
		{"ddb internal", dynamoOp(&ddbtypes.InternalServerError{}), failure.KindStoreUnavailable, true, s2},
		{"ddb validation is our bug", dynamoOp(code("ValidationException")), failure.KindInternal, false, 0},
		{"ddb transport", dynamoOp(errors.New("dial tcp: i/o timeout")), failure.KindStoreUnavailable, true, s2},

		// Without an OperationError (event streams, hand-made errors).
		{"shared code, no service", code("ThrottlingException"), failure.KindInternal, false, 0},
		{"bedrock-only code, no service", code("ModelStreamErrorException"), failure.KindModelError, false, 0},
		{"ddb-only code, no service", code("ConditionalCheckFailedException"), failure.KindStoreConflict, false, 0},
		{"bedrock typed throttle, no service", &brtypes.ThrottlingException{}, failure.KindModelThrottled, true, s5},
		{"ddb typed throttle, no service", &ddbtypes.ThrottlingException{}, failure.KindStoreThrottled, true, s1},
		{"other service", &smithy.OperationError{ServiceID: "STS", Err: code("ThrottlingException")}, failure.KindInternal, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, retryable, after := failure.Classify(tt.err)
			if kind != tt.kind || retryable != tt.retryable || after != tt.after {
				t.Errorf("Classify = (%s, %v, %v), want (%s, %v, %v)", kind, retryable, after, tt.kind, tt.retryable, tt.after)
			}
		})
	}
}

func TestErrorHidesCause(t *testing.T) {
	cause := errors.New("privileged detail")
	e := failure.Wrap(failure.KindToolError, "tool lookup_docket failed", cause)
	if got, want := e.Error(), "tool_error: tool lookup_docket failed"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, cause) {
		t.Error("cause not reachable with errors.Is")
	}
	if got := failure.New(failure.KindInternal, "").Error(); got != "internal" {
		t.Errorf("Error() without Msg = %q", got)
	}
}
