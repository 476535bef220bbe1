package reducer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/provenance"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// Redecision is one decision of the risk policy recorded in a ledger,
// decided again from the record alone.
type Redecision struct {
	Seq  int64
	Type contracts.EventType // tool.requested, approval.decided (counsel's edit), run.released or run.failed (the resume's)
	// ToolName and InputSHA256 are the call decided.
	ToolName, InputSHA256 string
	PolicyVersion         string
	RiskTier, Action      string
	FiredRules            []string // ids, in the policy's order
	MetadataSHA256        string   // what it weighed beyond the input
	// LimitsReached are the limits the line records the call found at
	// their bound (tool.requested's limits_reached): the decision was made
	// again with them reached.
	LimitsReached []string
	// MatterSteps are the steps of the matter's other runs the decision
	// read (tool.requested's matter_steps), each checked in its run's
	// export (RederiveOptions.Matter) unless recorded unread.
	MatterSteps []contracts.MatterStep
	// Sealed: the call's input is sealed (issue 26: not opened, or its key
	// destroyed), so the decision was not made again; the fields are the
	// recorded decision, whose metadata was checked against the run and
	// whose policy version is one given.
	Sealed bool
}

// PolicyVersionError is a recorded decision made under a policy version
// that none of the policies given is: the audit cannot decide it again
// without that policy (the file the deployment ran, or the embedded policy
// of that release).
type PolicyVersionError struct {
	Seq      int64
	Recorded string
	Given    []string
}

func (e *PolicyVersionError) Error() string {
	return fmt.Sprintf("seq %d: decided under policy version %s; the policy given is version %s: pass --policy FILE of that version",
		e.Seq, e.Recorded, strings.Join(e.Given, ", "))
}

// RederiveError names a recorded decision that does not follow from its
// record: decided again on the recorded input and metadata, the policy of
// the recorded version gives another decision; or the record lacks what it
// needs (no metadata), or contradicts the run (metadata of another matter,
// user or agent; a release deciding a call its warrant does not cover).
type RederiveError struct {
	Seq      int64
	Type     contracts.EventType
	ToolName string
	Reason   string
}

func (e *RederiveError) Error() string {
	return fmt.Sprintf("seq %d: %s of %s%s", e.Seq, e.Type, e.ToolName, e.Reason)
}

// Rederive decides again every decision a verified ledger records (lines as
// Verify read them, in order), each under the policy among policies whose
// version its line names, on the input and the metadata the line records,
// and compares the outcome with what the line says was decided: tier,
// action, reason, matched entry and fired rules (id, effect, reason); for
// counsel's edit, which records tier and fired rules, those and that the
// policy did not deny it. The metadata's firm, matter, agent, user and
// roles must be the run's (its lines' firm and run.started). It stops at the
// first decision that does not re-derive (*RederiveError) or whose version
// no policy given is (*PolicyVersionError).
//
// A tool.requested that records limits_reached (limits the call found at
// their bound when its effect was claimed: the count is not in the ledger)
// is decided with them reached (toolpolicy.Decision.LimitsReached); each
// must be a limit of the recorded version that counts that call.
//
// The decisions are tool.requested (every call the model proposed),
// approval.decided with counsel's edit, and the resume's decision of a
// warranted call (run.released of an approved warrant; run.failed when it
// refused it, policy_changed). A line written before decisions recorded
// their metadata cannot be re-derived and is an error too: the audit proves
// nothing about it.
func Rederive(lines []contracts.Line, policies ...*toolpolicy.Policy) ([]Redecision, error) {
	return RederiveWith(lines, RederiveOptions{}, policies...)
}

// RederiveOptions is what a re-derivation reads beyond the run's ledger.
type RederiveOptions struct {
	// Matter holds exports of the matter's other runs (verified by the
	// caller), by run id. A decision whose prior condition with scope
	// "matter" read their steps (tool.requested's matter_steps) is decided
	// again on the same lines, found there by seq and hash; a step whose
	// run's export is not given is a *MatterStepError (Missing), never
	// passed over.
	Matter map[string][]contracts.Line
}

