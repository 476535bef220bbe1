package anchor_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	sdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/google/uuid"

	"github.com/seed-f6d3920e/warrant/pkg/anchor"
	"github.com/seed-f6d3920e/warrant/pkg/dynamo/dynamotest"
	"github.com/seed-f6d3920e/warrant/pkg/evidence"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// TestMain stops the shared moto_server (if a test started it) after the
// tests.
func TestMain(m *testing.M) { dynamotest.Main(m) }

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

// motoS3 is an S3 client on the shared moto_server. It sends a checksum only
// where the operation requires one, so a checksum on a PutObject is there
// because the caller asked for it.
func motoS3(t *testing.T) *s3.Client {
	t.Helper()
	ep := dynamotest.Moto(t)
	return s3.New(s3.Options{
		Region:                     "us-east-1",
		BaseEndpoint:               sdk.String(ep.URL),
		Credentials:                credentials.NewStaticCredentialsProvider("test", "test", ""),
		UsePathStyle:               true,
		RequestChecksumCalculation: sdk.RequestChecksumCalculationWhenRequired,
	})
}

// createKey makes a KMS key and returns its key id.
func createKey(t *testing.T, c *kms.Client, spec kmstypes.KeySpec, usage kmstypes.KeyUsageType) string {
	t.Helper()
	out, err := c.CreateKey(t.Context(), &kms.CreateKeyInput{KeySpec: spec, KeyUsage: usage})
	if err != nil {
		t.Fatalf("CreateKey %s %s: %v", spec, usage, err)
	}
	return *out.KeyMetadata.KeyId
}

