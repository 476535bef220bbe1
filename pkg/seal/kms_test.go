package seal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"sync"
	"testing"

	sdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/smithy-go"

	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
)

var _ seal.KMSClient = (*kms.Client)(nil)

// motoKMS is a KMS client on the shared moto_server.
func motoKMS(t *testing.T) *kms.Client {
	t.Helper()
	ep := dynamotest.Moto(t)
	return kms.New(kms.Options{
		Region:       "us-east-1",
		BaseEndpoint: sdk.String(ep.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
}

// createKey makes a symmetric encryption key and returns its id.
func createKey(t *testing.T, c *kms.Client) string {
	t.Helper()
	out, err := c.CreateKey(t.Context(), &kms.CreateKeyInput{KeySpec: kmstypes.KeySpecSymmetricDefault,
		KeyUsage: kmstypes.KeyUsageTypeEncryptDecrypt})
	if err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	return *out.KeyMetadata.KeyId
}

// recordingKMS passes calls on to next and keeps what was asked. Counts are
// of the keyring's calls, above the SDK: its retries do not change them.
type recordingKMS struct {
	next seal.KMSClient
	mu   sync.Mutex
	gens []*kms.GenerateDataKeyInput
	decs []*kms.DecryptInput
	// beforeDecrypt, when set, runs in each Decrypt before it is passed on.
	beforeDecrypt func()
}

func (r *recordingKMS) GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, o ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	r.mu.Lock()
	r.gens = append(r.gens, in)
	r.mu.Unlock()
	return r.next.GenerateDataKey(ctx, in, o...)
}

func (r *recordingKMS) Decrypt(ctx context.Context, in *kms.DecryptInput, o ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	r.mu.Lock()
	r.decs = append(r.decs, in)
	hook := r.beforeDecrypt
	r.mu.Unlock()
	if hook != nil {
		hook()
	}
	return r.next.Decrypt(ctx, in, o...)
}

func (r *recordingKMS) decrypts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.decs)
}

func wantContext(firm, run string) map[string]string {
	return map[string]string{"warrant:firm_id": firm, "warrant:run_id": run}
}

func TestKMSRoundTrip(t *testing.T) {
	c := motoKMS(t)
	keyID := createKey(t, c)
	rec := &recordingKMS{next: c}
	k, wrapped := newKey(t, seal.NewKMSKeyring(rec, keyID), "firm-a", "run-1")
	if len(rec.gens) != 1 {
		t.Fatalf("%d GenerateDataKey calls", len(rec.gens))
	}
	if in := rec.gens[0]; sdk.ToString(in.KeyId) != keyID || in.KeySpec != kmstypes.DataKeySpecAes256 ||
		in.NumberOfBytes != nil || !maps.Equal(in.EncryptionContext, wantContext("firm-a", "run-1")) {
		t.Fatalf("GenerateDataKey asked %+v", in)
	}
	stored, err := k.SealJSON("input", json.RawMessage(`{"body":"privileged"}`))
	if err != nil {
		t.Fatal(err)
	}

	// Another invocation: only the blob was kept.
	opened, err := seal.NewKMSKeyring(rec, keyID).OpenRunKey(t.Context(), "firm-a", "run-1", wrapped)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.decs) != 1 {
		t.Fatalf("%d Decrypt calls", len(rec.decs))
	}
	if in := rec.decs[0]; sdk.ToString(in.KeyId) != keyID || !bytes.Equal(in.CiphertextBlob, wrapped) ||
		in.EncryptionAlgorithm != kmstypes.EncryptionAlgorithmSpecSymmetricDefault ||
		!maps.Equal(in.EncryptionContext, wantContext("firm-a", "run-1")) {
		t.Fatalf("Decrypt asked %+v", in)
	}
	if got, err := opened.OpenJSON("input", stored); err != nil || string(got) != `{"body":"privileged"}` {
		t.Fatalf("OpenJSON = %s, %v", got, err)
	}
}

