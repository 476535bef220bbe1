package seal_test

import (
	"bytes"
	"encoding/json"
	"testing"
)

// A JSON string of n bytes, as a tool input or a model's text would be.
func jsonValue(n int) json.RawMessage {
	return json.RawMessage(`"` + string(bytes.Repeat([]byte("a"), n-2)) + `"`)
}

var sizes = []struct {
	name string
	n    int
}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}}

// BenchmarkSeal is SealJSON: encrypt and write the stored form.
func BenchmarkSeal(b *testing.B) {
	k, _ := newKey(b, localRing(b), "firm-a", "run-1")
	for _, sz := range sizes {
		v := jsonValue(sz.n)
		b.Run(sz.name, func(b *testing.B) {
			b.SetBytes(int64(sz.n))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := k.SealJSON("input", v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOpen is OpenJSON on the form SealJSON writes.
func BenchmarkOpen(b *testing.B) {
	k, _ := newKey(b, localRing(b), "firm-a", "run-1")
	for _, sz := range sizes {
		stored, err := k.SealJSON("input", jsonValue(sz.n))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(sz.name, func(b *testing.B) {
			b.SetBytes(int64(sz.n))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := k.OpenJSON("input", stored); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
