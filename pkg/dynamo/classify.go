package dynamo

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// codes maps DynamoDB error codes to failure kinds; each takes its kind's
// default retry policy. Codes not listed (ValidationException,
// ResourceNotFoundException, TransactionConflictException...) stay
// unclassified, which pkg/failure reports as internal: they mean our request
// or our table is wrong, not that the store is struggling.
var codes = map[string]failure.Kind{
	"ConditionalCheckFailedException":        failure.KindStoreConflict,
	"TransactionCanceledException":           failure.KindStoreConflict,
	"ProvisionedThroughputExceededException": failure.KindStoreThrottled,
	"RequestLimitExceeded":                   failure.KindStoreThrottled,
	"ThrottlingException":                    failure.KindStoreThrottled,
	"InternalServerError":                    failure.KindStoreUnavailable,
}

// classify gives an error of the DynamoDB client its failure kind, so that
// pkg/failure need not know DynamoDB. Every SDK error leaves the store
// through it (see wrap). The result unwraps to err, so errors.As still finds
// the SDK's types. It returns err unchanged when err already states a kind,
// when it is a context error (pkg/failure makes it timeout or canceled) and
// when the store cannot tell what it means (internal).
func classify(err error) error {
	if err == nil {
		return nil
	}
	var k failure.Kinder
	if errors.As(err, &k) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		kind, ok := codes[api.ErrorCode()]
		if !ok {
			return err
		}
		if api.ErrorCode() == "TransactionCanceledException" && canceledByThrottling(err) {
			kind = failure.KindStoreThrottled
		}
		return failure.Classified(kind, err)
	}
	var op *smithy.OperationError
	if !errors.As(err, &op) {
		return err
	}
	// An operation error without an API error means DynamoDB never answered:
	// connection failures, or retries exhausted on them. Client-side
	// validation and serialization failures are our bugs, not outages.
	var invalid smithy.InvalidParamsError
	var ser *smithy.SerializationError
	if errors.As(err, &invalid) || errors.As(err, &ser) {
		return err
	}
	return failure.Classified(failure.KindStoreUnavailable, err)
}

// canceledByThrottling reports whether err is a transaction DynamoDB
// canceled only because of throttling, which is worth retrying, unlike one
// that lost a condition check (for example a warrant already claimed).
func canceledByThrottling(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	throttled := false
	for _, r := range tce.CancellationReasons {
		switch aws.ToString(r.Code) {
		case "ConditionalCheckFailed", "TransactionConflict":
			return false
		case "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
			throttled = true
		}
	}
	return throttled
}