// moto binds the encryption context to the blob as additional data, as KMS
// does (moto/kms/utils.py), so this runs against the real SDK and server.
func TestKMSRefusesAnotherFirmOrRun(t *testing.T) {
	c := motoKMS(t)
	ring := seal.NewKMSKeyring(c, createKey(t, c))
	_, wrapped := newKey(t, ring, "firm-a", "run-1")
	for _, other := range [][2]string{{"firm-b", "run-1"}, {"firm-a", "run-2"}, {"firm-a", ""}} {
		k, err := ring.OpenRunKey(t.Context(), other[0], other[1], wrapped)
		if k != nil || err == nil || (other[1] != "" && !errors.Is(err, seal.ErrCannotOpen)) {
			t.Errorf("OpenRunKey as %v = %v, %v", other, k, err)
		}
	}
	if _, err := ring.OpenRunKey(t.Context(), "firm-a", "run-1", wrapped); err != nil {
		t.Fatalf("the right firm and run: %v", err)
	}
}

// A blob wrapped under another key is refused because KeyId is pinned. KMS
// answers IncorrectKeyException (ErrCannotOpen, checked with a fake in
// TestKMSErrors); moto 5.2.1 answers AccessDeniedException, which the
// keyring reads as KMS refusing the function (ErrKMS). Either way no key.
func TestKMSRefusesAnotherKeysBlob(t *testing.T) {
	c := motoKMS(t)
	a, b := createKey(t, c), createKey(t, c)
	_, wrapped := newKey(t, seal.NewKMSKeyring(c, a), "firm-a", "run-1")
	rec := &recordingKMS{next: c}
	k, err := seal.NewKMSKeyring(rec, b).OpenRunKey(t.Context(), "firm-a", "run-1", wrapped)
	if k != nil || !(errors.Is(err, seal.ErrCannotOpen) || errors.Is(err, seal.ErrKMS)) {
		t.Fatalf("OpenRunKey under another key = %v, %v", k, err)
	}
	if len(rec.decs) != 1 || sdk.ToString(rec.decs[0].KeyId) != b {
		t.Fatalf("Decrypt did not pin the key: %+v", rec.decs)
	}
}

func TestKeyringsRefuseEachOthersBlobs(t *testing.T) {
	c := motoKMS(t)
	kmsRing, local := seal.NewKMSKeyring(c, createKey(t, c)), localRing(t)
	_, kmsBlob := newKey(t, kmsRing, "firm-a", "run-1")
	_, localBlob := newKey(t, local, "firm-a", "run-1")
	if bytes.HasPrefix(kmsBlob, []byte("wlk1")) || !bytes.HasPrefix(localBlob, []byte("wlk1")) || len(localBlob) != 64 {
		t.Fatalf("blobs not told apart: kms %x, local %x", kmsBlob[:4], localBlob)
	}
	if k, err := local.OpenRunKey(t.Context(), "firm-a", "run-1", kmsBlob); k != nil || !errors.Is(err, seal.ErrCannotOpen) {
		t.Errorf("local keyring on a KMS blob = %v, %v", k, err)
	}
	if k, err := kmsRing.OpenRunKey(t.Context(), "firm-a", "run-1", localBlob); k != nil || !errors.Is(err, seal.ErrCannotOpen) {
		t.Errorf("KMS keyring on a local blob = %v, %v", k, err)
	}
}

