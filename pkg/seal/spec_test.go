package seal_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/seal"
)

const localHex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

func TestParseKeySpec(t *testing.T) {
	for _, kmsKey := range []string{
		"arn:aws:kms:us-east-1:111122223333:key/5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b",
		"arn:aws-us-gov:kms:us-gov-west-1:111122223333:key/mrk-0123456789abcdef0123456789abcdef",
		"arn:aws:kms:eu-west-1:111122223333:alias/warrant-data",
		"5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b",
		"alias/warrant/firm-data",
	} {
		s, err := seal.ParseKeySpec(" kms:" + kmsKey + "\n")
		if err != nil || s.KMSKeyID != kmsKey || s.Local() || s.String() != "kms:"+kmsKey {
			t.Errorf("kms:%s = %+v, %v", kmsKey, s, err)
		}
		if _, err := s.Keyring(nil); err == nil {
			t.Errorf("kms:%s: a keyring without a KMS client", kmsKey)
		}
	}

	s, err := seal.ParseKeySpec("aes:" + localHex)
	if err != nil || !s.Local() || s.KMSKeyID != "" {
		t.Fatalf("aes: = %+v, %v", s, err)
	}
	for _, shown := range []string{s.String(), fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s", s, s, s, s)} {
		if strings.Contains(shown, "0011") || strings.Contains(shown, "\x00\x11") {
			t.Fatalf("the local key is printed: %q", shown)
		}
	}
	ring, err := s.Keyring(nil)
	if _, ok := ring.(*seal.LocalKeyring); err != nil || !ok {
		t.Fatalf("Keyring = %T, %v", ring, err)
	}
	if _, err := (seal.KeySpec{}).Keyring(nil); err == nil {
		t.Fatal("a keyring from an empty spec")
	}
}

func TestParseKeySpecErrors(t *testing.T) {
	for _, spec := range []string{
		"",
		"kms:",
		"kms:alias/aws/dynamodb", // AWS managed: not the firm's
		"kms:arn:aws:kms:us-east-1:111122223333:alias/aws/s3",
		"kms:arn:aws:kms:us-east-1:111122223333:key/",
		"kms:arn:aws:s3:::bucket",
		"kms:not a key",
		"kms:alias/",
		"KMS:alias/warrant",
		"aes:",
		"aes:" + localHex[:62],
		"aes:" + localHex + "00",
		"aes:" + strings.Repeat("zz", 32),
		"aes:" + strings.Repeat("00", 32),
		"hmac:" + localHex,
		localHex,
	} {
		s, err := seal.ParseKeySpec(spec)
		var fe *failure.Error
		if !errors.As(err, &fe) || fe.Kind != failure.KindConfigInvalid {
			t.Errorf("ParseKeySpec(%q) = %+v, %v", spec, s, err)
			continue
		}
		if !strings.Contains(err.Error(), "DATA_KEY") {
			t.Errorf("ParseKeySpec(%q): %q does not name DATA_KEY", spec, err)
		}
		if strings.Contains(err.Error(), localHex[:16]) || (len(spec) > 8 && strings.Contains(err.Error(), spec)) {
			t.Errorf("ParseKeySpec(%q): the error repeats the value: %q", spec, err)
		}
	}
}
