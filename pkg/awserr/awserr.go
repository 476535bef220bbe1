// Package awserr reads what an AWS SDK error says about the service behind
// it: the API error code it answered with, or that it never answered. The
// adapters (pkg/dynamo, pkg/bedrock) map that to failure kinds, each with its
// own service's codes.
package awserr

import (
	"errors"

	"github.com/aws/smithy-go"
)

// Read returns the API error code of err (the service answered), or
// noAnswer when err is an SDK operation error without one: a connection
// failure, or retries exhausted on them. Client-side validation and
// serialization failures are neither (a bug of the caller, not the
// service's state): code "" and noAnswer false.
func Read(err error) (code string, noAnswer bool) {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode(), false
	}
	var op *smithy.OperationError
	if !errors.As(err, &op) {
		return "", false
	}
	var invalid smithy.InvalidParamsError
	var ser *smithy.SerializationError
	if errors.As(err, &invalid) || errors.As(err, &ser) {
		return "", false
	}
	return "", true
}
