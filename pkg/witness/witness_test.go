package witness_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/seed-f6d3920e/warrant/pkg/contracts"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/witness"
)

const firm = "7c1f6a7e-3d5b-4b8e-9a51-2f1e0c6d9b11"

// firmLog is a firm's log as the firm's key signs it: its entry lines, and
// a checkpoint note at any size.
type firmLog struct {
	t      *testing.T
	key    *evidence.P256
	origin string
	lines  []string
}

func newFirmLog(t *testing.T, key *evidence.P256) *firmLog {
	t.Helper()
	return &firmLog{t: t, key: key, origin: evidence.Origin("", firm)}
}

// add appends one entry per run (each run's start receipt).
func (l *firmLog) add(runs ...string) *firmLog {
	for _, run := range runs {
		sum := sha256.Sum256([]byte("receipt of " + run))
		e := evidence.Entry{Index: int64(len(l.lines) + 1), At: contracts.FormatTime(time.Date(2026, 12, 7, 1, 0, len(l.lines), 0, time.UTC)),
			RunID: run, Seq: 1, Kind: evidence.KindStart, ReceiptSHA256: hex.EncodeToString(sum[:])}
		l.lines = append(l.lines, e.Line())
	}
	return l
}

func (l *firmLog) head(size int) string {
	h := evidence.Genesis
	for _, line := range l.lines[:size] {
		h = evidence.Link(h, line)
	}
	return h
}

// note is the firm key's signed note of the log at size.
func (l *firmLog) note(size int) []byte {
	l.t.Helper()
	n, err := evidence.SignCheckpointNote(context.Background(), l.key, l.origin, evidence.Checkpoint{Size: int64(size), Head: l.head(size)})
	if err != nil {
		l.t.Fatal(err)
	}
	return []byte(n)
}

func (l *firmLog) vkey() string {
	v, err := evidence.VerifierKey(l.origin, l.key.Public())
	if err != nil {
		l.t.Fatal(err)
	}
	return v
}

type fixture struct {
	w     *witness.Witness
	vkey  string
	store witness.Store
	log   *firmLog
	srv   *httptest.Server
}

