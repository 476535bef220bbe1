package handlers_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
	"github.com/seed-f6d3920e/warrant/pkg/witness"
)

// witnessStack is a stack whose sweeper submits each latest checkpoint to
// a witness on loopback (pkg/witness with a directory store), configured as
// the template does (WITNESSES). The witness answers 503 while down.
type witnessStack struct {
	*stack
	w    *witness.Witness
	key  evidence.WitnessKey
	down atomic.Bool
	firm *evidence.P256 // the firm's receipt key (the insider's, below)
}

func newWitnessStack(t *testing.T) *witnessStack {
	t.Helper()
	ws := &witnessStack{}
	skey, vkey, err := witness.GenerateKey("witness.example/w1")
	if err != nil {
		t.Fatal(err)
	}
	if ws.key, err = evidence.ParseWitnessKey(vkey); err != nil {
		t.Fatal(err)
	}
	if ws.firm, err = evidence.ParseP256(testReceiptKey); err != nil {
		t.Fatal(err)
	}
	logKey, err := evidence.VerifierKey(evidence.Origin("", fixFirm), ws.firm.Public())
	if err != nil {
		t.Fatal(err)
	}
	store, err := witness.NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if ws.w, err = witness.New(witness.Config{Logs: []witness.LogConfig{{VKey: logKey}}}, skey, store); err != nil {
		t.Fatal(err)
	}
	h := ws.w.Handler("", nil)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if ws.down.Load() {
			http.Error(rw, "down", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	cfg, _ := json.Marshal([]map[string]string{{"url": srv.URL, "vkey": vkey}})
	ws.stack = newStack(t, stackOptions{env: map[string]string{"WITNESSES": string(cfg)}})
	return ws
}

// Issue 30 item 4: the sweeper submits each firm's latest checkpoint to the
// configured witness and keeps its cosignature on the checkpoint, served in
// the bundle; a verifier requiring the witness accepts it. A witness that
// is down delays only the cosignature (the log stays due, and the next
// sweep after it is up cosigns); a later checkpoint is submitted with the
// entries since the last one the witness cosigned.
func TestWitnessCosignsEachCheckpoint(t *testing.T) {
	ws := newWitnessStack(t)
	s := ws.stack
	req := evidence.Options{Witnesses: []evidence.WitnessKey{ws.key}}

	ws.down.Store(true)
	first := s.completedFiling(t)
	if rep := s.settle(first.runID); rep.Checkpoints != 1 || rep.CheckpointErrors != 0 || rep.Errors != 0 {
		t.Fatalf("a sweep with the witness down: %+v, want one checkpoint and no error", rep)
	}
	b := s.bundle(first.runID, nil)
	if len(b.Checkpoint.Cosignatures) != 0 {
		t.Fatalf("cosigned by a witness that is down: %v", b.Checkpoint.Cosignatures)
	}
	var p *evidence.Problem
	if _, err := evidence.VerifyWith(b, s.trusted(), req); !errors.As(err, &p) || p.Check != "witness" {
		t.Fatalf("a checkpoint without the witness's cosignature, verified requiring it: %v", err)
	}
	if !strings.Contains(s.logs.String(), `"failed_component":"witness"`) {
		t.Errorf("the witness's failure was not logged:\n%s", s.logs.String())
	}
	if rep := s.sweep(); rep.Checkpoints != 0 || rep.CheckpointErrors != 0 || rep.Cosignatures != 0 || rep.AttestErrors != 1 {
		t.Fatalf("a second sweep with the witness down: %+v, want the witness asked again and failing", rep)
	}
	ws.down.Store(false)
	if rep := s.sweep(); rep.Cosignatures != 1 || rep.AttestErrors != 0 {
		t.Fatalf("the sweep after the witness came up: %+v, want one cosignature", rep)
	}
	if rep := s.sweep(); rep.Cosignatures != 0 || rep.AttestErrors != 0 {
		t.Fatalf("a sweep after the cosignature: %+v, want the log settled (nothing asked)", rep)
	}
	b = s.bundle(first.runID, nil)
	rep, err := evidence.VerifyWith(b, s.trusted(), req)
	if err != nil || len(b.Checkpoint.Cosignatures) != 1 {
		t.Fatalf("once the witness is up: %v %v", err, b.Checkpoint.Cosignatures)
	}

	// The next checkpoint goes with the entries since the first.
	second := s.completedFiling(t)
	s.settle(second.runID)
	b2 := s.bundle(second.runID, nil)
	rep2, err := evidence.VerifyWith(b2, s.trusted(), req)
	if err != nil || rep2.Checkpoint != rep.Checkpoint+1 {
		t.Fatalf("the second checkpoint: %+v %v", rep2, err)
	}
	// The witness holds it.
	sum := sha256.Sum256([]byte(evidence.Origin("", fixFirm)))
	note, ok, err := ws.w.Checkpoint(context.Background(), hex.EncodeToString(sum[:]))
	if err != nil || !ok || !strings.HasPrefix(note, strings.SplitN(b2.Checkpoint.Note, "\n\n", 2)[0]) {
		t.Fatalf("the witness holds %q (%v %v), want checkpoint %d", note, ok, err, rep2.Checkpoint)
	}
}

// Issue 30 items 4 and 5: an insider who holds the firm's key signs a
// second history and shows it to the witness first (the real log's entries,
// then entries of its own). The real log's next checkpoint does not extend
// what the witness holds: the witness refuses it, the sweeper logs the
// refusal as the firm log diverging (the alarm), and the checkpoint carries
// no cosignature, so a verifier requiring the witness refuses its bundle.
func TestWitnessRefusesASecondHistory(t *testing.T) {
	ws := newWitnessStack(t)
	s := ws.stack
	req := evidence.Options{Witnesses: []evidence.WitnessKey{ws.key}}
	first := s.completedFiling(t)
	s.settle(first.runID)
	b := s.bundle(first.runID, nil)
	if _, err := evidence.VerifyWith(b, s.trusted(), req); err != nil {
		t.Fatal(err)
	}

	// The insider's history: the real entries, then three of its own,
	// signed with the firm's key and cosigned by the witness.
	lines := append([]string(nil), b.Log.Entries...)
	if b.Log.From != 1 {
		t.Fatalf("the first run's log starts at %d", b.Log.From)
	}
	head := evidence.Genesis
	for _, l := range lines {
		head = evidence.Link(head, l)
	}
	size := int64(len(lines))
	var fake []string
	for i := range 3 {
		sum := sha256.Sum256([]byte{byte(i)})
		e := evidence.Entry{Index: size + int64(i) + 1, At: contracts.FormatTime(time.Now().UTC()), RunID: "0b7e1d2c-3a4f-4b5c-8d6e-7f8091a2b3c4",
			Seq: int64(i) + 1, Kind: evidence.KindEffect, ReceiptSHA256: hex.EncodeToString(sum[:])}
		fake = append(fake, e.Line())
		head = evidence.Link(head, e.Line())
	}
	note, err := evidence.SignCheckpointNote(context.Background(), ws.firm, evidence.Origin("", fixFirm),
		evidence.Checkpoint{FirmID: fixFirm, Number: 99, Size: size + 3, Head: head})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ws.w.AddCheckpoint(context.Background(), size, fake, []byte(note)); err != nil {
		t.Fatalf("the witness did not take the insider's extension: %v", err)
	}

	second := s.completedFiling(t)
	s.settle(second.runID)
	b2 := s.bundle(second.runID, nil)
	if len(b2.Checkpoint.Cosignatures) != 0 {
		t.Fatalf("the witness cosigned a log that does not extend what it holds: %v", b2.Checkpoint.Cosignatures)
	}
	var p *evidence.Problem
	if _, err := evidence.VerifyWith(b2, s.trusted(), req); !errors.As(err, &p) || p.Check != "witness" {
		t.Fatalf("the real log's next checkpoint, verified requiring the witness: %v", err)
	}
	logs := s.logs.String()
	if !strings.Contains(logs, `"failed_component":"witness"`) || !strings.Contains(logs, `"failure_kind":"firm_log_diverged"`) {
		t.Errorf("the witness's refusal was not logged as the log diverging:\n%s", logs)
	}
}

// A witness that was down while the log grew past what one submission
// carries (handlers.WitnessProofEntries, lowered here from its ~5 MiB
// bound) catches up through the checkpoints between: the sweeper submits
// the last one within reach of the witness's size first, then the latest,
// and both are cosigned in one sweep.
func TestWitnessCatchesUpThroughCheckpointsBetween(t *testing.T) {
	ws := newWitnessStack(t)
	s := ws.stack
	req := evidence.Options{Witnesses: []evidence.WitnessKey{ws.key}}
	first := s.completedFiling(t)
	s.settle(first.runID)
	b1 := s.bundle(first.runID, nil)
	if _, err := evidence.VerifyWith(b1, s.trusted(), req); err != nil {
		t.Fatal(err)
	}
	perRun := int64(len(b1.Log.Entries)) // the entries one filing run appends

	ws.down.Store(true)
	second := s.completedFiling(t)
	s.settle(second.runID)
	third := s.completedFiling(t)
	s.settle(third.runID)

	defer func(n int64) { handlers.WitnessProofEntries = n }(handlers.WitnessProofEntries)
	handlers.WitnessProofEntries = perRun + 1 // the witness is two runs behind: out of one submission's reach
	ws.down.Store(false)
	s.sweep()
	b3 := s.bundle(third.runID, nil)
	if _, err := evidence.VerifyWith(b3, s.trusted(), req); err != nil {
		t.Fatalf("the latest checkpoint, after the witness came back two runs behind: %v\n%s", err, s.logs.String())
	}
	b2 := s.bundle(second.runID, map[string]string{"checkpoint": "2"})
	if _, err := evidence.VerifyWith(b2, s.trusted(), req); err != nil {
		t.Fatalf("the checkpoint between, submitted first: %v", err)
	}
}
