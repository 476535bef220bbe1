package failure

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	brtypes "github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// ServiceID values of *smithy.OperationError, copied from the SDK's
// bedrockruntime.ServiceID and dynamodb.ServiceID so this package does not
// link both clients; a test pins them to the SDK constants.
const (
	serviceBedrock  = "Bedrock Runtime"
	serviceDynamoDB = "DynamoDB"
)

type verdict struct {
	kind      Kind
	retryable bool
	after     time.Duration
}

func defaultVerdict(k Kind) verdict {
	s := specOf(k)
	if !k.Valid() {
		k = KindInternal
	}
	return verdict{kind: k, retryable: s.retryable, after: s.retryAfter}
}

// retryableAs marks the transient codes of a kind that is not retryable in
// general (model_error covers both a broken model and a brief outage).
func retryableAs(k Kind) verdict {
	v := defaultVerdict(k)
	v.retryable, v.after = true, 5*time.Second
	return v
}

// Error codes per service. Both services use ThrottlingException, so a code
// alone does not say whether the model or the store is struggling.
var bedrockCodes = map[string]verdict{
	"ThrottlingException":           defaultVerdict(KindModelThrottled),
	"ServiceQuotaExceededException": defaultVerdict(KindModelThrottled),
	"ModelTimeoutException":         defaultVerdict(KindModelTimeout),
	"ValidationException":           defaultVerdict(KindModelValidation),
	"AccessDeniedException":         defaultVerdict(KindModelAccessDenied),
	"ModelErrorException":           defaultVerdict(KindModelError),
	"ModelStreamErrorException":     defaultVerdict(KindModelError),
	"InternalServerException":       retryableAs(KindModelError),
	"ServiceUnavailableException":   retryableAs(KindModelError),
	"ModelNotReadyException":        retryableAs(KindModelError),
}

var dynamoCodes = map[string]verdict{
	"ConditionalCheckFailedException":        defaultVerdict(KindStoreConflict),
	"TransactionCanceledException":           defaultVerdict(KindStoreConflict),
	"ProvisionedThroughputExceededException": defaultVerdict(KindStoreThrottled),
	"RequestLimitExceeded":                   defaultVerdict(KindStoreThrottled),
	"ThrottlingException":                    defaultVerdict(KindStoreThrottled),
	"InternalServerError":                    defaultVerdict(KindStoreUnavailable),
}

// Classify maps err to a kind and a retry policy. The first Kinder in err's
// chain (errors.As order) whose kind is valid decides the kind; then context
// errors; then AWS error codes; anything else is internal. The retry policy
// is that of the first Retrier in the chain stating the decided kind, else
// the kind's default. retryAfter is zero when retryable is false.
func Classify(err error) (kind Kind, retryable bool, retryAfter time.Duration) {
	v := classify(err)
	return v.kind, v.retryable, v.after
}

func classify(err error) verdict {
	var kind Kind
	find(err, func(e error) bool {
		k, ok := as[Kinder](e)
		if ok && k.FailureKind().Valid() {
			kind = k.FailureKind()
		}
		return kind != ""
	})
	if kind == "" {
		return classifyCause(err)
	}
	v := defaultVerdict(kind)
	if find(err, func(e error) bool {
		r, ok := as[Retrier](e)
		if !ok || r.FailureKind() != kind {
			return false
		}
		v.retryable, v.after = r.RetryPolicy()
		if !v.retryable {
			v.after = 0
		}
		return true
	}) {
		return v
	}
	// The cause may know more about retrying than the declared kind:
	// Wrap(KindModelError, "", InternalServerException) stays retryable.
	if c := classifyCause(err); c.kind == kind {
		return c
	}
	return v
}

// as reports whether e itself (not its chain) is, or by its As method
// converts to, a T.
func as[T any](e error) (T, bool) {
	if t, ok := e.(T); ok {
		return t, true
	}
	var t T
	if x, ok := e.(interface{ As(any) bool }); ok && x.As(&t) {
		return t, true
	}
	return t, false
}

