package seal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/seed-f6d3920e/warrant/pkg/seal"
)

// A run's key is made once and only its wrapped blob is stored; a later
// invocation opens the blob (once, through a Cache) to read the run's
// content back.
func Example() {
	ctx := context.Background()
	spec, err := seal.ParseKeySpec("aes:" + strings.Repeat("42", 32)) // DATA_KEY on the local stack
	if err != nil {
		panic(err)
	}
	ring, err := spec.Keyring(nil) // a KMS client for "kms:" specs
	if err != nil {
		panic(err)
	}

	key, wrapped, err := ring.NewRunKey(ctx, "firm-a", "run-1")
	if err != nil {
		panic(err)
	}
	stored, err := key.SealJSON("input", json.RawMessage(`{"to": "court@example.org"}`))
	if err != nil {
		panic(err)
	}
	key.Destroy()
	fmt.Println(seal.IsSealed(stored), strings.Contains(string(stored), "court"))

	cache := seal.NewCache(ring) // one per invocation
	defer cache.Clear()
	opened, err := cache.OpenRunKey(ctx, "firm-a", "run-1", wrapped)
	if err != nil {
		panic(err)
	}
	input, err := opened.OpenJSON("input", stored)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(input))
	// Output:
	// true false
	// {"to": "court@example.org"}
}
