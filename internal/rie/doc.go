// Package rie runs Lambda function bootstraps under the AWS Lambda Runtime
// Interface Emulator pinned in go.mod (`go tool aws-lambda-rie`), the emulator
// `sam local invoke` runs inside its container, without Docker.
//
// One Emulator is one function: its own emulator process on two loopback
// ports of its own (the invoke API and the runtime API the bootstrap talks
// to), in its own process group. The emulator serves one invocation at a
// time (two at once crash it), so Invoke queues callers. Stop ends the
// emulator and the bootstrap it started (which the emulator puts in a
// process group of its own) by their PIDs: nothing is left running.
//
// Unix only (process groups); the emulator itself is Linux-first.
package rie
