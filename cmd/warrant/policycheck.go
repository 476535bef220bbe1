package main

// warrant policy check: a policy replayed over the calls of past runs
// (issue 29, item 3), and policy decide --ledger --seq: one recorded call
// decided again.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// The change a replayed call shows, by its action: stricter (held,
// denied), less strict, or the same action with another tier or other
// rules firing.
const (
	changeHeld       = "newly_held"
	changeDenied     = "newly_denied"
	changeAllowed    = "newly_allowed"
	changeOther      = "changed"
	changeNotDecided = "not_decided"
)

// replayedCall is one model call (tool.requested) whose outcome under the
// policy replayed is not the one recorded, or which could not be decided
// again. It holds ids, tiers, actions and versions: never the call's input
// or any value of it.
type replayedCall struct {
	RunID string `json:"run_id"`
	Seq   int64  `json:"seq"`
	Tool  string `json:"tool"`
	// Change is newly_held, newly_denied, newly_allowed (less strict),
	// changed (the same action, another tier or other rules) or
	// not_decided (Reason says why).
	Change                string `json:"change"`
	RecordedPolicyVersion string `json:"recorded_policy_version,omitempty"`
	RecordedAction        string `json:"recorded_action"`
	RecordedTier          string `json:"recorded_tier"`
	Action                string `json:"action,omitempty"`
	Tier                  string `json:"tier,omitempty"`
	// FiredNowNotThen and FiredThenNotNow are rule ids, in the order of the
	// decision that fired them.
	FiredNowNotThen []string `json:"fired_now_not_then,omitempty"`
	FiredThenNotNow []string `json:"fired_then_not_now,omitempty"`
	Reason          string   `json:"reason,omitempty"`
}

// checkSummary counts the calls replayed; every call is in exactly one of
// the other counts.
type checkSummary struct {
	Replayed     int `json:"replayed"`
	Unchanged    int `json:"unchanged"`
	NewlyHeld    int `json:"newly_held"`
	NewlyDenied  int `json:"newly_denied"`
	NewlyAllowed int `json:"newly_allowed"`
	OtherChanges int `json:"changed"`
	NotDecided   int `json:"not_decided"`
}

// checkReport is what policy check --json prints.
type checkReport struct {
	PolicyVersion string         `json:"policy_version"`
	Ledgers       []string       `json:"ledgers"`
	Calls         []replayedCall `json:"calls"`
	Summary       checkSummary   `json:"summary"`
}

func policyCheckCmd(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := newFlags("policy check")
	var ledgers []string
	fs.Func("ledger", "a run's ledger `EXPORT` (NDJSON; \"-\": stdin); repeatable",
		func(v string) error { ledgers = append(ledgers, v); return nil })
	policyFile := fs.String("policy", "", "policy `FILE`, full or an overlay (default: the embedded policy)")
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usageErr("policy check takes no positional argument (got %q): name each export with --ledger", pos[0])
	case len(ledgers) == 0:
		return usageErr("policy check needs at least one --ledger EXPORT")
	case countStdin(ledgers...) > 1:
		return usageErr("only one --ledger can read stdin")
	}
	p, err := loadPolicy(*policyFile)
	if err != nil {
		return err
	}
	rep := checkReport{PolicyVersion: p.Version(), Ledgers: ledgers, Calls: []replayedCall{}}
	for _, f := range ledgers {
		lines, err := readVerifiedLedger(f, stdin)
		if err != nil {
			return err
		}
		replayLedger(p, lines, &rep)
	}
	if *asJSON {
		return writeJSON(stdout, rep)
	}
	var out bytes.Buffer
	for _, c := range rep.Calls {
		fmt.Fprintf(&out, "run %s seq %d %s", c.RunID, c.Seq, c.Tool)
		if c.RecordedPolicyVersion != "" {
			fmt.Fprintf(&out, " (recorded under policy version %s)", c.RecordedPolicyVersion)
		}
		if c.Change == changeNotDecided {
			fmt.Fprintf(&out, ": recorded %s/%s, not decided: %s\n", c.RecordedAction, c.RecordedTier, c.Reason)
			continue
		}
		fmt.Fprintf(&out, ": %s/%s -> %s/%s (%s)", c.RecordedAction, c.RecordedTier, c.Action, c.Tier, strings.ReplaceAll(c.Change, "_", " "))
		if len(c.FiredNowNotThen) > 0 {
			fmt.Fprintf(&out, "; fired now, not then: %s", strings.Join(c.FiredNowNotThen, " "))
		}
		if len(c.FiredThenNotNow) > 0 {
			fmt.Fprintf(&out, "; fired then, not now: %s", strings.Join(c.FiredThenNotNow, " "))
		}
		fmt.Fprintln(&out)
	}
	s := rep.Summary
	fmt.Fprintf(&out, "policy check: %d call(s) replayed under policy version %s from %d ledger(s): %d unchanged, %d newly held, "+
		"%d newly denied, %d newly allowed (less strict), %d otherwise changed (same action), %d not decided (sealed)\n",
		s.Replayed, rep.PolicyVersion, len(ledgers), s.Unchanged, s.NewlyHeld, s.NewlyDenied, s.NewlyAllowed, s.OtherChanges, s.NotDecided)
	_, err = stdout.Write(out.Bytes())
	return err
}

