package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/witness"
)

// historyBundle is the run of ledger(t) as its evidence bundle, in a firm
// log that holds, before the run's entries, one start entry of each run of
// before, and after them one of each run of after; checkpoint 1 covers the
// whole log, signed with k as JSON and as a note of origin.
func historyBundle(t *testing.T, k *evidence.P256, origin string, before, after []string) evidence.Bundle {
	t.Helper()
	ctx := context.Background()
	b := noteBundle(t, k, origin) // the run's ledger and receipts
	at := contracts.FormatTime(time.Date(2026, 12, 2, 10, 0, 1, 0, time.UTC))
	other := func(i int, run string) string {
		sum := sha256.Sum256([]byte("receipt of " + run))
		return evidence.Entry{Index: int64(i), At: at, RunID: run, Seq: 1, Kind: evidence.KindStart, ReceiptSHA256: hex.EncodeToString(sum[:])}.Line()
	}
	var lines []string
	for _, run := range before {
		lines = append(lines, other(len(lines)+1, run))
	}
	for _, line := range b.Log.Entries {
		e, err := evidence.ParseEntry(line)
		if err != nil {
			t.Fatal(err)
		}
		e.Index = int64(len(lines) + 1)
		lines = append(lines, e.Line())
	}
	for _, run := range after {
		lines = append(lines, other(len(lines)+1, run))
	}
	head := evidence.Genesis
	for _, l := range lines {
		head = evidence.Link(head, l)
	}
	cp := evidence.Checkpoint{FirmID: firmID, Number: 1, Size: int64(len(lines)), Head: head,
		CreatedAt: contracts.FormatTime(time.Date(2026, 12, 2, 10, 1, 0, 0, time.UTC))}
	signed, err := evidence.SignCheckpoint(ctx, k, cp)
	if err != nil {
		t.Fatal(err)
	}
	if signed.Note, err = evidence.SignCheckpointNote(ctx, k, origin, cp); err != nil {
		t.Fatal(err)
	}
	b.Log = evidence.Segment{From: 1, Prev: evidence.Genesis, Entries: lines}
	b.Checkpoint = &signed
	return b
}

// Issue 30 item 4: a witness holds the real log's checkpoint, which it
// cosigned; the firm's own key re-signs a history without another run's
// entry, at the same size. The witness refuses to cosign it, the rewritten
// bundle verifies without --witness (the firm's key signed it), and `warrant
// evidence verify --witness` refuses it, naming the witness: it carries no
// cosignature by it, and a cosignature copied from the real checkpoint does
// not verify over it. The real bundle verifies with --witness (a vkey or a
// file holding it).
func TestEvidenceVerifyWitness(t *testing.T) {
	k, keyFile := firmKey(t)
	origin := evidence.Origin("", firmID)
	logVKey, _ := evidence.VerifierKey(origin, k.Public())
	skey, vkey, err := witness.GenerateKey("witness.example/w1")
	if err != nil {
		t.Fatal(err)
	}
	store, err := witness.NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w, err := witness.New(witness.Config{Logs: []witness.LogConfig{{VKey: logVKey}}}, skey, store)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(w.Handler("", nil))
	defer srv.Close()
	file := func(b evidence.Bundle) string {
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		return writeTemp(t, "bundle.json", raw)
	}

	real := historyBundle(t, k, origin, []string{"6d1c0f4e-8a2b-4c3d-9e5f-7a6b5c4d3e2f"}, nil)
	lines, size, err := witness.Submit(context.Background(), srv.Client(), srv.URL, 0, nil, []byte(real.Checkpoint.Note))
	if err != nil || size != int64(len(real.Log.Entries)) {
		t.Fatalf("the witness refused the real checkpoint: %v (size %d)", err, size)
	}
	real.Checkpoint.Cosignatures = lines
	check(t, runCLI("", "evidence", "verify", "--public-key", keyFile, "--witness", vkey, file(real)), 0, `"witnesses": [
    "witness.example/w1"
  ]`, "")
	vkeyFile := writeTemp(t, "witness.vkey", []byte(vkey+"\n"))
	check(t, runCLI("", "evidence", "verify", "--public-key", keyFile, "--witness", vkeyFile, file(real)), 0, `"complete": true`, "")

	// The rewritten history: the other run's entry removed, a later run's
	// appended, so the firm's key signs the same size with another head.
	rewritten := historyBundle(t, k, origin, nil, []string{"9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"})
	if rewritten.Checkpoint.Note == real.Checkpoint.Note || len(rewritten.Log.Entries) != len(real.Log.Entries) {
		t.Fatal("the rewritten log is not another history of the same size")
	}
	_, _, err = witness.Submit(context.Background(), srv.Client(), srv.URL, size, nil, []byte(rewritten.Checkpoint.Note))
	var rf *witness.Refused
	if !errors.As(err, &rf) || rf.Status != http.StatusUnprocessableEntity {
		t.Fatalf("the witness did not refuse the rewritten history: %v", err)
	}
	check(t, runCLI("", "evidence", "verify", "--public-key", keyFile, file(rewritten)), 0, `"complete": true`, "")
	check(t, runCLI("", "evidence", "verify", "--public-key", keyFile, "--witness", vkey, file(rewritten)), 1, "",
		"witness: checkpoint 1: the checkpoint has no cosignature by witness witness.example/w1")
	rewritten.Checkpoint.Cosignatures = lines
	check(t, runCLI("", "evidence", "verify", "--public-key", keyFile, "--witness", vkey, file(rewritten)), 1, "",
		"witness witness.example/w1's cosignature does not verify")

	// Another witness's cosignature of the real checkpoint is not this
	// witness's; a checkpoint without a note has none; a bad vkey is a
	// usage error.
	_, vkey2, _ := witness.GenerateKey("witness.example/w2")
	check(t, runCLI("", "evidence", "verify", "--public-key", keyFile, "--witness", vkey, "--witness", vkey2, file(real)), 1, "",
		"no cosignature by witness witness.example/w2")
	noNote := real
	cp := *real.Checkpoint
	cp.Note, cp.Cosignatures = "", nil
	noNote.Checkpoint = &cp
	check(t, runCLI("", "evidence", "verify", "--public-key", keyFile, "--witness", vkey, file(noNote)), 1, "", "carries no signed note")
	check(t, runCLI("", "evidence", "verify", "--public-key", keyFile, "--witness", "nonsense", file(real)), 2, "", "--witness")
	if strings.Contains(vkey, "\n") {
		t.Fatal("a vkey with a newline")
	}
}
