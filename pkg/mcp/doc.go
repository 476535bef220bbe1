// Package mcp is the target for a remote MCP server over Streamable HTTP: it
// implements agent.Target with the official Go SDK, so a catalog tool served
// by a firm's MCP server is called like a built-in one. It refuses a tool
// whose input schema no longer matches the catalog's pin, says whether a
// failed call left Warrant (unreachable or outcome unknown) from what the HTTP
// layer saw, refuses every request the server makes of the client, bounds what it
// reads of an answer before the SDK decodes it (MaxResponseBytes), and keeps
// tokens out of its errors and results.
//
// # The pin and the age of the list it is checked against
//
// A call is sent only for a tool the server lists with the schema the catalog
// pinned; otherwise it is refused, nothing sent, with a ToolChangedError
// giving both hashes (the brain then ends the run tool_changed). How old a
// tools/list may be depends on what the call can do:
//
//   - an effect (agent.TargetCall.Effect: its catalog class is not read) is
//     checked against a tools/list made for that call, right before it is
//     sent: a server that changed a tool and told nobody (a stateless server
//     cannot tell) is caught before the filing leaves;
//   - a read may be checked against the session's list, at most ToolsMaxAge
//     old (a minute), listed again sooner on a new session or after
//     notifications/tools/list_changed: a read changes nothing, and a list
//     round trip before every search would double its cost;
//   - a refusal from a kept list is always checked against a new one (the
//     server may have changed the tool back);
//   - CheckPin (agent.PinChecker), which the brain asks before counsel is
//     shown a warrant and before a signed call's claim is taken, always
//     lists anew and calls nothing.
//
// # What an answer means
//
// A tools/call is sent once at most (pkg/remote's Transport: no HTTP/1 or
// HTTP/2 client sends it again by itself). Only a call that surely never
// left is "unreachable", and only such a call is tried again, once, on a new
// session; once its request may have left, an answer either is the tool's
// result or proves nothing, and the outcome is unknown:
//
//	what happened                                        | result
//	---------------------------------------------------- | ------------------------------
//	no session, no token, a refused connection, a        | ErrTargetUnreachable (tried
//	  failed list (the tools are listed again past         |   once more on a new session
//	  ToolsMaxAge, which is how a session the server       |   when the session was kept
//	  forgot is found before the call), a write that       |   from before)
//	  failed part way, a deadline before the write
//	the tool not listed as pinned                        | *ToolChangedError (matches
//	                                                     |   ErrTargetUnreachable)
//	a result                                             | TargetResult
//	a result with isError: the tool's own refusal        | TargetResult{IsError: true}
//	input_required (the server asks for input)           | TargetResult{IsError: true}
//	HTTP 3xx, 4xx (401 and a 404 on a session included)  | ErrTargetOutcomeUnknown
//	  or 5xx after the request was sent
//	any JSON-RPC error after the request was sent        | ErrTargetOutcomeUnknown
//	no answer, an answer that does not decode, an answer | ErrTargetOutcomeUnknown
//	  over MaxResponseBytes (not read further: it ran,
//	  and its answer is lost)
//
// No answer after the request was sent proves the tool did not run. A
// redirect is how a filing says "created, see there"; a gateway answers 409,
// 422 or 429 after the server behind it acted, and a 401 too (its token is
// dropped all the same: the next call reads or fetches a new one). A server
// that forgot a session answers 404 before running anything, but so may a
// gateway after it ran. And a JSON-RPC code is no proof either: a tool's
// handler answers any code it likes, invalid params among them, after it
// acted, and since protocol 2026-07-28 invalid params is also an HTTP 400.
// MCP's own way for a tool to refuse is a result with isError, which is a
// tool error the model is told.
package mcp
