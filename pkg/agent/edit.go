package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// EditVerdict is the risk policy's decision on counsel's edit of a call,
// and what it decided on beyond the edit (Metadata, recorded form, and its
// hash), which approval.decided records.
type EditVerdict struct {
	RiskTier       string
	FiredRules     []contracts.FiredRule
	PolicyVersion  string
	Metadata       json.RawMessage
	MetadataSHA256 string
	// MatterSteps and MatterUnread: what it read of the matter's other
	// runs (approval.decided's edited_matter_steps, edited_matter_unread).
	MatterSteps  []contracts.MatterStep
	MatterUnread bool
}

// CheckEdit decides counsel's edit of a held call before the approval is
// recorded: the edit must be a valid input of the same tool (its JSON
// Schema), and the risk policy is run on it with the run's metadata. An
// edit the policy denies is policy_denied; nothing is recorded. input is
// canonical JSON.
func (b *Brain) CheckEdit(ctx context.Context, run reducer.RunState, history []toolpolicy.Step, tool string, input json.RawMessage) (EditVerdict, error) {
	t, ok := b.tools[tool]
	if !ok {
		return EditVerdict{}, failure.New(failure.KindConflict, "the warranted tool is no longer available")
	}
	if where, ok := inputProblem(t.schema, input); !ok {
		// Named by where, never by value: the edit is privileged.
		fields := "edited_input"
		if len(where) > 0 {
			parts := make([]string, len(where))
			for i, w := range where {
				parts[i] = "edited_input" + w
			}
			fields = strings.Join(parts, ", ")
		}
		return EditVerdict{}, failure.New(failure.KindInvalidRequest, "field "+fields+": does not match the tool's input schema")
	}
	fs, err := b.store.GetFirmSettings(ctx, run.FirmID)
	if err != nil {
		return EditVerdict{}, err
	}
	meta, err := b.metadata(ctx, run.FirmID, fs, run.MatterID, run.AgentKey, run.UserID, run.UserRoles)
	if err != nil {
		return EditVerdict{}, err
	}
	matter, unread := b.matterSteps(ctx, run.FirmID, run.MatterID, run.RunID, tool)
	d := b.decideSigned(tool, input, meta, history, matter)
	fired := firedRules(d.FiredRules)
	if d.Action == toolpolicy.ActionDeny {
		msg := "the risk policy denies the edited call"
		if ids := ruleIDs(fired); ids != "" {
			msg += " (fired rules: " + ids + ")"
		}
		return EditVerdict{}, failure.New(failure.KindPolicyDenied, msg)
	}
	// The catalog's matter wall, as for the model's call (after the
	// policy, whose own matter rule names itself when it fires). The run's matter
	// is not filled in: that would change the bytes counsel signs.
	if t.MatterField != "" {
		switch filled, v := b.withMatter(tool, input, run.MatterID); {
		case v == matterOther:
			return EditVerdict{}, failure.New(failure.KindPolicyDenied, "the matter wall denies the edited call: it names another matter than the run's at "+t.MatterField)
		case v == matterInvalid:
			return EditVerdict{}, failure.New(failure.KindPolicyDenied, "the matter wall denies the edited call: its "+t.MatterField+" cannot hold the run's matter")
		case !bytes.Equal(filled, input):
			return EditVerdict{}, failure.New(failure.KindInvalidRequest, "field edited_input: must carry the run's matter at "+t.MatterField)
		}
	}
	raw, sum, err := recordMeta(meta)
	if err != nil {
		return EditVerdict{}, err
	}
	v := EditVerdict{RiskTier: string(d.Tier), FiredRules: fired, PolicyVersion: d.PolicyVersion, Metadata: raw, MetadataSHA256: sum}
	v.MatterSteps, v.MatterUnread = matterRecord(d, unread)
	return v, nil
}

// decide is the risk policy's decision on one call of a run, its input
// canonical JSON and meta what the store knows of the run (metadata). The
// destinations the tool declares are traced to nothing, so they are all
// unknown (fail closed): it is for the questions that need no provenance
// (whether a recorded call may be replayed).
func (b *Brain) decide(tool string, input json.RawMessage, meta toolpolicy.Metadata) toolpolicy.Decision {
	return b.policy.DecideOrDeny(toolpolicy.Call{Tool: tool, Input: input, Meta: meta})
}

// decideSigned decides an input counsel signed (an edit, a warranted call
// at dispatch): its destinations are counsel's, not traced
// (toolpolicy.Call's Signed).
// history and matter are the run's steps and the matter's other runs'
// (matterSteps), as for the model's call.
func (b *Brain) decideSigned(tool string, input json.RawMessage, meta toolpolicy.Metadata, history, matter []toolpolicy.Step) toolpolicy.Decision {
	return b.policy.DecideOrDeny(toolpolicy.Call{Tool: tool, Input: input, Meta: meta, Signed: true, History: history, Matter: matter})
}

// decide is the decision on a call the model proposed: its destinations
// traced to the run's sources so far. A run with content the session has
// not opened traces them to nothing (fail closed). The matter's other runs'
// steps are read when a rule of the tool asks (matterSteps); unread: that
// read failed.
func (s *session) decide(ctx context.Context, tool string, input json.RawMessage, meta toolpolicy.Metadata) (d toolpolicy.Decision, unread bool) {
	src, opened := s.sources.Sources()
	if !opened {
		src = nil
	}
	matter, unread := s.b.matterSteps(ctx, s.meta.FirmID, s.meta.MatterID, s.meta.RunID, tool)
	return s.b.policy.DecideOrDeny(toolpolicy.Call{Tool: tool, Input: input, Meta: meta, Sources: src, History: s.sources.History(), Matter: matter}), unread
}

