// Package dynamo is Warrant's DynamoDB store: runs, their hash-chained
// ledgers, warrants (counsel's signatures), effect claims and the reference
// tools' outbox, all in one table.
//
// The guarantees live in the conditions, not in the callers:
//
//   - Every item of a run is in the partition FIRM#<firm>#RUN#<run>, so one
//     firm's ids cannot address another firm's items.
//   - A ledger line is put with attribute_not_exists(SK) on EVT#<seq>: one
//     writer per seq, no line ever overwritten.
//   - A warrant is decided once (status = pending), bound to the input hash
//     counsel was shown, and burnt once (decided -> consumed) in the same
//     transaction that releases the run and claims the effect.
//   - An effect claim (EFF#<tool>#<input_sha256>) is created once; only its
//     creator executes, and only its owner records the outcome. A claim
//     whose lease passed is reported, never taken over.
//
// A call repeated with the very same lines after its answer was lost (the
// lines are then already stored byte for byte) succeeds instead of
// conflicting with itself; a different call gets the typed conflict.
// Transactions canceled only by TransactionConflict are retried: they wrote
// nothing.
//
// Every read that authorizes is a consistent read on the base table; the
// GSI (pending warrants) is for listing only. Operations that fail a
// condition return typed errors (ErrSeqTaken, ErrWarrantConsumed, ...) and
// write nothing. The same conformance suite runs against minidyn, moto and
// any DYNAMODB_ENDPOINT (see package dynamotest).
package dynamo
