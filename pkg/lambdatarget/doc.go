// Package lambdatarget is the target for a tool served by an AWS Lambda
// function: it implements agent.Target with one synchronous Invoke
// (RequestResponse) of the AWS SDK v2 per call, so a catalog tool that is a
// firm's Lambda function is called like one on an MCP server.
//
// The function receives one JSON object, {"effect_ref", "firm_id",
// "run_id", "matter_id", "tool", "input"}, whose input is the call's input
// byte for byte (the canonical bytes counsel signed). The SDK never retries
// an Invoke: the target does, and only a call that certainly did not run (a
// request that never left, per the HTTP layer, or a Lambda throttle). The
// package logs nothing, and its errors carry neither the input nor anything
// the function or Lambda answered (Lambda's messages may quote the payload):
// a status, an error code, a network error. Its results are the function's
// answer as it gave it: the target holds no credential a function could
// echo (the SDK signs each request with the worker's role; a function
// receives the payload only), so unlike the MCP and HTTPS targets it has no
// token to cut out of them.
//
// # How a failure is read
//
// Whether the request left is decided at the HTTP layer (remote.Probe), never from error texts; what came back is read
// by its HTTP status and Lambda's error code. Lambda documents that an
// Invoke's error codes "are reserved for errors that prevent your function
// from executing" (API_Invoke), and a function's own failure is a 200 with
// X-Amz-Function-Error. Where a code may come after the function started,
// or is not one Lambda documents, the reading is the safe one: unknown.
//
//	| what happened                                                          | class                          |
//	| ---------------------------------------------------------------------- | ------------------------------ |
//	| the request never left (no credentials, connection refused, DNS, TLS,  | unreachable, retried           |
//	| the context ended before the write)                                    |                                |
//	| 429 TooManyRequestsException, ThrottlingException                      | unreachable, retried (after    |
//	|                                                                        | Retry-After when it is longer) |
//	| a code Lambda documents as a refusal (notRun, in classify.go): the     | unreachable                    |
//	| request refused (4xx: parameters, payload, size,                       |                                |
//	| not found, conflict, recursion, auth) or the function's environment    |                                |
//	| not set up (502: VPC, ENI, KMS, runtime, code package; EFS mounts,     |                                |
//	| SnapStart restore)                                                     |                                |
//	| HTTP 3xx (never followed; Lambda does not redirect)                    | unreachable                    |
//	| no answer after the request left (deadline, reset, EOF), or an answer  | outcome unknown                |
//	| that could not be read, or one over 8 MiB (Lambda caps a synchronous   |                                |
//	| answer at 6 MB; nothing past the bound is read)                        |                                |
//	| 500 ServiceException, 410 EFSIOException (I/O while running), 400      | outcome unknown                |
//	| RequestAbortedException, any other status or code                      |                                |
//	| 200 with a function error of Lambda's own: Sandbox.Timedout ("Task     | outcome unknown: it may have   |
//	| timed out"), Runtime.* (Runtime.ExitError: the process died),          | partly run, or run whole and   |
//	| Function.* (Function.ResponseSizeTooLarge), Extension.*                | lost its answer                |
//	| 200 with any other function error: the handler's own                   | TargetResult with IsError      |
//	| 200                                                                    | TargetResult                   |
package lambdatarget