func newFixture(t *testing.T, store witness.Store) *fixture {
	t.Helper()
	k, err := evidence.GenerateP256()
	if err != nil {
		t.Fatal(err)
	}
	log := newFirmLog(t, k)
	skey, vkey, err := witness.GenerateKey("witness.example/w1")
	if err != nil {
		t.Fatal(err)
	}
	if store == nil {
		if store, err = witness.NewDirStore(t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	w, err := witness.New(witness.Config{Logs: []witness.LogConfig{{VKey: log.vkey()}}}, skey, store)
	if err != nil {
		t.Fatal(err)
	}
	if w.VerifierKey() != vkey {
		t.Fatalf("the witness's vkey is %s, GenerateKey said %s", w.VerifierKey(), vkey)
	}
	srv := httptest.NewServer(w.Handler("", nil))
	t.Cleanup(srv.Close)
	return &fixture{w: w, vkey: vkey, store: store, log: log, srv: srv}
}

func (f *fixture) submit(t *testing.T, old int, entries []string, n []byte) ([]string, int64, error) {
	t.Helper()
	return witness.Submit(context.Background(), f.srv.Client(), f.srv.URL, int64(old), entries, n)
}

func mustCosign(t *testing.T, f *fixture, old int, entries []string, n []byte) []string {
	t.Helper()
	lines, _, err := f.submit(t, old, entries, n)
	if err != nil {
		t.Fatalf("add-checkpoint from %d: %v", old, err)
	}
	return lines
}

func refusal(t *testing.T, err error, status int) *witness.Refused {
	t.Helper()
	var rf *witness.Refused
	if !errors.As(err, &rf) || rf.Status != status {
		t.Fatalf("want a refusal with status %d, got %v", status, err)
	}
	return rf
}

// The witness cosigns a checkpoint that extends the last it cosigned, and
// the cosignature verifies with formats' cosignature/v1 verifier (through
// x/mod's note.Open, as the spec's client does: the answer concatenated to
// the note) and with pkg/evidence's VerifyCosignature.
func TestCosignsAnExtension(t *testing.T) {
	f := newFixture(t, nil)
	f.log.add("r1", "r2", "r3")
	first := mustCosign(t, f, 0, nil, f.log.note(3))
	f.log.add("r4", "r5")
	n5 := f.log.note(5)
	lines := mustCosign(t, f, 3, f.log.lines[3:5], n5)
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "— witness.example/w1 ") || lines[0] == first[0] {
		t.Fatalf("cosignature lines %q", lines)
	}
	v, err := fnote.NewVerifierForCosignatureV1(f.vkey)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := note.Open(append(append([]byte{}, n5...), lines[0]+"\n"...), note.VerifierList(v))
	if err != nil || len(opened.Sigs) != 1 || opened.Sigs[0].Name != "witness.example/w1" {
		t.Fatalf("formats' verifier: %v %+v", err, opened)
	}
	if ts, err := fnote.CoSigV1Timestamp(opened.Sigs[0]); err != nil || ts.IsZero() || ts.Unix() == 0 {
		t.Fatalf("the cosignature's timestamp %v %v", ts, err)
	}
	wk, err := evidence.ParseWitnessKey(f.vkey)
	if err != nil {
		t.Fatal(err)
	}
	if err := evidence.VerifyCosignature(string(n5), lines, wk); err != nil {
		t.Fatal(err)
	}
	// Over another note, it does not verify.
	if err := evidence.VerifyCosignature(string(f.log.note(4)), lines, wk); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("a cosignature over another checkpoint verified: %v", err)
	}
	// The same checkpoint again is cosigned again (same size, same root).
	mustCosign(t, f, 5, nil, n5)
	// The monitoring endpoint serves the last note with the cosignature.
	sum := sha256.Sum256([]byte(f.log.origin))
	resp, err := http.Get(f.srv.URL + "/" + hex.EncodeToString(sum[:]) + "/checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), string(n5)) || !strings.Contains(string(body), "— witness.example/w1 ") {
		t.Fatalf("GET checkpoint: %d %q", resp.StatusCode, body)
	}
}

// (a) A history re-signed by the firm's own key after a run's entries were
// removed: the witness holds the real log's checkpoint at size N and
// refuses the rewritten log's, at size N (same size, another root) and
// beyond (the proof does not chain from the head it holds).
func TestRefusesARewrittenHistory(t *testing.T) {
	f := newFixture(t, nil)
	f.log.add("r1", "removed", "r3", "r4")
	mustCosign(t, f, 0, nil, f.log.note(4))

	rewritten := newFirmLog(t, f.log.key).add("r1", "r3", "r4", "r5")
	rf := refusal(t, second(f.submit(t, 4, nil, rewritten.note(4))), http.StatusUnprocessableEntity)
	if !strings.Contains(rf.Reason, "fork") {
		t.Fatalf("reason %q", rf.Reason)
	}
	rewritten.add("r6", "r7")
	rf = refusal(t, second(f.submit(t, 4, rewritten.lines[4:6], rewritten.note(6))), http.StatusUnprocessableEntity)
	if !strings.Contains(rf.Reason, "does not chain") {
		t.Fatalf("reason %q", rf.Reason)
	}
	// Nor with the whole rewritten log as its proof from 0: the witness
	// holds size 4, so that is a 409 naming it.
	_, size, err := f.submit(t, 0, nil, rewritten.note(6))
	if refusal(t, err, http.StatusConflict); size != 4 {
		t.Fatalf("409 size %d", size)
	}
	// The real log's extension is still cosigned.
	f.log.add("r5")
	mustCosign(t, f, 4, f.log.lines[4:5], f.log.note(5))
}

