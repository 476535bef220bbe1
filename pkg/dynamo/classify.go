package dynamo

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/seed-f6d3920e/warrant/pkg/awserr"
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
	if failure.Settled(err) {
		return err
	}
	code, noAnswer := awserr.Read(err)
	if noAnswer {
		return failure.Classified(failure.KindStoreUnavailable, err)
	}
	kind, ok := codes[code]
	if !ok {
		return err
	}
	if code == "TransactionCanceledException" && canceledByThrottling(err) {
		kind = failure.KindStoreThrottled
	}
	return failure.Classified(kind, err)
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
