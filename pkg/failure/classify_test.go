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

// policyError is a Retrier with any policy.
type policyError struct {
	kind      failure.Kind
	retryable bool
	after     time.Duration
}

func (e policyError) Error() string                      { return "policy" }
func (e policyError) FailureKind() failure.Kind          { return e.kind }
func (e policyError) RetryPolicy() (bool, time.Duration) { return e.retryable, e.after }

// asKinder is not a Kinder but converts to one through an As method, as
// errors.As allows.
type asKinder struct{ kind failure.Kind }

func (e asKinder) Error() string { return "as" }
func (e asKinder) As(target any) bool {
	if k, ok := target.(*failure.Kinder); ok {
		*k = docketError{e.kind}
		return true
	}
	return false
}

// apiErr has the methods every AWS SDK API error has, which is all DebugRef
// looks for.
type apiErr struct{ code, msg string }

func (e apiErr) Error() string        { return "api error " + e.code + ": " + e.msg }
func (e apiErr) ErrorCode() string    { return e.code }
func (e apiErr) ErrorMessage() string { return e.msg }

func canceledTx(reasons ...string) error {
	tce := &ddbtypes.TransactionCanceledException{}
	for _, r := range reasons {
		tce.CancellationReasons = append(tce.CancellationReasons, ddbtypes.CancellationReason{Code: aws.String(r)})
	}
	return tce
}

func TestClassify(t *testing.T) {
	const s5, s1, s2 = 5 * time.Second, time.Second, 2 * time.Second
	cause := errors.New("cause")
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
		{"Kinder through As", fmt.Errorf("x: %w", asKinder{failure.KindToolError}), failure.KindToolError, false, 0},
		{"invalid Kinder skipped for a later valid one", fmt.Errorf("%w: %w", docketError{"bogus"}, failure.Classified(failure.KindStoreThrottled, cause)), failure.KindStoreThrottled, true, s1},
		{"first valid Kinder wins", errors.Join(docketError{failure.KindToolError}, failure.New(failure.KindNotFound, "")), failure.KindToolError, false, 0},
		{"Classified uses the kind's default", failure.Classified(failure.KindStoreUnavailable, cause), failure.KindStoreUnavailable, true, s2},
		{"Classified not retryable", fmt.Errorf("op: %w", failure.Classified(failure.KindStoreConflict, cause)), failure.KindStoreConflict, false, 0},
		{"Transient", fmt.Errorf("op: %w", failure.Transient(failure.KindModelError, s5, cause)), failure.KindModelError, true, s5},
		{"Classified invalid kind falls through", failure.Classified("bogus", context.Canceled), failure.KindCanceled, false, 0},
		{"Retrier not retryable has no delay", policyError{failure.KindStoreThrottled, false, s5}, failure.KindStoreThrottled, false, 0},
		{"declared kind keeps Transient policy", failure.Wrap(failure.KindModelError, "", failure.Transient(failure.KindModelError, s5, cause)), failure.KindModelError, true, s5},
		{"declared kind ignores policy of another kind", failure.Wrap(failure.KindModelError, "", failure.Transient(failure.KindStoreUnavailable, s5, cause)), failure.KindModelError, false, 0},
		{"policy of the kind found past another", failure.Wrap(failure.KindModelError, "", fmt.Errorf("%w, %w",
			policyError{failure.KindStoreUnavailable, true, s1}, failure.Transient(failure.KindModelError, s5, cause))), failure.KindModelError, true, s5},
		{"kind beats context", failure.Classified(failure.KindStoreUnavailable, context.DeadlineExceeded), failure.KindStoreUnavailable, true, s2},
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

// A classified error must say no more than its cause: its Error() ends up in
// logs and fmt.Errorf chains like the cause's would have.
func TestClassifiedIsTransparent(t *testing.T) {
	cause := apiErr{"ConditionalCheckFailedException", "cc"}
	for _, err := range []error{
		failure.Classified(failure.KindStoreConflict, cause),
		failure.Transient(failure.KindModelError, time.Second, cause),
	} {
		if err.Error() != cause.Error() {
			t.Errorf("Error() = %q, want the cause's %q", err, cause)
		}
		var got apiErr
		if !errors.As(err, &got) || got != cause || !errors.Is(err, cause) || errors.Unwrap(err) != cause {
			t.Errorf("cause not reachable through %#v", err)
		}
		if failure.DebugRef(err) != failure.DebugRef(cause) {
			t.Error("classifying changed the debug ref")
		}
		var r failure.Retrier
		if !errors.As(err, &r) {
			t.Errorf("%T is not a Retrier", err)
		}
	}
	if failure.Classified(failure.KindStoreConflict, nil) != nil || failure.Transient(failure.KindModelError, time.Second, nil) != nil {
		t.Error("classifying nil is not nil")
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
