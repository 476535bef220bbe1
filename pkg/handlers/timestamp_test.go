package handlers_test

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
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
	if rep := s.sweep(); rep.Checkpoints != 0 || rep.CheckpointErrors != 0 || rep.Timestamps != 0 || rep.AttestErrors != 1 {
		t.Fatalf("a second sweep with the TSA down: %+v, want the TSA asked again and failing", rep)
	}
	if due, err := s.store.DueLogs(t.Context(), 0); err != nil || len(due) != 1 || due[0] != fixFirm {
		t.Fatalf("the log awaiting its timestamp is not due: %v %v", due, err)
	}

	tsa.SetDown(false)
	if rep := s.sweep(); rep.Checkpoints != 0 || rep.CheckpointErrors != 0 || rep.Timestamps != 1 || rep.AttestErrors != 0 {
		t.Fatalf("the sweep after the TSA is up: %+v, want one timestamp", rep)
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

// TestTimestampRecipe runs docs/EVIDENCE.md's openssl recipe for a
// checkpoint's timestamp, exactly as written, and `warrant evidence verify
// --tsa-cert`, on real bundles: a timestamped bundle and firm log verify
// (under the TSA's CA and under its own certificate), and each is refused
// for a token missing, of another TSA, or over another checkpoint.
func TestTimestampRecipe(t *testing.T) {
	needTools(t)
	check := recipe(t, "check-timestamp.sh")
	s, tsa, _ := tsaStack(t)
	other, err := openssltsa.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	first := s.completedFiling(t)
	s.settle(first.runID)
	earlier := s.bundle(first.runID, nil).Checkpoint.Timestamp
	h := s.completedFiling(t)
	s.settle(h.runID)
	good, firmLog := s.bundle(h.runID, nil), s.firmLog()
	withToken := func(token string) evidence.Bundle {
		b, cp := good, *good.Checkpoint
		cp.Timestamp, b.Checkpoint = token, &cp
		return b
	}
	tok, err := (&timestamp.Client{URL: other.URL}).Stamp(t.Context(), []byte(good.Checkpoint.Body))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"key.pem": s.publicKeyPEM(t), "tsa-ca.pem": tsa.CACertPEM, "tsa.pem": tsa.CertPEM,
		"other-ca.pem": other.CACertPEM, "bundle.json": jsonOf(t, good), "log.json": jsonOf(t, firmLog),
		"first.json": jsonOf(t, s.bundle(first.runID, nil)), "missing.json": jsonOf(t, withToken("")), "moved.json": jsonOf(t, withToken(earlier)),
		"forged.json": jsonOf(t, withToken(base64.StdEncoding.EncodeToString(tok)))}
	bin := buildCLI(t)
	for _, tc := range []struct {
		bundle, cert string
		ok           bool
		why          string // of the CLI's refusal
	}{
		{"bundle.json", "tsa-ca.pem", true, ""},
		{"bundle.json", "tsa.pem", true, ""},
		{"log.json", "tsa-ca.pem", true, ""},
		{"bundle.json", "other-ca.pem", false, "not from the time-stamping authority"},
		{"forged.json", "tsa-ca.pem", false, "not from the time-stamping authority"},
		{"moved.json", "tsa-ca.pem", false, "over another document"},
		{"missing.json", "tsa-ca.pem", false, "carries no timestamp token"},
	} {
		out, ok := runRecipe(t, check, files, tc.bundle, tc.cert)
		if ok != tc.ok || (ok && !regexp.MustCompile(`verified: checkpoint 2 timestamped \w+ +\d+ [\d:]+ 20\d\d GMT`).MatchString(out)) ||
			(!ok && !strings.Contains(out, "refused: checkpoint timestamp")) {
			t.Errorf("recipe on %s under %s: %v, want %v\n%s", tc.bundle, tc.cert, ok, tc.ok, out)
		}
		args := []string{"--public-key", "key.pem", "--tsa-cert", tc.cert, tc.bundle}
		if tc.bundle == "log.json" {
			args = append(args, "first.json", "bundle.json") // every run the log records
		}
		out, ok = runCLI(t, bin, files, args...)
		switch {
		case ok != tc.ok:
			t.Errorf("warrant evidence verify %v: %v, want %v\n%s", args, ok, tc.ok, out)
		case ok && !timestamped(t, out, tc.bundle == "log.json"):
			t.Errorf("warrant evidence verify %v: no timestamp time shown\n%s", args, out)
		case !ok && (!strings.Contains(out, "checkpoint timestamp") || !strings.Contains(out, tc.why)):
			t.Errorf("warrant evidence verify %v: refused without naming %q\n%s", args, tc.why, out)
		}
	}
	// Without --tsa-cert a token is shown, not checked.
	out, ok := runCLI(t, bin, files, "--public-key", "key.pem", "bundle.json")
	var v cliOut
	if err := json.Unmarshal([]byte(out), &v); !ok || err != nil || len(v.Runs) != 1 || v.Runs[0].Timestamp == nil ||
		v.Runs[0].Timestamp.Verified || v.Runs[0].Timestamp.Note != "not checked: give --tsa-cert" {
		t.Errorf("without --tsa-cert: %v\n%s", ok, out)
	}
}

// cliOut is what `warrant evidence verify` prints of timestamps.
type cliOut struct {
	Runs []struct {
		Timestamp *struct {
			Verified   bool
			Time, Note string
		} `json:"checkpoint_timestamp"`
	} `json:"runs"`
	Logs []struct {
		Timestamp *struct {
			Verified bool
			Time     string
		} `json:"checkpoint_timestamp"`
	} `json:"firm_logs"`
}

// timestamped: every run (and firm log) the output shows has a verified
// timestamp with its time.
func timestamped(t *testing.T, out string, withLog bool) bool {
	t.Helper()
	var v cliOut
	if err := json.Unmarshal([]byte(out), &v); err != nil || len(v.Runs) == 0 || (withLog && len(v.Logs) != 1) {
		return false
	}
	for _, r := range v.Runs {
		if r.Timestamp == nil || !r.Timestamp.Verified || !strings.HasPrefix(r.Timestamp.Time, "20") {
			return false
		}
	}
	for _, l := range v.Logs {
		if l.Timestamp == nil || !l.Timestamp.Verified || !strings.HasPrefix(l.Timestamp.Time, "20") {
			return false
		}
	}
	return true
}
