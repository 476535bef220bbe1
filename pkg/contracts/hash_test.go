package contracts

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The RFC 8785 vectors: every input canonicalizes to its published output.
func TestCanonicalizeRFC8785Vectors(t *testing.T) {
	inputs, err := filepath.Glob("testdata/jcs/input/*.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata/jcs/output", filepath.Base(in)))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Canonicalize(src)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, bytes.TrimRight(want, "\n")) {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func TestInputHash(t *testing.T) {
	a, err := InputHash([]byte(`{"b": 2, "a": [1.0, "x"], "c": {"z": true, "y": null}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := InputHash([]byte(`{"a":[1,"x"],"c":{"y":null,"z":true},"b":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("same document, different hashes: %s %s", a, b)
	}
	// sha256 of the canonical bytes {"a":1}
	if h, _ := InputHash([]byte(`{ "a" : 1 }`)); h != "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862" {
		t.Fatalf("hash = %s", h)
	}
	if c, _ := InputHash([]byte(`{"a":2}`)); c == a {
		t.Fatal("different documents share a hash")
	}
	for _, bad := range []string{`{"a":1,"a":2}`, `{"a":1} x`, ``, `{"a":}`} {
		if _, err := InputHash([]byte(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("InputHash(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestIsHash(t *testing.T) {
	if !IsHash(ZeroHash) || IsHash("ABC") || IsHash(ZeroHash[:63]+"G") {
		t.Fatal("IsHash misjudges")
	}
}
