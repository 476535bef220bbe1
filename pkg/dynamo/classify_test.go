package dynamo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// op wraps err the way the client returns it.
func op(err error) error {
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

func canceledTx(reasons ...string) error {
	tce := &types.TransactionCanceledException{}
	for _, r := range reasons {
		tce.CancellationReasons = append(tce.CancellationReasons, types.CancellationReason{Code: aws.String(r)})
	}
	return tce
}

// TestClassify pins the DynamoDB code table: what failure.Classify makes of
// an SDK error once the store has classified it.
func TestClassify(t *testing.T) {
	const s1, s2 = time.Second, 2 * time.Second
	tests := []struct {
		name      string
		err       error
		kind      failure.Kind
		retryable bool
		after     time.Duration
	}{
		{"condition", op(sdkShaped(&types.ConditionalCheckFailedException{})), failure.KindStoreConflict, false, 0},
		{"tx canceled", op(canceledTx()), failure.KindStoreConflict, false, 0},
		{"tx canceled by condition", op(canceledTx("None", "ConditionalCheckFailed", "ThrottlingError")), failure.KindStoreConflict, false, 0},
		{"tx canceled by conflict", op(canceledTx("TransactionConflict", "ThrottlingError")), failure.KindStoreConflict, false, 0},
		{"tx canceled by throttling", op(canceledTx("None", "ThrottlingError")), failure.KindStoreThrottled, true, s1},
		{"tx canceled by throughput", op(sdkShaped(canceledTx("ProvisionedThroughputExceeded", "None"))), failure.KindStoreThrottled, true, s1},
		{"tx canceled generic", op(code("TransactionCanceledException")), failure.KindStoreConflict, false, 0},
		{"throughput", op(&types.ProvisionedThroughputExceededException{}), failure.KindStoreThrottled, true, s1},
		{"request limit", op(&types.RequestLimitExceeded{}), failure.KindStoreThrottled, true, s1},
		{"throttling", op(&types.ThrottlingException{}), failure.KindStoreThrottled, true, s1},
		{"throttling generic", op(code("ThrottlingException")), failure.KindStoreThrottled, true, s1},
		{"internal", op(&types.InternalServerError{}), failure.KindStoreUnavailable, true, s2},
		{"validation is our bug", op(code("ValidationException")), failure.KindInternal, false, 0},
		{"single-write conflict", op(&types.TransactionConflictException{}), failure.KindInternal, false, 0},
		{"transport", op(errors.New("dial tcp: i/o timeout")), failure.KindStoreUnavailable, true, s2},
		{"client validation", op(smithy.InvalidParamsError{Context: "PutItemInput"}), failure.KindInternal, false, 0},
		{"serialization", op(&smithy.SerializationError{Err: errors.New("bad")}), failure.KindInternal, false, 0},
		{"sdk canceled", op(&smithy.CanceledError{Err: context.Canceled}), failure.KindCanceled, false, 0},
		{"deadline", op(fmt.Errorf("send: %w", context.DeadlineExceeded)), failure.KindTimeout, true, s1},
		{"plain", errors.New("boom"), failure.KindInternal, false, 0},
		{"nil", nil, failure.KindInternal, false, 0},

		// The store knows every error it sees is DynamoDB's, with or without
		// an OperationError: before adapters classified, pkg/failure could
		// not tell a bare ThrottlingException from Bedrock's and called it
		// internal.
		{"throttling, no operation error", code("ThrottlingException"), failure.KindStoreThrottled, true, s1},
		{"typed throttling, no operation error", &types.ThrottlingException{}, failure.KindStoreThrottled, true, s1},
		{"condition, no operation error", code("ConditionalCheckFailedException"), failure.KindStoreConflict, false, 0},
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

func TestClassifyKeepsSDKTypesAndStatedKinds(t *testing.T) {
	err := classify(op(sdkShaped(canceledTx("None", "ConditionalCheckFailed"))))
	if _, ok := firstFailedCondition(err); !ok || failure.DebugRef(err) != failure.DebugRef(canceledTx()) {
		t.Errorf("the canceled transaction is no longer reachable: %v", err)
	}
	if again := classify(err); again != err {
		t.Error("classifying twice wrapped twice")
	}
	// A kind the store states itself (a sentinel, *failure.Error) is not
	// overridden by the SDK error it wraps.
	stated := failure.Wrap(failure.KindNotFound, "", op(&types.ThrottlingException{}))
	if classify(stated) != error(stated) {
		t.Error("a stated kind was classified again")
	}
	if got := wrap("get run", op(&types.InternalServerError{})); !strings.HasPrefix(got.Error(), "dynamo: get run: ") {
		t.Errorf("wrap = %q", got)
	} else if k, _, _ := failure.Classify(got); k != failure.KindStoreUnavailable {
		t.Errorf("wrap does not classify: %s", k)
	}
}

func TestCodesUseValidKinds(t *testing.T) {
	for c, k := range codes {
		if !k.Valid() || !strings.HasPrefix(string(k), "store_") {
			t.Errorf("%s: %s", c, k)
		}
	}
}

// A DynamoDB message can echo item values; classifying must not let it out.
func TestClassifiedErrorsStaySanitized(t *testing.T) {
	secret := "privileged: client SSN 078-05-1120"
	err := wrap("resume claim", op(sdkShaped(&types.ConditionalCheckFailedException{Message: &secret})))
	env := failure.Build(err, failure.StageEffectClaim, "dynamo.Store", failure.Identity{})
	var buf bytes.Buffer
	failure.NewLogger(&buf).Log(context.Background(), env)
	_, _, body := failure.ProblemFrom(env)
	if env.FailureKind != failure.KindStoreConflict || buf.Len() == 0 {
		t.Fatalf("envelope = %+v", env)
	}
	for _, out := range []string{buf.String(), string(body)} {
		if strings.Contains(out, "078-05-1120") {
			t.Errorf("secret in output: %s", out)
		}
	}
}