// A proof whose entry says another index, or that is not an entry, or
// that has too few entries, is refused; so is a non-empty proof from 0.
func TestRefusesABadProof(t *testing.T) {
	f := newFixture(t, nil)
	f.log.add("r1", "r2")
	mustCosign(t, f, 0, nil, f.log.note(2))
	f.log.add("r3", "r4")
	for name, proof := range map[string][]string{
		"short":     f.log.lines[2:3],
		"swapped":   {f.log.lines[3], f.log.lines[2]},
		"not entry": {f.log.lines[2], "x"},
	} {
		if _, _, err := f.submit(t, 2, proof, f.log.note(4)); err == nil {
			t.Fatalf("%s: cosigned", name)
		} else {
			refusal(t, err, http.StatusUnprocessableEntity)
		}
	}
	// A log the firm's key signed whose entry 3 says it is entry 4: the
	// chain reaches the root, but it is not a firm log.
	mis := newFirmLog(t, f.log.key).add("r1", "r2", "r3")
	e, err := evidence.ParseEntry(mis.lines[2])
	if err != nil {
		t.Fatal(err)
	}
	e.Index = 4
	mis.lines[2] = e.Line()
	rf := refusal(t, second(f.submit(t, 2, mis.lines[2:3], mis.note(3))), http.StatusUnprocessableEntity)
	if !strings.Contains(rf.Reason, "says it is entry 4") {
		t.Fatalf("reason %q", rf.Reason)
	}
	g := newFixture(t, nil)
	g.log.add("r1")
	refusal(t, second(g.submit(t, 0, g.log.lines[:1], g.log.note(1))), http.StatusUnprocessableEntity)
}

