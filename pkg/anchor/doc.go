// Package anchor signs and verifies a run's ledger head: the seq and hash of
// its last line, bound to the firm and the run, with HMAC-SHA-256. On AWS the
// key never leaves KMS (GenerateMac / VerifyMac on an HMAC_256 key); on the
// local stack it is a local key. The store signs the head in the transaction
// of every append, so a writer with table access who rewrites and re-chains a
// ledger cannot produce a head that verifies.
package anchor
