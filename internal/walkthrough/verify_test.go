package walkthrough

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"

	"github.com/seed-f6d3920e/warrant"
)

// TestVerify: the walkthrough's last step reads the exported file back and
// folds it in this process; a golden ledger verifies, a damaged one names
// its line, and a file that is not there is an error.
func TestVerify(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("..", "..", "pkg", "reducer", "testdata", "completed.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.ndjson")
	if err := os.WriteFile(good, golden, 0o644); err != nil {
		t.Fatal(err)
	}
	state, _, err := verify(context.Background(), good, "", nil)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	lines := int64(bytes.Count(golden, []byte("\n")))
	if state.Status != warrant.RunCompleted || state.LastSeq != lines || len(state.HeadHash) != 64 {
		t.Fatalf("verify: status %s through seq %d (head %q), want completed through %d", state.Status, state.LastSeq, state.HeadHash, lines)
	}

	// Drop line 2: line 3 no longer links to line 1.
	parts := bytes.SplitAfter(golden, []byte("\n"))
	bad := filepath.Join(dir, "bad.ndjson")
	if err := os.WriteFile(bad, append(bytes.Clone(parts[0]), bytes.Join(parts[2:], nil)...), 0o644); err != nil {
		t.Fatal(err)
	}
	var le *contracts.LineError
	if _, _, err := verify(context.Background(), bad, "", nil); !errors.As(err, &le) || le.LineNo != 2 {
		t.Fatalf("verify of a ledger missing line 2 = %v, want a line error on line 2", err)
	}

	if _, _, err := verify(context.Background(), filepath.Join(dir, "missing.ndjson"), "", nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("verify of a missing file = %v, want not exist", err)
	}
	// With the ledger key, the export must carry the signed head.
	if _, _, err := verify(context.Background(), good, "hmac:"+strings.Repeat("ab", 32), nil); err == nil {
		t.Fatal("verify with a key accepted an export without its signed head")
	}
}