// (b) An old size other than the witness's: 409, text/x.tlog.size, its size.
func TestConflictAnswersTheSize(t *testing.T) {
	f := newFixture(t, nil)
	f.log.add("r1", "r2", "r3")
	mustCosign(t, f, 0, nil, f.log.note(3))
	f.log.add("r4")
	_, size, err := f.submit(t, 2, f.log.lines[2:4], f.log.note(4))
	if refusal(t, err, http.StatusConflict); size != 3 {
		t.Fatalf("size %d", size)
	}
	resp, err := http.Post(f.srv.URL+"/add-checkpoint", "text/plain", strings.NewReader(string(witness.FormatRequest(1, f.log.lines[1:4], f.log.note(4)))))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 409 || resp.Header.Get("Content-Type") != "text/x.tlog.size" || string(body) != "3\n" {
		t.Fatalf("%d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	// The caller retries from the size the witness holds.
	mustCosign(t, f, int(size), f.log.lines[size:4], f.log.note(4))
	// An old size over the checkpoint's: 400.
	refusal(t, second(f.submit(t, 5, nil, f.log.note(4))), http.StatusBadRequest)
}

// (c) A log the witness does not witness: 404. (d) A note signed by
// another key than the log's, or whose signature does not verify: 403.
func TestRefusesUnknownOriginAndOtherKey(t *testing.T) {
	f := newFixture(t, nil)
	other := newFirmLog(t, f.log.key).add("r1")
	other.origin = evidence.Origin("", "another-firm")
	refusal(t, second(f.submit(t, 0, nil, other.note(1))), http.StatusNotFound)

	k2, err := evidence.GenerateP256()
	if err != nil {
		t.Fatal(err)
	}
	forged := newFirmLog(t, k2).add("r1")
	refusal(t, second(f.submit(t, 0, nil, forged.note(1))), http.StatusForbidden)

	f.log.add("r1")
	n := f.log.note(1)
	bad := strings.Replace(string(n), "\n1\n", "\n2\n", 1) // the text changed under the signature
	refusal(t, second(f.submit(t, 0, nil, []byte(bad))), http.StatusForbidden)
	// Nothing was recorded by the refusals.
	mustCosign(t, f, 0, nil, n)
}

// Malformed requests are 400s; a body over the bound is a 413; another
// method is a 405.
func TestMalformedRequests(t *testing.T) {
	f := newFixture(t, nil)
	f.log.add("r1")
	n := string(f.log.note(1))
	for _, body := range []string{
		"",
		"old 01\n\n" + n,
		"old -1\n\n" + n,
		"old 0\n" + n,
		"old 0\n!!!\n\n" + n,
		"old 0\n\n",
	} {
		resp, err := http.Post(f.srv.URL+"/add-checkpoint", "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Fatalf("%q: %d", body, resp.StatusCode)
		}
	}
	resp, err := http.Post(f.srv.URL+"/add-checkpoint", "text/plain", strings.NewReader("old 0\n"+strings.Repeat("QUFB\n", witness.MaxBodyBytes/5+1)+"\n"+n))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("an oversized body: %d", resp.StatusCode)
	}
	resp, err = http.Get(f.srv.URL + "/add-checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Fatalf("GET add-checkpoint: %d", resp.StatusCode)
	}
}

// Concurrent submissions from the same old size, each of a different
// extension: exactly one is cosigned, every other answered 409 with the
// winner's size, through the handler on the directory store.
func TestConcurrentSubmissions(t *testing.T) {
	f := newFixture(t, nil)
	f.log.add("r1")
	mustCosign(t, f, 0, nil, f.log.note(1))
	const n = 8
	logs := make([]*firmLog, n)
	for i := range logs {
		logs[i] = newFirmLog(t, f.log.key).add("r1", fmt.Sprintf("fork-%d", i))
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range logs {
		wg.Go(func() {
			_, _, errs[i] = witness.Submit(context.Background(), f.srv.Client(), f.srv.URL, 1, logs[i].lines[1:2], logs[i].note(2))
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		if rf := refusal(t, err, http.StatusConflict); rf.Size != 2 {
			t.Fatalf("a loser's 409 says size %d", rf.Size)
		}
	}
	if won != 1 {
		t.Fatalf("%d submissions won, want exactly 1", won)
	}
}

func second(_ []string, _ int64, err error) error { return err }

// Cosign, the caller's side: from a stale old size it retries once from
// the size the witness answers, and keeps only the witness's valid
// cosignature; a witness past the checkpoint's size, or a key that is not
// the witness's, is an error.
func TestCosign(t *testing.T) {
	f := newFixture(t, nil)
	w, err := evidence.ParseWitnessKey(f.vkey)
	if err != nil {
		t.Fatal(err)
	}
	entries := func(_ context.Context, from, to int64) ([]string, error) { return f.log.lines[from:to], nil }
	ctx := context.Background()
	f.log.add("r1", "r2", "r3")
	lines, held, err := witness.Cosign(ctx, f.srv.Client(), f.srv.URL, w, f.log.note(3), 3, 0, entries)
	if err != nil || held != 3 || len(lines) != 1 {
		t.Fatalf("from 0: %v %d %q", err, held, lines)
	}
	f.log.add("r4", "r5")
	n5 := f.log.note(5)
	lines, held, err = witness.Cosign(ctx, f.srv.Client(), f.srv.URL, w, n5, 5, 1, entries) // stale: the witness holds 3
	if err != nil || held != 5 || evidence.VerifyCosignature(string(n5), lines, w) != nil {
		t.Fatalf("from a stale size: %v %d %q", err, held, lines)
	}
	if _, held, err = witness.Cosign(ctx, f.srv.Client(), f.srv.URL, w, f.log.note(4), 4, 3, entries); err == nil || held != 5 {
		t.Fatalf("a checkpoint behind the witness: %v %d", err, held)
	}
	_, otherKey, _ := witness.GenerateKey("witness.example/w1")
	w2, _ := evidence.ParseWitnessKey(otherKey)
	if _, _, err = witness.Cosign(ctx, f.srv.Client(), f.srv.URL, w2, n5, 5, 5, entries); err == nil || !strings.Contains(err.Error(), "no valid cosignature") {
		t.Fatalf("another key: %v", err)
	}
}
