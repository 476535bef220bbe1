// Package seal is the one room that seals and opens privileged values: each
// run has its own AES-256 data key, and each value is encrypted with
// AES-256-GCM under it, so destroying a run's key destroys its content.
//
// # Keys
//
// A run's data key comes from a Keyring. KMSKeyring calls
// kms:GenerateDataKey (AES_256) under the firm's customer-managed key with
// the encryption context
//
//	{"warrant:firm_id": <firm>, "warrant:run_id": <run>}
//
// and opens the stored blob with kms:Decrypt, passing the same context and
// pinning KeyId, so a blob from another firm or run, or wrapped under any
// other key, is refused. LocalKeyring stands in on the local stack: a 32-byte
// master key wraps random data keys with AES-256-GCM, the firm and the run as
// additional data; its blob starts "wlk1" and is 64 bytes. ParseKeySpec reads
// DATA_KEY ("kms:<key>" or, local only, "aes:<64 hex>").
//
// The lifecycle: NewRunKey once per run, whose blob the caller stores (it is
// the only form of the key that is kept); OpenRunKey in any later invocation
// that reads or writes the run's content; Destroy (or Cache.Forget) when done.
// A Cache per invocation makes that at most one Decrypt per run. The plaintext
// key is in memory only; the 32 bytes this package receives are zeroed once
// the AES cipher is built. Go gives no way to wipe the cipher's key schedule
// or the SDK's response buffers, so Destroy drops the last reference and the
// memory is reclaimed, not scrubbed, when the collector gets to it.
//
// # Values
//
// RunKey.Seal encrypts with a random 96-bit nonce per value and additional
// data binding the value to where it is stored:
//
//	"warrant/seal/value/v1" || len(firm) || firm || len(run) || run || len(field) || field
//
// each len a 4-byte big-endian count, so a value moved to another field, run
// or firm does not open. The stored form (SealJSON, Sealed.MarshalJSON) is a
// JSON object that can stand wherever any JSON value stood:
//
//	{"sealed":"v1","ct":"<base64>"}
//
// where ct is standard padded base64 (RFC 4648 section 4) of nonce (12 bytes)
// || ciphertext || tag (16 bytes). IsSealed accepts exactly that shape, in any
// member order and spacing; OpenJSON returns the sealed bytes exactly (what
// counsel signs and what runs are the same bytes). A plaintext value that has
// this very shape would be read as sealed, so the reader decides which fields
// are sealed from the line's schema version, not from IsSealed, and OpenJSON
// treats a plain value where a sealed one must be as ErrCannotOpen.
//
// Errors are matched with errors.Is: ErrKeyUnavailable (the key is destroyed
// or its KMS key unusable), ErrCannotOpen (altered, moved, or another key's;
// ledger_corrupt) and ErrKMS (KMS did not answer; store_unavailable or
// config_invalid). No error path returns plaintext: without a key Seal
// returns nothing.
//
// What the package does not do: decide which values are privileged, store
// anything (blobs and sealed values are the caller's to keep), or destroy a
// stored blob; those are the store's and the brain's.
package seal
