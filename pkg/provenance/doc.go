// Package provenance traces a tool call's outbound values (recipients,
// URLs, hosts, account and docket numbers, file paths) to where they appear
// in the run: counsel's message, the matter registry, the firm's settings,
// or earlier tool results (untrusted content, by ledger seq and tool). A
// destination found only in tool results raises the call to counsel
// (provenance.untrusted_destination); one found nowhere, or that cannot be
// read, fails closed (provenance.unknown_destination). It is pure: no I/O,
// no clock, and it never records or quotes a value.
//
// Declarations (Spec, ParseSpecs) name the values by JSON pointer and kind;
// Trace reads the call's input and returns a Finding per value; Verdict is
// the effect the policy applies; Store is the form tool.requested records,
// and Recheck holds that record to a fresh trace for ledger audit.
//
// # Where the agent finds the sources
//
// This step is the tracing core only: pkg/agent, pkg/toolpolicy, the
// catalog and the ledger do not call it yet (the next session's work). At
// decision time (session.toolCall) the agent already holds everything a
// Sources needs:
//   - Counsel: run.started's counsel_message (contracts.RunStarted, and
//     the invocation's contracts.AgentInvoke.CounselMessage), opened with
//     the run's data key when the run is sealed.
//   - Matter.ClientDomains and Firm.Domains: the same lists the policy
//     metadata carries (Brain.metadata: warrant.Matter.ClientDomains and
//     warrant.FirmSettings.Domains, recorded as PolicyMetadata's
//     client_domains and firm_domains), so the audit rebuilds them from
//     the recorded metadata. Matter.Parties waits for the registry to hold
//     parties.
//   - Results: each tool.completed line's seq, tool name and result, added
//     with AddResult as session.advance takes the line, and in ledger order
//     when a resume folds the ledger, so each result is indexed once per
//     session, not once per call.
//
// The declarations are to live per tool in the catalog or the policy; the
// history of the chat (run.started's history) is not a source here: an
// earlier assistant turn may repeat a document.
package provenance
