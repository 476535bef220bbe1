package seal

import (
	"bytes"
	"errors"
	"testing"
)

// Two keys with the same bytes stand for a key shared by mistake: the
// additional data alone must still keep a value to its firm, run and field,
// and the length prefixes must keep ids from running into each other.
func TestAdditionalDataBindsFirmRunAndField(t *testing.T) {
	raw := func() []byte { return bytes.Repeat([]byte{7}, keySize) }
	mk := func(firm, run string) *RunKey {
		k, err := newRunKey(firm, run, raw())
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	k := mk("firm-a", "run-1")
	s, err := k.Seal("input", []byte("privileged"))
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := mk("firm-a", "run-1").Open("input", s); err != nil || string(pt) != "privileged" {
		t.Fatalf("same key bytes, same place: %q, %v", pt, err)
	}
	for _, other := range []struct {
		firm, run, field string
	}{
		{"firm-b", "run-1", "input"},
		{"firm-a", "run-2", "input"},
		{"firm-a", "run-1", "output"},
		{"firm-ar", "un-1", "input"}, // the same bytes, split elsewhere
		{"firm-a", "run-1input", ""},
	} {
		if pt, err := mk(other.firm, other.run).Open(other.field, s); !errors.Is(err, ErrCannotOpen) {
			t.Errorf("opened as %+v: %q, %v", other, pt, err)
		}
	}
}

func TestNewRunKeyZeroesWhatItWasGiven(t *testing.T) {
	raw := bytes.Repeat([]byte{7}, keySize)
	if _, err := newRunKey("f", "r", raw); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw, make([]byte, keySize)) {
		t.Fatal("the key bytes were left in the caller's buffer")
	}
}
