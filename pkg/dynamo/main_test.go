package dynamo_test

import (
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
)

// TestMain stops the shared moto_server (if a test started it) after the
// tests.
func TestMain(m *testing.M) { dynamotest.Main(m) }
