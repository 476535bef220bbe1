package evidence

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

// TestEndsAtLastReceipt: "an ended run's ledger ends at its last receipt",
// the redundant safeguard complete keeps (issue 31 item 9), reached
// directly: an ended run whose ledger runs past its last receipt is refused
// and not complete; one that ends there is complete; a run that has not
// ended is neither refused nor complete. Through VerifyWith the fold refuses
// such a line first, which the last subtest pins (if it ever stops doing so,
// complete is what refuses the line).
//
// Checked: with the check dropped from complete (`rep.LastSeq > rep.Covered`
// never true), "a line past the last receipt" fails (nil, Complete); with it
// back it passes. (With VerifyWith not calling complete, TestFixtureVerifies
// and the other tests of a complete run fail: Complete stays false.) Issue
// 31 item 9.
func TestEndsAtLastReceipt(t *testing.T) {
	t.Run("a line past the last receipt", func(t *testing.T) {
		rep := Report{LastSeq: 12, Covered: 11}
		err := complete(&rep, true)
		var p *Problem
		if !errors.As(err, &p) || p.Check != "ledger" || !strings.Contains(p.Msg, "runs past its last receipt (seq 11) to seq 12") || rep.Complete {
			t.Fatalf("complete: %v %+v", err, rep)
		}
	})
	t.Run("the ledger ends at its last receipt", func(t *testing.T) {
		rep := Report{LastSeq: 11, Covered: 11}
		if err := complete(&rep, true); err != nil || !rep.Complete {
			t.Fatalf("complete: %v %+v", err, rep)
		}
	})
	t.Run("a run that has not ended", func(t *testing.T) {
		rep := Report{LastSeq: 12, Covered: 8}
		if err := complete(&rep, false); err != nil || rep.Complete {
			t.Fatalf("complete: %v %+v", err, rep)
		}
	})
	t.Run("through VerifyWith the fold refuses it first", func(t *testing.T) {
		const firm, run = "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b", "5b0c6a2e-7d4f-4c8e-9a51-0b8f2f3c1d01"
		c := contracts.NewChain(run, firm)
		c.Now = func() time.Time { return time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC) }
		b := Bundle{Schema: BundleSchema, FirmID: firm, RunID: run}
		for _, e := range []contracts.Event{
			&contracts.RunStarted{AgentKey: "matter_assistant", Mode: contracts.ModeInvoke, ModelID: "m", PromptVersion: "1",
				SchemaVersion: contracts.SchemaVersion, CostCapUSD: "1.00", MaxTokens: 100, MatterID: "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99",
				UserID: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", History: []contracts.HistoryMessage{}},
			&contracts.RunCompleted{StopReason: "end_turn", FinalText: "done"},
			&contracts.RunCompleted{StopReason: "end_turn", FinalText: "forged"},
		} {
			l, err := c.Append(e)
			if err != nil {
				t.Fatal(err)
			}
			b.Ledger = append(b.Ledger, string(l.Raw))
		}
		_, err := VerifyWith(b, KeySet{}, Options{})
		if err == nil || !strings.HasPrefix(err.Error(), "ledger: line 3: ") || !strings.Contains(err.Error(), reducer.ErrTerminal.Error()) {
			t.Fatalf("VerifyWith: %v, want line 3 refused: %v", err, reducer.ErrTerminal)
		}
	})
}