// MatterStepError is a decision that rests on a step of another run of the
// matter (tool.requested's matter_steps) which the audit could not check:
// that run's export was not given (Missing), or it does not hold the step
// as recorded (of the run's firm and matter, at the seq, with the hash,
// tool and status).
type MatterStepError struct {
	Seq      int64
	Type     contracts.EventType
	ToolName string
	Step     contracts.MatterStep
	Missing  bool
	Reason   string
}

func (e *MatterStepError) Error() string {
	if e.Missing {
		return fmt.Sprintf("seq %d: %s of %s rests on run %s's %s (%s) at seq %d, a step of another run of the matter: "+
			"give that run's export (--matter-ledger FILE) to check it", e.Seq, e.Type, e.ToolName, e.Step.RunID, e.Step.Tool, e.Step.Status, e.Step.Seq)
	}
	return fmt.Sprintf("seq %d: %s of %s rests on run %s's step at seq %d, which its export does not hold as recorded: %s",
		e.Seq, e.Type, e.ToolName, e.Step.RunID, e.Step.Seq, e.Reason)
}

// RederiveWith is Rederive reading o beyond the run's ledger.
func RederiveWith(lines []contracts.Line, o RederiveOptions, policies ...*toolpolicy.Policy) ([]Redecision, error) {
	byVersion := map[string]*toolpolicy.Policy{}
	var versions []string
	for _, p := range policies {
		if _, dup := byVersion[p.Version()]; !dup {
			byVersion[p.Version()] = p
			versions = append(versions, p.Version())
		}
	}
	rd := rederiver{policies: byVersion, versions: versions, matter: o.Matter, inputs: map[string]json.RawMessage{}, sealed: map[string]bool{},
		blocked: map[string]*contracts.BlockedApproval{}, edits: map[string]*contracts.ApprovalDecided{}}
	var out []Redecision
	for _, l := range lines {
		// Every line is a source or a decision, never both: folded first,
		// a decision is traced over the lines before it.
		rd.src.Fold(l)
		var got *Redecision
		var err error
		switch e := l.Event.(type) {
		case *contracts.RunStarted:
			rd.started = e
		case *contracts.ToolRequested:
			rd.hold(e.InputSHA256, e.Input, l.Sealed)
			got, err = rd.redo(l, recordedDecision{tool: e.ToolName, input: e.Input, inputSHA256: e.InputSHA256, version: e.PolicyVersion,
				meta: e.PolicyMetadata, metaSHA256: e.PolicyMetadataSHA256, tier: e.RiskTier, action: e.Action, reason: &e.Reason,
				matched: &e.MatchedPolicy, fired: e.FiredRules, sealed: l.Sealed, traced: true, provenance: e.Provenance,
				reached: e.LimitsReached, matterSteps: e.MatterSteps, matterUnread: e.MatterUnread})
		case *contracts.RunBlocked:
			a := e.Approval
			rd.blocked[a.ApprovalRequestID] = &a
			rd.hold(a.ToolInputHash, a.ToolInput, l.Sealed)
		case *contracts.ApprovalDecided:
			if e.EditedInputSHA256 == "" {
				continue
			}
			rd.edits[e.ApprovalRequestID] = e
			rd.hold(e.EditedInputSHA256, e.EditedInput, l.Sealed)
			tool := ""
			if b := rd.blocked[e.ApprovalRequestID]; b != nil {
				tool = b.ToolName
			}
			got, err = rd.redo(l, recordedDecision{tool: tool, input: e.EditedInput, inputSHA256: e.EditedInputSHA256, version: e.EditedPolicyVersion,
				meta: e.EditedPolicyMetadata, metaSHA256: e.EditedPolicyMetadataSHA256, tier: e.EditedRiskTier, fired: e.EditedFiredRules, edit: true,
				sealed: l.Sealed, matterSteps: e.EditedMatterSteps, matterUnread: e.EditedMatterUnread})
		case *contracts.RunReleased:
			if e.Decision != warrant.DecisionApproved {
				continue
			}
			b := rd.blocked[e.ApprovalRequestID]
			if e.PolicyCheck == nil {
				tool := ""
				if b != nil {
					tool = b.ToolName
				}
				return out, &RederiveError{Seq: l.Seq, Type: l.Type, ToolName: tool, Reason: " records no policy_check (written before the resume recorded its decision): it cannot be re-derived"}
			}
			if b == nil || e.PolicyCheck.ToolName != b.ToolName || e.PolicyCheck.InputSHA256 != rd.executes(b) {
				return out, &RederiveError{Seq: l.Seq, Type: l.Type, ToolName: e.PolicyCheck.ToolName, Reason: " decided another call than the warrant lets run"}
			}
			got, err = rd.check(l, e.PolicyCheck)
		case *contracts.RunFailed:
			if e.PolicyCheck != nil {
				got, err = rd.check(l, e.PolicyCheck)
			}
		}
		if err != nil {
			return out, err
		}
		if got != nil {
			out = append(out, *got)
		}
	}
	return out, nil
}

