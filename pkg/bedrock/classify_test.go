package bedrock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// op wraps err the way the client returns it from Converse.
func op(err error) error {
	return &smithy.OperationError{ServiceID: bedrockruntime.ServiceID, OperationName: "Converse", Err: err}
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

// TestClassify pins the Bedrock code table: what failure.Classify makes of
// an SDK error once the adapter has classified it.
func TestClassify(t *testing.T) {
	const s5, s1 = 5 * time.Second, time.Second
	tests := []struct {
		name      string
		err       error
		kind      failure.Kind
		retryable bool
		after     time.Duration
	}{
		{"throttling", op(code("ThrottlingException")), failure.KindModelThrottled, true, s5},
		{"throttling typed", op(sdkShaped(&types.ThrottlingException{})), failure.KindModelThrottled, true, s5},
		{"quota", op(&types.ServiceQuotaExceededException{}), failure.KindModelThrottled, true, s5},
		{"model timeout", op(&types.ModelTimeoutException{}), failure.KindModelTimeout, true, s5},
		{"validation", op(&types.ValidationException{}), failure.KindModelValidation, false, 0},
		{"access denied", op(&types.AccessDeniedException{}), failure.KindModelAccessDenied, false, 0},
		{"model error", op(&types.ModelErrorException{}), failure.KindModelError, false, 0},
		{"stream error", op(&types.ModelStreamErrorException{}), failure.KindModelError, false, 0},
		{"internal", op(&types.InternalServerException{}), failure.KindModelError, true, s5},
		{"unavailable", op(&types.ServiceUnavailableException{}), failure.KindModelError, true, s5},
		{"not ready", op(&types.ModelNotReadyException{}), failure.KindModelError, true, s5},
		{"unmapped code", op(code("ResourceNotFoundException")), failure.KindInternal, false, 0},
		{"transport", op(errors.New("connection reset")), failure.KindModelError, true, s5},
		{"client validation", op(smithy.InvalidParamsError{Context: "ConverseInput"}), failure.KindInternal, false, 0},
		{"serialization", op(&smithy.SerializationError{Err: errors.New("bad")}), failure.KindInternal, false, 0},
		{"sdk canceled", op(&smithy.CanceledError{Err: context.Canceled}), failure.KindCanceled, false, 0},
		{"deadline", op(fmt.Errorf("send: %w", context.DeadlineExceeded)), failure.KindTimeout, true, s1},
		{"plain", errors.New("boom"), failure.KindInternal, false, 0},
		{"nil", nil, failure.KindInternal, false, 0},

		// What a ConverseStream event stream ends with: the modeled
		// exception, without an OperationError. The adapter knows it is
		// Bedrock's; pkg/failure, guessing from the code alone, could not
		// place a ThrottlingException shared with DynamoDB.
		{"stream throttling", code("ThrottlingException"), failure.KindModelThrottled, true, s5},
		{"stream throttling typed", &types.ThrottlingException{}, failure.KindModelThrottled, true, s5},
		{"stream error, no operation error", &types.ModelStreamErrorException{}, failure.KindModelError, false, 0},
		{"stream internal, no operation error", &types.InternalServerException{}, failure.KindModelError, true, s5},
		{"stream read failure", errors.New("unexpected EOF"), failure.KindInternal, false, 0},

		// A kind the caller declares around a classified cause.
		{"declared kind beats cause", failure.Wrap(failure.KindToolError, "", classify(op(code("ThrottlingException")))), failure.KindToolError, false, 0},
		{"declared kind keeps cause retryability", failure.Wrap(failure.KindModelError, "", classify(op(code("InternalServerException")))), failure.KindModelError, true, s5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classify(tt.err)
			kind, retryable, after := failure.Classify(got)
			if kind != tt.kind || retryable != tt.retryable || after != tt.after {
				t.Errorf("Classify = (%s, %v, %v), want (%s, %v, %v)", kind, retryable, after, tt.kind, tt.retryable, tt.after)
			}
			if tt.err == nil {
				if got != nil {
					t.Errorf("classify(nil) = %v", got)
				}
				return
			}
			if got.Error() != tt.err.Error() || !errors.Is(got, tt.err) {
				t.Errorf("classify changed the error: %q", got)
			}
			if kind == failure.KindInternal && got != tt.err {
				t.Errorf("unclassified error was wrapped: %#v", got)
			}
		})
	}
}

func TestCodesUseValidKinds(t *testing.T) {
	for c, v := range codes {
		if !v.kind.Valid() || !strings.HasPrefix(string(v.kind), "model_") {
			t.Errorf("%s: %+v", c, v)
		}
	}
}

// A Bedrock message can echo the prompt; classifying must not let it out.
func TestClassifiedErrorsStaySanitized(t *testing.T) {
	const secret = "privileged: client SSN 078-05-1120"
	for _, err := range []error{
		classify(op(sdkShaped(&smithy.GenericAPIError{Code: "ValidationException", Message: secret}))),
		classify(op(&smithy.GenericAPIError{Code: secret, Message: secret})),
		classify(&types.ModelStreamErrorException{Message: &[]string{secret}[0], OriginalMessage: &[]string{secret}[0]}),
	} {
		env := failure.Build(fmt.Errorf("bedrock converse: %w", err), failure.StageModelCall, "agent", failure.Identity{})
		var buf bytes.Buffer
		failure.NewLogger(&buf).Log(context.Background(), env)
		_, _, body := failure.ProblemFrom(env)
		if buf.Len() == 0 {
			t.Fatal("nothing logged")
		}
		for _, out := range []string{buf.String(), string(body)} {
			if strings.Contains(out, "078-05-1120") {
				t.Errorf("secret in output: %s", out)
			}
		}
	}
}
