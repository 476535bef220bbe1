// Package notify turns what happens to runs into the notifications counsel
// receive (issue 21): a warrant waits, is decided or is about to expire; a
// run completes or fails; an effect's outcome is unknown. An event carries
// ids, the tool, its tier, the matter's name, people's display names, a desk
// link and times: never a tool input, a prompt, model output or a raw error
// (Event has no field that could hold one). Its id is derived from what it
// reports (firm, run, ledger seq, type), so a notification published twice
// (the ledger stream delivers at least once) carries the same id and a
// consumer drops the second.
//
// An event on the bus also carries its text fields escaped for a JSON
// string (Escaped, under "escaped"): EventBridge puts a value into an input
// template's string as it is, unescaped, so a rule's message is built from
// those, never from the plain fields.
package notify

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// Source is the events' source on the bus.
const Source = "io.warrant"

// Event types (closed): the bus's detail-type.
const (
	WarrantPending       = "warrant.pending"
	WarrantDecided       = "warrant.decided"
	WarrantExpiring      = "warrant.expiring"
	RunCompleted         = "run.completed"
	RunFailed            = "run.failed"
	EffectOutcomeUnknown = "effect.outcome_unknown"
)

// Types lists every event type.
var Types = []string{WarrantPending, WarrantDecided, WarrantExpiring, RunCompleted, RunFailed, EffectOutcomeUnknown}

// Event is one notification's detail. Every field is an id, a name from the
// firm's registry or a token, a closed word, a time or a link.
type Event struct {
	Type              string `json:"type"`
	ID                string `json:"event_id"`
	FirmID            string `json:"firm_id"`
	RunID             string `json:"run_id"`
	Seq               int64  `json:"seq,omitempty"`
	MatterID          string `json:"matter_id,omitempty"`
	MatterName        string `json:"matter_name,omitempty"`
	RequestedBy       string `json:"requested_by,omitempty"`
	RequestedByName   string `json:"requested_by_name,omitempty"`
	ApprovalRequestID string `json:"approval_request_id,omitempty"`
	ToolName          string `json:"tool_name,omitempty"`
	RiskTier          string `json:"risk_tier,omitempty"`
	ExpiresAt         string `json:"expires_at,omitempty"`
	Decision          string `json:"decision,omitempty"`
	DecidedBy         string `json:"decided_by,omitempty"`
	DecidedByName     string `json:"decided_by_name,omitempty"`
	EffectRef         string `json:"effect_ref,omitempty"`
	Status            string `json:"status,omitempty"`
	FailureKind       string `json:"failure_kind,omitempty"`
	// On run.completed and run.failed: the run's actions by outcome (done,
	// failed, declined, denied, unknown, not_run), how many did not
	// succeed, and Outcome, that in words ("1 action not done:
	// file_court_document failed, its system unreachable"), from the
	// ledger, never the model's words. A completed run may have failed to
	// do what it was asked.
	Actions        map[string]int `json:"actions,omitempty"`
	ActionsNotDone int            `json:"actions_not_done,omitempty"`
	Outcome        string         `json:"outcome,omitempty"`
	DeskURL        string         `json:"desk_url"`
	OccurredAt     string         `json:"occurred_at"`
}

// Escaped is what an input template may show of an event, each value
// escaped to stand inside a JSON string (see Escape). EventBridge inserts
// a value into a template's string unescaped ("EventBridge doesn't escape
// values extracted by Input Path"), so a name with a quote in a plain field
// would make the message invalid JSON and lose it; an escaped one reads, once
// the message is decoded, exactly as the field. Matter and Requester are the
// name when there is one, else the id: what a firm that mails names shows.
type Escaped struct {
	ToolName    string `json:"tool_name"`
	RiskTier    string `json:"risk_tier"`
	Matter      string `json:"matter"`
	MatterID    string `json:"matter_id"`
	Requester   string `json:"requester"`
	RequesterID string `json:"requester_id"`
	ExpiresAt   string `json:"expires_at"`
	RunID       string `json:"run_id"`
	Outcome     string `json:"outcome"`
	DeskURL     string `json:"desk_url"`
}

// Escaped returns the event's Escaped fields.
func (e Event) Escaped() Escaped {
	return Escaped{ToolName: Escape(e.ToolName), RiskTier: Escape(e.RiskTier),
		Matter: Escape(orElse(e.MatterName, e.MatterID)), MatterID: Escape(e.MatterID),
		Requester: Escape(orElse(e.RequestedByName, e.RequestedBy)), RequesterID: Escape(e.RequestedBy),
		ExpiresAt: Escape(e.ExpiresAt), RunID: Escape(e.RunID), Outcome: Escape(e.Outcome), DeskURL: Escape(e.DeskURL)}
}

