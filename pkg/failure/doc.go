// Package failure turns any error into a failure envelope: a closed kind and
// stage, fixed sanitized texts, a hash-only debug reference, one EMF log line
// and an RFC 9457 problem body. Raw error text may be attorney-client
// privileged, so nothing here ever copies err.Error() into output.
//
// The package knows no AWS service: an adapter that talks to one (pkg/dynamo,
// pkg/bedrock) knows what its SDK's errors mean and marks them with
// Classified or Transient before returning them. So this package, and the
// pure reducer that uses it, link no AWS SDK (see deps_test.go).
package failure
