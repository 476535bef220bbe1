package reducer_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/reducer"
)

var update = flag.Bool("update", false, "rewrite testdata: ledgers, folded states and fuzz seeds")

// TestGolden reads each ledger through contracts.ReadLedger, as an operator's
// export would be read, and compares the folded state with its golden JSON.
func TestGolden(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			ledgerPath := filepath.Join("testdata", sc.name+".ndjson")
			statePath := filepath.Join("testdata", sc.name+".state.json")
			built := ndjson(buildLines(t, fixedChain(runID), sc.events()...))
			if *update {
				writeFile(t, ledgerPath, built)
			}
			ledger := readFile(t, ledgerPath)
			// The fixture on disk must be what the builder makes today, or a
			// reviewer would be reading a ledger nobody can regenerate.
			if !bytes.Equal(ledger, built) {
				t.Fatalf("%s differs from what the fixture builder produces; run go test -update", ledgerPath)
			}

			var state reducer.RunState
			err := contracts.ReadLedger(bytes.NewReader(ledger), func(l contracts.Line) error {
				next, err := reducer.Apply(state, l)
				state = next
				return err
			})
			if err != nil {
				t.Fatalf("fold: %v", err)
			}
			got, err := json.MarshalIndent(state, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			if *update {
				writeFile(t, statePath, got)
			}
			if want := readFile(t, statePath); !bytes.Equal(got, want) {
				t.Fatalf("state differs from %s (run go test -update to accept):\n got: %s\nwant: %s", statePath, got, want)
			}

			// The golden JSON is also a valid input: it reads back to the same state.
			var back reducer.RunState
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatalf("unmarshal golden state: %v", err)
			}
			if !equalState(back, state) {
				t.Fatalf("state does not survive a JSON round trip:\n got: %+v\nwant: %+v", back, state)
			}
		})
	}
	if *update {
		writeFuzzSeeds(t)
	}
}

func TestReduceAgentRunMatchesApply(t *testing.T) {
	for _, sc := range scenarios {
		lines := buildLines(t, fixedChain(runID), sc.events()...)
		got, err := reducer.ReduceAgentRun(lines)
		if err != nil {
			t.Fatalf("%s: %v", sc.name, err)
		}
		if got.LastSeq != int64(len(lines)) || got.HeadHash != lines[len(lines)-1].Hash {
			t.Fatalf("%s: head is seq %d %s, want the last line", sc.name, got.LastSeq, got.HeadHash)
		}
	}
}

func equalState(a, b reducer.RunState) bool { return reflect.DeepEqual(a, b) }

// writeFuzzSeeds stores one FuzzApply seed per event type that the scenarios
// use, in the corpus format go test reads.
func writeFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzApply")
	seen := map[contracts.EventType]bool{}
	for _, sc := range scenarios {
		for _, l := range buildLines(t, fixedChain(runID), sc.events()...) {
			if seen[l.Type] {
				continue
			}
			seen[l.Type] = true
			payload, err := json.Marshal(l.Event)
			if err != nil {
				t.Fatal(err)
			}
			seed := fmt.Sprintf("go test fuzz v1\nstring(%s)\n[]byte(%s)\n", strconv.Quote(string(l.Type)), strconv.Quote(string(payload)))
			writeFile(t, filepath.Join(dir, string(l.Type)), []byte(seed))
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
