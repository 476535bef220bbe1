package reducer

import (
	"strconv"
	"strings"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// OutcomeWords says in words what became of a run's actions: "no actions",
// "1 action done", or the ones not done first ("1 of 2 actions not done:
// file_court_document failed (its system could not be reached; nothing was
// sent)"). Only tool names and closed words: no content.
func OutcomeWords(actions []Action) string {
	if len(actions) == 0 {
		return "no actions"
	}
	var notDone []string
	for _, a := range actions {
		if w := ActionWords(a); w != "" {
			notDone = append(notDone, w)
		}
	}
	plural := func(n int) string {
		if n == 1 {
			return "1 action"
		}
		return strconv.Itoa(n) + " actions"
	}
	switch {
	case len(notDone) == 0:
		return plural(len(actions)) + " done"
	case len(notDone) == len(actions):
		return plural(len(actions)) + " not done: " + strings.Join(notDone, "; ")
	}
	return strconv.Itoa(len(notDone)) + " of " + plural(len(actions)) + " not done: " + strings.Join(notDone, "; ")
}

// ActionWords says what became of an action that did not succeed ("" for
// one that did).
func ActionWords(a Action) string {
	t := a.ToolName
	switch a.Outcome {
	case ActionDone:
		return ""
	case ActionFailed:
		used := ""
		if a.ApprovalID != "" {
			used = "; its warrant was used"
		}
		switch a.Why {
		case contracts.ToolErrUnreachable:
			return t + " failed (its system could not be reached; nothing was sent" + used + ")"
		case contracts.ToolErrInvalidInput:
			return t + " failed (its input did not fit the tool; nothing was sent" + used + ")"
		}
		return t + " failed (its system answered with an error" + used + ")"
	case ActionDeclined:
		return t + " declined by counsel (nothing was sent)"
	case ActionDenied:
		return t + " refused by the risk policy (nothing was sent)"
	case ActionUnknown:
		switch a.Reconciled {
		case "executed":
			return ""
		case "not_executed":
			return t + " not executed (its answer was lost; counsel found it did not happen)"
		}
		return t + " outcome unknown (its answer was lost; counsel must reconcile it)"
	case ActionPending:
		return t + " not done yet (waiting on counsel, or running)"
	case ActionNotRun:
		switch a.Why {
		case "warrant_expired":
			return t + " not run (its warrant expired unsigned)"
		case "tool_changed":
			return t + " not run (the tool changed on its system since it was pinned; nothing was sent)"
		case "policy_changed":
			return t + " not run (the risk policy now denies it; nothing was sent)"
		}
		return t + " not run (the run ended: " + a.Why + ")"
	}
	return t + " " + a.Outcome
}
