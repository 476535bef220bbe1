// Package toolpolicy decides, before any tool runs, whether a model's tool call
// may run, must wait for a lawyer's signed warrant, or is refused. It is
// fail-closed: a tool the policy does not name gets the default decision, and
// the default may never allow.
//
// # Tiers
//
// Every listed tool has a floor tier: low and medium run (medium is audited),
// high requires counsel's warrant, prohibited is denied. An unlisted tool gets
// the default tier, which is high or prohibited.
//
// # Rules
//
// A policy may also hold rules over the call's arguments and metadata
// (hitl_risk_policy.json ships the ones a law firm expects):
//
//	"rules": [{
//	  "id": "email.copy_outside_firm",
//	  "tools": ["send_client_email"],
//	  "when": [{"any": [
//	    {"input": "/cc/*", "op": "domain_not_in", "meta_value": "firm_domains"},
//	    {"input": "/bcc/*", "op": "domain_not_in", "meta_value": "firm_domains"}]}],
//	  "then": "raise:high",
//	  "restates_floor": true,
//	  "reason": "A cc or bcc recipient is outside the firm's e-mail domains."
//	}]
//
// id is unique and matches ^[a-z][a-z0-9_.-]{0,63}$; tools lists tools the
// policy lists; when holds conditions that must all hold (none: always); then
// is "raise:medium", "raise:high", "deny" or "record"; reason is shown to
// counsel and recorded.
//
// A condition is a comparison or a group: {"any": [...]}, {"all": [...]} or
// {"not": {...}} (at most 8 deep, 64 conditions a rule). A comparison has a
// subject, an op, and for most operators a comparand:
//
//   - subject: "input", an RFC 6901 JSON pointer into the call's input ("~1"
//     is "/", "~0" is "~"), where a token "*" selects every element of an
//     array (a member named "*" cannot be addressed); or "input": "**",
//     every string of the input: each member name, each string value and
//     each number's text, at any depth (read by the contains_* detectors
//     and matches only; a detector reads a member's name with its string
//     or number value, as "name: value", so {"ssn": 123456789} reads as
//     the keyword and the number it is); or "meta", a Metadata field:
//     firm_id, matter_id, agent_key, user_id (strings), roles,
//     firm_domains, client_domains (lists, which select their elements);
//   - comparand: "value", a JSON literal, or "meta_value", a Metadata field.
//
// A comparison holds if it holds for any selected value. A pointer that
// selects nothing (an absent member, an index past the end, an empty array
// under "*") makes every comparison false, but missing true. The operators:
//
//	equals, not_equals     a string, number or boolean (or a string field)
//	in, not_in             a non-empty list of one type (or a list field)
//	matches, not_matches   an RE2 pattern, compiled at load (Go's regexp
//	                       costs 100 ns or more a byte: prefer the
//	                       detectors below for long text)
//	domain_in,             the lower-case domain after the last '@' of an
//	domain_not_in          address, or of each address of a list, compared
//	                       exactly (ASCII case aside) with a list of
//	                       lower-case domains or firm_domains/client_domains;
//	                       a sub-domain is not its parent, and a malformed
//	                       address (a display name, a list, a quoted local
//	                       part, a source route: '%' or '!' in the local
//	                       part, an IP literal, a trailing dot, a Unicode
//	                       domain not in xn-- form) is in no list
//	length_gt              a string's characters or an array's elements
//	sum_gt                 the sum of every number the pointer selects
//	exists, missing        whether the pointer selects anything
//	contains_card_number   13-19 digits, together or in groups split by
//	                       single hyphens or spaces (Unicode dashes and
//	                       no-break spaces too), starting 3-6 (or 2221-2720,
//	                       16 digits) and passing Luhn
//	contains_ssn           AAA-GG-SSSS or AAA GG SSSS with a valid area,
//	                       group and serial; next to a keyword ("SSN:",
//	                       "Social Security No.", "(SSN)") also with full
//	                       stops, mixed separators or none ("SSN 123456789")
//	contains_credential    a password, secret, key or token assigned a value
//	                       ("password: ...", "DB_PASSWORD=...", "apiKey:
//	                       ...", "the password is ..."), Basic credentials,
//	                       an AWS access key id, a PEM or PuTTY private key,
//	                       a bearer token, a token of a published format
//	                       (GitHub, GitLab, Slack, Stripe, OpenAI,
//	                       Anthropic, Google, npm, SendGrid), a JWT, a URL
//	                       with a password
//
// The exact definitions are in detect.go and credential.go; the forms each
// detector catches, and the false positives it accepts, are a corpus in
// testdata/identifiers that a test sends through the embedded policy.
//
// # What happened before: prior steps
//
// A condition may ask what the run did before the call: {"prior": {...}}
// holds when an earlier tool call of the run completed with a status
// (default "success"; also "error", "denied", "declined") and its result
// satisfies where, conditions written as a rule's whose "input" pointers
// read that result. A conflicts check that must come first:
//
//	{"id": "court.conflicts_first", "tools": ["file_court_document"],
//	 "when": [{"not": {"prior": {"tool": "check_conflicts",
//	   "where": [{"input": "/conflict", "op": "equals", "value": false}]}}}],
//	 "then": "deny", "reason": "File only after a conflicts check found none."}
//
// The run's steps are Call.History, which the agent and the audit build from
// the run's ledger (each tool.completed line before the decision), so a
// decision that read them is decided again from the ledger alone. Not known
// (nil), a prior condition is undecided, as is a matching step whose result
// cannot be read (sealed, not an object): fail-closed.
//
// "scope": "matter" also looks in the matter's other runs: Call.Matter, the
// steps the store's per-matter record holds (the agent reads it once per
// decision, for the tools MatterPriorTools names; the worker records the
// tools MatterStepTools names). Not known (nil) is undecided where the
// run's own steps do not satisfy the condition. Decision.MatterSteps names
// the other runs' steps a decision rested on (run, seq, line hash), which
// tool.requested records and the audit checks in those runs' exports.
// Load refuses an unknown scope, an unlisted tool, an unknown status and a
// prior inside a prior's where.
//
// # Destinations: where a call's values came from
//
// A tool entry may declare "destinations": [{"pointer": "/bcc/*", "kind":
// "email"}, ...] (kinds email, url, host, identifier, path): each value is
// traced to where the run got it (pkg/provenance; Call.Sources). One found
// only in tool results fires provenance.untrusted_destination, one found
// nowhere or not readable provenance.unknown_destination; both raise the
// call to high, after the file's rules, and never deny. The FiredRule names
// the value by its pointer, never by its value, and Decision.Provenance is
// the record of where each was found. A call counsel signed (Call.Signed) is
// not traced: counsel's signature is the source of its values.
//
// # Tools that send data outside the firm
//
// A tool entry may say "sends_outside": true: the tool sends its input out
// of the firm (an e-mail, a court filing). Whatever a detector should keep
// in the firm may then be in any string of the input, a recipient or an
// attachment's name as much as a body, so Load refuses a rule with a
// contains_* detector on such a tool unless it reads "**". Declaring a new
// outbound tool is a line of policy, and a detector narrower than what the
// tool sends cannot be written.
//
// Load refuses, with an ErrInvalidPolicy naming the rule and field
// ("rules[3].when[0].op"): unknown operators and metadata fields, bad
// pointers, invalid RE2, comparands of the wrong type, "**" with another
// operator than a detector or matches, a detector narrower than "**" on a
// tool that sends outside the firm, duplicate ids, tools the policy does not
// list, and unreachable rules: a deny rule whose tools are all prohibited,
// or a raise rule that is above the floor of none of its tools. A raise rule may restate a floor on purpose (it then still applies if
// the floor is ever lowered, and shows in FiredRules every time) with
// "restates_floor": true. Record rules are always accepted.
//
// # Decisions
//
// Decide starts from the tool's floor and evaluates, in file order, each rule
// listing the tool; every rule that fires is appended to FiredRules. raise:T
// makes the tier the higher of the two, deny makes it prohibited, record
// changes nothing: no rule lowers a tier. The action follows the final tier;
// MatchedPolicy stays "tools.<name>"; Reason becomes "rule <id>: <reason>"
// when a rule raised the tier or denied the call; Replayable holds only for a
// replayable tool still low with no rule fired.
//
// A condition that cannot be evaluated never makes a call safer: input that is
// not a JSON object (or none at all), a pointer crossing a value of the wrong
// type or a duplicate key, a value of another JSON type than the comparand, an
// empty metadata string compared with. Conditions combine such outcomes as
// Kleene's three-valued logic does; a raise or deny rule whose conditions are
// undecided fires, and its reason says "condition could not be evaluated". A
// record rule fires only when its conditions hold. So GetToolRiskDecision, a
// decision on the tool's name alone, is never less strict than a decision on
// any actual call of the tool.
//
// # Limits
//
// A full policy may also limit how many calls run over a window:
//
//	"limits": [{
//	  "id": "drafts.per_matter_day",
//	  "tools": ["draft_document"],
//	  "when": [],
//	  "per": "matter",
//	  "window": "day",
//	  "max": 20,
//	  "then": "raise:high",
//	  "reason": "More than twenty drafts a day in one matter is unusual."
//	}]
//
// A limit's id is unique among rules and limits; tools are listed tools,
// not all high or prohibited (a limit acts on calls the policy allows);
// when selects the calls it counts, in the rules' language (a condition
// that cannot be evaluated counts the call); per is "run", "matter" or
// "firm"; window is "hour" or "day" (UTC); max is an integer from 1; then
// is "deny" or "raise:high". Load refuses anything else, naming the field
// ("limits[0].max").
//
// Decide does not know the counts: it puts the limits that count a call on
// Decision.Limits and leaves the tier alone. Whoever claims the call's
// effect counts it in the same write, and a call that finds a count at its
// max is decided again with LimitsReached: a fired rule of the limit, the
// call denied or raised to counsel. A call counsel signed is counted and
// not held to the limit.
//
// # Overlays
//
// LoadDocument also reads an overlay of the embedded policy, for a deployment
// to change it without a rebuild:
//
//	{"extends": "embedded", "version": "firm-7",
//	 "disable": ["email.attachment_count"], "require_approval": ["draft_document"]}
//
// disable removes rules (or limits) and require_approval raises floors to
// high; an overlay cannot add rules or limits, lower a tier or change the
// default, and any mistake in it
// is an error, never a fallback. Decisions then carry the version
// "<embedded version>+<overlay version>".
package toolpolicy
