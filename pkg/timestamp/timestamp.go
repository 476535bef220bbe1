package timestamp

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"slices"
	"time"

	"github.com/digitorus/pkcs7"
	"github.com/digitorus/timestamp"
)

// Verify's refusals, matched with errors.Is.
var (
	// ErrMalformed: the token is not a CMS SignedData holding a TSTInfo,
	// or its signature does not verify against the certificate it names.
	ErrMalformed = errors.New("timestamp: the token is not a well-formed signed RFC 3161 token")
	// ErrOtherAuthority: the token's signer is not the configured TSA (it
	// neither is the configured certificate nor chains to it), or is not
	// a time-stamping certificate.
	ErrOtherAuthority = errors.New("timestamp: the token is not signed by the configured time-stamping authority")
	// ErrOtherDocument: the token's message imprint is not the SHA-256 of
	// the document.
	ErrOtherDocument = errors.New("timestamp: the token is over another document")
)

// maxResponse bounds a TSA's answer (a token with its certificates is a few
// kilobytes).
const maxResponse = 1 << 20

// Client obtains tokens from a TSA.
type Client struct {
	// URL is the TSA's HTTP endpoint.
	URL string
	// Certs are the TSA's certificate or the CA it chains to: a token is
	// verified against them before Stamp answers it (none: not verified).
	Certs []*x509.Certificate
	// HTTPClient sends the requests (nil: one with a 10 s timeout).
	HTTPClient *http.Client
}

// Stamp asks the TSA for a token over the SHA-256 of doc, with a fresh
// nonce and the signer's certificate requested, and answers the token (DER)
// once the TSA granted it, its imprint and nonce are the request's and, with
// Certs, it verifies.
func (c *Client) Stamp(ctx context.Context, doc []byte) ([]byte, error) {
	nonce, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		return nil, err
	}
	req, err := timestamp.CreateRequest(bytes.NewReader(doc), &timestamp.RequestOptions{Hash: crypto.SHA256, Certificates: true, Nonce: nonce})
	if err != nil {
		return nil, fmt.Errorf("timestamp: request: %w", err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(req))
	if err != nil {
		return nil, fmt.Errorf("timestamp: request: %w", err)
	}
	hr.Header.Set("Content-Type", "application/timestamp-query")
	hc := c.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := hc.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("timestamp: the TSA is unreachable: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("timestamp: the TSA answered HTTP %d", resp.StatusCode)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, fmt.Errorf("timestamp: reading the TSA's answer: %w", err)
	}
	if len(raw) > maxResponse {
		return nil, errors.New("timestamp: the TSA's answer is too large")
	}
	// ParseResponse refuses any status but granted (0), and checks the
	// signature against the certificate the token carries.
	ts, err := timestamp.ParseResponse(raw)
	if err != nil {
		return nil, fmt.Errorf("timestamp: the TSA refused or answered garbage: %w", err)
	}
	sum := sha256.Sum256(doc)
	if ts.HashAlgorithm != crypto.SHA256 || !bytes.Equal(ts.HashedMessage, sum[:]) {
		return nil, errors.New("timestamp: the TSA's token is over another imprint than requested")
	}
	if ts.Nonce == nil || ts.Nonce.Cmp(nonce) != 0 {
		return nil, errors.New("timestamp: the TSA's token does not carry the request's nonce")
	}
	if len(c.Certs) > 0 {
		if _, err := Verify(ts.RawToken, doc, c.Certs); err != nil {
			return nil, err
		}
	}
	return ts.RawToken, nil
}

// Verify checks token (a DER TimeStampToken) as a timestamp of doc by the
// TSA certs name (its own certificate, or the CA its certificate chains to)
// and answers the time it states:
//   - the CMS signature verifies under the signer's certificate, which is one
//     of certs or chains to one of them, was valid at that time, and lists
//     the timeStamping extended key usage (a certificate listing none would
//     pass Go's chain check as any-purpose);
//   - the message imprint is the SHA-256 of doc.
//
// A token without certificates is checked against certs themselves.
func Verify(token, doc []byte, certs []*x509.Certificate) (time.Time, error) {
	if len(certs) == 0 {
		return time.Time{}, fmt.Errorf("%w: no TSA certificate configured", ErrOtherAuthority)
	}
	// Parse checks the signature against a certificate the token carries
	// (not whether it is trusted) and decodes the TSTInfo.
	ts, err := timestamp.Parse(token)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	p7, err := pkcs7.Parse(token)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	p7.Certificates = append(p7.Certificates, certs...)
	signer := p7.GetOnlySigner()
	if signer == nil {
		return time.Time{}, fmt.Errorf("%w: the token names no signer among its certificates and the configured ones", ErrOtherAuthority)
	}
	if !slices.Contains(signer.ExtKeyUsage, x509.ExtKeyUsageTimeStamping) {
		return time.Time{}, fmt.Errorf("%w: the signer's certificate is not for time-stamping", ErrOtherAuthority)
	}
	roots := x509.NewCertPool()
	for _, c := range certs {
		roots.AddCert(c)
	}
	inter := x509.NewCertPool()
	for _, c := range p7.Certificates {
		inter.AddCert(c)
	}
	// The chain is judged at the time the token states: a TSA certificate
	// that expired since still vouches for the tokens it made while valid.
	err = p7.VerifyWithOpts(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: ts.Time,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageTimeStamping}})
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %v", ErrOtherAuthority, err)
	}
	sum := sha256.Sum256(doc)
	if ts.HashAlgorithm != crypto.SHA256 || !bytes.Equal(ts.HashedMessage, sum[:]) {
		return time.Time{}, ErrOtherDocument
	}
	return ts.Time.UTC(), nil
}

// ParseCertificates reads the certificates of a TSA (its own, or the CA it
// chains to), PEM, or one certificate as the standard base64 of its DER (a
// one-line form that passes as a template parameter); at least one.
func ParseCertificates(pemBytes []byte) ([]*x509.Certificate, error) {
	if !bytes.Contains(pemBytes, []byte("-----BEGIN")) {
		der, err := base64.StdEncoding.DecodeString(string(bytes.Join(bytes.Fields(pemBytes), nil)))
		if err != nil {
			return nil, errors.New("timestamp: neither PEM nor the base64 of a DER certificate")
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("timestamp: %w", err)
		}
		return []*x509.Certificate{c}, nil
	}
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, pemBytes = pem.Decode(pemBytes)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("timestamp: a PEM block of type %q, want CERTIFICATE", b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("timestamp: %w", err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("timestamp: no PEM certificate")
	}
	return out, nil
}
