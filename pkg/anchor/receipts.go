package anchor

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// SignClient is the part of the KMS client a receipt key uses.
type SignClient interface {
	Sign(ctx context.Context, in *kms.SignInput, optFns ...func(*kms.Options)) (*kms.SignOutput, error)
	GetPublicKey(ctx context.Context, in *kms.GetPublicKeyInput, optFns ...func(*kms.Options)) (*kms.GetPublicKeyOutput, error)
}

// KMSSigner signs receipts and checkpoints with an asymmetric KMS key
// (ECC_NIST_P256, SIGN_VERIFY); the private key never leaves KMS. It
// implements evidence.Signer.
type KMSSigner struct {
	client SignClient
	// key is the key ARN GetPublicKey answered (the configured id when it
	// answered none): every signature comes from the key whose public half
	// names the receipts, even if an alias is moved to another key later.
	key string
	pub evidence.PublicKey
}

// NewKMSSigner fetches the public key of keyID (a key ARN, key id or alias)
// once and refuses a key that is not an ECC_NIST_P256 SIGN_VERIFY key.
func NewKMSSigner(ctx context.Context, client SignClient, keyID string) (*KMSSigner, error) {
	out, pub, err := publicKey(ctx, client, keyID)
	if err != nil {
		return nil, err
	}
	key := keyID
	if out.KeyId != nil && *out.KeyId != "" {
		key = *out.KeyId
	}
	return &KMSSigner{client: client, key: key, pub: pub}, nil
}

// PublicKeyOf fetches the public key of an ECC_NIST_P256 SIGN_VERIFY KMS key,
// for a function that only verifies.
func PublicKeyOf(ctx context.Context, client SignClient, keyID string) (evidence.PublicKey, error) {
	_, pub, err := publicKey(ctx, client, keyID)
	return pub, err
}

func publicKey(ctx context.Context, client SignClient, keyID string) (*kms.GetPublicKeyOutput, evidence.PublicKey, error) {
	if client == nil {
		return nil, evidence.PublicKey{}, errors.New("anchor: no KMS client for a kms receipt key")
	}
	if keyID == "" {
		return nil, evidence.PublicKey{}, errors.New("anchor: a kms receipt key needs a key ARN, id or alias")
	}
	out, err := client.GetPublicKey(ctx, &kms.GetPublicKeyInput{KeyId: aws.String(keyID)})
	var unsupported *kmstypes.UnsupportedOperationException
	switch {
	case errors.As(err, &unsupported):
		// What KMS answers for a key with no public half.
		return nil, evidence.PublicKey{}, failure.Classified(failure.KindConfigInvalid, fmt.Errorf(
			"anchor: a receipt key is an %s %s KMS key; this one has no public key (a symmetric or HMAC key?): %w",
			kmstypes.KeySpecEccNistP256, kmstypes.KeyUsageTypeSignVerify, err))
	case err != nil:
		return nil, evidence.PublicKey{}, classify(err)
	}
	// KMS answers both KeySpec and its deprecated twin CustomerMasterKeySpec;
	// some KMS-compatible endpoints (moto) answer only the latter.
	spec := string(out.KeySpec)
	if spec == "" {
		spec = string(out.CustomerMasterKeySpec)
	}
	if spec != string(kmstypes.KeySpecEccNistP256) || out.KeyUsage != kmstypes.KeyUsageTypeSignVerify {
		return nil, evidence.PublicKey{}, failure.Classified(failure.KindConfigInvalid, fmt.Errorf(
			"anchor: a receipt key is an %s %s KMS key; this one is %s %s",
			kmstypes.KeySpecEccNistP256, kmstypes.KeyUsageTypeSignVerify, orNone(spec), orNone(string(out.KeyUsage))))
	}
	pub, err := evidence.ParsePublicKeyDER(out.PublicKey)
	if err != nil {
		return nil, evidence.PublicKey{}, failure.Classified(failure.KindConfigInvalid, fmt.Errorf("anchor: the KMS key's public key: %w", err))
	}
	return out, pub, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none given)"
	}
	return s
}

// KeyID names the key as evidence.KeyIDOf does: the SHA-256 of its public
// key, not its KMS id.
func (k *KMSSigner) KeyID() string { return k.pub.ID }

// Public is the verifying half.
func (k *KMSSigner) Public() evidence.PublicKey { return k.pub }

