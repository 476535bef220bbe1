package agent

import (
	"context"

	"github.com/seed-f6d3920e/warrant"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// MatterStepStore reads the matter's record of its runs' completed steps
// (pkg/dynamo's steps.go), which a prior condition with scope "matter"
// reads.
type MatterStepStore interface {
	MatterSteps(ctx context.Context, firm, matter, tool string) ([]warrant.MatterStep, error)
}

// matterContext is ctx asking the store to record the run's completed
// steps of the tools the policy's matter-scoped priors ask about, for the
// run's matter, with the lines that complete them (warrant.MatterSteps).
func (b *Brain) matterContext(ctx context.Context, firm, run, matter string) context.Context {
	tools := b.policy.MatterStepTools()
	if len(tools) == 0 || matter == "" {
		return ctx
	}
	return warrant.NewMatterStepsContext(ctx, warrant.MatterSteps{FirmID: firm, RunID: run, MatterID: matter, Tools: tools})
}

// matterSteps is toolpolicy.Call.Matter for a decision on tool in run, of
// firm's matter: the steps of the matter's other runs of the tools that the
// prior conditions with scope "matter" of tool's rules ask about, read from
// the matter's record (one query per such tool, usually one), each line
// parsed (its own hash checked) and held to the record's run, seq, tool and
// status, its result opened with its run's key where sealed. A result that
// cannot be opened (the run's content destroyed, its key unavailable) is
// left out of the step, so a condition over it is undecided. nil when no
// such condition decides tool; nil and unread when the record could not be
// read or does not hold what it should: such a condition is then
// undecided (fail closed), never false.
func (b *Brain) matterSteps(ctx context.Context, firm, matter, run, tool string) (steps []toolpolicy.Step, unread bool) {
	tools := b.policy.MatterPriorTools(tool)
	if len(tools) == 0 {
		return nil, false
	}
	steps = []toolpolicy.Step{}
	keys := map[string]*seal.RunKey{}
	defer func() {
		for _, k := range keys {
			if k != nil {
				k.Destroy()
			}
		}
	}()
	for _, t := range tools {
		recs, err := b.store.MatterSteps(ctx, firm, matter, t)
		if err != nil {
			return nil, true
		}
		for _, rec := range recs {
			if rec.RunID == run {
				continue // the run's own steps are its History
			}
			l, err := contracts.ParseEventLine(rec.Line)
			if err != nil {
				return nil, true
			}
			tc, ok := l.Event.(*contracts.ToolCompleted)
			if !ok || l.FirmID != firm || l.RunID != rec.RunID || l.Seq != rec.Seq || tc.ToolName != t || tc.Status != rec.Status {
				return nil, true
			}
			st := toolpolicy.Step{RunID: rec.RunID, Seq: l.Seq, Hash: l.Hash, Tool: tc.ToolName, Status: tc.Status}
			if !l.Sealed {
				st.Result = tc.Result
			} else if k := b.runKeyOf(ctx, keys, firm, rec.RunID); k != nil {
				if opened, err := contracts.OpenLine(l, k); err == nil {
					st.Result = opened.Event.(*contracts.ToolCompleted).Result
				}
			}
			steps = append(steps, st)
		}
	}
	return steps, false
}

// runKeyOf is another run's key, opened once per decision (keys), or nil
// where it cannot be: its content destroyed (its run item holds no key),
// no keyring, or the keyring refused.
func (b *Brain) runKeyOf(ctx context.Context, keys map[string]*seal.RunKey, firm, run string) *seal.RunKey {
	if k, ok := keys[run]; ok {
		return k
	}
	keys[run] = nil
	r, err := b.store.GetRun(ctx, firm, run)
	if err != nil || !r.ContentDestroyedAt.IsZero() || len(r.DataKey) == 0 || b.cfg.Keys == nil {
		return nil
	}
	k, err := b.cfg.Keys.OpenRunKey(ctx, firm, run, r.DataKey)
	if err != nil {
		return nil
	}
	keys[run] = k
	return k
}

// matterRecord is tool.requested's record of what a decision read of the
// matter's other runs (matter_steps, matter_unread).
func matterRecord(d toolpolicy.Decision, unread bool) ([]contracts.MatterStep, bool) {
	if unread {
		return nil, true
	}
	if len(d.MatterSteps) == 0 {
		return nil, false
	}
	out := make([]contracts.MatterStep, len(d.MatterSteps))
	for i, st := range d.MatterSteps {
		out[i] = contracts.MatterStep{RunID: st.RunID, Seq: st.Seq, Hash: st.Hash, Tool: st.Tool, Status: st.Status, Unread: st.Unread}
	}
	return out, false
}
