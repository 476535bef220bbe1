// Package contracts is Warrant's one vocabulary: the commands a Lambda receives
// (AgentInvoke and its parts), the hash-chained ledger events, the strict JSON
// decoder every boundary uses, and the canonical (RFC 8785) input hash that binds
// a warrant to the exact tool input counsel saw. It makes no AWS calls.
package contracts
