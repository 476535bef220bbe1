package seal

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/smithy-go"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// The encryption context every run's data key is wrapped under. KMS binds
// it to the wrapped blob (a blob opens only with the same context) and
// writes it into CloudTrail, so each Decrypt names the firm and the run.
const (
	ContextFirm = "warrant:firm_id"
	ContextRun  = "warrant:run_id"
)

// Keyring makes and opens runs' data keys.
type Keyring interface {
	// NewRunKey makes a fresh data key for the run and returns it with its
	// wrapped blob, the only form of it to store. An error is ErrKMS (KMS
	// did not answer; nothing was made) or an argument error; it never
	// comes with a key.
	NewRunKey(ctx context.Context, firmID, runID string) (*RunKey, []byte, error)
	// OpenRunKey unwraps a stored blob for the same firm and run. An error
	// is ErrCannotOpen (the blob was altered, belongs to another firm or
	// run, or was wrapped under another key), ErrKeyUnavailable (the key it
	// was wrapped under is disabled, pending deletion or gone) or ErrKMS.
	OpenRunKey(ctx context.Context, firmID, runID string, wrapped []byte) (*RunKey, error)
}

func checkIDs(firmID, runID string) error {
	switch {
	case firmID == "":
		return errors.New("seal: a data key needs the firm id")
	case runID == "":
		return errors.New("seal: a data key needs the run id")
	}
	return nil
}

// KMSClient is the part of the KMS client a KMSKeyring uses.
type KMSClient interface {
	GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, optFns ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error)
	Decrypt(ctx context.Context, in *kms.DecryptInput, optFns ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

// KMSKeyring makes data keys with kms:GenerateDataKey under one symmetric
// KMS key (the firm's) and opens them with kms:Decrypt. The blob it stores
// is KMS's CiphertextBlob, unchanged.
type KMSKeyring struct {
	client KMSClient
	keyID  string
}

// NewKMSKeyring returns a keyring over keyID: a key ARN, key id, alias name
// or alias ARN of a symmetric encryption key.
func NewKMSKeyring(client KMSClient, keyID string) *KMSKeyring {
	return &KMSKeyring{client: client, keyID: keyID}
}

func encryptionContext(firmID, runID string) map[string]string {
	return map[string]string{ContextFirm: firmID, ContextRun: runID}
}

// NewRunKey asks KMS for an AES-256 data key under the encryption context.
func (r *KMSKeyring) NewRunKey(ctx context.Context, firmID, runID string) (*RunKey, []byte, error) {
	if err := checkIDs(firmID, runID); err != nil {
		return nil, nil, err
	}
	out, err := r.client.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{KeyId: aws.String(r.keyID),
		KeySpec: types.DataKeySpecAes256, EncryptionContext: encryptionContext(firmID, runID)})
	if err != nil {
		return nil, nil, kmsFailed("GenerateDataKey", err)
	}
	if len(out.Plaintext) != keySize || len(out.CiphertextBlob) == 0 {
		clear(out.Plaintext)
		return nil, nil, failure.Classified(failure.KindStoreUnavailable,
			fmt.Errorf("%w: GenerateDataKey answered a %d-byte key", ErrKMS, len(out.Plaintext)))
	}
	k, err := newRunKey(firmID, runID, out.Plaintext)
	if err != nil {
		return nil, nil, err
	}
	return k, out.CiphertextBlob, nil
}

// OpenRunKey asks KMS to decrypt the blob under the configured key only
// (KeyId is pinned, so a blob wrapped under any other key is refused) and
// the run's encryption context.
func (r *KMSKeyring) OpenRunKey(ctx context.Context, firmID, runID string, wrapped []byte) (*RunKey, error) {
	if err := checkIDs(firmID, runID); err != nil {
		return nil, err
	}
	if len(wrapped) == 0 {
		return nil, fmt.Errorf("seal: empty wrapped key: %w", ErrCannotOpen)
	}
	out, err := r.client.Decrypt(ctx, &kms.DecryptInput{KeyId: aws.String(r.keyID), CiphertextBlob: wrapped,
		EncryptionContext: encryptionContext(firmID, runID), EncryptionAlgorithm: types.EncryptionAlgorithmSpecSymmetricDefault})
	if err != nil {
		return nil, kmsFailed("Decrypt", err)
	}
	if len(out.Plaintext) != keySize {
		clear(out.Plaintext)
		return nil, fmt.Errorf("seal: the wrapped key is not a data key: %w", ErrCannotOpen)
	}
	return newRunKey(firmID, runID, out.Plaintext)
}

