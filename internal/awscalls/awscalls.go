package awscalls

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// DefaultAccount is the account an ARN gets when the call names its
// resource by name only and the Recorder names no account.
const DefaultAccount = "123456789012"

// Call is one IAM authorization a request needs: one action on one
// resource. A request IAM evaluates in parts (a DynamoDB transaction,
// item by item; an S3 put with Object Lock headers, as the put and its
// retention) is several Calls.
type Call struct {
	Function  string `json:"function"`
	Service   string `json:"service"`   // the SDK's service id ("DynamoDB")
	Operation string `json:"operation"` // the SDK's operation name ("TransactWriteItems")
	Action    string `json:"action"`    // "dynamodb:PutItem"; "unmapped:<service>:<operation>" when this package does not know it
	Resource  string `json:"resource"`  // an ARN, or "*" for an action with no resource-level permission
	// Conditions are the request's values of condition keys IAM would see
	// (kms:EncryptionContext:warrant:run_id, kms:SigningAlgorithm, s3:prefix),
	// each key's values sorted. Encryption context values are ids, never
	// content.
	Conditions map[string][]string `json:"conditions,omitempty"`
}

// key is what makes two Calls the same: a retried request, or the same
// request made twice, is recorded once.
func (c Call) key() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// Recorder keeps the Calls of every client whose options it joined. The
// zero value is ready; it is safe for concurrent use.
type Recorder struct {
	// Account is the account of ARNs built from a bare name (a table, a
	// queue name, a key id); "": DefaultAccount.
	Account string

	mu    sync.Mutex
	calls map[string]Call
}

// APIOption is the middleware that records function's calls: append it to
// aws.Config.APIOptions (every client built from that config) or to one
// client's Options.APIOptions.
func (r *Recorder) APIOption(function string) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		// Initialize runs once per operation, before retries: an SDK retry
		// never records twice, and a call that fails is still recorded
		// (IAM authorized it, or refused it, before it failed).
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("awscalls",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				r.record(function, awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx), awsmiddleware.GetRegion(ctx), in.Parameters)
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	}
}

func (r *Recorder) record(function, service, op, region string, params any) {
	account := r.Account
	if account == "" {
		account = DefaultAccount
	}
	needs := Needs(service, op, region, account, params)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[string]Call{}
	}
	for _, c := range needs {
		c.Function = function
		r.calls[c.key()] = c
	}
}

// Calls is every distinct Call recorded, sorted by function, action,
// resource.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Call, 0, len(r.calls))
	for _, c := range r.calls {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Call) int {
		return strings.Compare(a.key(), b.key())
	})
	return out
}
