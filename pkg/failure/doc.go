// Package failure turns any error into a failure envelope: a closed kind and
// stage, fixed sanitized texts, a hash-only debug reference, one EMF log line
// and an RFC 9457 problem body. Raw error text may be attorney-client
// privileged, so nothing here ever copies err.Error() into output.
package failure