// rederiver is what Rederive has read so far.
type rederiver struct {
	policies map[string]*toolpolicy.Policy
	versions []string
	matter   map[string][]contracts.Line // the matter's other runs' exports, by run id
	started  *contracts.RunStarted
	inputs   map[string]json.RawMessage            // every call the ledger holds, by input hash
	sealed   map[string]bool                       // input hashes held only sealed
	blocked  map[string]*contracts.BlockedApproval // by approval id
	edits    map[string]*contracts.ApprovalDecided // counsel's edits, by approval id
	src      Sources                               // what the run's destinations trace to, so far
}

// hold records a call's input by its hash: sealed, only that it exists
// (an opened copy elsewhere in the ledger wins).
func (rd *rederiver) hold(hash string, input json.RawMessage, sealed bool) {
	if sealed {
		if _, ok := rd.inputs[hash]; !ok {
			rd.inputs[hash], rd.sealed[hash] = nil, true
		}
		return
	}
	rd.inputs[hash] = input
	delete(rd.sealed, hash)
}

// executes is the hash of the call a warrant lets run: counsel's edit, or
// the call as held.
func (rd *rederiver) executes(b *contracts.BlockedApproval) string {
	if d := rd.edits[b.ApprovalRequestID]; d != nil {
		return d.EditedInputSHA256
	}
	return b.ToolInputHash
}

// check re-derives a PolicyCheck on the call it names.
func (rd *rederiver) check(l contracts.Line, c *contracts.PolicyCheck) (*Redecision, error) {
	input, ok := rd.inputs[c.InputSHA256]
	if !ok {
		return nil, &RederiveError{Seq: l.Seq, Type: l.Type, ToolName: c.ToolName, Reason: " decides a call the ledger does not hold"}
	}
	return rd.redo(l, recordedDecision{tool: c.ToolName, input: input, inputSHA256: c.InputSHA256, version: c.PolicyVersion,
		meta: c.PolicyMetadata, metaSHA256: c.PolicyMetadataSHA256, tier: c.RiskTier, action: c.Action, reason: &c.Reason,
		matched: &c.MatchedPolicy, fired: c.FiredRules, sealed: rd.sealed[c.InputSHA256], matterSteps: c.MatterSteps, matterUnread: c.MatterUnread})
}

// recordedDecision is a decision as a line records it. reason and matched
// are nil where the line does not record them (counsel's edit), as is
// action (an edit the policy denied is never recorded: it must not deny).
type recordedDecision struct {
	tool, inputSHA256, version string
	input                      json.RawMessage
	meta                       json.RawMessage
	metaSHA256                 string
	tier, action               string
	reason, matched            *string
	fired                      []contracts.FiredRule
	edit                       bool
	// sealed: the input is not at hand (sealed); the decision is checked
	// up to deciding it, and reported as recorded.
	sealed bool
	// traced: the model's call (tool.requested), whose destinations were
	// traced to the run's sources and whose line records where they were
	// found (provenance). Counsel's edit and the resume's decision decide
	// the input counsel signed, which is not traced (toolpolicy.Call's
	// Signed).
	traced     bool
	provenance []contracts.ProvenanceFinding
	// reached: the limits the call found at their bound (tool.requested).
	reached []string
	// matterSteps and matterUnread: what the decision read of the
	// matter's other runs (tool.requested's matter_steps, matter_unread).
	matterSteps  []contracts.MatterStep
	matterUnread bool
}

