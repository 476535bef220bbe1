package seal

import (
	"encoding/hex"
	"errors"
	"regexp"
	"strings"

	"github.com/seed-f6d3920e/warrant/pkg/failure"
)

// KeySpec is the data key as configured in DATA_KEY: "kms:" and the firm's
// KMS key (a key ARN, key id, alias name or alias ARN of a customer-managed
// symmetric key), or, on the local stack only, "aes:" and 64 hex digits (a
// 32-byte master key for a LocalKeyring). Its String never shows a local
// key.
type KeySpec struct {
	// KMSKeyID is the KMS key, or "" for a local key.
	KMSKeyID string
	local    []byte
}

var (
	keyIDForm  = `(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mrk-[0-9a-f]{32})`
	aliasForm  = `alias/[A-Za-z0-9/_-]{1,250}`
	kmsKeyForm = regexp.MustCompile(`^(?:` + keyIDForm + `|` + aliasForm + `|arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:(?:key/` + keyIDForm + `|` + aliasForm + `))$`)
	awsManaged = regexp.MustCompile(`(?:^|:)alias/aws/`)
)

func invalidDataKey(why string) error {
	return failure.New(failure.KindConfigInvalid, "environment variable DATA_KEY "+why)
}

// ParseKeySpec reads DATA_KEY. Its errors are config_invalid, name
// DATA_KEY and never repeat the value (it may hold a key).
func ParseKeySpec(spec string) (KeySpec, error) {
	kind, val, _ := strings.Cut(strings.TrimSpace(spec), ":")
	switch kind {
	case "kms":
		switch {
		case awsManaged.MatchString(val):
			return KeySpec{}, invalidDataKey("must name a customer-managed KMS key, not an AWS managed alias/aws/... key")
		case !kmsKeyForm.MatchString(val):
			return KeySpec{}, invalidDataKey(`must be "kms:" and a KMS key ARN, key id, alias/<name> or alias ARN`)
		}
		return KeySpec{KMSKeyID: val}, nil
	case "aes":
		key, err := hex.DecodeString(val)
		switch {
		case err != nil || len(key) != keySize:
			return KeySpec{}, invalidDataKey(`must be "aes:" and exactly 64 hex digits (a 32-byte key)`)
		case isZero(key):
			return KeySpec{}, invalidDataKey(`holds an all-zero "aes:" key`)
		}
		return KeySpec{local: key}, nil
	}
	return KeySpec{}, invalidDataKey(`must be "kms:<key ARN, key id or alias>" or, on the local stack only, "aes:<64 hex digits>"`)
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// Local reports whether the spec is a local key ("aes:").
func (s KeySpec) Local() bool { return s.local != nil }

// String is "kms:<key>" or "aes:(local key)".
func (s KeySpec) String() string {
	if s.Local() {
		return "aes:(local key)"
	}
	return "kms:" + s.KMSKeyID
}

// GoString is String, so %#v does not print a local key either.
func (s KeySpec) GoString() string { return s.String() }

// Keyring returns the keyring the spec names: a KMSKeyring over client, or a
// LocalKeyring (client unused, may be nil).
func (s KeySpec) Keyring(client KMSClient) (Keyring, error) {
	switch {
	case s.Local():
		return NewLocalKeyring(s.local)
	case s.KMSKeyID == "":
		return nil, errors.New("seal: an empty KeySpec (use ParseKeySpec)")
	case client == nil:
		return nil, errors.New("seal: a KMS data key needs a KMS client")
	}
	return NewKMSKeyring(client, s.KMSKeyID), nil
}
