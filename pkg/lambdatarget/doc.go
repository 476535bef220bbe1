// Package lambdatarget is the target for a tool served by an AWS Lambda
// function: it implements agent.Target with one synchronous Invoke
// (RequestResponse) of the AWS SDK v2 per call, so a catalog tool that is a
// firm's Lambda function is called like one on an MCP server.
//
// The function receives one JSON object, {"effect_ref", "firm_id",
// "run_id", "matter_id", "tool", "input"}, whose input is the call's input
// byte for byte (the canonical bytes counsel signed). The SDK never retries
// an Invoke: the target does, and only a call that certainly did not run (a
// request that never left, per the HTTP layer, or a Lambda throttle). How a
// failure is read (unreachable or outcome unknown) is in classify.go. The
// package logs nothing, and its errors carry neither the input nor anything
// the function answered.
package lambdatarget
