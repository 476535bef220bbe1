package anchor

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// ErrBadMAC means a head does not verify under the key it names: the ledger
// was rewritten, or the head was signed by another key.
var ErrBadMAC = failure.New(failure.KindLedgerCorrupt, "the run's ledger head does not verify")

// ErrUnknownKey means a head names a key this verifier does not hold.
var ErrUnknownKey = failure.New(failure.KindLedgerCorrupt, "the run's ledger head is signed by an unknown key")

// Message is what a head's MAC covers: a fixed context string, the firm, the
// run, the seq and the hash of the line at that seq, one per line, so no
// field can run into another.
func Message(firm, run string, seq int64, hash string) []byte {
	return []byte("warrant/ledger-head/v1\n" + firm + "\n" + run + "\n" + strconv.FormatInt(seq, 10) + "\n" + hash)
}

// Key signs and verifies heads with one key.
type Key interface {
	// ID names the key in each head it signs, so a verifier knows which key
	// to ask and keys can rotate.
	ID() string
	// Sign returns the hex MAC of msg.
	Sign(ctx context.Context, msg []byte) (string, error)
	// Verify checks a hex MAC of msg: nil, ErrBadMAC, or an error reaching
	// the key.
	Verify(ctx context.Context, msg []byte, mac string) error
}

// HMAC is a local HMAC-SHA-256 key, for the local stack and tests. Its id is
// "hmac:" and the first 16 hex digits of the SHA-256 of the key, which names
// the key without revealing it.
type HMAC struct{ key []byte }

// NewHMAC returns a local key; it must be at least 32 bytes.
func NewHMAC(key []byte) (*HMAC, error) {
	if len(key) < 32 {
		return nil, errors.New("anchor: an HMAC key needs at least 32 bytes")
	}
	return &HMAC{key: append([]byte(nil), key...)}, nil
}

// ID names the key.
func (k *HMAC) ID() string {
	sum := sha256.Sum256(k.key)
	return "hmac:" + hex.EncodeToString(sum[:8])
}

// Sign returns the hex HMAC-SHA-256 of msg.
func (k *HMAC) Sign(_ context.Context, msg []byte) (string, error) {
	m := hmac.New(sha256.New, k.key)
	m.Write(msg)
	return hex.EncodeToString(m.Sum(nil)), nil
}

// Verify checks mac in constant time.
func (k *HMAC) Verify(ctx context.Context, msg []byte, mac string) error {
	want, _ := k.Sign(ctx, msg)
	got, err := hex.DecodeString(mac)
	w, _ := hex.DecodeString(want)
	if err != nil || !hmac.Equal(got, w) {
		return ErrBadMAC
	}
	return nil
}

// KMSClient is the part of the KMS client a KMS key uses.
type KMSClient interface {
	GenerateMac(ctx context.Context, in *kms.GenerateMacInput, optFns ...func(*kms.Options)) (*kms.GenerateMacOutput, error)
	VerifyMac(ctx context.Context, in *kms.VerifyMacInput, optFns ...func(*kms.Options)) (*kms.VerifyMacOutput, error)
}

// KMS is an HMAC_256 key in AWS KMS; the key material never leaves KMS.
type KMS struct {
	client KMSClient
	keyID  string
}

// NewKMS returns a KMS key: keyID is a key ARN, key id or alias.
func NewKMS(client KMSClient, keyID string) *KMS { return &KMS{client: client, keyID: keyID} }

// ID names the key: "kms:" and the key id as configured.
func (k *KMS) ID() string { return "kms:" + k.keyID }

// Sign asks KMS for the HMAC-SHA-256 of msg.
func (k *KMS) Sign(ctx context.Context, msg []byte) (string, error) {
	out, err := k.client.GenerateMac(ctx, &kms.GenerateMacInput{KeyId: aws.String(k.keyID), Message: msg,
		MacAlgorithm: types.MacAlgorithmSpecHmacSha256})
	if err != nil {
		return "", classify(err)
	}
	return hex.EncodeToString(out.Mac), nil
}

// Verify asks KMS whether mac is msg's HMAC under the key.
func (k *KMS) Verify(ctx context.Context, msg []byte, mac string) error {
	raw, err := hex.DecodeString(mac)
	if err != nil || len(raw) == 0 {
		return ErrBadMAC
	}
	out, err := k.client.VerifyMac(ctx, &kms.VerifyMacInput{KeyId: aws.String(k.keyID), Message: msg, Mac: raw,
		MacAlgorithm: types.MacAlgorithmSpecHmacSha256})
	var invalid *types.KMSInvalidMacException
	switch {
	case errors.As(err, &invalid):
		return ErrBadMAC
	case err != nil:
		return classify(err)
	case !out.MacValid:
		return ErrBadMAC
	}
	return nil
}

// classify marks a KMS failure: the head cannot be signed or checked now,
// which is an outage of a dependency, not a verdict on the ledger.
func classify(err error) error {
	var k failure.Kinder
	if errors.As(err, &k) {
		return err
	}
	return failure.Transient(failure.KindStoreUnavailable, 2*time.Second, fmt.Errorf("anchor: kms: %w", err))
}

// Keyring signs with one key and verifies with any key it holds (the
// current one and, after a rotation, earlier ones).
type Keyring struct {
	signing Key
	byID    map[string]Key
}

// NewKeyring signs with signing and also verifies with older.
func NewKeyring(signing Key, older ...Key) *Keyring {
	r := &Keyring{signing: signing, byID: map[string]Key{signing.ID(): signing}}
	for _, k := range older {
		r.byID[k.ID()] = k
	}
	return r
}

// KeyID is the id of the signing key.
func (r *Keyring) KeyID() string { return r.signing.ID() }

// SignHead returns the signing key's MAC of a head.
func (r *Keyring) SignHead(ctx context.Context, firm, run string, seq int64, hash string) (mac, keyID string, err error) {
	mac, err = r.signing.Sign(ctx, Message(firm, run, seq, hash))
	return mac, r.signing.ID(), err
}

// VerifyHead checks a head's MAC with the key it names.
func (r *Keyring) VerifyHead(ctx context.Context, firm, run string, seq int64, hash, mac, keyID string) error {
	k, ok := r.byID[keyID]
	if !ok {
		return ErrUnknownKey
	}
	return k.Verify(ctx, Message(firm, run, seq, hash), mac)
}

// Parse reads a key spec: "hmac:<64+ hex digits>" (a local key; never for a
// deployment) or "kms:<key ARN, id or alias>", for which newKMS supplies the
// client (nil: a kms spec is refused). Errors never echo the spec: it may
// hold key material.
func Parse(spec string, newKMS func() KMSClient) (Key, error) {
	kind, val, ok := strings.Cut(strings.TrimSpace(spec), ":")
	switch {
	case !ok || val == "":
		return nil, errors.New(`anchor: a key is "hmac:<hex>" or "kms:<key id>"`)
	case kind == "hmac":
		raw, err := hex.DecodeString(val)
		if err != nil {
			return nil, errors.New("anchor: an hmac key is hex")
		}
		return NewHMAC(raw)
	case kind == "kms":
		if newKMS == nil {
			return nil, errors.New("anchor: no KMS client for a kms key")
		}
		return NewKMS(newKMS(), val), nil
	}
	return nil, errors.New(`anchor: a key is "hmac:<hex>" or "kms:<key id>"`)
}