func TestLocalKeyringRefusesAlteredBlobs(t *testing.T) {
	r := localRing(t)
	_, wrapped := newKey(t, r, "firm-a", "run-1")
	for _, other := range [][2]string{{"firm-b", "run-1"}, {"firm-a", "run-2"}} {
		if k, err := r.OpenRunKey(t.Context(), other[0], other[1], wrapped); k != nil || !errors.Is(err, seal.ErrCannotOpen) {
			t.Errorf("OpenRunKey as %v = %v, %v", other, k, err)
		}
	}
	for i := range wrapped {
		bad := bytes.Clone(wrapped)
		bad[i] ^= 1
		if k, err := r.OpenRunKey(t.Context(), "firm-a", "run-1", bad); k != nil || !errors.Is(err, seal.ErrCannotOpen) {
			t.Fatalf("byte %d flipped: %v, %v", i, k, err)
		}
	}
	other, err := seal.NewLocalKeyring(bytes.Repeat([]byte{1}, 32))
	if err != nil {
		t.Fatal(err)
	}
	if k, err := other.OpenRunKey(t.Context(), "firm-a", "run-1", wrapped); k != nil || !errors.Is(err, seal.ErrCannotOpen) {
		t.Errorf("another master key = %v, %v", k, err)
	}
	if _, err := seal.NewLocalKeyring(make([]byte, 16)); err == nil {
		t.Error("a 16-byte master key was taken")
	}
	if _, _, err := r.NewRunKey(t.Context(), "", "run-1"); err == nil {
		t.Error("a key without a firm")
	}
}

// An unknown key is a KMS error from the real SDK and server: no key, no
// blob, and a config problem rather than a retry.
func TestKMSGenerateDataKeyUnknownKey(t *testing.T) {
	c := motoKMS(t)
	ring := seal.NewKMSKeyring(c, "arn:aws:kms:us-east-1:123456789012:key/00000000-0000-4000-8000-000000000000")
	k, wrapped, err := ring.NewRunKey(t.Context(), "firm-a", "run-1")
	if k != nil || wrapped != nil || !errors.Is(err, seal.ErrKMS) {
		t.Fatalf("NewRunKey = %v, %x, %v", k, wrapped, err)
	}
	if kind, retry, _ := failure.Classify(err); kind != failure.KindConfigInvalid || retry {
		t.Fatalf("classified %s retry=%v", kind, retry)
	}
}

// fakeKMS answers from its function fields.
type fakeKMS struct {
	generate func(*kms.GenerateDataKeyInput) (*kms.GenerateDataKeyOutput, error)
	decrypt  func(*kms.DecryptInput) (*kms.DecryptOutput, error)
}

func (f *fakeKMS) GenerateDataKey(_ context.Context, in *kms.GenerateDataKeyInput, _ ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	return f.generate(in)
}

func (f *fakeKMS) Decrypt(_ context.Context, in *kms.DecryptInput, _ ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	return f.decrypt(in)
}

