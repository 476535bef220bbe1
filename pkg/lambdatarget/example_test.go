package lambdatarget_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/seed-f6d3920e/warrant/pkg/agent"
	"github.com/seed-f6d3920e/warrant/pkg/lambdatarget"
)

func Example() {
	// A stand-in for Lambda's Invoke API. On AWS the client is
	// lambda.NewFromConfig(cfg), its region the function's.
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"filed":true,"docket":"24-cv-1031"}`))
	}))
	defer fake.Close()
	client := lambda.New(lambda.Options{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String(fake.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("key", "secret", ""),
	})

	target, err := lambdatarget.New(lambdatarget.Config{
		Name:     "court-filing",
		Function: "arn:aws:lambda:eu-west-1:123456789012:function:file-motion:live",
		Client:   client,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The function receives {"effect_ref","firm_id","run_id","matter_id",
	// "tool","input"}, the input as signed.
	res, err := target.Call(context.Background(), agent.TargetCall{
		Tool:      "file_motion",
		Input:     json.RawMessage(`{"matter_id":"m-1","motion":"compel"}`),
		EffectRef: "eff-1", FirmID: "firm-1", RunID: "run-1", MatterID: "m-1",
	})
	fmt.Println(string(res.Content), res.IsError, err)
	// Output: {"filed":true,"docket":"24-cv-1031"} false <nil>
}
