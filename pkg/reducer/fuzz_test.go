package reducer_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"

	"github.com/seed-f6d3920e/warrant"
)

// FuzzApply: whatever payload a line carries, once ParseEventLine accepts it
// Apply never panics, refuses only with a *RuleError, and keeps the state's
// invariants. The fuzzer supplies the type and payload and the harness signs
// the line onto a valid prefix; random bytes alone would almost never carry a
// valid hash and so would never reach Apply.
func FuzzApply(f *testing.F) {
	var prefixes []reducer.RunState
	for _, events := range [][]contracts.Event{
		{started("1.00")},
		{started("0.01"), toolTurn(1, "Filing.", filing), usage(1, 1200, 350, 0, "0.009735"), filing.requested(1), filing.blocked()},
		{started("1.00"), &contracts.RunCompleted{StopReason: "end_turn", FinalText: "Done."}},
	} {
		s, err := reducer.ReduceAgentRun(buildLines(f, fixedChain(runID), events...))
		if err != nil {
			f.Fatal(err)
		}
		prefixes = append(prefixes, s)
	}
	prefixes = append(prefixes, reducer.RunState{})

	f.Fuzz(func(t *testing.T, typ string, payload []byte) {
		for _, prev := range prefixes {
			if raw, ok := signLine(prev, typ, payload); ok {
				checkApply(t, prev, raw)
			}
			checkApply(t, prev, payload) // the bytes as a whole line, too
		}
	})
}

func checkApply(t *testing.T, prev reducer.RunState, raw []byte) {
	l, err := contracts.ParseEventLine(raw)
	if err != nil {
		return // contracts' own fuzz target owns the parser's errors
	}
	next, err := reducer.Apply(prev, l)
	if err != nil {
		var re *reducer.RuleError
		if !errors.As(err, &re) || re.Seq != l.Seq {
			t.Fatalf("untyped refusal %T: %v", err, err)
		}
		if !equalState(next, prev) {
			t.Fatalf("a refused line changed the state")
		}
		return
	}
	switch {
	case prev.Status.Terminal() && l.Type != contracts.TypeEffectReconciled && l.Type != contracts.TypeContentDestroyed:
		t.Fatalf("a terminal run accepted %s", l.Type)
	case l.Type == contracts.TypeContentDestroyed && (!prev.Status.Terminal() || prev.ContentDestroyed != nil || next.ContentDestroyed == nil):
		t.Fatalf("content.destroyed accepted on a %s run (destroyed before: %v)", prev.Status, prev.ContentDestroyed != nil)
	case next.LastSeq != prev.LastSeq+1 || next.HeadHash != l.Hash:
		t.Fatalf("head not advanced: %d %s", next.LastSeq, next.HeadHash)
	case (next.Status == warrant.RunHeld) != (next.HeldOn != "") || (next.HeldOn != "") != (next.PendingApproval != nil):
		t.Fatalf("hold fields disagree: status %s held_on %q pending %v", next.Status, next.HeldOn, next.PendingApproval)
	case next.Cost > next.CostCap && next.Status != warrant.RunAborted && l.Type == contracts.TypeModelUsage:
		t.Fatalf("cost %s crossed cap %s without aborting", next.Cost, next.CostCap)
	case next.Cost < prev.Cost:
		t.Fatalf("cost went down")
	}
	if _, err := json.Marshal(next); err != nil {
		t.Fatalf("state does not marshal: %v", err)
	}
}

// signLine makes the next line of prev's chain around an arbitrary payload.
func signLine(prev reducer.RunState, typ string, payload []byte) ([]byte, bool) {
	head := prev.HeadHash
	if prev.LastSeq == 0 {
		head = contracts.ZeroHash
	}
	run, firm := prev.RunID, prev.FirmID
	if run == "" {
		run, firm = runID, firmID
	}
	t, err := json.Marshal(typ)
	if err != nil {
		return nil, false
	}
	unsigned := fmt.Appendf(nil, `{"schema_version":"1","seq":%d,"run_id":%q,"firm_id":%q,"type":%s,"created_at":"2026-12-02T10:00:00.000Z","prev_hash":%q,"payload":%s}`,
		prev.LastSeq+1, run, firm, t, head, payload)
	canon, err := contracts.Canonicalize(unsigned)
	if err != nil {
		return nil, false
	}
	sum := sha256.Sum256(canon)
	signed := append(unsigned[:len(unsigned)-1:len(unsigned)-1], fmt.Sprintf(`,"hash":%q}`, hex.EncodeToString(sum[:]))...)
	return signed, true
}
