package bedrock

import (
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/awserr"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// transientAfter is when a transient model_error (a brief Bedrock outage,
// as opposed to a model that fails on this request) is worth retrying.
const transientAfter = 5 * time.Second

type verdict struct {
	kind      failure.Kind
	transient bool // retryable after transientAfter, though the kind is not in general
}

// codes maps Bedrock Runtime error codes to failure kinds; unless transient,
// each takes its kind's default retry policy. Codes not listed
// (ResourceNotFoundException...) stay unclassified, which pkg/failure
// reports as internal.
var codes = map[string]verdict{
	"ThrottlingException":           {kind: failure.KindModelThrottled},
	"ServiceQuotaExceededException": {kind: failure.KindModelThrottled},
	"ModelTimeoutException":         {kind: failure.KindModelTimeout},
	"ValidationException":           {kind: failure.KindModelValidation},
	"AccessDeniedException":         {kind: failure.KindModelAccessDenied},
	"ModelErrorException":           {kind: failure.KindModelError},
	"ModelStreamErrorException":     {kind: failure.KindModelError},
	"InternalServerException":       {kind: failure.KindModelError, transient: true},
	"ServiceUnavailableException":   {kind: failure.KindModelError, transient: true},
	"ModelNotReadyException":        {kind: failure.KindModelError, transient: true},
}

// classify gives an error of the Bedrock Runtime client its failure kind, so
// that pkg/failure need not know Bedrock. Converse and ConverseStream errors
// (including the exceptions an event stream ends with, which carry no
// OperationError) all pass through it. The result unwraps to err, so
// errors.As still finds the SDK's types. It returns err unchanged when err
// already states a kind, when it is a context error (pkg/failure makes it
// timeout or canceled) and when the adapter cannot tell what it means
// (internal).
func classify(err error) error {
	if failure.Settled(err) {
		return err
	}
	code, noAnswer := awserr.Read(err)
	if noAnswer {
		// Bedrock never answered: a connection failure, or retries
		// exhausted on them; worth another try.
		return failure.Transient(failure.KindModelError, transientAfter, err)
	}
	v, ok := codes[code]
	switch {
	case !ok:
		return err
	case v.transient:
		return failure.Transient(v.kind, transientAfter, err)
	}
	return failure.Classified(v.kind, err)
}
