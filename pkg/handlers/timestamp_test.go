package handlers_test

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/anchor"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/timestamp"
	"github.com/seed-f6d3920e/warrant/pkg/timestamp/openssltsa"
)

// tsaStack is a stack whose sweeper timestamps its checkpoints at a TSA on
// loopback (openssl ts -reply), configured as the template does
// (TIMESTAMP_AUTHORITY_URL, TIMESTAMP_AUTHORITY_CERTIFICATE: here the CA
// that issued the TSA's certificate). dir is the checkpoint directory.
func tsaStack(t *testing.T) (s *stack, tsa *openssltsa.TSA, dir string) {
	t.Helper()
	tsa, err := openssltsa.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tsa.Close() })
	dir = t.TempDir()
	s = newStack(t, stackOptions{env: map[string]string{"CHECKPOINT_DIR": dir,
		"TIMESTAMP_AUTHORITY_URL": tsa.URL, "TIMESTAMP_AUTHORITY_CERTIFICATE": string(tsa.CACertPEM)}})
	return s, tsa, dir
}

func tsaCerts(t *testing.T, pem []byte) []*x509.Certificate {
	t.Helper()
	c, err := timestamp.ParseCertificates(pem)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTimestampDownDelaysOnlyTheTimestamp (issue 30 item 3): with the TSA
// down, the sweep still signs the checkpoint and reports no error, and the
// bundle serves it without a token (refused by a verifier that names the
// TSA: missing); later sweeps, with the TSA still down, visit the log again
// although it did not grow, and the first one after the TSA is up stores
// the token: on the table's checkpoint (served in the bundle and the firm
// log), and outside the table beside the checkpoint. Then the log is
// settled: a sweep asks the TSA nothing more.
func TestTimestampDownDelaysOnlyTheTimestamp(t *testing.T) {
	s, tsa, dir := tsaStack(t)
	certs := tsaCerts(t, tsa.CACertPEM)
	tsa.SetDown(true)
	h := s.completedFiling(t)
	if rep := s.settle(h.runID); rep.Checkpoints != 1 || rep.CheckpointErrors != 0 || rep.Errors != 0 {
		t.Fatalf("sweep with the TSA down: %+v, want one checkpoint and no error", rep)
	}
	b := s.bundle(h.runID, nil)
	if b.Checkpoint == nil || b.Checkpoint.Timestamp != "" {
		t.Fatalf("the checkpoint: %+v, want one without a token", b.Checkpoint)
	}
	if rep, err := evidence.Verify(b, s.trusted()); err != nil || rep.Timestamp.Present {
		t.Fatalf("without a TSA certificate: %+v %v", rep.Timestamp, err)
	}
	var p *evidence.Problem
	if _, err := evidence.VerifyWith(b, s.trusted(), evidence.Options{TSACerts: certs}); !errors.As(err, &p) || p.Check != "checkpoint timestamp" ||
		!strings.Contains(err.Error(), "no timestamp token") {
		t.Fatalf("a missing token under --tsa-cert: %v", err)
	}
	if !strings.Contains(s.logs.String(), `"failed_component":"timestamp"`) {
		t.Errorf("the TSA's failure was not logged:\n%s", s.logs.String())
	}
	if rep := s.sweep(); rep.Checkpoints != 0 || rep.CheckpointErrors != 0 {
		t.Fatalf("a second sweep with the TSA down: %+v", rep)
	}
	if due, err := s.store.DueLogs(t.Context(), 0); err != nil || len(due) != 1 || due[0] != fixFirm {
		t.Fatalf("the log awaiting its timestamp is not due: %v %v", due, err)
	}

	tsa.SetDown(false)
	if rep := s.sweep(); rep.Checkpoints != 0 || rep.CheckpointErrors != 0 {
		t.Fatalf("the sweep after the TSA is up: %+v", rep)
	}
	b = s.bundle(h.runID, nil)
	rep, err := evidence.VerifyWith(b, s.trusted(), evidence.Options{TSACerts: certs})
	if err != nil || !rep.Timestamp.Checked || rep.Timestamp.At == "" {
		t.Fatalf("the timestamped bundle: %+v %v", rep.Timestamp, err)
	}
	if l := s.firmLog(); l.Checkpoint == nil || l.Checkpoint.Timestamp != b.Checkpoint.Timestamp {
		t.Fatalf("the firm log's checkpoint does not carry the token")
	}
	token, _ := base64.StdEncoding.DecodeString(b.Checkpoint.Timestamp)
	kept, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(anchor.TimestampKey(fixFirm, 1))))
	if err != nil || !bytes.Equal(kept, token) {
		t.Fatalf("the token kept outside the table: %v", err)
	}
	if due, err := s.store.DueLogs(t.Context(), 0); err != nil || len(due) != 0 {
		t.Fatalf("the timestamped log is still due: %v %v", due, err)
	}
}

// TestTimestampRefusals (issue 30 item 3): a verifier that names the firm's
// TSA refuses a checkpoint whose token is another TSA's (over the same
// body), or is over another checkpoint's body (the token of the previous
// checkpoint, moved).
func TestTimestampRefusals(t *testing.T) {
	s, tsa, _ := tsaStack(t)
	other, err := openssltsa.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	certs := tsaCerts(t, tsa.CACertPEM)
	first := s.completedFiling(t)
	s.settle(first.runID)
	b1 := s.bundle(first.runID, nil)
	second := s.completedFiling(t)
	s.settle(second.runID)
	b2 := s.bundle(second.runID, nil)
	if b1.Checkpoint.Timestamp == "" || b2.Checkpoint.Timestamp == "" || b1.Checkpoint.Body == b2.Checkpoint.Body {
		t.Fatal("want two checkpoints, each timestamped")
	}
	keys := s.trusted()
	if _, err := evidence.VerifyWith(b2, keys, evidence.Options{TSACerts: certs}); err != nil {
		t.Fatalf("the untampered bundle: %v", err)
	}
	// Another TSA's token over the same checkpoint.
	tok, err := (&timestamp.Client{URL: other.URL}).Stamp(t.Context(), []byte(b2.Checkpoint.Body))
	if err != nil {
		t.Fatal(err)
	}
	forged := b2
	cp := *b2.Checkpoint
	cp.Timestamp = base64.StdEncoding.EncodeToString(tok)
	forged.Checkpoint = &cp
	if _, err := evidence.VerifyWith(forged, keys, evidence.Options{TSACerts: certs}); err == nil ||
		!strings.Contains(err.Error(), "checkpoint timestamp") || !strings.Contains(err.Error(), "not from the time-stamping authority") {
		t.Errorf("another TSA's token: %v", err)
	}
	// The previous checkpoint's token (the firm's TSA's, over another body).
	moved := b2
	cp2 := *b2.Checkpoint
	cp2.Timestamp = b1.Checkpoint.Timestamp
	moved.Checkpoint = &cp2
	if _, err := evidence.VerifyWith(moved, keys, evidence.Options{TSACerts: certs}); err == nil ||
		!strings.Contains(err.Error(), "checkpoint timestamp") || !strings.Contains(err.Error(), "over another document") {
		t.Errorf("another checkpoint's token: %v", err)
	}
	// And the TSA named by its own certificate rather than its CA.
	if _, err := evidence.VerifyWith(b2, keys, evidence.Options{TSACerts: tsaCerts(t, tsa.CertPEM)}); err != nil {
		t.Errorf("under the TSA's own certificate: %v", err)
	}
}