// replayLedger decides every model call of one run's lines again under p,
// each traced over the lines before it, and adds to rep each whose outcome
// differs from the one recorded, or that could not be decided.
func replayLedger(p *toolpolicy.Policy, lines []contracts.Line, rep *checkReport) {
	var src reducer.Sources
	for _, l := range lines {
		// A line is a source or a call, never both: folded first, a call
		// is traced over the lines before it, as the runtime traced it.
		src.Fold(l)
		e, ok := l.Event.(*contracts.ToolRequested)
		if !ok {
			continue
		}
		rep.Summary.Replayed++
		c := replayedCall{RunID: l.RunID, Seq: l.Seq, Tool: e.ToolName, RecordedPolicyVersion: e.PolicyVersion,
			RecordedAction: e.Action, RecordedTier: e.RiskTier}
		call, why := recordedCall(p, l, e, &src, false, false)
		if why != "" {
			c.Change, c.Reason = changeNotDecided, why
			rep.Summary.NotDecided++
			rep.Calls = append(rep.Calls, c)
			continue
		}
		d := stillReached(p.DecideOrDeny(call), e.LimitsReached)
		c.Action, c.Tier = string(d.Action), string(d.Tier)
		var then, now []string
		for _, f := range e.FiredRules {
			then = append(then, f.ID)
		}
		for _, f := range d.FiredRules {
			now = append(now, f.ID)
		}
		c.FiredNowNotThen, c.FiredThenNotNow = missingFrom(now, then), missingFrom(then, now)
		if c.Action == c.RecordedAction && c.Tier == c.RecordedTier && len(c.FiredNowNotThen) == 0 && len(c.FiredThenNotNow) == 0 {
			rep.Summary.Unchanged++
			continue
		}
		switch was, is := strictness(c.RecordedAction), strictness(c.Action); {
		case is > was && d.Action == toolpolicy.ActionDeny:
			c.Change = changeDenied
			rep.Summary.NewlyDenied++
		case is > was:
			c.Change = changeHeld
			rep.Summary.NewlyHeld++
		case is < was:
			c.Change = changeAllowed
			rep.Summary.NewlyAllowed++
		default:
			c.Change = changeOther
			rep.Summary.OtherChanges++
		}
		rep.Calls = append(rep.Calls, c)
	}
}

// stillReached is d with the limits a recorded call found at their bound
// (tool.requested's limits_reached) taken as reached still, those d's
// policy counts the call by: the counts are not in the ledger, and the
// count that refused the call then is the best word on it now.
func stillReached(d toolpolicy.Decision, recorded []string) toolpolicy.Decision {
	var still []string
	for _, id := range recorded {
		if slices.ContainsFunc(d.Limits, func(c toolpolicy.LimitCharge) bool { return c.ID == id }) && !slices.Contains(still, id) {
			still = append(still, id)
		}
	}
	if r, err := d.LimitsReached(still); err == nil {
		return r
	}
	return d
}

// strictness orders the policy's actions; an action the policy does not
// give (a line that records none) is below them all.
func strictness(action string) int {
	return slices.Index([]toolpolicy.Action{toolpolicy.ActionAllow, toolpolicy.ActionRequireApproval, toolpolicy.ActionDeny},
		toolpolicy.Action(action))
}

// missingFrom is the ids of a that b lacks, in a's order.
func missingFrom(a, b []string) []string {
	var out []string
	for _, id := range a {
		if !slices.Contains(b, id) {
			out = append(out, id)
		}
	}
	return out
}

