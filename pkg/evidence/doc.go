// Package evidence is what lets someone outside the firm check a run: receipts
// signed with an asymmetric key (ECDSA P-256 over the SHA-256 of RFC 8785
// canonical JSON) for every executed effect, every reconciliation and every
// terminal run; the firm's log, a hash chain of one entry per receipt; the
// checkpoints that sign the log's size and head on a schedule, each chained to
// the one before, and signed again as a C2SP signed note (note.go) so
// transparency-log tools can read them; and the bundle a run's evidence is
// served in, with Verify, the offline check `warrant evidence verify` runs.
//
// Everything here is pure: a Signer signs digests (a local P-256 key here,
// KMS in pkg/anchor), and the formats are chosen so that a verifier with
// openssl, sha256sum and jq alone can repeat every check (docs/EVIDENCE.md).
package evidence
