package anchor_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/seed-f6d3920e/warrant/pkg/anchor"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

const (
	firm = "0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b"
	run  = "5b0c6a2e-7d4f-4c8e-9a51-0b8f2f3c1d01"
	hash = "1ab80aad9e6a871362a3ccba1f51e45cd3197d152bb8c39ba9a8a1319104cb5f"
)

var ctx = context.Background()

func key(t *testing.T, b byte) *anchor.HMAC {
	t.Helper()
	k, err := anchor.NewHMAC(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestHMACHead(t *testing.T) {
	ring := anchor.NewKeyring(key(t, 1))
	mac, id, err := ring.SignHead(ctx, firm, run, 15, hash)
	if err != nil || len(mac) != 64 || !strings.HasPrefix(id, "hmac:") || id != ring.KeyID() {
		t.Fatalf("SignHead = %q %q %v", mac, id, err)
	}
	if err := ring.VerifyHead(ctx, firm, run, 15, hash, mac, id); err != nil {
		t.Fatalf("a head does not verify: %v", err)
	}
	for name, bad := range map[string]func() error{
		"other seq":  func() error { return ring.VerifyHead(ctx, firm, run, 14, hash, mac, id) },
		"other hash": func() error { return ring.VerifyHead(ctx, firm, run, 15, strings.Repeat("0", 64), mac, id) },
		"other run":  func() error { return ring.VerifyHead(ctx, firm, firm, 15, hash, mac, id) },
		"other firm": func() error { return ring.VerifyHead(ctx, run, run, 15, hash, mac, id) },
		"bad hex":    func() error { return ring.VerifyHead(ctx, firm, run, 15, hash, "zz", id) },
		"empty mac":  func() error { return ring.VerifyHead(ctx, firm, run, 15, hash, "", id) },
		"other key": func() error {
			m, _, _ := anchor.NewKeyring(key(t, 2)).SignHead(ctx, firm, run, 15, hash)
			return ring.VerifyHead(ctx, firm, run, 15, hash, m, id)
		},
	} {
		if err := bad(); !errors.Is(err, anchor.ErrBadMAC) {
			t.Errorf("%s: %v, want ErrBadMAC", name, err)
		}
	}
	if err := ring.VerifyHead(ctx, firm, run, 15, hash, mac, "hmac:0000"); !errors.Is(err, anchor.ErrUnknownKey) {
		t.Errorf("unknown key: %v", err)
	}
	if k, _, _ := failure.Classify(anchor.ErrBadMAC); k != failure.KindLedgerCorrupt {
		t.Errorf("a bad MAC is %s, want ledger_corrupt", k)
	}
	// The MAC is HMAC-SHA-256 of the documented message, so any tool can check it.
	m := hmac.New(sha256.New, bytes.Repeat([]byte{1}, 32))
	m.Write([]byte("warrant/ledger-head/v1\n" + firm + "\n" + run + "\n15\n" + hash))
	if want, _ := key(t, 1).Sign(ctx, anchor.Message(firm, run, 15, hash)); want != mac || !hmac.Equal(m.Sum(nil), mustHex(t, mac)) {
		t.Fatal("the MAC is not HMAC-SHA-256 of Message")
	}
}

func TestKeyringRotation(t *testing.T) {
	old, cur := key(t, 1), key(t, 2)
	oldMAC, oldID, _ := anchor.NewKeyring(old).SignHead(ctx, firm, run, 3, hash)
	ring := anchor.NewKeyring(cur, old)
	if err := ring.VerifyHead(ctx, firm, run, 3, hash, oldMAC, oldID); err != nil {
		t.Fatalf("a head signed before the rotation: %v", err)
	}
	if _, id, _ := ring.SignHead(ctx, firm, run, 4, hash); id != cur.ID() {
		t.Fatalf("signed with %s, want the current key", id)
	}
}

func TestParse(t *testing.T) {
	hexKey := strings.Repeat("ab", 32)
	k, err := anchor.Parse("hmac:"+hexKey, nil)
	if err != nil || !strings.HasPrefix(k.ID(), "hmac:") || strings.Contains(k.ID(), hexKey[:16]) {
		t.Fatalf("Parse(hmac) = %v, %v", k, err)
	}
	fake := &fakeKMS{}
	if k, err := anchor.Parse("kms:alias/warrant-ledger", func() anchor.KMSClient { return fake }); err != nil || k.ID() != "kms:alias/warrant-ledger" {
		t.Fatalf("Parse(kms) = %v, %v", k, err)
	}
	for _, bad := range []string{"", "hmac:", "hmac:abcd", "hmac:zz" + hexKey, "kms:", "rsa:abc", hexKey, "kms:alias/x"} {
		if _, err := anchor.Parse(bad, nil); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		} else if len(bad) > 8 && strings.Contains(err.Error(), bad[5:]) {
			t.Errorf("Parse(%q) echoes the key: %v", bad, err)
		}
	}
}

// fakeKMS computes HMACs with a local key, as KMS would with its own.
type fakeKMS struct {
	fail           error
	macs, verifies int
}

var kmsKey = bytes.Repeat([]byte{9}, 32)

func (f *fakeKMS) GenerateMac(_ context.Context, in *kms.GenerateMacInput, _ ...func(*kms.Options)) (*kms.GenerateMacOutput, error) {
	f.macs++
	if f.fail != nil {
		return nil, f.fail
	}
	if in.MacAlgorithm != types.MacAlgorithmSpecHmacSha256 {
		return nil, errors.New("wrong algorithm")
	}
	m := hmac.New(sha256.New, kmsKey)
	m.Write(in.Message)
	return &kms.GenerateMacOutput{Mac: m.Sum(nil), KeyId: in.KeyId}, nil
}

func (f *fakeKMS) VerifyMac(_ context.Context, in *kms.VerifyMacInput, _ ...func(*kms.Options)) (*kms.VerifyMacOutput, error) {
	f.verifies++
	if f.fail != nil {
		return nil, f.fail
	}
	m := hmac.New(sha256.New, kmsKey)
	m.Write(in.Message)
	if !hmac.Equal(m.Sum(nil), in.Mac) {
		// KMS answers an invalid MAC with an exception, not MacValid=false.
		return nil, &types.KMSInvalidMacException{Message: aws("invalid")}
	}
	return &kms.VerifyMacOutput{MacValid: true}, nil
}

func aws(s string) *string { return &s }

func TestKMSHead(t *testing.T) {
	f := &fakeKMS{}
	ring := anchor.NewKeyring(anchor.NewKMS(f, "arn:aws:kms:us-east-1:111122223333:key/k"))
	mac, id, err := ring.SignHead(ctx, firm, run, 2, hash)
	if err != nil || id != "kms:arn:aws:kms:us-east-1:111122223333:key/k" || f.macs != 1 {
		t.Fatalf("SignHead = %q %q %v", mac, id, err)
	}
	if err := ring.VerifyHead(ctx, firm, run, 2, hash, mac, id); err != nil || f.verifies != 1 {
		t.Fatalf("VerifyHead: %v", err)
	}
	if err := ring.VerifyHead(ctx, firm, run, 3, hash, mac, id); !errors.Is(err, anchor.ErrBadMAC) {
		t.Fatalf("rewritten head: %v", err)
	}
	f.fail = &types.KMSInternalException{Message: aws("down")}
	_, _, err = ring.SignHead(ctx, firm, run, 2, hash)
	if k, retryable, _ := failure.Classify(err); k != failure.KindStoreUnavailable || !retryable || errors.Is(err, anchor.ErrBadMAC) {
		t.Fatalf("a KMS outage is %s (retryable %v): %v", k, retryable, err)
	}
	if err := ring.VerifyHead(ctx, firm, run, 2, hash, mac, id); errors.Is(err, anchor.ErrBadMAC) || err == nil {
		t.Fatalf("an outage is not a verdict on the ledger: %v", err)
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