// orElse is the first of a, b that is not empty.
func orElse(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// MarshalJSON is the event's detail on the bus: its fields and, under
// "escaped", Escaped.
func (e Event) MarshalJSON() ([]byte, error) {
	type fields Event // without this method
	return json.Marshal(struct {
		fields
		Escaped Escaped `json:"escaped"`
	}{fields(e), e.Escaped()})
}

// Escape returns s as the inside of a JSON string (what goes between its
// quotes): a quote and a backslash escaped, and every character a reader of
// the message would not see as itself (controls, line breaks, the invisible
// characters contracts.Invisible names) written as an escape, so the mail
// shows them as such. < and > are written as \u003c and \u003e: a value
// then cannot form a placeholder of the template it is put into, whatever
// order EventBridge substitutes in.
func Escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '<' || r == '>' || r < 0x20 || contracts.Invisible(r):
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04x`, u)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// EventID derives an event's id from what it reports.
func EventID(typ, firm, run string, seq int64, extra string) string {
	sum := sha256.Sum256([]byte(typ + "\n" + firm + "\n" + run + "\n" + strconv.FormatInt(seq, 10) + "\n" + extra))
	return hex.EncodeToString(sum[:16])
}

// DeskLink is the desk's page of a run (and its warrant).
func DeskLink(desk, run, approval string) string {
	u := desk + "#/runs/" + url.PathEscape(run)
	if approval != "" {
		u += "/warrants/" + url.PathEscape(approval)
	}
	return u
}

// FromLines returns the events new ledger lines call for. from is the state
// folded up to the line before lines[0] (the zero state before line 1).
// The matter's name is the caller's to add (it is the registry's, not the
// ledger's).
func FromLines(from reducer.RunState, lines []contracts.Line, desk string) ([]Event, error) {
	var out []Event
	st := from
	for _, l := range lines {
		prev := st
		var err error
		if st, err = reducer.Apply(st, l); err != nil {
			return out, err
		}
		base := Event{FirmID: l.FirmID, RunID: l.RunID, Seq: l.Seq, MatterID: st.MatterID,
			RequestedBy: st.UserID, RequestedByName: st.UserName, OccurredAt: l.CreatedAt, DeskURL: DeskLink(desk, l.RunID, "")}
		add := func(e Event, extra string) {
			e.ID = EventID(e.Type, e.FirmID, e.RunID, e.Seq, extra)
			out = append(out, e)
		}
		switch ev := l.Event.(type) {
		case *contracts.RunBlocked:
			e := base
			a := ev.Approval
			e.Type, e.ApprovalRequestID, e.ToolName, e.RiskTier, e.ExpiresAt = WarrantPending, a.ApprovalRequestID, a.ToolName, a.RiskTier, a.ExpiresAt
			e.DeskURL = DeskLink(desk, l.RunID, a.ApprovalRequestID)
			add(e, a.ApprovalRequestID)
		case *contracts.ApprovalDecided:
			e := base
			e.Type, e.ApprovalRequestID, e.Decision, e.DecidedBy, e.DecidedByName = WarrantDecided, ev.ApprovalRequestID, string(ev.Decision), ev.DecidedBy, ev.DecidedByName
			if p := prev.PendingApproval; p != nil && p.ApprovalRequestID == ev.ApprovalRequestID {
				e.ToolName, e.RiskTier = p.ToolName, p.RiskTier
			}
			e.DeskURL = DeskLink(desk, l.RunID, ev.ApprovalRequestID)
			add(e, ev.ApprovalRequestID)
		case *contracts.ToolCompleted:
			if ev.Status == contracts.ToolUnknown {
				e := base
				e.Type, e.EffectRef, e.ToolName = EffectOutcomeUnknown, ev.EffectRef, ev.ToolName
				add(e, ev.EffectRef)
			}
		}
		if !prev.Status.Terminal() && st.Status.Terminal() {
			e := base
			e.Type, e.Status, e.FailureKind = RunFailed, string(st.Status), st.FailureKind
			if len(st.Actions) > 0 {
				e.Actions = map[string]int{}
				for _, a := range st.Actions {
					e.Actions[a.Outcome]++
				}
			}
			e.ActionsNotDone, e.Outcome = st.NotDone(), reducer.OutcomeWords(st.Actions)
			if st.Status == "completed" {
				e.Type = RunCompleted
			}
			add(e, "")
		}
	}
	return out, nil
}

// Expiring is the event of a pending warrant an hour (or less) from expiry.
func Expiring(desk string, w ExpiringWarrant) Event {
	e := Event{Type: WarrantExpiring, FirmID: w.FirmID, RunID: w.RunID, MatterID: w.MatterID, MatterName: w.MatterName,
		RequestedBy: w.RequestedBy, RequestedByName: w.RequestedByName, ApprovalRequestID: w.ApprovalID, ToolName: w.ToolName,
		RiskTier: w.RiskTier, ExpiresAt: w.ExpiresAt, DeskURL: DeskLink(desk, w.RunID, w.ApprovalID), OccurredAt: w.At}
	e.ID = EventID(e.Type, e.FirmID, e.RunID, 0, w.ApprovalID)
	return e
}

// ExpiringWarrant is what the sweeper knows of a warrant about to expire.
type ExpiringWarrant struct {
	FirmID, RunID, ApprovalID, MatterID, MatterName, ToolName, RiskTier string
	RequestedBy, RequestedByName, ExpiresAt, At                         string
}
