package reducer_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"

	"github.com/seed-f6d3920e/warrant"
)

// TestVerifyGolden: Verify folds each golden ledger export in testdata to
// its golden state, exactly as ReadLedger + Apply do.
func TestVerifyGolden(t *testing.T) {
	ledgers, err := filepath.Glob(filepath.Join("testdata", "*.ndjson"))
	if err != nil || len(ledgers) == 0 {
		t.Fatalf("no golden ledgers in testdata (%v)", err)
	}
	for _, path := range ledgers {
		t.Run(filepath.Base(path), func(t *testing.T) {
			ledger, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(strings.TrimSuffix(path, ".ndjson") + ".state.json")
			if err != nil {
				t.Fatal(err)
			}
			state, err := reducer.Verify(bytes.NewReader(ledger))
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			got, err := json.MarshalIndent(state, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(append(got, '\n'), want) {
				t.Fatalf("Verify state differs from the golden state:\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

// verifyLedger is a small completed run, one raw NDJSON line per event, and
// then the extra events (which may break the run's rules, not the chain).
func verifyLedger(t *testing.T, extra ...contracts.Event) [][]byte {
	t.Helper()
	chain := contracts.NewChain("5b0c6a2e-7d4f-4c8e-9a51-0b8f2f3c1d01", "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b")
	chain.Now = func() time.Time { return time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC) }
	var raws [][]byte
	for _, e := range append([]contracts.Event{
		&contracts.RunStarted{AgentKey: "matter_assistant", Mode: contracts.ModeInvoke,
			ModelID: "us.anthropic.claude-sonnet-4-5-20250929-v1:0", PromptVersion: "v1",
			SchemaVersion: contracts.SchemaVersion, CostCapUSD: "1.00", MaxTokens: 1024,
			MatterID: "7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", UserID: "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f"},
		&contracts.TurnCompleted{Turn: 1, Text: "The hearing is on 5 January.", StopReason: "end_turn"},
		&contracts.ModelUsage{Turn: 1, ModelID: "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
			Usage: contracts.Usage{InputTokens: 1200, OutputTokens: 350}, CostUSD: "0.009735"},
		&contracts.RunCompleted{StopReason: "end_turn", FinalText: "The hearing is on 5 January."},
	}, extra...) {
		l, err := chain.Append(e)
		if err != nil {
			t.Fatalf("append %s: %v", e.EventType(), err)
		}
		raws = append(raws, l.Raw)
	}
	return raws
}

func joinLines(lines [][]byte) []byte { return append(bytes.Join(lines, []byte("\n")), '\n') }

func TestVerifyRefuses(t *testing.T) {
	good := verifyLedger(t)
	if state, err := reducer.Verify(bytes.NewReader(joinLines(good))); err != nil || state.Status != warrant.RunCompleted {
		t.Fatalf("the fixture does not verify: %v (%+v)", err, state)
	}
	// A line the reducer refuses: anything after a terminal line.
	afterTerminal := verifyLedger(t, &contracts.TurnDelta{Turn: 2, Text: "one more thing"})
	// A flipped byte in line 2: it no longer hashes to its own hash field.
	flipped := verifyLedger(t)
	i := bytes.Index(flipped[1], []byte("hearing"))
	if i < 0 {
		t.Fatal("fixture: line 2 must carry the text")
	}
	flipped[1] = bytes.Clone(flipped[1])
	flipped[1][i] ^= 0x20 // "hearing" -> "Hearing"
	// Two lines swapped: each intact, the chain not.
	swapped := verifyLedger(t)
	swapped[1], swapped[2] = swapped[2], swapped[1]

	for _, tc := range []struct {
		name     string
		in       []byte
		lineNo   int   // 0: no *contracts.LineError
		is       error // errors.Is target, if any
		lastSeq  int64 // the state returned with the error
		contains string
	}{
		{"empty", nil, 0, reducer.ErrNotStarted, 0, "the ledger has no lines"},
		{"after terminal", joinLines(afterTerminal), len(afterTerminal), reducer.ErrTerminal, int64(len(good)), "terminal"},
		{"flipped byte", joinLines(flipped), 2, contracts.ErrHashMismatch, 1, ""},
		{"swapped", joinLines(swapped), 2, nil, 1, "expected seq 2"},
		{"blank line", append(joinLines(good[:2]), '\n'), 3, nil, 2, "empty line"},
		{"not JSON", []byte("hello\n"), 1, nil, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, err := reducer.Verify(bytes.NewReader(tc.in))
			if err == nil {
				t.Fatalf("Verify passed: %+v", state)
			}
			var le *contracts.LineError
			if isLine := errors.As(err, &le); isLine != (tc.lineNo != 0) || (isLine && le.LineNo != tc.lineNo) {
				t.Fatalf("Verify = %v, want a line error on line %d", err, tc.lineNo)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("Verify = %v, want errors.Is %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("Verify = %q, want it to mention %q", err, tc.contains)
			}
			if state.LastSeq != tc.lastSeq {
				t.Fatalf("state with the error has LastSeq %d, want %d (the last good line)", state.LastSeq, tc.lastSeq)
			}
		})
	}
}

func ExampleVerify() {
	f, err := os.Open("testdata/completed.ndjson")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	state, err := reducer.Verify(f)
	if err != nil {
		fmt.Println(err) // "line N: ...": the first bad line
		return
	}
	fmt.Println(state.Status, "through seq", state.LastSeq, "cost", state.Cost, "of", state.CostCap)

	_, err = reducer.Verify(strings.NewReader(""))
	fmt.Println(errors.Is(err, reducer.ErrNotStarted))
	// Output:
	// completed through seq 12 cost 0.019965 of 1.00
	// true
}