func (rd *rederiver) redo(l contracts.Line, r recordedDecision) (*Redecision, error) {
	fail := func(format string, args ...any) error {
		return &RederiveError{Seq: l.Seq, Type: l.Type, ToolName: r.tool, Reason: fmt.Sprintf(format, args...)}
	}
	if len(r.meta) == 0 {
		return nil, fail(" records no policy_metadata (written before decisions recorded it): it cannot be re-derived")
	}
	p, ok := rd.policies[r.version]
	if !ok {
		return nil, &PolicyVersionError{Seq: l.Seq, Recorded: r.version, Given: rd.versions}
	}
	meta, err := contracts.ReadMetadata(r.meta)
	if err != nil {
		return nil, fail(": its metadata does not read: %v", err)
	}
	if err := rd.theRuns(l, meta); err != "" {
		return nil, fail(": its metadata's %s is not the run's", err)
	}
	var src *provenance.Sources
	if r.traced && p.TracesDestinations(r.tool) {
		var opened bool
		if src, opened = rd.src.Sources(); !opened {
			// A source the trace reads is sealed: the decision is
			// reported as recorded, as for a sealed input.
			r.sealed = true
		}
	}
	if r.sealed {
		got := Redecision{Seq: l.Seq, Type: l.Type, ToolName: r.tool, InputSHA256: r.inputSHA256, PolicyVersion: r.version,
			RiskTier: r.tier, Action: r.action, MetadataSHA256: r.metaSHA256, Sealed: true, LimitsReached: r.reached}
		for _, f := range r.fired {
			got.FiredRules = append(got.FiredRules, f.ID)
		}
		return &got, nil
	}
	matter, sealedStep, err := rd.matterOf(l, p, r)
	if err != nil {
		return nil, err
	}
	if sealedStep {
		got := Redecision{Seq: l.Seq, Type: l.Type, ToolName: r.tool, InputSHA256: r.inputSHA256, PolicyVersion: r.version,
			RiskTier: r.tier, Action: r.action, MetadataSHA256: r.metaSHA256, Sealed: true, LimitsReached: r.reached, MatterSteps: r.matterSteps}
		for _, f := range r.fired {
			got.FiredRules = append(got.FiredRules, f.ID)
		}
		return &got, nil
	}
	d := p.DecideOrDeny(toolpolicy.Call{Tool: r.tool, Input: r.input, Meta: meta, Sources: src, Signed: !r.traced,
		History: rd.src.History(), Matter: matter})
	if len(r.reached) > 0 {
		if d, err = d.LimitsReached(r.reached); err != nil {
			return nil, fail(" does not re-derive: it records limits_reached %v, and %v", r.reached, err)
		}
	}
	got := Redecision{Seq: l.Seq, Type: l.Type, ToolName: r.tool, InputSHA256: r.inputSHA256, PolicyVersion: d.PolicyVersion,
		RiskTier: string(d.Tier), Action: string(d.Action), MetadataSHA256: r.metaSHA256, LimitsReached: r.reached, MatterSteps: r.matterSteps}
	for _, f := range d.FiredRules {
		got.FiredRules = append(got.FiredRules, f.ID)
	}
	differs := func(what, recorded, now string) error {
		return fail(" does not re-derive: recorded %s %q, the policy decides %q on the recorded input and metadata", what, recorded, now)
	}
	switch {
	case string(d.Tier) != r.tier:
		return nil, differs("tier", r.tier, string(d.Tier))
	case r.action != "" && string(d.Action) != r.action:
		return nil, differs("action", r.action, string(d.Action))
	case r.edit && d.Action == toolpolicy.ActionDeny:
		return nil, fail(" does not re-derive: the policy denies the edit counsel's approval records")
	case r.reason != nil && d.Reason != *r.reason:
		return nil, differs("reason", *r.reason, d.Reason)
	case r.matched != nil && d.MatchedPolicy != *r.matched:
		return nil, differs("matched policy", *r.matched, d.MatchedPolicy)
	}
	recorded := make([]contracts.FiredRule, len(r.fired))
	copy(recorded, r.fired)
	now := make([]contracts.FiredRule, len(d.FiredRules))
	for i, f := range d.FiredRules {
		now[i] = contracts.FiredRule{ID: f.ID, Effect: f.Effect, Reason: f.Reason, Pointer: f.Pointer}
	}
	if !slices.Equal(recorded, now) {
		return nil, differs("fired rules", ruleList(recorded), ruleList(now))
	}
	if err := provenance.Recheck(r.provenance, d.Provenance); err != nil {
		return nil, fail(" does not re-derive: traced again over the ledger before it, %v", err)
	}
	return &got, nil
}