// kmsFailed sorts a KMS error into a verdict on the blob (ErrCannotOpen),
// on the key (ErrKeyUnavailable) or a failure to get one (ErrKMS, with a
// failure kind). KMS error messages name keys and requests, never data.
func kmsFailed(op string, err error) error {
	var (
		badBlob  *types.InvalidCiphertextException
		wrongKey *types.IncorrectKeyException
		disabled *types.DisabledException
		state    *types.KMSInvalidStateException
		notFound *types.NotFoundException
		api      smithy.APIError
	)
	if op == "Decrypt" {
		switch {
		case errors.As(err, &badBlob), errors.As(err, &wrongKey):
			return fmt.Errorf("seal: kms %s: %w: %w", op, ErrCannotOpen, err)
		case errors.As(err, &disabled), errors.As(err, &state), errors.As(err, &notFound):
			return fmt.Errorf("seal: kms %s: %w: %w", op, ErrKeyUnavailable, err)
		}
	}
	wrapped := fmt.Errorf("%w: %s: %w", ErrKMS, op, err)
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return wrapped // failure.Classify reads the context's own error
	case errors.As(err, &disabled), errors.As(err, &state), errors.As(err, &notFound),
		errors.As(err, &api) && api.ErrorCode() == "AccessDeniedException":
		// The firm's key cannot be used by this function: a deploy or key
		// policy to fix, not something a retry will change.
		return failure.Classified(failure.KindConfigInvalid, wrapped)
	}
	return failure.Classified(failure.KindStoreUnavailable, wrapped)
}

// localMagic starts every blob a LocalKeyring writes. A KMS blob is opaque
// and read only by KMS; a local keyring refuses any blob without this
// prefix, and KMS refuses a local blob as invalid ciphertext.
const localMagic = "wlk1"

// localLabel starts a wrapped key's additional data, so it can never equal
// a value's (valueLabel).
const localLabel = "warrant/seal/local-key/v1"

// LocalKeyring stands in for KMS on the local stack: a 32-byte master key
// wraps each run's random data key with AES-256-GCM, the firm and the run
// bound as additional data as KMS binds the encryption context. Its blob is
// "wlk1", the 12-byte nonce, the 32-byte encrypted key and the 16-byte tag
// (64 bytes). It is not for production: the master key sits in the
// function's environment.
type LocalKeyring struct{ aead cipher.AEAD }

// NewLocalKeyring returns a keyring over master, which must be 32 bytes.
// It keeps no reference to master (the caller may zero it).
func NewLocalKeyring(master []byte) (*LocalKeyring, error) {
	if len(master) != keySize {
		return nil, fmt.Errorf("seal: a local master key is %d bytes, not %d", keySize, len(master))
	}
	block, err := aes.NewCipher(master)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, err
	}
	return &LocalKeyring{aead: aead}, nil
}

func localAAD(firmID, runID string) []byte { return appendParts([]byte(localLabel), firmID, runID) }

// NewRunKey makes a random data key and wraps it.
func (r *LocalKeyring) NewRunKey(_ context.Context, firmID, runID string) (*RunKey, []byte, error) {
	if err := checkIDs(firmID, runID); err != nil {
		return nil, nil, err
	}
	raw := make([]byte, keySize)
	rand.Read(raw) // never fails (crypto/rand since Go 1.24)
	wrapped := r.aead.Seal([]byte(localMagic), nil, raw, localAAD(firmID, runID))
	k, err := newRunKey(firmID, runID, raw)
	if err != nil {
		return nil, nil, err
	}
	return k, wrapped, nil
}

// OpenRunKey unwraps a blob NewRunKey wrote for the same firm and run.
func (r *LocalKeyring) OpenRunKey(_ context.Context, firmID, runID string, wrapped []byte) (*RunKey, error) {
	if err := checkIDs(firmID, runID); err != nil {
		return nil, err
	}
	body, ok := bytes.CutPrefix(wrapped, []byte(localMagic))
	if !ok || len(body) != overhead+keySize {
		return nil, fmt.Errorf("seal: not a local wrapped key: %w", ErrCannotOpen)
	}
	raw, err := r.aead.Open(nil, nil, body, localAAD(firmID, runID))
	if err != nil {
		return nil, fmt.Errorf("seal: the wrapped key does not open: %w", ErrCannotOpen)
	}
	return newRunKey(firmID, runID, raw)
}
