package lambdatarget_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/seed-f6d3920e/warrant/pkg/lambdatarget"
)

// Function is an exact function (an ARN in the client's region, or on
// loopback a name); never a pattern, a partial ARN or another region's.
func TestConfigFunction(t *testing.T) {
	onAWS := lambda.New(lambda.Options{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("a", "b", "")})
	local := client("http://127.0.0.1:9001")
	for _, tc := range []struct {
		function string
		client   *lambda.Client
		ok       bool
	}{
		{"arn:aws:lambda:eu-west-1:123456789012:function:file-motion", onAWS, true},
		{"arn:aws:lambda:eu-west-1:123456789012:function:file-motion:7", onAWS, true},
		{"arn:aws:lambda:eu-west-1:123456789012:function:file-motion:live", onAWS, true},
		{"arn:aws:lambda:eu-west-1:123456789012:function:file-motion:$LATEST", onAWS, true},
		{"arn:aws:lambda:us-east-1:123456789012:function:file-motion", local, true},
		{"file-motion", local, true},
		{"file-motion:live", local, true},
		{"file-motion", onAWS, false},
		{"123456789012:function:file-motion", onAWS, false},
		{"arn:aws:lambda:us-east-1:123456789012:function:file-motion", onAWS, false}, // another region
		{"arn:aws:lambda:eu-west-1:123456789012:function:*", onAWS, false},
		{"arn:aws:lambda:eu-west-1:123456789012:function:file-*", onAWS, false},
		{"arn:aws:lambda:eu-west-1:*:function:file-motion", onAWS, false},
		{"arn:aws:lambda:eu-west-1:123456789012:function:file-motion:*", onAWS, false},
		{"arn:aws:lambda:eu-west-1:123456789012:function:file-motion:live:extra", onAWS, false},
		{"arn:aws:s3:::bucket", onAWS, false},
		{"", local, false},
		{"file motion", local, false},
	} {
		_, err := lambdatarget.New(lambdatarget.Config{Name: "fns", Function: tc.function, Client: tc.client})
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v, want ok=%v", tc.function, err, tc.ok)
		}
	}
}

func TestConfigRefused(t *testing.T) {
	fn := "arn:aws:lambda:us-east-1:123456789012:function:f"
	c := client("https://lambda.us-east-1.amazonaws.com")
	noRegion := lambda.New(lambda.Options{BaseEndpoint: aws.String("http://127.0.0.1:9001")})
	for name, cfg := range map[string]lambdatarget.Config{
		"no name":           {Function: fn, Client: c},
		"no client":         {Name: "fns", Function: fn},
		"negative attempts": {Name: "fns", Function: fn, Client: c, MaxAttempts: -1},
		"negative delay":    {Name: "fns", Function: fn, Client: c, RetryDelay: -1},
		"no region":         {Name: "fns", Function: fn, Client: noRegion},
	} {
		if _, err := lambdatarget.New(cfg); err == nil || !strings.HasPrefix(err.Error(), "lambdatarget: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
