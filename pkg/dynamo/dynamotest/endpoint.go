package dynamotest

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/pkg/dynamo"
)

// Endpoint is a DynamoDB endpoint the conformance suite runs against, with
// its own client (reached through BaseEndpoint) and round-trip counter.
type Endpoint struct {
	Name    string
	URL     string
	Client  *dynamodb.Client
	Counter *Counter
	// Faults injects a crash at the k-th write through Client.
	Faults *Faults
	// ReportsAllReasons: a canceled transaction carries a reason for every
	// item (DynamoDB, moto), not only the first failing one (minidyn).
	ReportsAllReasons bool
	// Lenient lists where the endpoint is more permissive or less faithful
	// than DynamoDB (the Lenient* names).
	Lenient []string
}

// Known leniencies. A fidelity test runs only where the endpoint has the
// behavior, and says so.
const (
	// LenientConsistentReadOnGSI: accepts ConsistentRead on a GSI query
	// (DynamoDB rejects it with a ValidationException).
	LenientConsistentReadOnGSI = "consistent-read-on-gsi"
	// LenientPutAllOld: ignores ReturnValuesOnConditionCheckFailure=ALL_OLD on
	// a Put (PutItem and a transaction's Put), so the store falls back to a
	// consistent GetItem to show the existing item.
	LenientPutAllOld = "put-all-old"
	// LenientTableStatus: DescribeTable reports no TableStatus.
	LenientTableStatus = "table-status"
	// LenientStreams: accepts a StreamSpecification but reports no stream.
	LenientStreams = "streams"
	// LenientUpdateRemove: REMOVE actions of an UpdateExpression are
	// silently ignored (minidyn v0.8.2 writes back only what SET produced).
	// The store does not depend on REMOVE for anything a reader could see.
	LenientUpdateRemove = "update-remove"
	// LenientItemSize: stores items over DynamoDB's 400 KB item limit
	// (DynamoDB refuses them with a ValidationException). The store
	// checks the size of what it writes where an input can make it big.
	LenientItemSize = "item-size"
	// LenientSerialized: the harness sends the endpoint one request at a
	// time because it is not linearizable under concurrent requests; races
	// still go through the real SDK but the server sees them in turn.
	LenientSerialized = "serialized"
	// LenientFirstReasonOnly is how DYNAMODB_ENDPOINT_LENIENT says the
	// endpoint reports only the first failing cancellation reason.
	LenientFirstReasonOnly = "first-reason-only"
)

// IsLenient reports whether the endpoint has the named leniency.
func (e *Endpoint) IsLenient(what string) bool { return slices.Contains(e.Lenient, what) }

// newClient builds a real aws-sdk-go-v2 DynamoDB client for url with static
// test credentials, us-east-1 and a retryer with few attempts. Nothing is
// read from the environment or ~/.aws.
func newClient(t testing.TB, url string, counter *Counter, faults *Faults, serial *sync.Mutex) *dynamodb.Client {
	tr := &http.Transport{
		MaxIdleConns:        128,
		MaxIdleConnsPerHost: 128,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(url),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient: &countingClient{
			next:    &http.Client{Transport: tr, Timeout: 30 * time.Second},
			counter: counter, serial: serial, faults: faults,
		},
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 3
			o.MaxBackoff = 100 * time.Millisecond
			o.RateLimiter = ratelimit.None
		}),
	})
}

// External is the endpoint named by DYNAMODB_ENDPOINT (DynamoDB Local, moto,
// a real table's region endpoint), or nil when it is not set. Its client
// uses the SDK's default configuration (region AWS_REGION, default us-east-1).
// DYNAMODB_ENDPOINT_LENIENT lists its leniencies, comma-separated (see the
// Lenient* names); by default it is taken to be faithful.
func External(t testing.TB) *Endpoint {
	t.Helper()
	url := os.Getenv("DYNAMODB_ENDPOINT")
	if url == "" {
		return nil
	}
	counter, faults := &Counter{}, &Faults{}
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion(envOr("AWS_REGION", "us-east-1")))
	if err != nil {
		t.Fatalf("dynamotest: config for DYNAMODB_ENDPOINT: %v", err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 128}
	t.Cleanup(tr.CloseIdleConnections)
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(url)
		o.HTTPClient = &countingClient{next: &http.Client{Transport: tr, Timeout: 30 * time.Second}, counter: counter, faults: faults}
	})
	var lenient []string
	for _, l := range strings.Split(os.Getenv("DYNAMODB_ENDPOINT_LENIENT"), ",") {
		if l = strings.TrimSpace(l); l != "" {
			lenient = append(lenient, l)
		}
	}
	return &Endpoint{Name: "external", URL: url, Client: client, Counter: counter, Faults: faults,
		ReportsAllReasons: !slices.Contains(lenient, LenientFirstReasonOnly), Lenient: lenient}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// All returns every available endpoint: minidyn always, moto when
// moto_server is installed (required when CI=true), and DYNAMODB_ENDPOINT
// when set.
func All(t testing.TB) []*Endpoint {
	t.Helper()
	eps := []*Endpoint{Minidyn(t)}
	if ep, err := moto(t); err == nil {
		eps = append(eps, ep)
	} else if os.Getenv("CI") == "true" {
		t.Fatalf("dynamotest: moto is required in CI: %v", err)
	} else {
		t.Logf("dynamotest: skipping moto: %v", err)
	}
	if ep := External(t); ep != nil {
		eps = append(eps, ep)
	}
	return eps
}

// NewTable creates a uniquely named table from dynamo.TableDefinition on ep
// and deletes it when the test ends.
func NewTable(t testing.TB, ep *Endpoint) string {
	t.Helper()
	name := "warrant-test-" + strings.ReplaceAll(uuid.NewString(), "-", "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := dynamo.CreateTable(ctx, ep.Client, name); err != nil {
		t.Fatalf("dynamotest: %s: %v", ep.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = ep.Client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
}
