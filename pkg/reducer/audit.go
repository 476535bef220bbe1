package reducer

import (
	"fmt"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// Provenance is the record behind one executed effect: the call as the model
// asked for it (its input re-hashed by ParseEventLine), the policy's
// decision, and for a call that needed a warrant, counsel's signature and the
// release that burned the warrant.
type Provenance struct {
	EffectRef, ToolName, ToolUseID, InputSHA256 string
	Status                                      string // success or error: the tool ran
	CompletedSeq, RequestedSeq                  int64
	// The policy's decision, as tool.requested recorded it.
	RiskTier, Action, Reason, MatchedPolicy string
	PolicyVersion                           string
	FiredRules                              []contracts.FiredRule
	// ExecutedInputSHA256 is the input that ran when counsel edited the
	// call before approving it (empty: the requested input ran).
	ExecutedInputSHA256 string
	// Warranted calls only.
	ApprovalID              string
	BlockedSeq, DecidedSeq  int64
	ReleasedSeq             int64
	DecidedBy, DecidedAs    string
	Separation, RequestedBy string
	Reuses                  int // later tool.completed lines answered from this effect's claim
}

// AuditError names the first executed effect whose provenance is missing or
// wrong.
type AuditError struct {
	Seq       int64 // the tool.completed line
	EffectRef string
	ToolName  string
	Reason    string
}

func (e *AuditError) Error() string {
	return fmt.Sprintf("seq %d: effect %s (%s) has no provenance: %s", e.Seq, e.EffectRef, e.ToolName, e.Reason)
}

// Audit traces every executed effect of a verified ledger (lines as Verify
// read them, in order) to its provenance. An executed effect is the first
// tool.completed carrying an effect_ref with status success or error (the
// tool ran); a later one with the same effect_ref must be the call that ran
// (an answer from the record, counted as a reuse; the model may propose
// exactly counsel's edit). Every executed effect needs
// the tool.requested of its tool_use_id with its tool and input hash, an
// action that allowed it, and when that action was require_approval: the
// run.released that carried this effect_ref, after the approval.decided of the
// same warrant, approved, over the same input hash, by a decider recorded as
// counsel who is not the user who started the run unless the firm waived
// separation of duties, after the run.blocked of that warrant for the same
// tool and hash. All lines are of one firm's run (CheckLink), so the decider
// is of the run's firm.
func Audit(lines []contracts.Line) ([]Provenance, error) {
	var started *contracts.RunStarted
	var r record
	r.requested, r.blocked = map[string]at[*contracts.ToolRequested]{}, map[string]at[*contracts.BlockedApproval]{}
	r.decided, r.released = map[string]at[*contracts.ApprovalDecided]{}, map[string]at[*contracts.RunReleased]{}
	var out []Provenance
	index := map[string]int{}
	for _, l := range lines {
		switch ev := l.Event.(type) {
		case *contracts.RunStarted:
			started = ev
		case *contracts.ToolRequested:
			r.requested[ev.ToolUseID] = at[*contracts.ToolRequested]{l.Seq, ev}
		case *contracts.RunBlocked:
			a := ev.Approval
			r.blocked[a.ApprovalRequestID] = at[*contracts.BlockedApproval]{l.Seq, &a}
		case *contracts.ApprovalDecided:
			r.decided[ev.ApprovalRequestID] = at[*contracts.ApprovalDecided]{l.Seq, ev}
		case *contracts.RunReleased:
			if ev.EffectRef != "" {
				r.released[ev.EffectRef] = at[*contracts.RunReleased]{l.Seq, ev}
			}
		case *contracts.ToolCompleted:
			if ev.EffectRef == "" || (ev.Status != contracts.ToolSuccess && ev.Status != contracts.ToolError) {
				continue // nothing ran: denied, declined, or refused before a claim
			}
			fail := func(format string, args ...any) error {
				return &AuditError{Seq: l.Seq, EffectRef: ev.EffectRef, ToolName: ev.ToolName, Reason: fmt.Sprintf(format, args...)}
			}
			if i, seen := index[ev.EffectRef]; seen {
				// A reuse is the same call as what ran: the effect's input,
				// or counsel's edit of it when the edit is what ran (the
				// model may later propose exactly the edit).
				p := &out[i]
				if p.ToolName != ev.ToolName || executedHash(p.InputSHA256, p.ExecutedInputSHA256) != executedHash(ev.InputSHA256, ev.ExecutedInputSHA256) {
					return out, fail("its effect_ref already names another call (seq %d)", p.CompletedSeq)
				}
				p.Reuses++
				continue
			}
			if ev.Reused {
				return out, fail("it says it was answered from its effect's record, and no earlier line of the run executed that effect")
			}
			req, ok := r.requested[ev.ToolUseID]
			if !ok || req.ev.ToolName != ev.ToolName || req.ev.InputSHA256 != ev.InputSHA256 {
				return out, fail("no tool.requested of tool_use_id %q for this tool and input", ev.ToolUseID)
			}
			p := Provenance{EffectRef: ev.EffectRef, ToolName: ev.ToolName, ToolUseID: ev.ToolUseID, InputSHA256: ev.InputSHA256,
				Status: ev.Status, CompletedSeq: l.Seq, RequestedSeq: req.seq, RiskTier: req.ev.RiskTier, Action: req.ev.Action,
				Reason: req.ev.Reason, MatchedPolicy: req.ev.MatchedPolicy, PolicyVersion: req.ev.PolicyVersion,
				FiredRules: req.ev.FiredRules, ExecutedInputSHA256: ev.ExecutedInputSHA256}
			switch req.ev.Action {
			case "allow":
				if ev.ExecutedInputSHA256 != "" {
					return out, fail("an allowed call ran another input than the one requested")
				}
			case "require_approval":
				if err := r.warranted(&p, started); err != "" {
					return out, fail("%s", err)
				}
			default:
				return out, fail("the policy's action was %q", req.ev.Action)
			}
			index[ev.EffectRef] = len(out)
			out = append(out, p)
		}
	}
	return out, nil
}

// executedHash is the hash of the input that ran: the edit when there is one.
func executedHash(requested, executed string) string {
	if executed != "" {
		return executed
	}
	return requested
}

// at is an event and the seq of its line.
type at[T any] struct {
	seq int64
	ev  T
}

// record is what an audit has read so far, by the id each line is found by.
type record struct {
	requested map[string]at[*contracts.ToolRequested]   // by tool_use_id
	blocked   map[string]at[*contracts.BlockedApproval] // by approval id
	decided   map[string]at[*contracts.ApprovalDecided] // by approval id
	released  map[string]at[*contracts.RunReleased]     // by effect_ref
}

// warranted fills a warranted effect's provenance, or says what is missing.
func (r record) warranted(p *Provenance, started *contracts.RunStarted) string {
	rel, ok := r.released[p.EffectRef]
	if !ok || rel.seq > p.CompletedSeq || rel.ev.Decision != warrant.DecisionApproved {
		return "no approved run.released carried its effect_ref before it ran"
	}
	id := rel.ev.ApprovalRequestID
	dec, ok := r.decided[id]
	switch {
	case !ok || dec.seq > rel.seq:
		return "no approval.decided of warrant " + id + " before its release"
	case dec.ev.Decision != warrant.DecisionApproved:
		return "warrant " + id + " was " + string(dec.ev.Decision)
	case dec.ev.ToolInputHash != p.InputSHA256:
		return "counsel signed warrant " + id + " over another input hash"
	case dec.ev.DecidedAs != contracts.RoleCounsel:
		return "the decider of warrant " + id + " is not recorded as counsel"
	case started == nil:
		return "the ledger has no run.started"
	case dec.ev.Separation != contracts.SeparationWaived && dec.ev.DecidedBy == started.UserID:
		return "warrant " + id + " was decided by the user who started the run"
	case dec.ev.EditedInputSHA256 != p.ExecutedInputSHA256:
		// Counsel's edit is what runs, or nothing was edited and the
		// requested input ran.
		return "the input that ran is not the one counsel approved under warrant " + id
	}
	b, ok := r.blocked[id]
	if !ok || b.seq > dec.seq || b.ev.ToolName != p.ToolName || b.ev.ToolInputHash != p.InputSHA256 {
		return "no run.blocked asked counsel for this tool and input under warrant " + id
	}
	p.ApprovalID, p.BlockedSeq, p.DecidedSeq, p.ReleasedSeq = id, b.seq, dec.seq, rel.seq
	p.DecidedBy, p.DecidedAs, p.Separation, p.RequestedBy = dec.ev.DecidedBy, dec.ev.DecidedAs, dec.ev.Separation, dec.ev.RequestedBy
	if p.Separation == "" {
		p.Separation = contracts.SeparationEnforced
	}
	return ""
}
