package seal

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Cache is a Keyring that opens each run's key at most once: the first
// OpenRunKey of a (firm, run, blob) asks the keyring beneath, concurrent
// ones wait for that answer, and later ones get the same key. A key made by
// NewRunKey is remembered too, so the run that made it never decrypts it.
// A failed open is not remembered: the next OpenRunKey asks again.
//
// Make one Cache per function invocation and Clear it when the invocation
// ends: a cache that outlives it would hold keys in memory after a
// destruction has removed their blobs from the store.
type Cache struct {
	ring Keyring
	mu   sync.Mutex
	keys map[cacheKey]*cacheEntry
}

// The blob is part of the key: two invocations racing to make a run's key
// each hold one, and only the blob the store kept may answer for the run.
type cacheKey struct{ firm, run, wrapped string }

// cacheEntry is one open; done is closed when key or err is set.
type cacheEntry struct {
	done chan struct{}
	key  *RunKey
	err  error
}

// testHookWaiting, when set by a test, is called each time an OpenRunKey
// starts waiting for another's open of the same key.
var testHookWaiting func()

// NewCache returns an empty cache over ring.
func NewCache(ring Keyring) *Cache {
	return &Cache{ring: ring, keys: map[cacheKey]*cacheEntry{}}
}

var _ Keyring = (*Cache)(nil)

// NewRunKey makes a key with the keyring beneath and remembers it.
func (c *Cache) NewRunKey(ctx context.Context, firmID, runID string) (*RunKey, []byte, error) {
	k, wrapped, err := c.ring.NewRunKey(ctx, firmID, runID)
	if err != nil {
		return nil, nil, err
	}
	e := &cacheEntry{done: make(chan struct{}), key: k}
	close(e.done)
	c.mu.Lock()
	c.keys[cacheKey{firmID, runID, string(wrapped)}] = e
	c.mu.Unlock()
	return k, wrapped, nil
}

// OpenRunKey returns the run's key, opening it with the keyring beneath at
// most once however many goroutines ask. A caller whose context ends while
// it waits returns the context's error; if the caller doing the open gives
// up on its context, a waiter whose own context is live opens it itself.
func (c *Cache) OpenRunKey(ctx context.Context, firmID, runID string, wrapped []byte) (*RunKey, error) {
	ck := cacheKey{firmID, runID, string(wrapped)}
	for {
		c.mu.Lock()
		e, ok := c.keys[ck]
		if !ok {
			e = &cacheEntry{done: make(chan struct{})}
			c.keys[ck] = e
			c.mu.Unlock()
			return c.open(ctx, ck, e, wrapped)
		}
		c.mu.Unlock()
		if hook := testHookWaiting; hook != nil {
			hook()
		}
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		switch {
		case e.err == nil:
			return e.key, nil
		case ctx.Err() == nil && (errors.Is(e.err, context.Canceled) || errors.Is(e.err, context.DeadlineExceeded)):
			continue // the opener's context ended, not ours: try again
		}
		return nil, e.err
	}
}

func (c *Cache) open(ctx context.Context, ck cacheKey, e *cacheEntry, wrapped []byte) (key *RunKey, err error) {
	defer func() {
		c.mu.Lock()
		switch {
		case err != nil:
			if c.keys[ck] == e {
				delete(c.keys, ck)
			}
		case c.keys[ck] != e:
			// Forgotten (or cleared) while it was being opened: the key
			// must not outlive the Forget.
			key.Destroy()
			key, err = nil, fmt.Errorf("seal: the run's key was forgotten while it was opened: %w", ErrKeyUnavailable)
		}
		e.key, e.err = key, err
		c.mu.Unlock()
		close(e.done)
	}()
	// Should the keyring panic, the waiters get this error, not a nil key.
	err = errors.New("seal: the keyring panicked while opening a run's key")
	return c.ring.OpenRunKey(ctx, ck.firm, ck.run, wrapped)
}

// Forget destroys the run's keys held by the cache (Destroy: every holder of
// one can no longer seal or open with it) and drops them; an open in flight
// for the run returns ErrKeyUnavailable.
func (c *Cache) Forget(firmID, runID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ck, e := range c.keys {
		if ck.firm == firmID && ck.run == runID {
			c.drop(ck, e)
		}
	}
}

// Clear forgets every key.
func (c *Cache) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ck, e := range c.keys {
		c.drop(ck, e)
	}
}

// drop removes an entry; c.mu is held. An entry still being opened has no
// key yet: open sees it gone and destroys what it gets.
func (c *Cache) drop(ck cacheKey, e *cacheEntry) {
	delete(c.keys, ck)
	select {
	case <-e.done:
		e.key.Destroy()
	default:
	}
}
