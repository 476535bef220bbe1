// Package lambdalocal serves the Lambda Invoke API on loopback for functions
// run under the Lambda Runtime Interface Emulator (internal/rie), so that the
// Lambda target (pkg/lambdatarget) and the local stack reach them with the
// AWS SDK exactly as they reach Lambda: an SDK client whose BaseEndpoint is
// the Endpoint's URL.
//
// It answers as Lambda does where a caller can tell: a function error is a
// 200 with X-Amz-Function-Error and the error document; the emulator's bare
// timeout text becomes a Sandbox.Timedout function error (as a payload it
// would pass for the function's answer); an unknown function is a 404
// ResourceNotFoundException in Lambda's JSON error shape. The emulator
// crashes on two invocations at once, so each function's calls are queued
// and run one at a time. A call the endpoint accepted runs to its end even
// if its caller goes away, as on Lambda.
//
// Options.Fault injects the failures a target must tell apart: a throttle
// or a service error before the function runs, and an answer lost after it
// ran. Stop ends every emulator and bootstrap by PID: nothing is left
// running.
package lambdalocal
