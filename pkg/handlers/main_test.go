package handlers_test

import (
	"os"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
)

func TestMain(m *testing.M) { os.Exit(dynamotest.Run(m)) }
