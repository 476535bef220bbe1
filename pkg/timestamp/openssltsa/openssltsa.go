// Package openssltsa is a real time-stamping authority on loopback:
// `openssl ts -reply` answers each RFC 3161 request, under a CA and a TSA
// certificate made for it. The tests and the local stack use it where a
// deployment names a public TSA.
package openssltsa

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// TSA is a running authority. Its zero value is not usable: Start one.
type TSA struct {
	// URL is where it takes requests (POST, application/timestamp-query).
	URL string
	// CACertPEM is the CA its certificate chains to; CertPEM its own
	// certificate (what a firm configures as its TSA's certificate: either).
	CACertPEM, CertPEM []byte
	// CAFile and CertFile hold them (PEM), for `openssl ts -verify`.
	CAFile, CertFile string

	dir  string
	srv  *http.Server
	down atomic.Bool
	mu   sync.Mutex // openssl ts -reply updates the serial file
	n    int
}

// Start makes a CA and a TSA certificate in dir (which it keeps its files
// in), and serves on 127.0.0.1.
func Start(dir string) (*TSA, error) {
	if _, err := exec.LookPath("openssl"); err != nil {
		return nil, fmt.Errorf("openssltsa: %w", err)
	}
	t := &TSA{dir: dir, CAFile: filepath.Join(dir, "tsa-ca.pem"), CertFile: filepath.Join(dir, "tsa.pem")}
	if err := t.makeCerts(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t.URL = "http://" + ln.Addr().String() + "/"
	t.srv = &http.Server{Handler: t, ReadHeaderTimeout: 5 * time.Second}
	go t.srv.Serve(ln) //nolint:errcheck // ends with Close
	return t, nil
}

// SetDown makes the authority answer 503 to every request (true) until it is
// set up again: a TSA that is down.
func (t *TSA) SetDown(down bool) { t.down.Store(down) }

// Close stops serving.
func (t *TSA) Close() error { return t.srv.Close() }

// ServeHTTP answers a request with `openssl ts -reply`.
func (t *TSA) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if t.down.Load() {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/timestamp-query" {
		http.Error(w, "POST an application/timestamp-query", http.StatusBadRequest)
		return
	}
	q, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	out, err := t.reply(r.Context(), q)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/timestamp-reply")
	w.Write(out) //nolint:errcheck // the client sees a short answer
}

func (t *TSA) reply(ctx context.Context, query []byte) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n++
	qf, rf := filepath.Join(t.dir, fmt.Sprintf("q%d.tsq", t.n)), filepath.Join(t.dir, fmt.Sprintf("r%d.tsr", t.n))
	if err := os.WriteFile(qf, query, 0o600); err != nil {
		return nil, err
	}
	defer os.Remove(qf)
	defer os.Remove(rf)
	cmd := exec.CommandContext(ctx, "openssl", "ts", "-reply", "-config", filepath.Join(t.dir, "tsa.cnf"), "-queryfile", qf, "-out", rf)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("openssl ts -reply: %v: %s", err, stderr.Bytes())
	}
	return os.ReadFile(rf)
}

// timeStamping is id-kp-timeStamping; RFC 3161 section 2.3 (and openssl)
// want it as the certificate's only extended key usage, critical, which
// crypto/x509 does not mark on its own.
var timeStamping = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 3, 8}

func (t *TSA) makeCerts() error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now().Add(-time.Hour)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Warrant test TSA CA"},
		NotBefore: now, NotAfter: now.AddDate(1, 0, 0), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, caKey.Public(), caKey)
	if err != nil {
		return err
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	eku, err := asn1.Marshal([]asn1.ObjectIdentifier{timeStamping})
	if err != nil {
		return err
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "Warrant test TSA"},
		NotBefore: now, NotAfter: now.AddDate(1, 0, 0), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtraExtensions: []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 37}, Critical: true, Value: eku}}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, key.Public(), caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	t.CACertPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	t.CertPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER})
	cnf := fmt.Sprintf(`[ tsa ]
default_tsa = tsa_config
[ tsa_config ]
dir = %s
serial = $dir/tsa-serial
crypto_device = builtin
signer_cert = $dir/tsa.pem
certs = $dir/tsa-ca.pem
signer_key = $dir/tsa-key.pem
signer_digest = sha256
default_policy = 1.3.6.1.4.1.4146.2.3
other_policies = 1.3.6.1.4.1.4146.2.2
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = no
tsa_name = no
ess_cert_id_chain = no
ess_cert_id_alg = sha256
`, t.dir)
	files := []struct {
		name string
		data []byte
	}{
		{"tsa-ca.pem", t.CACertPEM}, {"tsa.pem", t.CertPEM},
		{"tsa-key.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})},
		{"tsa-serial", []byte("01\n")}, {"tsa.cnf", []byte(cnf)},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(t.dir, f.name), f.data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
