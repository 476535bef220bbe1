package reducer

import (
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/provenance"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// Sources folds a run's ledger lines, in order, into what its calls'
// destinations are traced to (pkg/provenance): counsel's words that
// started the run (run.started's counsel_message and the user messages of
// its history) and every tool result the model saw (tool.completed's
// result, by its line's seq and tool). The agent folds the lines it
// commits and the ledger it resumes from; the audit folds the ledger up to
// each tool.requested, so both trace a call over the same sources. The
// registry's and the firm's domains come from the decision's metadata.
//
// It also keeps the run's steps (each tool.completed: seq, tool, status and
// result), which the policy's prior conditions read (toolpolicy.Call's
// History).
type Sources struct {
	src   provenance.Sources
	steps []toolpolicy.Step
	// sealed: some line's content was not opened, so the sources are not
	// the run's; a trace over them would not be the one recorded.
	sealed bool
}

// Fold takes the next line.
func (s *Sources) Fold(l contracts.Line) {
	switch e := l.Event.(type) {
	case *contracts.RunStarted:
		if l.Sealed {
			s.sealed = true
			return
		}
		s.src.Counsel = CounselWords(e)
	case *contracts.ToolCompleted:
		// The tool and the status are in the clear; the result is not
		// where the line is sealed (a prior condition over it then cannot
		// be evaluated, and fails closed).
		st := toolpolicy.Step{Seq: l.Seq, Tool: e.ToolName, Status: e.Status}
		if l.Sealed {
			s.sealed = true
			s.steps = append(s.steps, st)
			return
		}
		st.Result = e.Result
		s.steps = append(s.steps, st)
		s.src.AddResult(provenance.Result{Seq: l.Seq, Tool: e.ToolName, Text: e.Result})
	}
}

// History is the run's steps so far, in ledger order: never nil (a run
// with none has an empty history, which the policy reads as known).
func (s *Sources) History() []toolpolicy.Step {
	if s.steps == nil {
		return []toolpolicy.Step{}
	}
	return s.steps[:len(s.steps):len(s.steps)]
}

// Sources is the fold so far, and false when some content was sealed (not
// opened, or destroyed): destinations cannot be traced over them as they
// were at the decision.
func (s *Sources) Sources() (*provenance.Sources, bool) { return &s.src, !s.sealed }

// CounselWords is the text of counsel's own words that started a run:
// the counsel message and, before it, the user messages of the history
// the run was started with, one a line. The assistant's earlier messages
// are not counsel's words (the model may have repeated a document).
func CounselWords(e *contracts.RunStarted) string {
	var n int
	for _, h := range e.History {
		if h.Role == contracts.RoleUser {
			n += len(h.Text) + 1
		}
	}
	b := make([]byte, 0, n+len(e.CounselMessage))
	for _, h := range e.History {
		if h.Role == contracts.RoleUser {
			b = append(append(b, h.Text...), '\n')
		}
	}
	return string(append(b, e.CounselMessage...))
}