// publicOf fetches a key's public key straight from KMS, apart from the code
// under test.
func publicOf(t *testing.T, c *kms.Client, keyID string) (*ecdsa.PublicKey, string) {
	t.Helper()
	out, err := c.GetPublicKey(t.Context(), &kms.GetPublicKeyInput{KeyId: sdk.String(keyID)})
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.ParsePKIXPublicKey(out.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pub := k.(*ecdsa.PublicKey)
	id, err := evidence.KeyIDOf(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pub, id
}

// recordingKMS passes calls to a real client and keeps what went over the
// wire.
type recordingKMS struct {
	next       anchor.SignClient
	getPublic  int
	signIns    []*kms.SignInput
	signOuts   []*kms.SignOutput
	signErrors []error
}

func (r *recordingKMS) GetPublicKey(ctx context.Context, in *kms.GetPublicKeyInput, opt ...func(*kms.Options)) (*kms.GetPublicKeyOutput, error) {
	r.getPublic++
	return r.next.GetPublicKey(ctx, in, opt...)
}

func (r *recordingKMS) Sign(ctx context.Context, in *kms.SignInput, opt ...func(*kms.Options)) (*kms.SignOutput, error) {
	out, err := r.next.Sign(ctx, in, opt...)
	r.signIns, r.signOuts, r.signErrors = append(r.signIns, in), append(r.signOuts, out), append(r.signErrors, err)
	return out, err
}

// digestKMS is a KMS key held in the test, answering GetPublicKey and Sign as
// AWS documents them (MessageType DIGEST signs the message as given). It
// exists because moto 5.2.1 hashes a DIGEST message again (see
// TestKMSSignerOnMoto), so the path where KMS's signature verifies cannot
// be run against moto.
type digestKMS struct {
	priv *ecdsa.PrivateKey
	arn  string
	err  error // answered by GetPublicKey, when set
}

func newDigestKMS(t *testing.T) *digestKMS {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &digestKMS{priv: k, arn: "arn:aws:kms:us-east-1:123456789012:key/" + uuid.NewString()}
}

func (d *digestKMS) GetPublicKey(_ context.Context, in *kms.GetPublicKeyInput, _ ...func(*kms.Options)) (*kms.GetPublicKeyOutput, error) {
	if d.err != nil {
		return nil, d.err
	}
	der, err := x509.MarshalPKIXPublicKey(&d.priv.PublicKey)
	return &kms.GetPublicKeyOutput{KeyId: sdk.String(d.arn), KeySpec: kmstypes.KeySpecEccNistP256,
		CustomerMasterKeySpec: kmstypes.CustomerMasterKeySpecEccNistP256, KeyUsage: kmstypes.KeyUsageTypeSignVerify,
		PublicKey: der, SigningAlgorithms: []kmstypes.SigningAlgorithmSpec{kmstypes.SigningAlgorithmSpecEcdsaSha256}}, err
}

func (d *digestKMS) Sign(_ context.Context, in *kms.SignInput, _ ...func(*kms.Options)) (*kms.SignOutput, error) {
	if sdk.ToString(in.KeyId) != d.arn || in.SigningAlgorithm != kmstypes.SigningAlgorithmSpecEcdsaSha256 {
		return nil, &kmstypes.InvalidKeyUsageException{Message: sdk.String("wrong key or algorithm")}
	}
	digest := in.Message
	if in.MessageType != kmstypes.MessageTypeDigest {
		sum := sha256.Sum256(in.Message)
		digest = sum[:]
	} else if len(digest) != sha256.Size {
		return nil, &smithy.GenericAPIError{Code: "ValidationException", Message: "Digest is invalid length for algorithm ECDSA_SHA_256."}
	}
	sig, err := ecdsa.SignASN1(rand.Reader, d.priv, digest)
	return &kms.SignOutput{KeyId: sdk.String(d.arn), Signature: sig, SigningAlgorithm: in.SigningAlgorithm}, err
}

func digestOf(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

func mustSig(t *testing.T, s evidence.Signed) []byte {
	t.Helper()
	sig, err := base64.StdEncoding.DecodeString(s.Signature)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// verifies checks a signed document the way a verifier with openssl does:
// the signature over the SHA-256 of the body's bytes.
func verifies(pub *ecdsa.PublicKey, body string, sig []byte) bool {
	return ecdsa.VerifyASN1(pub, digestOf(body), sig)
}

// wantKind checks err's failure kind and whether it is retried.
func wantKind(t *testing.T, err error, kind failure.Kind, retryable bool) {
	t.Helper()
	k, r, _ := failure.Classify(err)
	if k != kind || r != retryable {
		t.Errorf("%v: kind %s retryable %v, want %s %v", err, k, r, kind, retryable)
	}
}

func TestKMSSignerSignsDigest(t *testing.T) {
	d := newDigestKMS(t)
	rec := &recordingKMS{next: d}
	s, err := anchor.NewKMSSigner(t.Context(), rec, "alias/receipts")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := evidence.KeyIDOf(&d.priv.PublicKey)
	if s.KeyID() != want || s.Public().ID != want || !s.Public().Key.Equal(&d.priv.PublicKey) {
		t.Fatalf("key %s %+v, want %s", s.KeyID(), s.Public(), want)
	}

	r := evidence.Receipt{Schema: evidence.ReceiptSchema, Kind: evidence.KindRun, FirmID: "firm-1", RunID: "run-1",
		Seq: 9, LineSHA256: strings.Repeat("a", 64), Outcome: "completed"}
	signed, err := evidence.Issue(t.Context(), s, r, "2026-01-02T03:04:05Z")
	if err != nil {
		t.Fatal(err)
	}
	sig := mustSig(t, signed)
	if !verifies(s.Public().Key, signed.Body, sig) {
		t.Fatal("a receipt's signature does not verify over the SHA-256 of its body")
	}
	got, err := evidence.OpenReceipt(evidence.KeySet{}.Add(s.Public()), signed)
	if err != nil || got.KeyID != want || got.Seq != 9 {
		t.Fatalf("OpenReceipt = %+v, %v", got, err)
	}
	tampered := strings.Replace(signed.Body, `"seq":9`, `"seq":8`, 1)
	if tampered == signed.Body || verifies(s.Public().Key, tampered, sig) {
		t.Fatal("the signature verifies over a tampered body")
	}
	second, err := s.SignDigest(t.Context(), digestOf("another document"))
	if err != nil || !verifies(s.Public().Key, "another document", second) {
		t.Fatalf("a second signature does not verify: %v", err)
	}

	// What went to KMS: the digest itself, to the key GetPublicKey named
	// (not the alias), once GetPublicKey.
	if rec.getPublic != 1 || len(rec.signIns) != 2 {
		t.Fatalf("%d GetPublicKey, %d Sign calls", rec.getPublic, len(rec.signIns))
	}
	in := rec.signIns[1]
	if sdk.ToString(in.KeyId) != d.arn || in.MessageType != kmstypes.MessageTypeDigest ||
		in.SigningAlgorithm != kmstypes.SigningAlgorithmSpecEcdsaSha256 || !bytes.Equal(in.Message, digestOf("another document")) {
		t.Fatalf("Sign input %+v", in)
	}

	for _, n := range []int{0, 31, 33, 64} {
		if _, err := s.SignDigest(t.Context(), make([]byte, n)); err == nil {
			t.Errorf("a %d-byte digest is signed", n)
		} else {
			wantKind(t, err, failure.KindInternal, false)
		}
	}
	if len(rec.signIns) != 2 {
		t.Fatalf("a digest of the wrong size went to KMS")
	}
}

// A signature KMS answers that does not verify under the key's public key
// is refused, not passed on as a receipt nobody can check.
func TestKMSSignerRefusesWrongSignature(t *testing.T) {
	d := newDigestKMS(t)
	s, err := anchor.NewKMSSigner(t.Context(), d, d.arn)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	d.priv = other // the key behind the id changed after GetPublicKey
	sig, err := s.SignDigest(t.Context(), digestOf("doc"))
	if err == nil || sig != nil || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("SignDigest = %x, %v", sig, err)
	}
	wantKind(t, err, failure.KindInternal, false)
}

// Against moto: the key's public key and id, what SignDigest sends, and what
// becomes of the signature moto answers.
func TestKMSSignerOnMoto(t *testing.T) {
	c := motoKMS(t)
	id := createKey(t, c, kmstypes.KeySpecEccNistP256, kmstypes.KeyUsageTypeSignVerify)
	pub, want := publicOf(t, c, id)
	rec := &recordingKMS{next: c}
	s, err := anchor.NewKMSSigner(t.Context(), rec, id)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(want, "sha256:") || s.KeyID() != want || s.Public().ID != want || !s.Public().Key.Equal(pub) {
		t.Fatalf("key %s, want %s", s.KeyID(), want)
	}
	if pk, err := anchor.PublicKeyOf(t.Context(), c, id); err != nil || pk.ID != want {
		t.Fatalf("PublicKeyOf = %s, %v", pk.ID, err)
	}

	// Does this moto sign a DIGEST message as given (as KMS does), or hash
	// it again (moto 5.2.1: getmoto/moto#10202)? Either way is checked
	// strictly below.
	probe := digestOf("probe")
	out, err := c.Sign(t.Context(), &kms.SignInput{KeyId: sdk.String(id), Message: probe,
		MessageType: kmstypes.MessageTypeDigest, SigningAlgorithm: kmstypes.SigningAlgorithmSpecEcdsaSha256})
	if err != nil {
		t.Fatal(err)
	}
	honorsDigest := ecdsa.VerifyASN1(pub, probe, out.Signature)
	if !honorsDigest && !ecdsa.VerifyASN1(pub, digestOf(string(probe)), out.Signature) {
		t.Fatal("moto's DIGEST signature verifies neither over the digest nor over its hash")
	}

	d1 := digestOf("receipt body one")
	sig, err := s.SignDigest(t.Context(), d1)
	if len(rec.signIns) != 1 {
		t.Fatalf("%d Sign calls", len(rec.signIns))
	}
	in := rec.signIns[0]
	if sdk.ToString(in.KeyId) != id || in.MessageType != kmstypes.MessageTypeDigest ||
		in.SigningAlgorithm != kmstypes.SigningAlgorithmSpecEcdsaSha256 || !bytes.Equal(in.Message, d1) {
		t.Fatalf("Sign input %+v", in)
	}
	if rec.signErrors[0] != nil {
		t.Fatal(rec.signErrors[0])
	}
	if !honorsDigest {
		// The request was right and moto's signature is a DER signature by
		// the same key, over sha256(digest): SignDigest catches that it
		// does not verify and refuses it.
		t.Logf("moto signs sha256(digest) for MessageType DIGEST; SignDigest refuses its signature (as it must)")
		if !ecdsa.VerifyASN1(pub, digestOf(string(d1)), rec.signOuts[0].Signature) {
			t.Fatal("moto's signature is not over sha256(digest) under the key")
		}
		if err == nil || sig != nil || !strings.Contains(err.Error(), "does not verify") {
			t.Fatalf("SignDigest on a KMS that hashes the digest again = %x, %v", sig, err)
		}
		wantKind(t, err, failure.KindInternal, false)
		return
	}
	if err != nil || !ecdsa.VerifyASN1(pub, d1, sig) {
		t.Fatalf("SignDigest = %x, %v", sig, err)
	}
	signed, err := evidence.Sign(t.Context(), s, map[string]any{"schema": "test", "n": 1})
	if err != nil {
		t.Fatal(err)
	}
	bodySig := mustSig(t, signed)
	if !verifies(pub, signed.Body, bodySig) {
		t.Fatal("a signed document does not verify")
	}
	if verifies(pub, strings.Replace(signed.Body, `"n":1`, `"n":2`, 1), bodySig) {
		t.Fatal("the signature verifies over a tampered body")
	}
}

// A signer created from an alias keeps signing with the key the alias named
// then, whose public key names its receipts.
func TestKMSSignerPinsAliasedKey(t *testing.T) {
	c := motoKMS(t)
	first := createKey(t, c, kmstypes.KeySpecEccNistP256, kmstypes.KeyUsageTypeSignVerify)
	second := createKey(t, c, kmstypes.KeySpecEccNistP256, kmstypes.KeyUsageTypeSignVerify)
	alias := "alias/receipts-" + uuid.NewString()
	if _, err := c.CreateAlias(t.Context(), &kms.CreateAliasInput{AliasName: sdk.String(alias), TargetKeyId: sdk.String(first)}); err != nil {
		t.Fatal(err)
	}
	rec := &recordingKMS{next: c}
	s, err := anchor.NewKMSSigner(t.Context(), rec, alias)
	if err != nil {
		t.Fatal(err)
	}
	if _, want := publicOf(t, c, first); s.KeyID() != want {
		t.Fatalf("key %s, want the first key's %s", s.KeyID(), want)
	}
	if _, err := c.UpdateAlias(t.Context(), &kms.UpdateAliasInput{AliasName: sdk.String(alias), TargetKeyId: sdk.String(second)}); err != nil {
		t.Fatal(err)
	}
	if _, other := publicOf(t, c, alias); other == s.KeyID() {
		t.Fatal("the alias was not moved")
	}
	_, _ = s.SignDigest(t.Context(), digestOf("doc")) // moto may refuse the signature; see TestKMSSignerOnMoto
	if len(rec.signIns) != 1 || rec.signErrors[0] != nil {
		t.Fatalf("Sign calls %d, %v", len(rec.signIns), rec.signErrors)
	}
	if got := sdk.ToString(rec.signIns[0].KeyId); got == alias || !strings.HasSuffix(got, first) {
		t.Fatalf("signed with %q, want the first key %s", got, first)
	}
}

func TestKMSSignerRefusesOtherKeys(t *testing.T) {
	c := motoKMS(t)
	for _, k := range []struct {
		spec  kmstypes.KeySpec
		usage kmstypes.KeyUsageType
	}{
		{kmstypes.KeySpecSymmetricDefault, kmstypes.KeyUsageTypeEncryptDecrypt},
		{kmstypes.KeySpecRsa2048, kmstypes.KeyUsageTypeSignVerify},
		{kmstypes.KeySpecEccNistP384, kmstypes.KeyUsageTypeSignVerify},
		{kmstypes.KeySpecEccNistP256, kmstypes.KeyUsageTypeKeyAgreement},
	} {
		id := createKey(t, c, k.spec, k.usage)
		s, err := anchor.NewKMSSigner(t.Context(), c, id)
		if err == nil || s != nil {
			t.Errorf("%s %s: a signer", k.spec, k.usage)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "ECC_NIST_P256 SIGN_VERIFY") || !strings.Contains(msg, string(k.spec)+" "+string(k.usage)) {
			t.Errorf("%s %s: %q names neither what is wanted nor what was found", k.spec, k.usage, msg)
		}
		wantKind(t, err, failure.KindConfigInvalid, false)
		if _, err := anchor.PublicKeyOf(t.Context(), c, id); err == nil {
			t.Errorf("%s %s: PublicKeyOf takes it", k.spec, k.usage)
		}
	}

	// What KMS itself answers for a symmetric key (moto answers a made-up
	// RSA public key instead, refused above by its spec).
	d := newDigestKMS(t)
	d.err = &kmstypes.UnsupportedOperationException{Message: sdk.String("You cannot perform this operation on a symmetric encryption KMS key.")}
	_, err := anchor.NewKMSSigner(t.Context(), d, d.arn)
	if err == nil || !strings.Contains(err.Error(), "has no public key") {
		t.Fatalf("a key without a public key: %v", err)
	}
	wantKind(t, err, failure.KindConfigInvalid, false)
	// Any other KMS failure is an outage, as for the head keys.
	d.err = &kmstypes.KMSInternalException{Message: sdk.String("internal")}
	_, err = anchor.NewKMSSigner(t.Context(), d, d.arn)
	wantKind(t, err, failure.KindStoreUnavailable, true)
}

func TestParseReceiptKey(t *testing.T) {
	local, err := evidence.GenerateP256()
	if err != nil {
		t.Fatal(err)
	}
	s, pub, err := anchor.ParseReceiptKey(t.Context(), "  "+local.Spec()+"\n", nil)
	if err != nil || s.KeyID() != local.KeyID() || pub.ID != local.KeyID() || !pub.Key.Equal(local.Public()) {
		t.Fatalf("p256 = %v %v %v", s, pub.ID, err)
	}
	sig, err := s.SignDigest(t.Context(), digestOf("doc"))
	if err != nil || !verifies(pub.Key, "doc", sig) {
		t.Fatalf("the p256 key does not sign: %v", err)
	}

	c := motoKMS(t)
	id := createKey(t, c, kmstypes.KeySpecEccNistP256, kmstypes.KeyUsageTypeSignVerify)
	_, want := publicOf(t, c, id)
	calls := 0
	newKMS := func() anchor.SignClient { calls++; return c }
	s, pub, err = anchor.ParseReceiptKey(t.Context(), "kms:"+id, newKMS)
	if err != nil || s.KeyID() != want || pub.ID != want || calls != 1 {
		t.Fatalf("kms = %v %v %v (%d clients)", s, pub.ID, err, calls)
	}
	if _, ok := s.(*anchor.KMSSigner); !ok {
		t.Fatalf("a kms spec gives a %T", s)
	}
	if _, _, err := anchor.ParseReceiptKey(t.Context(), "kms:"+id, nil); err == nil {
		t.Fatal("a kms spec without a KMS client is taken")
	}
	sym := createKey(t, c, kmstypes.KeySpecSymmetricDefault, kmstypes.KeyUsageTypeEncryptDecrypt)
	if _, _, err := anchor.ParseReceiptKey(t.Context(), "kms:"+sym, newKMS); err == nil {
		t.Fatal("a symmetric kms key is taken")
	}

	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p384DER, _ := x509.MarshalPKCS8PrivateKey(p384)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	rsaDER, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	localHex := strings.TrimPrefix(local.Spec(), "p256:")
	for _, bad := range []struct{ spec, secret string }{
		{"", ""},
		{"   ", ""},
		{"kms:", ""},
		{"kms:   ", ""},
		{"p256:", ""},
		{"p256:" + localHex[:40] + "zz", localHex[:40]},
		{"p256:" + localHex[:len(localHex)-8], localHex[:len(localHex)-8]},
		{"p256:" + hex.EncodeToString(p384DER), hex.EncodeToString(p384DER)},
		{"p256:" + hex.EncodeToString(rsaDER), hex.EncodeToString(rsaDER)},
		{"P256:" + localHex, localHex},
		{"hmac:" + localHex, localHex},
		{"p256 " + localHex, localHex},
		{localHex, localHex},
	} {
		_, _, err := anchor.ParseReceiptKey(t.Context(), bad.spec, newKMS)
		switch {
		case err == nil:
			t.Errorf("%.20q… is taken", bad.spec)
		case bad.secret != "" && strings.Contains(err.Error(), bad.secret[:16]):
			t.Errorf("the error for %.20q… echoes it: %v", bad.spec, err)
		}
	}
}

func TestParseRetiredKeys(t *testing.T) {
	c := motoKMS(t)
	id := createKey(t, c, kmstypes.KeySpecEccNistP256, kmstypes.KeyUsageTypeSignVerify)
	_, kmsID := publicOf(t, c, id)
	local, _ := evidence.GenerateP256()
	der, err := x509.MarshalPKIXPublicKey(local.Public())
	if err != nil {
		t.Fatal(err)
	}
	spki := base64.StdEncoding.EncodeToString(der)
	newKMS := func() anchor.SignClient { return c }

	keys, err := anchor.ParseRetiredKeys(t.Context(), " kms:"+id+" , spki:"+spki+" ,", newKMS)
	if err != nil || len(keys) != 2 || keys[0].ID != kmsID || keys[1].ID != local.KeyID() || !keys[1].Key.Equal(local.Public()) {
		t.Fatalf("ParseRetiredKeys = %+v, %v", keys, err)
	}
	for _, empty := range []string{"", "  ", " , "} {
		if keys, err := anchor.ParseRetiredKeys(t.Context(), empty, nil); err != nil || len(keys) != 0 {
			t.Errorf("%q = %v, %v", empty, keys, err)
		}
	}
	if keys, err := anchor.ParseRetiredKeys(t.Context(), "spki:"+spki, nil); err != nil || len(keys) != 1 {
		t.Errorf("an spki key needs no KMS client: %v, %v", keys, err)
	}

	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	rsaDER, _ := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	sym := createKey(t, c, kmstypes.KeySpecSymmetricDefault, kmstypes.KeyUsageTypeEncryptDecrypt)
	good := "spki:" + spki
	for _, bad := range []struct {
		spec, secret string
		at           string
		nilKMS       bool
	}{
		{spec: good + ",hmac:" + strings.Repeat("ab", 32), secret: strings.Repeat("ab", 32), at: "key 2"},
		{spec: good + ", " + local.Spec(), secret: strings.TrimPrefix(local.Spec(), "p256:")[:32], at: "key 2"},
		{spec: good + ",spki:" + spki[:20] + "!!" + spki[22:], secret: spki[:20], at: "key 2"},
		{spec: "spki:" + base64.StdEncoding.EncodeToString(rsaDER), secret: base64.StdEncoding.EncodeToString(rsaDER)[:32], at: "key 1"},
		{spec: good + ",spki:", at: "key 2"},
		{spec: good + "," + good + ",kms:" + id, at: "key 3", nilKMS: true},
		{spec: good + ",kms:", at: "key 2"},
		{spec: good + ",kms:" + sym, at: "key 2"},
		{spec: good + "," + spki, secret: spki[:32], at: "key 2"},
	} {
		nk := newKMS
		if bad.nilKMS {
			nk = nil
		}
		_, err := anchor.ParseRetiredKeys(t.Context(), bad.spec, nk)
		switch {
		case err == nil:
			t.Errorf("%.40q… is taken", bad.spec)
		case !strings.Contains(err.Error(), bad.at+":"):
			t.Errorf("%.40q…: %q does not name %s", bad.spec, err, bad.at)
		case bad.secret != "" && strings.Contains(err.Error(), bad.secret):
			t.Errorf("%.40q…: %q echoes the entry", bad.spec, err)
		}
	}
}

func TestCheckpointKey(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{1, "checkpoints/f/000000000001.json"}, {123456789012, "checkpoints/f/123456789012.json"}} {
		if got := anchor.CheckpointKey("f", c.n); got != c.want {
			t.Errorf("CheckpointKey(f, %d) = %q, want %q", c.n, got, c.want)
		}
	}
}

// newLockedBucket makes a bucket with Object Lock whose default retention is
// GOVERNANCE for a day.
func newLockedBucket(t *testing.T, c *s3.Client) string {
	t.Helper()
	bucket := "warrant-checkpoints-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:20]
	if _, err := c.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: sdk.String(bucket), ObjectLockEnabledForBucket: sdk.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	_, err := c.PutObjectLockConfiguration(t.Context(), &s3.PutObjectLockConfigurationInput{
		Bucket: sdk.String(bucket),
		ObjectLockConfiguration: &s3types.ObjectLockConfiguration{
			ObjectLockEnabled: s3types.ObjectLockEnabledEnabled,
			Rule: &s3types.ObjectLockRule{DefaultRetention: &s3types.DefaultRetention{
				Mode: s3types.ObjectLockRetentionModeGovernance, Days: sdk.Int32(1)}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return bucket
}

func TestS3SinkObjectLock(t *testing.T) {
	c := motoS3(t)
	bucket := newLockedBucket(t, c)
	firmID := uuid.NewString()

	// The bucket demands an integrity checksum: a put without one fails.
	if _, err := c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: sdk.String(bucket), Key: sdk.String("probe"),
		Body: strings.NewReader("x")}); err == nil {
		t.Fatal("the locked bucket takes a put without a checksum; the test below proves nothing")
	}

	local, _ := evidence.GenerateP256()
	cp := evidence.Checkpoint{FirmID: firmID, Number: 7, Size: 3, Head: strings.Repeat("b", 64), CreatedAt: "2026-01-02T03:04:05Z"}
	signed, err := evidence.SignCheckpoint(t.Context(), local, cp)
	if err != nil {
		t.Fatal(err)
	}
	sink := &anchor.S3Sink{Client: c, Bucket: bucket}
	if err := sink.PutCheckpoint(t.Context(), firmID, 7, signed); err != nil {
		t.Fatal(err)
	}

	key := anchor.CheckpointKey(firmID, 7)
	if key != "checkpoints/"+firmID+"/000000000007.json" {
		t.Fatalf("key %q", key)
	}
	got, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: sdk.String(bucket), Key: sdk.String(key),
		ChecksumMode: s3types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(got.Body)
	got.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(signed)
	if !bytes.Equal(body, want) {
		t.Fatalf("object %s, want %s", body, want)
	}
	var back evidence.Signed
	if err := json.Unmarshal(body, &back); err != nil || !reflect.DeepEqual(back, signed) {
		t.Fatalf("the object reads back as %+v, %v", back, err)
	}
	sum := sha256.Sum256(body)
	if sdk.ToString(got.ContentType) != "application/json" || sdk.ToString(got.ChecksumSHA256) != base64.StdEncoding.EncodeToString(sum[:]) {
		t.Fatalf("content type %q, SHA-256 checksum %q", sdk.ToString(got.ContentType), sdk.ToString(got.ChecksumSHA256))
	}
	// The bucket's default retention locked it (moto 5.2.1 has no
	// GetObjectRetention; GetObject reports the lock).
	until := sdk.ToTime(got.ObjectLockRetainUntilDate)
	if got.ObjectLockMode != s3types.ObjectLockModeGovernance || until.Before(time.Now().Add(23*time.Hour)) || until.After(time.Now().Add(25*time.Hour)) {
		t.Fatalf("lock %q until %v", got.ObjectLockMode, until)
	}
	// The locked version cannot be deleted (without the governance bypass).
	if _, err := c.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: sdk.String(bucket), Key: sdk.String(key),
		VersionId: got.VersionId}); err == nil {
		t.Fatal("a locked checkpoint was deleted")
	}

	// The same number again is refused by S3 (a conditional put): one
	// version, the first.
	err = sink.PutCheckpoint(t.Context(), firmID, 7, evidence.Signed{Body: "{}", Signature: "AA=="})
	if !errors.Is(err, evidence.ErrCheckpointExists) {
		t.Fatalf("a second checkpoint 7: %v, want ErrCheckpointExists", err)
	}
	versions, err := c.ListObjectVersions(t.Context(), &s3.ListObjectVersionsInput{Bucket: sdk.String(bucket), Prefix: sdk.String(key)})
	if err != nil || len(versions.Versions) != 1 {
		t.Fatalf("versions %v, %v", versions, err)
	}
	// And it reads back: checkpoint 7, none after it, 7 after 6.
	back2, err := sink.Checkpoint(t.Context(), firmID, 7)
	if err != nil || !reflect.DeepEqual(back2, signed) {
		t.Fatalf("Checkpoint(7): %+v, %v", back2, err)
	}
	if _, err := sink.Checkpoint(t.Context(), firmID, 8); !errors.Is(err, evidence.ErrCheckpointNotKept) {
		t.Fatalf("Checkpoint(8): %v, want ErrCheckpointNotKept", err)
	}
	for _, tc := range []struct {
		after, want int64
		found       bool
	}{{0, 7, true}, {6, 7, true}, {7, 0, false}} {
		if n, found, err := sink.After(t.Context(), firmID, tc.after); err != nil || n != tc.want || found != tc.found {
			t.Errorf("After(%d) = %d, %v, %v; want %d, %v", tc.after, n, found, err, tc.want, tc.found)
		}
	}
	// Another firm's checkpoints are not this firm's.
	if _, found, err := sink.After(t.Context(), uuid.NewString(), 0); err != nil || found {
		t.Errorf("another firm: found %v, %v", found, err)
	}
}

// The local stack's stand-in for the bucket keeps each number once, reads
// it back, and answers what is kept after a number.
func TestDirSink(t *testing.T) {
	sink := anchor.DirSink{Dir: t.TempDir()}
	firmID := uuid.NewString()
	local, _ := evidence.GenerateP256()
	var kept []evidence.Signed
	for n := int64(1); n <= 2; n++ {
		cp := evidence.Checkpoint{FirmID: firmID, Number: n, Size: n, Head: strings.Repeat("b", 64), CreatedAt: "2026-01-02T03:04:05Z"}
		signed, err := evidence.SignCheckpoint(t.Context(), local, cp)
		if err != nil {
			t.Fatal(err)
		}
		// Checkpoint 2 carries its signed note (issue 30 item 1), kept in
		// the same file; checkpoint 1 is one signed before notes were.
		if n == 2 {
			if signed.Note, err = evidence.SignCheckpointNote(t.Context(), local, evidence.Origin("", firmID), cp); err != nil {
				t.Fatal(err)
			}
		}
		if err := sink.PutCheckpoint(t.Context(), firmID, n, signed); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, signed)
	}
	if err := sink.PutCheckpoint(t.Context(), firmID, 2, kept[0]); !errors.Is(err, evidence.ErrCheckpointExists) {
		t.Fatalf("a second checkpoint 2: %v", err)
	}
	if got, err := sink.Checkpoint(t.Context(), firmID, 2); err != nil || !reflect.DeepEqual(got, kept[1]) || got.Note == "" {
		t.Fatalf("Checkpoint(2): %+v %v", got, err)
	}
	if got, err := sink.Checkpoint(t.Context(), firmID, 1); err != nil || !reflect.DeepEqual(got, kept[0]) {
		t.Fatalf("Checkpoint(1): %+v %v", got, err)
	}
	if _, err := sink.Checkpoint(t.Context(), firmID, 3); !errors.Is(err, evidence.ErrCheckpointNotKept) {
		t.Fatalf("Checkpoint(3): %v", err)
	}
	if n, found, err := sink.After(t.Context(), firmID, 1); err != nil || !found || n != 2 {
		t.Fatalf("After(1): %d %v %v", n, found, err)
	}
	if _, found, err := sink.After(t.Context(), firmID, 2); err != nil || found {
		t.Fatalf("After(2): %v %v", found, err)
	}
	if err := sink.PutCheckpoint(t.Context(), "../../etc", 1, kept[0]); err == nil {
		t.Fatal("a firm id that is a path was taken")
	}
}

func TestS3SinkFailureIsTransient(t *testing.T) {
	c := motoS3(t)
	sink := &anchor.S3Sink{Client: c, Bucket: "warrant-no-such-bucket-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]}
	err := sink.PutCheckpoint(t.Context(), "firm", 1, evidence.Signed{Body: "{}", Signature: "AA=="})
	if err == nil {
		t.Fatal("a put to a missing bucket succeeds")
	}
	var nsb *s3types.NoSuchBucket
	if !errors.As(err, &nsb) && !strings.Contains(err.Error(), "NoSuchBucket") {
		t.Errorf("%v does not carry S3's answer", err)
	}
	wantKind(t, err, failure.KindStoreUnavailable, true)
}
