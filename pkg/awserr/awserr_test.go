package awserr_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/seed-f6d3920e/warrant/pkg/awserr"
)

func TestRead(t *testing.T) {
	op := func(err error) error {
		return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "PutItem", Err: err}
	}
	for _, tc := range []struct {
		name     string
		err      error
		code     string
		noAnswer bool
	}{
		{"api error", op(&smithy.GenericAPIError{Code: "ThrottlingException"}), "ThrottlingException", false},
		{"api error without operation", fmt.Errorf("x: %w", &smithy.GenericAPIError{Code: "ModelStreamErrorException"}), "ModelStreamErrorException", false},
		{"transport", op(errors.New("dial tcp: connection refused")), "", true},
		{"client validation", op(smithy.InvalidParamsError{Context: "PutItemInput"}), "", false},
		{"serialization", op(&smithy.SerializationError{Err: errors.New("x")}), "", false},
		{"plain", errors.New("boom"), "", false},
		{"nil", nil, "", false},
	} {
		if code, noAnswer := awserr.Read(tc.err); code != tc.code || noAnswer != tc.noAnswer {
			t.Errorf("%s: Read = %q, %v; want %q, %v", tc.name, code, noAnswer, tc.code, tc.noAnswer)
		}
	}
}
