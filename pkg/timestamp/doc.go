// Package timestamp obtains and verifies RFC 3161 timestamp tokens: proof
// from a time-stamping authority (TSA) the firm configures that a document
// (a firm log's checkpoint) existed at a time nobody at the firm controls.
// Client asks the TSA over HTTP (RFC 3161 section 3.4); Verify checks a token
// against the TSA's certificate or the CA it chains to. The ASN.1 and CMS are
// github.com/digitorus/timestamp's and github.com/digitorus/pkcs7's.
package timestamp
