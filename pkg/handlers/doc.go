// Package handlers holds the five Lambda handlers (invoke, approve, resume,
// runs, stream-reduce): the API Gateway v2 edge of each route, the run and
// warrant views every route returns, and the stream reducer. functions/<name>
// only wires configuration and clients to these.
package handlers
