// Package bedrock adapts the Bedrock Runtime SDK client to the one call the
// agent brain makes: a Converse turn with tool use. It guarantees a maxTokens
// bound on every request, can stream the turn (delivering text deltas) while
// still returning an ordinary ConverseOutput, retries model timeouts as well
// as the SDK's usual transient errors, and rejects malformed tool use.
// It never logs prompts, tool inputs or model output: they may be privileged.
package bedrock
