// Package lambdafn serves the reference tools as a Lambda function, the way
// a firm's own function is reached by Warrant's lambda target: invoked
// synchronously with the payload
//
//	{"effect_ref": "…", "firm_id": "…", "run_id": "…", "matter_id": "…", "tool": "…", "input": {…}}
//
// and answering with the tool's JSON result. It is cmd/toolfn's handler,
// and the example of the contract a firm's function keeps:
//
//   - a call it refuses, the tool not having acted (a payload that names no
//     effect and run, invalid input, another matter, an unknown tool), is
//     answered with a function error: Warrant tells the model the tool
//     failed, and records that nothing happened;
//   - once the tool may have acted, a failure of its own system is never
//     answered with a function error (that would read as "nothing
//     happened"): the process exits, so Lambda answers Runtime.ExitError,
//     which Warrant reads as an outcome to reconcile, never retried.
package lambdafn

import (
	"context"
	"encoding/json"
	"os"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/tools/serve"
)

// Name is the function's name in logs and failure envelopes.
const Name = "warrant-reference-tools"

// TextBadPayload refuses a payload that is not the call's object.
const TextBadPayload = "refused: the payload is not {effect_ref, firm_id, run_id, matter_id, tool, input} with lowercase UUID ids; nothing was done"

// Payload is what Warrant's lambda target sends.
type Payload struct {
	EffectRef string          `json:"effect_ref"`
	FirmID    string          `json:"firm_id"`
	RunID     string          `json:"run_id"`
	MatterID  string          `json:"matter_id"`
	Tool      string          `json:"tool"`
	Input     json.RawMessage `json:"input"`
}

// Refusal is the function error of a call the tool did not act on. Its
// text is one of serve's fixed texts (or TextBadPayload); aws-lambda-go
// reports its type, "Refusal", as the errorType.
type Refusal struct{ Text string }

func (r *Refusal) Error() string { return r.Text }

// Handler returns the function's handler over set. logger gets one line a
// call (the tool, the outcome, the run's ids; never an input or a result)
// and a failure envelope when the tool's system failed. crash ends the
// process after such a failure (nil: os.Exit(1)); a test passes its own.
func Handler(set *serve.Tools, logger *failure.Logger, crash func()) func(context.Context, json.RawMessage) (json.RawMessage, error) {
	if crash == nil {
		crash = func() { os.Exit(1) }
	}
	return func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var p Payload
		if err := contracts.DecodeStrict(raw, &p); err != nil {
			logger.Info(ctx, "tool call", "outcome", "bad_payload")
			return nil, &Refusal{Text: TextBadPayload}
		}
		scope, ok := serve.Scope(p.EffectRef, p.FirmID, p.RunID, p.MatterID)
		if !ok {
			logger.Info(ctx, "tool call", "tool", p.Tool, "outcome", "bad_payload")
			return nil, &Refusal{Text: TextBadPayload}
		}
		o := set.Run(ctx, p.Tool, p.EffectRef, scope, p.Input)
		logger.Info(ctx, "tool call", "tool", p.Tool, "outcome", o.Log, "firm_id", p.FirmID, "run_id", p.RunID, "matter_id", p.MatterID)
		switch o.Kind {
		case serve.Refused:
			return nil, &Refusal{Text: o.Text}
		case serve.Failed:
			logger.Log(ctx, failure.Build(o.Err, failure.StageToolExecute, Name+"/"+p.Tool,
				failure.Identity{FirmID: p.FirmID, RunID: p.RunID, MatterID: p.MatterID}))
			crash()
			// crash returned (a test's): answer nothing a caller could
			// read as "not done".
			panic("lambdafn: the tool's system failed after it may have acted")
		}
		return o.Result, nil
	}
}