// recordedCall is the call a tool.requested line records, as the runtime
// would put it to p now: its recorded input and metadata and, for a tool
// whose destinations p traces, the sources folded from the lines before
// it (src). haveInput and haveMeta say the caller brings its own input or
// metadata (policy decide --input, --metadata), which then need not be on
// the line. why, when not empty, is why the call cannot be decided as the
// runtime decided it (what is needed is sealed, or not recorded).
func recordedCall(p *toolpolicy.Policy, l contracts.Line, e *contracts.ToolRequested, src *reducer.Sources, haveInput, haveMeta bool) (call toolpolicy.Call, why string) {
	call = toolpolicy.Call{Tool: e.ToolName}
	if !haveInput {
		if l.Sealed {
			return call, "its input is sealed (not opened, or its key destroyed)"
		}
		call.Input = e.Input
	}
	if !haveMeta {
		if len(e.PolicyMetadata) == 0 {
			return call, "it records no policy_metadata (written before decisions recorded it)"
		}
		m, err := contracts.ReadMetadata(e.PolicyMetadata)
		if err != nil {
			return call, "its policy_metadata does not read"
		}
		call.Meta = m
	}
	if p.TracesDestinations(e.ToolName) {
		s, opened := src.Sources()
		if !opened {
			return call, "a line before it whose content its destinations are traced to is sealed"
		}
		call.Sources = s
	}
	// The run's steps before the call, which the policy's prior
	// conditions read. The matter's other runs are not in the export: a
	// call whose rules read them is not decided rather than decided on
	// nothing (ledger audit --matter-ledger checks what it read).
	call.History = src.History()
	if len(p.MatterPriorTools(e.ToolName)) > 0 {
		return call, "a rule's prior condition reads the matter's other runs, which a replay of the export does not hold"
	}
	return call, ""
}

// decideRecorded is policy decide --ledger FILE --seq N: the call the
// export records at tool.requested seq N, decided by p with the sources
// before it, on the line's input and metadata unless inputFile or metaFile
// is given, with the limits it records reached still reached (stillReached).
// tool, when given, must be the line's.
func decideRecorded(p *toolpolicy.Policy, pos []string, ledgerFile string, seq int64, inputFile, metaFile string, stdin io.Reader, stdout io.Writer) error {
	switch {
	case ledgerFile == "":
		return usageErr("policy decide: --seq needs --ledger EXPORT")
	case seq <= 0:
		return usageErr("policy decide: --ledger needs --seq N, the seq of a tool.requested line")
	case len(pos) > 1:
		return usageErr("policy decide takes at most one TOOL")
	case countStdin(ledgerFile, inputFile, metaFile) > 1:
		return usageErr("only one of --ledger, --input and --metadata can read stdin")
	}
	lines, err := readVerifiedLedger(ledgerFile, stdin)
	if err != nil {
		return err
	}
	name := stdinName(ledgerFile)
	var src reducer.Sources
	for _, l := range lines {
		src.Fold(l)
		if l.Seq != seq {
			continue
		}
		e, ok := l.Event.(*contracts.ToolRequested)
		if !ok {
			return fmt.Errorf("%s: seq %d is a %s line, not tool.requested", name, seq, l.Type)
		}
		if len(pos) == 1 && pos[0] != e.ToolName {
			return usageErr("policy decide: seq %d of %s is a call of %s, not %s", seq, name, e.ToolName, pos[0])
		}
		call, why := recordedCall(p, l, e, &src, inputFile != "", metaFile != "")
		if why != "" {
			return fmt.Errorf("%s: seq %d (%s) cannot be decided: %s", name, seq, e.ToolName, why)
		}
		if err := readCallFiles(&call, inputFile, metaFile, stdin); err != nil {
			return err
		}
		d, err := p.Decide(call)
		if err != nil {
			return err
		}
		return writeJSON(stdout, stillReached(d, e.LimitsReached))
	}
	return fmt.Errorf("%s: no line at seq %d (the ledger runs to seq %d)", name, seq, lines[len(lines)-1].Seq)
}

// loadPolicy is the policy in file (full or an overlay), or the embedded one.
func loadPolicy(file string) (*toolpolicy.Policy, error) {
	if file == "" {
		return toolpolicy.Embedded()
	}
	return toolpolicy.LoadFile(file)
}

// readVerifiedLedger reads a run's export as ledger audit does: verified
// line by line (chain and reducer) first, then its lines. A bad line is
// named by the file and its line number.
func readVerifiedLedger(file string, stdin io.Reader) ([]contracts.Line, error) {
	name, data, err := readInput([]string{file}, stdin)
	if err != nil {
		return nil, err
	}
	if _, err := reducer.Verify(bytes.NewReader(data)); err != nil {
		var le *contracts.LineError
		if errors.As(err, &le) {
			// "FILE: line N: why": with several exports, the line alone
			// does not say which.
			return nil, fmt.Errorf("%s: %v", name, le)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var lines []contracts.Line
	if _, err := contracts.ReadExport(bytes.NewReader(data), func(l contracts.Line) error {
		lines = append(lines, l)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return lines, nil
}

// countStdin counts the file arguments that read stdin.
func countStdin(files ...string) int {
	n := 0
	for _, f := range files {
		if f == "-" {
			n++
		}
	}
	return n
}

// stdinName is how a file argument is named in messages.
func stdinName(file string) string {
	if file == "-" {
		return "stdin"
	}
	return file
}
