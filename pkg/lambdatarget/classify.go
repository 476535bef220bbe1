package lambdatarget

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	smithy "github.com/aws/smithy-go"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/remote"
)

// notRun are the error codes that say Lambda refused the Invoke before the
// function ran: Invoke's documented errors of the request and of setting
// the function's environment up
// (https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html), and
// Lambda's common errors of the request and its authentication
// (https://docs.aws.amazon.com/lambda/latest/api/CommonErrors.html).
// EFSIOException (I/O on the function's file system, which may be while it
// runs), RequestAbortedException (a request cut before its answer),
// ServiceException and InternalFailure are not here: unknown.
var notRun = map[string]bool{
	// Invoke (API_Invoke): the request.
	"InvalidParameterValueException":           true,
	"InvalidRequestContentException":           true,
	"RequestTooLargeException":                 true,
	"SerializedRequestEntityTooLargeException": true,
	"UnsupportedMediaTypeException":            true,
	"ResourceNotFoundException":                true,
	"ResourceConflictException":                true,
	"RecursiveInvocationException":             true,
	// Invoke: the environment could not be set up.
	"EC2AccessDeniedException":             true,
	"EC2ThrottledException":                true,
	"EC2UnexpectedException":               true,
	"ENILimitReachedException":             true,
	"SubnetIPAddressLimitReachedException": true,
	"InvalidSubnetIDException":             true,
	"InvalidSecurityGroupIDException":      true,
	"InvalidRuntimeException":              true,
	"InvalidZipFileException":              true,
	"KMSAccessDeniedException":             true,
	"KMSDisabledException":                 true,
	"KMSInvalidStateException":             true,
	"KMSNotFoundException":                 true,
	"ResourceNotReadyException":            true,
	"EFSMountConnectivityException":        true,
	"EFSMountFailureException":             true,
	"EFSMountTimeoutException":             true,
	"SnapStartException":                   true,
	"SnapStartNotReadyException":           true,
	"SnapStartTimeoutException":            true,
	// Lambda's common errors (CommonErrors), and the signature check.
	"AccessDeniedException":          true,
	"ExpiredTokenException":          true,
	"IncompleteSignature":            true,
	"InvalidSignatureException":      true,
	"MalformedHttpRequestException":  true,
	"NotAuthorized":                  true,
	"OptInRequired":                  true,
	"RequestEntityTooLargeException": true,
	"RequestExpired":                 true,
	"RequestTimeoutException":        true,
	"UnknownOperationException":      true,
	"UnrecognizedClientException":    true,
	"ValidationError":                true,
}

// throttled are the codes of a throttle: refused before the function ran,
// and worth trying again shortly.
var throttled = map[string]bool{"TooManyRequestsException": true, "ThrottlingException": true}

// failure is how one Invoke failed.
type failure struct {
	class      error // warrant.ErrTargetUnreachable or warrant.ErrTargetOutcomeUnknown
	why        string
	again      bool          // it did not run, and may be tried again
	retryAfter time.Duration // a throttle's Retry-After
}

// classify reads a failed Invoke: err is the SDK's error, v what the HTTP
// layer saw of the request.
func classify(err error, v remote.Verdict) failure {
	var api smithy.APIError
	code := ""
	if errors.As(err, &api) {
		code = api.ErrorCode()
	}
	refusal := fmt.Sprintf("HTTP %d %s", v.Status, codeText(code))
	switch {
	case !v.Sent:
		return failure{class: warrant.ErrTargetUnreachable, why: "not sent" + netDetail(err), again: true}
	case v.Status == 0:
		return failure{class: warrant.ErrTargetOutcomeUnknown, why: "no answer after the request was sent" + netDetail(err)}
	case v.TooLarge:
		return failure{class: warrant.ErrTargetOutcomeUnknown, why: fmt.Sprintf("the answer (HTTP %d) is larger than %d MiB (Lambda's own cap is 6 MB), not read further: it may have run, and its answer is lost", v.Status, maxAnswerBytes>>20)}
	case v.Status < 300:
		return failure{class: warrant.ErrTargetOutcomeUnknown, why: fmt.Sprintf("the answer (HTTP %d) could not be read", v.Status)}
	case v.Status < 400:
		return failure{class: warrant.ErrTargetUnreachable, why: fmt.Sprintf("refused with HTTP %d", v.Status)}
	case throttled[code]:
		return failure{class: warrant.ErrTargetUnreachable, why: "throttled: " + refusal, again: true, retryAfter: retryAfter(err)}
	case notRun[code]:
		return failure{class: warrant.ErrTargetUnreachable, why: "refused before the function ran: " + refusal}
	}
	return failure{class: warrant.ErrTargetOutcomeUnknown, why: refusal + " after the request was sent"}
}

// lambdaError reports whether a function error's payload is one Lambda
// raised itself (a timeout, the runtime or the process dying, an answer too
// large) rather than the handler's own, and names it for an error text.
func lambdaError(payload []byte) (string, bool) {
	var doc struct {
		Type    string `json:"errorType"`
		Message string `json:"errorMessage"`
	}
	_ = json.Unmarshal(payload, &doc) // not the error document: the handler's own
	if doc.Type == "Sandbox.Timedout" || strings.Contains(doc.Message, "Task timed out after") {
		return "the function timed out (Sandbox.Timedout)", true
	}
	for _, prefix := range []string{"Runtime.", "Sandbox.", "Function.", "Extension."} {
		if strings.HasPrefix(doc.Type, prefix) {
			return "a " + prefix + "* function error", true
		}
	}
	return "", false
}

// codeRE is a code as Lambda spells one; anything else is not echoed.
var codeRE = regexp.MustCompile(`^[A-Za-z0-9.]{1,100}$`)

func codeText(code string) string {
	switch {
	case code == "" || code == "UnknownError":
		return "without an error code"
	case codeRE.MatchString(code):
		return code
	}
	return "with an unrecognized error code"
}

// netDetail is the network's own error, when there is one: an address and
// what the system call said, never a payload.
func netDetail(err error) string {
	var op *net.OpError
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns):
		return ": " + dns.Error()
	case errors.As(err, &op):
		return ": " + op.Error()
	}
	return ""
}

// retryAfter is a TooManyRequestsException's Retry-After, in seconds.
func retryAfter(err error) time.Duration {
	var tm *types.TooManyRequestsException
	if !errors.As(err, &tm) || tm.RetryAfterSeconds == nil {
		return 0
	}
	s, perr := strconv.Atoi(strings.TrimSpace(*tm.RetryAfterSeconds))
	if perr != nil || s <= 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}
