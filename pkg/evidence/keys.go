package evidence

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Signer signs the SHA-256 digest of a document with an ECDSA P-256 key and
// returns the ASN.1 DER signature (what `openssl dgst -sha256 -verify`
// checks). KeyID names the key the way KeyIDOf does.
type Signer interface {
	KeyID() string
	SignDigest(ctx context.Context, digest []byte) ([]byte, error)
}

// KeyIDOf names a public key: "sha256:" and the hex SHA-256 of its DER
// SubjectPublicKeyInfo, which anyone can recompute with
// `openssl pkey -pubin -in key.pem -outform DER | sha256sum`.
func KeyIDOf(pub *ecdsa.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// P256 is a local ECDSA P-256 key, for the local stack and tests; a
// deployment signs with KMS (anchor.KMSSigner).
type P256 struct {
	priv *ecdsa.PrivateKey
	id   string
}

// GenerateP256 makes a new local key.
func GenerateP256() (*P256, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return newP256(k)
}

func newP256(k *ecdsa.PrivateKey) (*P256, error) {
	id, err := KeyIDOf(&k.PublicKey)
	if err != nil {
		return nil, err
	}
	return &P256{priv: k, id: id}, nil
}

// ParseP256 reads a local key spec, "p256:" and the hex of the key's
// PKCS#8 DER (what Spec writes). Errors never echo the spec.
func ParseP256(spec string) (*P256, error) {
	val, ok := strings.CutPrefix(strings.TrimSpace(spec), "p256:")
	if !ok {
		return nil, errors.New(`evidence: a local receipt key is "p256:<hex PKCS#8>"`)
	}
	der, err := hex.DecodeString(val)
	if err != nil {
		return nil, errors.New("evidence: a p256 key is hex")
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, errors.New("evidence: a p256 key is a PKCS#8 private key")
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, errors.New("evidence: a p256 key is an ECDSA P-256 key")
	}
	return newP256(ec)
}

// Spec is the key as ParseP256 reads it (it holds the private key).
func (k *P256) Spec() string {
	der, _ := x509.MarshalPKCS8PrivateKey(k.priv) // a P-256 key always marshals
	return "p256:" + hex.EncodeToString(der)
}

// KeyID names the key.
func (k *P256) KeyID() string { return k.id }

// Public is the verifying half.
func (k *P256) Public() *ecdsa.PublicKey { return &k.priv.PublicKey }

// SignDigest signs a SHA-256 digest.
func (k *P256) SignDigest(_ context.Context, digest []byte) ([]byte, error) {
	if len(digest) != sha256.Size {
		return nil, errors.New("evidence: sign a SHA-256 digest")
	}
	return ecdsa.SignASN1(rand.Reader, k.priv, digest)
}

// PublicKey is one key a verifier trusts.
type PublicKey struct {
	ID  string
	Key *ecdsa.PublicKey
}

// PEM renders the key as a PEM "PUBLIC KEY" block (SubjectPublicKeyInfo).
func (p PublicKey) PEM() string {
	der, _ := x509.MarshalPKIXPublicKey(p.Key) // a P-256 key always marshals
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// NewPublicKey names a P-256 public key.
func NewPublicKey(pub *ecdsa.PublicKey) (PublicKey, error) {
	if pub == nil || pub.Curve != elliptic.P256() {
		return PublicKey{}, errors.New("evidence: a receipt key is ECDSA P-256")
	}
	id, err := KeyIDOf(pub)
	return PublicKey{ID: id, Key: pub}, err
}

// ParsePublicKeyDER reads a DER SubjectPublicKeyInfo (what KMS GetPublicKey
// answers).
func ParsePublicKeyDER(der []byte) (PublicKey, error) {
	k, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return PublicKey{}, fmt.Errorf("evidence: not a public key: %w", err)
	}
	ec, ok := k.(*ecdsa.PublicKey)
	if !ok {
		return PublicKey{}, errors.New("evidence: a receipt key is ECDSA P-256")
	}
	return NewPublicKey(ec)
}

// KeySet is the public keys a verifier accepts, by id: the current key and,
// after a rotation, the earlier ones, so old receipts stay verifiable.
type KeySet map[string]PublicKey

// ParsePEM reads every "PUBLIC KEY" block of a PEM file; anything else in
// it is an error.
func ParsePEM(data []byte) (KeySet, error) {
	set := KeySet{}
	rest := data
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "PUBLIC KEY" {
			return nil, fmt.Errorf("evidence: a %q PEM block is not a public key", b.Type)
		}
		k, err := ParsePublicKeyDER(b.Bytes)
		if err != nil {
			return nil, err
		}
		set[k.ID] = k
	}
	if strings.TrimSpace(string(rest)) != "" {
		return nil, errors.New("evidence: the key file holds something other than PEM public keys")
	}
	if len(set) == 0 {
		return nil, errors.New("evidence: no public key in the key file")
	}
	return set, nil
}

// Add puts keys into the set.
func (s KeySet) Add(keys ...PublicKey) KeySet {
	for _, k := range keys {
		s[k.ID] = k
	}
	return s
}

// IDs lists the set's key ids, sorted.
func (s KeySet) IDs() []string {
	ids := make([]string, 0, len(s))
	for id := range s {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// verify checks a signature over body's SHA-256 by the key named id.
func (s KeySet) verify(id string, body, sig []byte) error {
	k, ok := s[id]
	if !ok {
		return fmt.Errorf("signed by key %s, which is not among the keys you trust", id)
	}
	sum := sha256.Sum256(body)
	if !ecdsa.VerifyASN1(k.Key, sum[:], sig) {
		return fmt.Errorf("the signature does not verify under key %s", id)
	}
	return nil
}
