// Command tick prints each scheduled event it gets.
package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(_ context.Context, ev json.RawMessage) error {
		fmt.Printf("tick: %s\n", ev)
		return nil
	})
}
