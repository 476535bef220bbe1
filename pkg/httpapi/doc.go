// Package httpapi is the edge between API Gateway HTTP API (payload format
// 2.0, JWT authorizer) and Warrant's handlers: the caller's identity from
// the verified JWT only (its roles read exactly from the bearer token's
// payload, not API Gateway's rendering), strict bodies, paths and queries, and responses
// whose errors are failure envelopes rendered as application/problem+json.
// Nothing here copies a request value or an error's text into a response.
package httpapi
