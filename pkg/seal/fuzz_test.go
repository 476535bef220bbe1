package seal_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/seal"
)

// FuzzOpen feeds arbitrary stored bytes to OpenJSON. It must never panic,
// and it may open only a ciphertext this key sealed for the field (the
// fuzzer may re-space or re-order a real stored form; that still opens, to
// the same plaintext). Everything else is ErrCannotOpen.
func FuzzOpen(f *testing.F) {
	k, _ := newKey(f, localRing(f), "firm-a", "run-1")
	sealedFor := map[string]string{} // ciphertext -> plaintext, sealed for "input"
	for _, pt := range []string{`"draft"`, `{"to":"a@b.example","body":"x"}`, `[]`, `0`} {
		stored, err := k.SealJSON("input", json.RawMessage(pt))
		if err != nil {
			f.Fatal(err)
		}
		var s seal.Sealed
		if err := json.Unmarshal(stored, &s); err != nil {
			f.Fatal(err)
		}
		sealedFor[string(s)] = pt
		f.Add([]byte(stored))
	}
	other, err := k.SealJSON("output", json.RawMessage(`"elsewhere"`))
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(other))
	f.Add([]byte(`{"sealed":"v1","ct":"` + base64.StdEncoding.EncodeToString(make([]byte, 40)) + `"}`))
	f.Add([]byte(`"draft"`))
	f.Add([]byte(`{"ct":"","sealed":"v1"}`))

	f.Fuzz(func(t *testing.T, stored []byte) {
		pt, err := k.OpenJSON("input", stored)
		if err != nil {
			if pt != nil || !errors.Is(err, seal.ErrCannotOpen) {
				t.Fatalf("OpenJSON = %q, %v", pt, err)
			}
			return
		}
		if !seal.IsSealed(stored) {
			t.Fatalf("opened %q, which IsSealed rejects", stored)
		}
		var s seal.Sealed
		if err := json.Unmarshal(stored, &s); err != nil {
			t.Fatalf("opened %q, which does not unmarshal: %v", stored, err)
		}
		want, ok := sealedFor[string(s)]
		if !ok || !bytes.Equal(pt, []byte(want)) {
			t.Fatalf("opened %q to %q: not a value this key sealed", stored, pt)
		}
	})
}
