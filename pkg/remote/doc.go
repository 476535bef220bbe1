// Package remote is what every target that reaches a firm's system over
// HTTP shares (pkg/mcp, pkg/httpstarget, pkg/lambdatarget): how Warrant
// authenticates (Auth, Credentials: a bearer token from Secrets Manager or
// OAuth 2.1 client credentials, cached, refreshed before expiry, dropped on
// a 401), the HTTP layer that puts the token on requests to the system's
// origin only and never sends a request twice, over HTTP/1 or HTTP/2,
// whatever transport a firm configures (Transport), and the Probe that
// tells from the HTTP layer whether a call left, which decides between
// "nothing ran" and "the outcome is unknown". It logs nothing; its errors
// never hold a token or a secret (Redact).
package remote