// find visits err's chain in the order errors.As does (depth first through
// joined errors) until visit returns true.
func find(err error, visit func(error) bool) bool {
	for err != nil {
		if visit(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if find(e, visit) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// classified is a dependency's error with the kind its adapter gave it.
type classified struct {
	kind      Kind
	retryable bool
	after     time.Duration
	err       error
}

// Classified marks cause, an error from a dependency, as kind with the
// kind's default retry policy. It is for the adapter that knows what its
// dependency's errors mean (pkg/dynamo knows a ThrottlingException is
// store_throttled). The result says exactly what cause says (its Error() is
// cause's) and unwraps to cause, so errors.Is/As still see the cause.
// Classified(kind, nil) is nil.
func Classified(kind Kind, cause error) error {
	if cause == nil {
		return nil
	}
	v := defaultVerdict(kind)
	return &classified{kind: kind, retryable: v.retryable, after: v.after, err: cause}
}

// Transient is Classified for a transient failure of a kind that is not
// retryable in general: a brief Bedrock outage is a model_error, but unlike a
// broken model it is worth retrying after `after` (which should be
// positive; Retry-After is never below one second).
func Transient(kind Kind, after time.Duration, cause error) error {
	if cause == nil {
		return nil
	}
	return &classified{kind: kind, retryable: true, after: after, err: cause}
}

func (e *classified) Error() string     { return e.err.Error() }
func (e *classified) Unwrap() error     { return e.err }
func (e *classified) FailureKind() Kind { return e.kind }
func (e *classified) RetryPolicy() (bool, time.Duration) {
	return e.retryable, e.after
}

func classifyCause(err error) verdict {
	switch {
	case err == nil:
		return defaultVerdict(KindInternal)
	case errors.Is(err, context.DeadlineExceeded):
		return defaultVerdict(KindTimeout)
	case errors.Is(err, context.Canceled):
		return defaultVerdict(KindCanceled)
	}
	if v, ok := classifyAWS(err); ok {
		return v
	}
	return defaultVerdict(KindInternal)
}

func classifyAWS(err error) (verdict, bool) {
	service, hasOp := serviceOf(err)
	var api smithy.APIError
	if errors.As(err, &api) {
		v, ok := lookupCode(service, api.ErrorCode())
		if ok && api.ErrorCode() == "TransactionCanceledException" {
			v = refineCanceledTransaction(err, v)
		}
		return v, ok
	}
	if !hasOp {
		return verdict{}, false
	}
	// An operation error without an API error means no service response:
	// connection failures or retries exhausted on them. Client-side
	// validation and serialization failures are our bugs, not outages.
	var invalid smithy.InvalidParamsError
	var ser *smithy.SerializationError
	if errors.As(err, &invalid) || errors.As(err, &ser) {
		return verdict{}, false
	}
	switch service {
	case serviceDynamoDB:
		return defaultVerdict(KindStoreUnavailable), true
	case serviceBedrock:
		return retryableAs(KindModelError), true
	}
	return verdict{}, false
}

// serviceOf prefers the OperationError's ServiceID. ConverseStream errors
// arrive from the event stream without one, so fall back to the concrete
// SDK types of the codes both services share.
func serviceOf(err error) (service string, hasOp bool) {
	var op *smithy.OperationError
	if errors.As(err, &op) {
		return op.ServiceID, true
	}
	var brThrottle *brtypes.ThrottlingException
	var ddbThrottle *ddbtypes.ThrottlingException
	switch {
	case errors.As(err, &brThrottle):
		return serviceBedrock, false
	case errors.As(err, &ddbThrottle):
		return serviceDynamoDB, false
	}
	return "", false
}

func lookupCode(service, code string) (verdict, bool) {
	switch service {
	case serviceBedrock:
		v, ok := bedrockCodes[code]
		return v, ok
	case serviceDynamoDB:
		v, ok := dynamoCodes[code]
		return v, ok
	}
	// Unknown service: only a code that exactly one service uses is safe.
	bv, inBedrock := bedrockCodes[code]
	dv, inDynamo := dynamoCodes[code]
	switch {
	case inBedrock && !inDynamo:
		return bv, true
	case inDynamo && !inBedrock:
		return dv, true
	}
	return verdict{}, false
}

// refineCanceledTransaction looks at why DynamoDB canceled a transaction: a
// transaction canceled only by throttling is worth retrying, unlike one that
// lost a condition check (for example a warrant that was already claimed).
func refineCanceledTransaction(err error, v verdict) verdict {
	var tce *ddbtypes.TransactionCanceledException
	if !errors.As(err, &tce) {
		return v
	}
	throttled := false
	for _, r := range tce.CancellationReasons {
		if r.Code == nil {
			continue
		}
		switch *r.Code {
		case "ConditionalCheckFailed", "TransactionConflict":
			return v
		case "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
			throttled = true
		}
	}
	if throttled {
		return defaultVerdict(KindStoreThrottled)
	}
	return v
}

// DebugRef is the internal_debug_ref of err: the first 16 hex digits of
// sha256(class + "\n" + message). For an AWS API error anywhere in the chain
// class is its ErrorCode() and message its ErrorMessage(); otherwise class is
// the %T of the innermost error (first branch of a joined error) and message
// its Error(). A debug build can print the same pair next to the hash, so
// an operator can correlate without raw text ever reaching production logs.
func DebugRef(err error) string {
	if err == nil {
		return ""
	}
	var class, msg string
	var api smithy.APIError
	if errors.As(err, &api) {
		class, msg = api.ErrorCode(), api.ErrorMessage()
	} else {
		inner := innermost(err)
		class, msg = fmt.Sprintf("%T", inner), inner.Error()
	}
	sum := sha256.Sum256([]byte(class + "\n" + msg))
	return hex.EncodeToString(sum[:8])
}

func innermost(err error) error {
	for {
		var next error
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		case interface{ Unwrap() []error }:
			if errs := u.Unwrap(); len(errs) > 0 {
				next = errs[0]
			}
		}
		if next == nil {
			return err
		}
		err = next
	}
}
