package timestamp_test

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/timestamp"
	"github.com/seed-f6d3920e/warrant/pkg/timestamp/openssltsa"
)

func startTSA(t *testing.T) *openssltsa.TSA {
	t.Helper()
	tsa, err := openssltsa.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tsa.Close() })
	return tsa
}

func parse(t *testing.T, pemBytes []byte) []*x509.Certificate {
	t.Helper()
	c, err := timestamp.ParseCertificates(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestStampVerify: a token from the TSA on loopback (openssl ts -reply)
// verifies under its CA and under its own certificate, with the time it
// was made; Verify refuses a token of another TSA and a token over another
// document, and openssl ts -verify agrees on all three.
func TestStampVerify(t *testing.T) {
	tsa, other := startTSA(t), startTSA(t)
	doc, otherDoc := []byte(`{"number":1}`), []byte(`{"number":2}`)
	before := time.Now().Add(-2 * time.Second)
	c := &timestamp.Client{URL: tsa.URL, Certs: parse(t, tsa.CACertPEM)}
	token, err := c.Stamp(t.Context(), doc)
	if err != nil {
		t.Fatal(err)
	}
	for name, pemBytes := range map[string][]byte{"CA": tsa.CACertPEM, "TSA": tsa.CertPEM} {
		at, err := timestamp.Verify(token, doc, parse(t, pemBytes))
		if err != nil || at.Before(before) || at.After(time.Now().Add(2*time.Second)) {
			t.Errorf("under the %s certificate: %v, %v", name, at, err)
		}
	}
	if _, err := timestamp.Verify(token, doc, parse(t, other.CACertPEM)); !errors.Is(err, timestamp.ErrOtherAuthority) {
		t.Errorf("under another TSA's CA: %v, want ErrOtherAuthority", err)
	}
	if _, err := timestamp.Verify(token, doc, parse(t, other.CertPEM)); !errors.Is(err, timestamp.ErrOtherAuthority) {
		t.Errorf("under another TSA's certificate: %v, want ErrOtherAuthority", err)
	}
	if _, err := timestamp.Verify(token, otherDoc, parse(t, tsa.CACertPEM)); !errors.Is(err, timestamp.ErrOtherDocument) {
		t.Errorf("over another document: %v, want ErrOtherDocument", err)
	}
	if _, err := timestamp.Verify(token[:len(token)-3], doc, parse(t, tsa.CACertPEM)); !errors.Is(err, timestamp.ErrMalformed) {
		t.Errorf("a truncated token: %v, want ErrMalformed", err)
	}
	// The certificate as one line of base64 DER (a template parameter).
	der, _ := pem.Decode(tsa.CACertPEM)
	if _, err := timestamp.Verify(token, doc, parse(t, []byte(base64.StdEncoding.EncodeToString(der.Bytes)))); err != nil {
		t.Errorf("under the CA given as base64 DER: %v", err)
	}
	if _, err := timestamp.ParseCertificates([]byte("not a certificate")); err == nil {
		t.Error("garbage parsed as a certificate")
	}
	// The client holds the TSA to its configured certificate too.
	if _, err := (&timestamp.Client{URL: other.URL, Certs: parse(t, tsa.CACertPEM)}).Stamp(t.Context(), doc); !errors.Is(err, timestamp.ErrOtherAuthority) {
		t.Errorf("stamping at another TSA than configured: %v", err)
	}

	dir := t.TempDir()
	docFile, otherFile, tokenFile := filepath.Join(dir, "doc"), filepath.Join(dir, "other"), filepath.Join(dir, "token")
	for f, b := range map[string][]byte{docFile: doc, otherFile: otherDoc, tokenFile: token} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	osslVerify := func(data, ca string) error {
		out, err := exec.Command("openssl", "ts", "-verify", "-data", data, "-in", tokenFile, "-token_in", "-CAfile", ca).CombinedOutput()
		if err != nil {
			return errors.New(string(out))
		}
		return nil
	}
	if err := osslVerify(docFile, tsa.CAFile); err != nil {
		t.Errorf("openssl ts -verify: %v", err)
	}
	if osslVerify(otherFile, tsa.CAFile) == nil || osslVerify(docFile, other.CAFile) == nil {
		t.Error("openssl ts -verify accepted another document or another TSA")
	}
}

// TestStampRefusals: a TSA that is down, or that answers a token it made
// for another request (a replay: another imprint and nonce), gets no token
// stored.
func TestStampRefusals(t *testing.T) {
	tsa := startTSA(t)
	c := &timestamp.Client{URL: tsa.URL}
	tsa.SetDown(true)
	if _, err := c.Stamp(t.Context(), []byte("doc")); err == nil {
		t.Error("a TSA that is down answered a token")
	}
	tsa.SetDown(false)

	// A replaying TSA: it answers every request with the reply it got
	// for its first.
	var first []byte
	replay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if first == nil {
			rec := httptest.NewRecorder()
			tsa.ServeHTTP(rec, r)
			first = rec.Body.Bytes()
		}
		w.Write(first)
	}))
	defer replay.Close()
	rc := &timestamp.Client{URL: replay.URL}
	if _, err := rc.Stamp(t.Context(), []byte("doc")); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Stamp(t.Context(), []byte("doc")); err == nil {
		t.Error("a replayed token (the nonce of another request) was taken")
	}
	if _, err := rc.Stamp(t.Context(), []byte("another doc")); err == nil {
		t.Error("a token over another imprint was taken")
	}
}
