// Package httpstarget is the target for a firm's HTTPS endpoint: it
// implements agent.Target by running each call as one POST of the call's
// input to the tool's path under the system's base URL, so a catalog tool
// of kind "https" is called like a built-in one. It builds on pkg/remote
// for the auth, the token on the system's origin only, the probe that tells
// whether the request left, and redaction. It logs nothing and keeps no
// global state: a target per firm, each with the firm's secrets, is as cheap
// as one.
//
// # The request
//
// The tool's name is a path under the base URL: segments of letters,
// digits, '-', '.', '_' and '~' joined by '/' ("filings", "v1/filings"),
// the rule the catalog checks; no "." or ".." segment, no empty segment
// (so no "//host"), no scheme, no query or fragment, no percent-encoding
// (so no encoded slash or dot). The base URL's path is a directory: "filings"
// under https://api.firm.example/warrant is
// https://api.firm.example/warrant/filings. Anything else is refused before a
// byte leaves (warrant.ErrTargetUnreachable), so a call can never reach
// another origin or a path outside the base URL's.
//
// The body is the call's input byte for byte (the canonical JSON counsel
// signed), with Content-Type and Accept application/json, and two header
// fields:
//
//   - Idempotency-Key: the effect's effect_ref, as the IETF draft "The
//     Idempotency-Key HTTP Header Field"
//     (draft-ietf-httpapi-idempotency-key-header) defines it: an Item
//     Structured Field (RFC 8941, now RFC 9651) whose value is a String,
//     so quoted: Idempotency-Key: "7d0c…".
//   - Warrant-Run: the run the call is made for, a Structured Field
//     Dictionary (RFC 9651) of Strings: firm (the firm's id), run (the
//     run's id) and, when the run has one, matter (the matter's id):
//     Warrant-Run: firm="0f8e…", run="3a1b…", matter="3c2b…". An endpoint
//     serving several firms checks firm against its credentials; run and
//     matter let it file the effect where counsel will look for it.
//
// A value a String cannot carry (anything but printable ASCII) refuses the
// call; Warrant's ids are UUIDs. No cookies are sent or kept, no redirect is
// followed, and the token goes to the base URL's origin only.
//
// net/http's clients send a request again by themselves when they can
// rewind its body: HTTP/1 after a kept-alive connection failed, for a
// request it takes for idempotent (and an Idempotency-Key header makes a
// POST one), and HTTP/2 after the server reset the stream or sent GOAWAY,
// whatever the headers. By then the endpoint may have run it. pkg/remote's
// Transport, which every request of a target goes through, makes a
// request's body one that can be read once and never rewound, so no
// client, HTTP/1 or HTTP/2, sends the call twice. The draft says a client
// cannot assume a server honours the key, so Warrant never sends an effect
// twice on its own.
//
// # What an answer means
//
// The target does not know whether a tool reads or acts; the brain retries
// reads and never retries an effect whose outcome is unknown. So an answer
// is "did not run" (unreachable, or a tool error) only when it proves
// nothing ran: a refusal before the request was wholly sent, or a 4xx from
// an endpoint the catalog says answers 4xx only for what it did not do.
// Every other answer after the request was sent is the effect's outcome or
// unknown. The call is sent once, whatever the answer:
//
//	what happened                                        | result
//	---------------------------------------------------- | ------------------------------
//	not sent (remote.Probe): refused dial, DNS or TLS    | ErrTargetUnreachable
//	  failure, no token, a write that failed part way,
//	  a deadline before the request was written
//	2xx                                                  | TargetResult (below)
//	any other status before the request was wholly sent  | ErrTargetUnreachable
//	  (the endpoint refused what it had not read)
//	4xx after it was sent, 401, 409, 422 and 429 included:
//	  FinalClientErrors set                              | TargetResult{IsError: true}
//	  FinalClientErrors not set                          | ErrTargetOutcomeUnknown
//	3xx after it was sent (redirects are never followed) | ErrTargetOutcomeUnknown
//	5xx, 503 included, or any other status               | ErrTargetOutcomeUnknown
//	no answer after the request was sent (a reset, a     | ErrTargetOutcomeUnknown
//	  dropped connection, a deadline)
//
// A 4xx is a refusal only if the endpoint says so. HTTP does not promise
// that a 4xx left nothing behind, and the idempotency draft gives two of them
// a meaning that says the opposite: 409 Conflict answers a request whose key
// "is being processed or is outstanding" (the effect may be happening right
// now), and 422 answers a key reused with another payload (an effect under
// that key may have happened). A 429 (RFC 6585, too many requests) is by
// convention sent before any work is done, but a gateway may send it after
// the service behind it acted. A 401 is no different: a gateway may answer
// it for a backend that already ran the call, so it is not made again with
// a fresh token; the refused token is dropped (remote.Transport) and the
// next call reads or fetches a new one. So a 4xx is a tool error the model
// is told (the effect did not happen) only when the catalog states the
// endpoint's 4xx answers are final (Config.FinalClientErrors), and an
// outcome for counsel to reconcile otherwise. A redirect is the usual
// answer of a filing that was made ("303 See Other: created, see there"),
// so a 3xx is unknown whatever the catalog says of 4xx. A 503 often means
// "not processed", but a gateway says it too after the service behind it
// started, so every 5xx is unknown.
//
// A 2xx answer is the call's result: a JSON body as it is (surrounding
// whitespace cut); an empty body as {"http_status":N}; a body that is not
// JSON as {"http_status":N,"text":"…"} (invalid UTF-8 replaced); a body over
// MaxResponseBytes, which is not read further, as
// {"http_status":N,"answer_too_large":true}; a body cut off while read as
// {"http_status":N,"answer_incomplete":true}. The call ran in each case, so
// each is a success, never an error class. Every token and secret the target
// has held is cut out of a result as out of an error, wherever a careless
// endpoint echoed it: in a string, JSON-escaped or not, in a member's name,
// in JSON inside a string (remote.RedactJSON). A tool error's content is
// {"http_status":N}: a refusal's body is never read (it may echo the
// request's headers, token included).
//
// # Errors
//
// An error's text names the server, the tool's path and what failed, with
// the network's words and never the response body or the input; every token
// and secret the target has held is cut out (remote.Redact). Errors unwrap to
// their class and, when the context ended, its error, never to the raw
// cause.
package httpstarget
