// Package warrant holds Warrant's domain nouns: a run and its status, the
// warrant counsel signs, the effect claim that makes an act happen once, the
// outbox record of an act, and the store's typed errors with their failure
// kinds.
//
// Every other package speaks in these nouns: the brain (pkg/agent), the tools
// and the handlers declare small interfaces over them, and the adapters
// (pkg/dynamo, pkg/bedrock) implement those interfaces. This package imports
// no adapter and no AWS SDK; see docs/DECISIONS.md for why it is the module's
// root package.
package warrant
