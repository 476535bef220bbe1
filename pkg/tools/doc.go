// Package tools holds Warrant's reference legal tools: two matter reads, a draft,
// and three outbound effects (client e-mail, court filing, document deletion).
// Every effect is recorded in an outbox keyed by its effect_ref, the idempotency
// key the runtime fixes when it claims the effect, so tests and the demo can count
// exactly how many effects happened. Tools only see the matter of their run, its
// documents included: a document id (an attachment's, a deletion's) is looked up in
// the run's matter only, and one that is not a document of it is refused.
package tools
