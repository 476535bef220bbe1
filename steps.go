package warrant

import "context"

// MatterSteps is what a worker's writes record of its run's completed
// steps for the run's matter (docs/DECISIONS.md, issue 29: the matter's
// runs): each tool.completed line of the run FirmID/RunID whose tool is in
// Tools is copied, as stored (its privileged members sealed under the
// run's key), to the matter's record in the transaction that stores the
// line, so a prior condition with scope "matter" in another run of the
// matter reads it (MatterStep). Tools are the policy's
// (toolpolicy.Policy.MatterStepTools): a tool no rule asks about is not
// copied.
type MatterSteps struct {
	FirmID, RunID, MatterID string
	Tools                   []string
}

type matterStepsKey struct{}

// NewMatterStepsContext returns ctx carrying m: the store records the
// run's completed steps of m.Tools for its matter in the writes made
// under it (pkg/dynamo).
func NewMatterStepsContext(ctx context.Context, m MatterSteps) context.Context {
	return context.WithValue(ctx, matterStepsKey{}, m)
}

// MatterStepsFromContext is what ctx asks the store to record, if any.
func MatterStepsFromContext(ctx context.Context) (MatterSteps, bool) {
	m, ok := ctx.Value(matterStepsKey{}).(MatterSteps)
	return m, ok && m.MatterID != "" && len(m.Tools) > 0
}

// MatterStep is one completed step of a run of a matter as the matter's
// record holds it: the run, the seq, the tool and status (in the clear)
// and the tool.completed line exactly as the run's ledger stores it (its
// result sealed under the run's key where the run's content is sealed:
// destroying the run's key makes it unreadable here too).
type MatterStep struct {
	RunID  string
	Seq    int64
	Tool   string
	Status string
	Line   []byte
}
