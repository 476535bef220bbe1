package bedrock_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/seed-f6d3920e/warrant/pkg/bedrock"
	"github.com/seed-f6d3920e/warrant/pkg/bedrocktest"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// TestErrorsAreClassified checks end to end that what Converse returns,
// through Converse and through ConverseStream, carries its failure kind.
func TestErrorsAreClassified(t *testing.T) {
	const s5 = 5 * time.Second
	for _, tc := range []struct {
		fault     bedrocktest.Fault
		kind      failure.Kind
		retryable bool
		after     time.Duration
	}{
		{bedrocktest.FaultThrottle, failure.KindModelThrottled, true, s5},
		{bedrocktest.FaultModelTimeout, failure.KindModelTimeout, true, s5},
		{bedrocktest.FaultValidation, failure.KindModelValidation, false, 0},
		{bedrocktest.FaultAccessDenied, failure.KindModelAccessDenied, false, 0},
		{bedrocktest.FaultInternal, failure.KindModelError, true, s5},
		{bedrocktest.FaultServiceUnavailable, failure.KindModelError, true, s5},
		{bedrocktest.FaultMalformedToolUse, failure.KindModelMalformedOutput, false, 0},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			modes(t, func(t *testing.T, stream bool) {
				s := fake(t, bedrocktest.Script{Fallback: &bedrocktest.Reply{Fault: tc.fault,
					ToolUses: []bedrocktest.ToolUse{{ID: "tu-1", Name: "file_court_document"}}}})
				_, err := client(t, s, bedrock.Options{Stream: stream}, bedrock.WithMaxAttempts(1)).Converse(context.Background(), input("go"), nil)
				kind, retryable, after := failure.Classify(err)
				if kind != tc.kind || retryable != tc.retryable || after != tc.after {
					t.Errorf("%v: Classify = (%s, %v, %v), want (%s, %v, %v)", err, kind, retryable, after, tc.kind, tc.retryable, tc.after)
				}
			})
		})
	}

	// An exception event mid-stream arrives without an OperationError.
	t.Run("mid-stream exception", func(t *testing.T) {
		s := fake(t, bedrocktest.Script{Fallback: &bedrocktest.Reply{Text: "partial", Fault: bedrocktest.FaultMidStream}})
		_, err := client(t, s, bedrock.Options{Stream: true}).Converse(context.Background(), input("go"), nil)
		if kind, retryable, _ := failure.Classify(err); kind != failure.KindModelError || retryable {
			t.Errorf("%v: Classify = (%s, %v), want (model_error, false)", err, kind, retryable)
		}
	})

	// Nothing answers: a transient model_error.
	t.Run("unreachable", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + l.Addr().String()
		l.Close()
		cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}
		modes(t, func(t *testing.T, stream bool) {
			c := bedrock.New(bedrock.NewRuntime(context.Background(), cfg, url, bedrock.WithMaxAttempts(1)), bedrock.Options{Stream: stream})
			_, err := c.Converse(context.Background(), input("go"), nil)
			kind, retryable, after := failure.Classify(err)
			if kind != failure.KindModelError || !retryable || after != s5 {
				t.Errorf("%v: Classify = (%s, %v, %v), want (model_error, true, 5s)", err, kind, retryable, after)
			}
		})
	})
}