// matterOf is toolpolicy.Call.Matter of a decision re-derived: nil where
// the policy's rules for the tool read no other run of the matter, or the
// decision recorded that it could not (matter_unread); otherwise the steps
// it recorded reading (matter_steps), each found in its run's export
// (RederiveOptions.Matter) and held to the record, its result as the export
// holds it (none for a step recorded unread, which needs no export). A
// step whose export is sealed leaves the decision checked as recorded
// (sealed true), as a sealed input does.
func (rd *rederiver) matterOf(l contracts.Line, p *toolpolicy.Policy, r recordedDecision) ([]toolpolicy.Step, bool, error) {
	if len(p.MatterPriorTools(r.tool)) == 0 || r.matterUnread {
		return nil, false, nil
	}
	out := []toolpolicy.Step{}
	sealed := false
	for _, ms := range r.matterSteps {
		st := toolpolicy.Step{RunID: ms.RunID, Seq: ms.Seq, Hash: ms.Hash, Tool: ms.Tool, Status: ms.Status}
		if ms.Unread {
			out = append(out, st)
			continue
		}
		fail := func(missing bool, format string, args ...any) error {
			return &MatterStepError{Seq: l.Seq, Type: l.Type, ToolName: r.tool, Step: ms, Missing: missing, Reason: fmt.Sprintf(format, args...)}
		}
		export, ok := rd.matter[ms.RunID]
		if !ok {
			return nil, false, fail(true, "")
		}
		var started *contracts.RunStarted
		if len(export) > 0 {
			started, _ = export[0].Event.(*contracts.RunStarted)
		}
		switch {
		case started == nil || export[0].RunID != ms.RunID:
			return nil, false, fail(false, "the export given for it does not start with that run's run.started")
		case export[0].FirmID != l.FirmID || rd.started == nil || started.MatterID != rd.started.MatterID:
			return nil, false, fail(false, "that run is not of this run's firm and matter")
		}
		i := slices.IndexFunc(export, func(x contracts.Line) bool { return x.Seq == ms.Seq })
		if i < 0 {
			return nil, false, fail(false, "its export has no line at that seq")
		}
		x := export[i]
		tc, ok := x.Event.(*contracts.ToolCompleted)
		switch {
		case x.Hash != ms.Hash:
			return nil, false, fail(false, "the line's hash is %s, not the %s recorded", x.Hash, ms.Hash)
		case !ok || tc.ToolName != ms.Tool || tc.Status != ms.Status:
			return nil, false, fail(false, "the line is not the %s %s recorded", ms.Tool, ms.Status)
		}
		if x.Sealed {
			sealed = true
		} else {
			st.Result = tc.Result
		}
		out = append(out, st)
	}
	return out, sealed, nil
}

// theRuns names the first member of meta that is not the run's own (its
// firm, or what run.started records), or "".
func (rd *rederiver) theRuns(l contracts.Line, m contracts.PolicyMetadata) string {
	switch {
	case m.FirmID != l.FirmID:
		return "firm_id"
	case rd.started == nil:
		return "run (the ledger has no run.started)"
	case m.MatterID != rd.started.MatterID:
		return "matter_id"
	case m.AgentKey != rd.started.AgentKey:
		return "agent_key"
	case m.UserID != rd.started.UserID:
		return "user_id"
	case !slices.Equal(m.Roles, rd.started.UserRoles):
		return "roles"
	}
	return ""
}

func ruleList(rules []contracts.FiredRule) string {
	ids := make([]string, len(rules))
	for i, r := range rules {
		ids[i] = r.ID + " (" + r.Effect + ")"
	}
	return "[" + strings.Join(ids, ", ") + "]"
}