// recordMeta is the ledger's record of the metadata a decision was made on.
func recordMeta(meta toolpolicy.Metadata) (json.RawMessage, string, error) {
	raw, sum, err := contracts.RecordMetadata(meta)
	if err != nil {
		// Strings and lists of strings always canonicalize; a failure here
		// is a bug, and no decision goes unrecorded.
		return nil, "", failure.Wrap(failure.KindInternal, "the policy's metadata cannot be recorded", err)
	}
	return raw, sum, nil
}

// policyCheck records the policy's decision d on the call of tool whose
// input hashes to inputSHA256, made on meta.
func policyCheck(tool, inputSHA256 string, d toolpolicy.Decision, meta toolpolicy.Metadata) (*contracts.PolicyCheck, error) {
	raw, sum, err := recordMeta(meta)
	if err != nil {
		return nil, err
	}
	return &contracts.PolicyCheck{ToolName: tool, InputSHA256: inputSHA256, RiskTier: string(d.Tier), Action: string(d.Action),
		Reason: d.Reason, MatchedPolicy: d.MatchedPolicy, PolicyVersion: d.PolicyVersion, FiredRules: firedRules(d.FiredRules),
		PolicyMetadata: raw, PolicyMetadataSHA256: sum}, nil
}

// policyMeta is the session's metadata for the policy, read once.
func (s *session) policyMeta(ctx context.Context) (toolpolicy.Metadata, error) {
	if s.pmeta == nil {
		fs, err := s.firmSettings(ctx)
		if err != nil {
			return toolpolicy.Metadata{}, err
		}
		m, err := s.b.metadata(ctx, s.meta.FirmID, fs, s.meta.MatterID, s.def.Key, s.meta.UserID, s.roles)
		if err != nil {
			return m, err
		}
		s.pmeta = &m
	}
	return *s.pmeta, nil
}

// replayable reports whether a recorded call may run again after its
// answer was lost: the policy's decision d on it says replayable (a
// low-tier tool with no rule fired) and the catalog says the tool is a read.
// Both must hold: a policy that marks an effect replayable does not make it
// safe to send twice, and a read the policy does not mark replayable is
// not re-read. This is the one place the rule is computed (a call's first
// attempt, a lost worker's call answered by its successor, the sweep).
func (b *Brain) replayable(tool string, d toolpolicy.Decision) bool {
	t, ok := b.tools[tool]
	return ok && d.Replayable && t.Class == catalog.ClassRead
}

// replayable is Brain.replayable on a recorded call, the policy deciding it
// anew on its input. A sealed call (the sweeper reads a sealed run without
// its key) is decided without its input: on an empty one, and only if its
// recorded decision was a plain allow that no rule touched, since a rule
// that fired on the real input takes replayable away (fail closed).
func (s *session) replayable(ctx context.Context, req *contracts.ToolRequested, sealed bool) bool {
	meta, err := s.policyMeta(ctx)
	if err != nil {
		return false
	}
	if sealed {
		return req.Action == string(toolpolicy.ActionAllow) && len(req.FiredRules) == 0 &&
			s.b.replayable(req.ToolName, s.b.decide(req.ToolName, json.RawMessage(`{}`), meta))
	}
	return s.b.replayable(req.ToolName, s.b.decide(req.ToolName, req.Input, meta))
}

// metadata is what the policy's rules weigh beyond a call's input (fs: the
// firm's settings, as read): the run's firm, matter, agent, user and the
// user's roles when starting it, the firm's own e-mail domains and the
// matter's client's. A matter with no record has no client domains (every
// recipient is outside the client).
func (b *Brain) metadata(ctx context.Context, firm string, fs warrant.FirmSettings, matter, agentKey, user string, roles []string) (toolpolicy.Metadata, error) {
	m := toolpolicy.Metadata{FirmID: firm, MatterID: matter, AgentKey: agentKey, UserID: user, Roles: slices.Clone(roles),
		FirmDomains: slices.Clone(fs.Domains)}
	rec, err := b.store.GetMatter(ctx, firm, matter)
	switch {
	case err == nil:
		m.ClientDomains = slices.Clone(rec.ClientDomains)
	case !errors.Is(err, warrant.ErrNotFound):
		return m, err
	}
	return m, nil
}

// firedRules is the ledger's record of the rules that fired.
func firedRules(rules []toolpolicy.FiredRule) []contracts.FiredRule {
	if len(rules) == 0 {
		return nil
	}
	out := make([]contracts.FiredRule, len(rules))
	for i, r := range rules {
		out[i] = contracts.FiredRule{ID: r.ID, Effect: r.Effect, Reason: r.Reason, Pointer: r.Pointer}
	}
	return out
}

// ruleIDs lists the fired rules' ids, comma separated (ids are the policy
// file's names, never client text).
func ruleIDs(rules []contracts.FiredRule) string {
	ids := make([]string, 0, len(rules))
	for _, r := range rules {
		ids = append(ids, r.ID)
	}
	return strings.Join(ids, ", ")
}
