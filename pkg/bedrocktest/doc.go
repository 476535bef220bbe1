// Package bedrocktest is a fake Amazon Bedrock Runtime endpoint for tests and
// the local stack. It speaks the real restJson1 / AWS event-stream wire
// format for Converse and ConverseStream, so the unmodified SDK client can be
// pointed at it with BaseEndpoint, and it answers from a scripted model
// (Script) instead of an LLM. It records every request it receives.
package bedrocktest
