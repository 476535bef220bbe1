package reducer_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"

	"github.com/seed-f6d3920e/warrant"
)

const benchLines = 10_000

// benchLedger is one long but ordinary run: many turns of a low-tier tool call
// each, priced per call. It is built once and shared, so both benchmarks read
// exactly the same bytes.
var benchLedger = sync.OnceValues(func() ([][]byte, error) {
	c := fixedChain(runID)
	var raws [][]byte
	add := func(e contracts.Event) error {
		l, err := c.Append(e)
		raws = append(raws, l.Raw)
		return err
	}
	if err := add(started("1000.00")); err != nil {
		return nil, err
	}
	for turn := int64(1); len(raws) < benchLines-3; turn++ {
		tool := search
		if turn%2 == 0 {
			tool = summary
		}
		tool.id = fmt.Sprintf("tooluse_%d", turn)
		for _, e := range []contracts.Event{
			toolTurn(turn, "Checking the file.", tool),
			usage(turn, 1200+turn%300, 90+turn%40, 800, "0.004215"),
			tool.requested(turn),
			tool.completed(contracts.ToolSuccess, "", `{"hits":[{"document_id":"D-3","title":"Deposition schedule"}]}`),
		} {
			if err := add(e); err != nil {
				return nil, err
			}
		}
	}
	for _, e := range []contracts.Event{endTurn(1, "Done."), usage(1, 900, 40, 0, "0.00363"),
		&contracts.RunCompleted{StopReason: "end_turn", FinalText: "Done."}} {
		if err := add(e); err != nil {
			return nil, err
		}
	}
	return raws, nil
})

func loadBench(b *testing.B) [][]byte {
	raws, err := benchLedger()
	if err != nil {
		b.Fatal(err)
	}
	if len(raws) != benchLines {
		b.Fatalf("bench ledger has %d lines, want %d", len(raws), benchLines)
	}
	var n int64
	for _, r := range raws {
		n += int64(len(r))
	}
	b.SetBytes(n)
	return raws
}

// BenchmarkParseVerifyFold is what a reader of the ledger really pays: strict
// parse with the line's own hash check, the link to its predecessor, and the
// fold (Apply repeats the link check against the state it folds into).
func BenchmarkParseVerifyFold(b *testing.B) {
	raws := loadBench(b)
	for b.Loop() {
		var s reducer.RunState
		var prev contracts.Line
		for _, raw := range raws {
			l, err := contracts.ParseEventLine(raw)
			if err != nil {
				b.Fatal(err)
			}
			if err := contracts.CheckLink(prev.Seq, prev.Hash, prev.RunID, prev.FirmID, l); err != nil {
				b.Fatal(err)
			}
			if s, err = reducer.Apply(s, l); err != nil {
				b.Fatal(err)
			}
			prev = l
		}
		if s.Status != warrant.RunCompleted {
			b.Fatalf("bench run ended %s", s.Status)
		}
	}
	b.ReportMetric(benchLines, "lines/op")
}

// BenchmarkPlainUnmarshal is the floor: reading the same bytes with no
// strictness, no hashing and no rules.
func BenchmarkPlainUnmarshal(b *testing.B) {
	raws := loadBench(b)
	for b.Loop() {
		for _, raw := range raws {
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(benchLines, "lines/op")
}
