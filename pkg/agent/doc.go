// Package agent is Warrant's brain: the Bedrock Converse loop with tool use, the
// hook chain every tool call passes (schema, risk policy, and on resume the
// warrant allowlist), effect claims so nothing runs twice, the cost pre-flight,
// and a resume that rebuilds the transcript from the ledger alone. Every step is
// a ledger line folded by the same reducer stream-reduce uses.
package agent
