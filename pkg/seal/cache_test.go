package seal_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/seed-f6d3920e/warrant/pkg/seal"
)

// One invocation, many goroutines reading one run's content: one Decrypt.
func TestCacheOneDecryptPerRun(t *testing.T) {
	c := motoKMS(t)
	keyID := createKey(t, c)
	k, wrapped := newKey(t, seal.NewKMSKeyring(c, keyID), "firm-a", "run-1")
	stored, err := k.SealJSON("text", json.RawMessage(`"the model's words"`))
	if err != nil {
		t.Fatal(err)
	}

	// The first Decrypt is held until every caller has started, so they
	// overlap with it as far as the scheduler lets them.
	const n = 16
	var started sync.WaitGroup
	started.Add(n)
	rec := &recordingKMS{next: c, beforeDecrypt: started.Wait}
	cache := seal.NewCache(seal.NewKMSKeyring(rec, keyID))
	keys := make([]*seal.RunKey, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			started.Done()
			key, err := cache.OpenRunKey(t.Context(), "firm-a", "run-1", wrapped)
			if err != nil {
				t.Error(err)
				return
			}
			keys[i] = key
			if got, err := key.OpenJSON("text", stored); err != nil || string(got) != `"the model's words"` {
				t.Errorf("OpenJSON = %s, %v", got, err)
			}
		})
	}
	wg.Wait()
	if got := rec.decrypts(); got != 1 {
		t.Fatalf("%d Decrypts for %d opens of one run, want 1", got, n)
	}
	for _, key := range keys {
		if key != keys[0] {
			t.Fatal("callers got different keys")
		}
	}

	// Forget destroys the key for every holder; the next open decrypts again.
	cache.Forget("firm-a", "run-1")
	if _, err := keys[0].OpenJSON("text", stored); !errors.Is(err, seal.ErrKeyUnavailable) {
		t.Fatalf("a forgotten key still opens: %v", err)
	}
	if _, err := cache.OpenRunKey(t.Context(), "firm-a", "run-1", wrapped); err != nil {
		t.Fatal(err)
	}
	if got := rec.decrypts(); got != 2 {
		t.Fatalf("%d Decrypts after a Forget, want 2", got)
	}
	cache.Clear()
}

// The invocation that makes a run's key never decrypts it.
func TestCacheRemembersTheKeyItMade(t *testing.T) {
	c := motoKMS(t)
	rec := &recordingKMS{next: c}
	cache := seal.NewCache(seal.NewKMSKeyring(rec, createKey(t, c)))
	made, wrapped := newKey(t, cache, "firm-a", "run-1")
	opened, err := cache.OpenRunKey(t.Context(), "firm-a", "run-1", wrapped)
	if err != nil || opened != made {
		t.Fatalf("OpenRunKey = %p, %v; made %p", opened, err, made)
	}
	if rec.decrypts() != 0 || len(rec.gens) != 1 {
		t.Fatalf("%d GenerateDataKey, %d Decrypt", len(rec.gens), rec.decrypts())
	}
	cache.Clear()
	if _, err := made.Seal("text", []byte("x")); !errors.Is(err, seal.ErrKeyUnavailable) {
		t.Fatalf("Clear left the key usable: %v", err)
	}
}

// A failed open is not remembered, and only the blob asked about answers
// for a run (two invocations racing to make its key each hold one).
func TestCacheFailuresAndBlobs(t *testing.T) {
	local := localRing(t)
	_, blob1 := newKey(t, local, "firm-a", "run-1")
	_, blob2 := newKey(t, local, "firm-a", "run-1")
	fail := true
	var opens int
	ring := keyringFunc(func(ctx context.Context, firm, run string, wrapped []byte) (*seal.RunKey, error) {
		opens++
		if fail {
			fail = false
			return nil, &kmstypes.KMSInternalException{}
		}
		return local.OpenRunKey(ctx, firm, run, wrapped)
	})
	cache := seal.NewCache(ring)
	if _, err := cache.OpenRunKey(t.Context(), "firm-a", "run-1", blob1); err == nil {
		t.Fatal("the failure was not passed on")
	}
	k1, err := cache.OpenRunKey(t.Context(), "firm-a", "run-1", blob1)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := cache.OpenRunKey(t.Context(), "firm-a", "run-1", blob2)
	if err != nil || k1 == k2 {
		t.Fatalf("another blob: %p, %v (first %p)", k2, err, k1)
	}
	s, err := k2.Seal("text", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k1.Open("text", s); !errors.Is(err, seal.ErrCannotOpen) {
		t.Fatalf("blob 1's key opens blob 2's value: %v", err)
	}
	if opens != 3 {
		t.Fatalf("%d opens, want 3", opens)
	}
}

// keyringFunc is a Keyring that only opens.
type keyringFunc func(ctx context.Context, firm, run string, wrapped []byte) (*seal.RunKey, error)

func (f keyringFunc) NewRunKey(context.Context, string, string) (*seal.RunKey, []byte, error) {
	return nil, nil, errors.New("not used")
}

func (f keyringFunc) OpenRunKey(ctx context.Context, firm, run string, wrapped []byte) (*seal.RunKey, error) {
	return f(ctx, firm, run, wrapped)
}