// SignDigest asks KMS to sign a SHA-256 digest (MessageType DIGEST,
// ECDSA_SHA_256) and returns KMS's ASN.1 DER signature. It checks the
// signature under the key's public key before returning it: a signature
// that does not verify (an endpoint that hashes the digest again, as moto
// does) is an error, never a receipt nobody can check.
func (k *KMSSigner) SignDigest(ctx context.Context, digest []byte) ([]byte, error) {
	if len(digest) != sha256.Size {
		return nil, failure.Classified(failure.KindInternal, errors.New("anchor: a receipt key signs a SHA-256 digest (32 bytes)"))
	}
	out, err := k.client.Sign(ctx, &kms.SignInput{
		KeyId:            aws.String(k.key),
		Message:          bytes.Clone(digest),
		MessageType:      kmstypes.MessageTypeDigest,
		SigningAlgorithm: kmstypes.SigningAlgorithmSpecEcdsaSha256,
	})
	if err != nil {
		return nil, classify(err)
	}
	if !ecdsa.VerifyASN1(k.pub.Key, digest, out.Signature) {
		return nil, failure.Classified(failure.KindInternal, errors.New("anchor: KMS answered a signature that does not verify under the key's public key"))
	}
	return out.Signature, nil
}

// ParseReceiptKey reads a receipt key spec: "p256:<hex PKCS#8>" (a local
// key; never for a deployment) or "kms:<key ARN, id or alias>", for which
// newKMS supplies the client (nil: a kms spec is refused). It returns the
// signer and its public key. Errors never echo the spec: it may hold key
// material.
func ParseReceiptKey(ctx context.Context, spec string, newKMS func() SignClient) (evidence.Signer, evidence.PublicKey, error) {
	spec = strings.TrimSpace(spec)
	kind, val, _ := strings.Cut(spec, ":")
	switch kind {
	case "p256":
		k, err := evidence.ParseP256(spec)
		if err != nil {
			return nil, evidence.PublicKey{}, err
		}
		pub, err := evidence.NewPublicKey(k.Public())
		if err != nil {
			return nil, evidence.PublicKey{}, err
		}
		return k, pub, nil
	case "kms":
		if strings.TrimSpace(val) == "" {
			return nil, evidence.PublicKey{}, errors.New("anchor: a kms receipt key needs a key ARN, id or alias")
		}
		if newKMS == nil {
			return nil, evidence.PublicKey{}, errors.New("anchor: no KMS client for a kms receipt key")
		}
		k, err := NewKMSSigner(ctx, newKMS(), strings.TrimSpace(val))
		if err != nil {
			return nil, evidence.PublicKey{}, err
		}
		return k, k.Public(), nil
	}
	return nil, evidence.PublicKey{}, errors.New(`anchor: a receipt key is "kms:<key ARN, id or alias>" or "p256:<hex PKCS#8>"`)
}

// ParseRetiredKeys reads the public keys of retired receipt keys, so the
// receipts they signed still verify: a comma-separated list (spaces
// trimmed; empty: none) of "kms:<key ARN, id or alias>" (its public key is
// fetched from KMS through newKMS's client) and "spki:<standard base64 of
// the DER SubjectPublicKeyInfo>". An error names an entry by its position
// (1 is the first), never by its content.
func ParseRetiredKeys(ctx context.Context, spec string, newKMS func() SignClient) ([]evidence.PublicKey, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	var client SignClient
	var keys []evidence.PublicKey
	for i, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		kind, val, _ := strings.Cut(entry, ":")
		val = strings.TrimSpace(val)
		bad := func(format string, a ...any) error {
			return fmt.Errorf("anchor: retired receipt key %d: "+format, append([]any{i + 1}, a...)...)
		}
		var pub evidence.PublicKey
		switch kind {
		case "kms":
			if val == "" {
				return nil, bad("a kms key needs a key ARN, id or alias")
			}
			if newKMS == nil {
				return nil, bad("no KMS client for a kms key")
			}
			if client == nil {
				client = newKMS()
			}
			var err error
			if pub, err = PublicKeyOf(ctx, client, val); err != nil {
				return nil, bad("%w", err)
			}
		case "spki":
			der, err := base64.StdEncoding.DecodeString(val)
			if err != nil || len(der) == 0 {
				return nil, bad("an spki key is the standard base64 of a DER SubjectPublicKeyInfo")
			}
			if pub, err = evidence.ParsePublicKeyDER(der); err != nil {
				return nil, bad("%w", err)
			}
		case "p256":
			return nil, bad(`it is a private key; a retired key is its public key, "spki:<base64 DER>"`)
		default:
			return nil, bad(`a retired key is "kms:<key ARN, id or alias>" or "spki:<base64 DER SubjectPublicKeyInfo>"`)
		}
		keys = append(keys, pub)
	}
	return keys, nil
}

// classifyS3 marks an S3 failure as classify marks a KMS one: the
// checkpoint cannot be kept now, an outage of a dependency.
func classifyS3(err error) error {
	var k failure.Kinder
	if errors.As(err, &k) {
		return err
	}
	return failure.Transient(failure.KindStoreUnavailable, 2*time.Second, fmt.Errorf("anchor: s3: %w", err))
}