func TestKMSErrors(t *testing.T) {
	msg := sdk.String("kms said no")
	apiErr := func(code string) error { return &smithy.GenericAPIError{Code: code, Message: "no"} }
	type want struct {
		is        error
		kind      failure.Kind
		retryable bool
	}
	kmsDown := want{seal.ErrKMS, failure.KindStoreUnavailable, true}
	config := want{seal.ErrKMS, failure.KindConfigInvalid, false}
	cannot := want{seal.ErrCannotOpen, failure.KindLedgerCorrupt, false}
	gone := want{seal.ErrKeyUnavailable, failure.KindInternal, false}
	canceled := want{seal.ErrKMS, failure.KindCanceled, false}
	generate := []struct {
		name string
		err  error
		want want
	}{
		{"internal", &kmstypes.KMSInternalException{Message: msg}, kmsDown},
		{"throttled", apiErr("ThrottlingException"), kmsDown},
		{"unavailable", &kmstypes.KeyUnavailableException{Message: msg}, kmsDown},
		{"access denied", apiErr("AccessDeniedException"), config},
		{"disabled", &kmstypes.DisabledException{Message: msg}, config},
		{"pending deletion", &kmstypes.KMSInvalidStateException{Message: msg}, config},
		{"not found", &kmstypes.NotFoundException{Message: msg}, config},
		{"canceled", context.Canceled, canceled},
	}
	decrypt := []struct {
		name string
		err  error
		want want
	}{
		{"invalid ciphertext", &kmstypes.InvalidCiphertextException{Message: msg}, cannot},
		{"another key", &kmstypes.IncorrectKeyException{Message: msg}, cannot},
		{"disabled", &kmstypes.DisabledException{Message: msg}, gone},
		{"pending deletion", &kmstypes.KMSInvalidStateException{Message: msg}, gone},
		{"not found", &kmstypes.NotFoundException{Message: msg}, gone},
		{"internal", &kmstypes.KMSInternalException{Message: msg}, kmsDown},
		{"throttled", apiErr("ThrottlingException"), kmsDown},
		{"access denied", apiErr("AccessDeniedException"), config},
		{"canceled", context.Canceled, canceled},
	}
	check := func(t *testing.T, err error, w want) {
		t.Helper()
		for _, sentinel := range []error{seal.ErrKMS, seal.ErrCannotOpen, seal.ErrKeyUnavailable} {
			if errors.Is(err, sentinel) != (sentinel == w.is) {
				t.Errorf("errors.Is(%v, %v) = %v", err, sentinel, !(sentinel == w.is))
			}
		}
		if kind, retry, _ := failure.Classify(err); kind != w.kind || retry != w.retryable {
			t.Errorf("classified %s retry=%v, want %s retry=%v", kind, retry, w.kind, w.retryable)
		}
	}
	for _, tc := range generate {
		t.Run("GenerateDataKey "+tc.name, func(t *testing.T) {
			ring := seal.NewKMSKeyring(&fakeKMS{generate: func(*kms.GenerateDataKeyInput) (*kms.GenerateDataKeyOutput, error) {
				return nil, tc.err
			}}, "alias/firm")
			k, wrapped, err := ring.NewRunKey(t.Context(), "firm-a", "run-1")
			if k != nil || wrapped != nil {
				t.Fatalf("a key came with the error: %v, %x", k, wrapped)
			}
			check(t, err, tc.want)
		})
	}
	for _, tc := range decrypt {
		t.Run("Decrypt "+tc.name, func(t *testing.T) {
			ring := seal.NewKMSKeyring(&fakeKMS{decrypt: func(*kms.DecryptInput) (*kms.DecryptOutput, error) {
				return nil, tc.err
			}}, "alias/firm")
			k, err := ring.OpenRunKey(t.Context(), "firm-a", "run-1", []byte("blob"))
			if k != nil {
				t.Fatal("a key came with the error")
			}
			check(t, err, tc.want)
		})
	}

	// KMS answering something that is not an AES-256 key.
	ring := seal.NewKMSKeyring(&fakeKMS{
		generate: func(*kms.GenerateDataKeyInput) (*kms.GenerateDataKeyOutput, error) {
			return &kms.GenerateDataKeyOutput{Plaintext: make([]byte, 16), CiphertextBlob: []byte("blob")}, nil
		},
		decrypt: func(*kms.DecryptInput) (*kms.DecryptOutput, error) {
			return &kms.DecryptOutput{Plaintext: make([]byte, 16)}, nil
		},
	}, "alias/firm")
	if k, wrapped, err := ring.NewRunKey(t.Context(), "firm-a", "run-1"); k != nil || wrapped != nil || !errors.Is(err, seal.ErrKMS) {
		t.Errorf("a 16-byte data key: %v, %x, %v", k, wrapped, err)
	}
	if k, err := ring.OpenRunKey(t.Context(), "firm-a", "run-1", []byte("blob")); k != nil || !errors.Is(err, seal.ErrCannotOpen) {
		t.Errorf("a blob that opens to 16 bytes: %v, %v", k, err)
	}
	if k, err := ring.OpenRunKey(t.Context(), "firm-a", "run-1", nil); k != nil || !errors.Is(err, seal.ErrCannotOpen) {
		t.Errorf("an empty blob: %v, %v", k, err)
	}
}
