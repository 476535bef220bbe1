package seal

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// gatedKeyring opens keys only when the test says: each OpenRunKey reports
// on entered, then waits for release (or its context).
type gatedKeyring struct {
	opens   atomic.Int64
	entered chan struct{}
	release chan struct{}
	panics  bool
}

func newGated() *gatedKeyring {
	return &gatedKeyring{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (g *gatedKeyring) NewRunKey(context.Context, string, string) (*RunKey, []byte, error) {
	panic("not used")
}

func (g *gatedKeyring) OpenRunKey(ctx context.Context, firm, run string, _ []byte) (*RunKey, error) {
	g.opens.Add(1)
	g.entered <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if g.panics {
		panic("keyring bug")
	}
	return newRunKey(firm, run, bytes.Repeat([]byte{9}, keySize))
}

// waiters counts callers that reach the wait on another's open.
func waiters(t *testing.T) <-chan struct{} {
	ch := make(chan struct{}, 64)
	testHookWaiting = func() { ch <- struct{}{} }
	t.Cleanup(func() { testHookWaiting = nil })
	return ch
}

func TestCacheOpensOnceForConcurrentCallers(t *testing.T) {
	waiting := waiters(t)
	g := newGated()
	c := NewCache(g)
	const n = 8
	keys := make([]*RunKey, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { keys[i], errs[i] = c.OpenRunKey(t.Context(), "f", "r", []byte("blob")) })
	}
	<-g.entered
	for range n - 1 {
		<-waiting // every other caller is waiting on the one open
	}
	close(g.release)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || keys[i] == nil || keys[i] != keys[0] {
			t.Fatalf("caller %d: %p, %v (caller 0 %p)", i, keys[i], errs[i], keys[0])
		}
	}
	if k, err := c.OpenRunKey(t.Context(), "f", "r", []byte("blob")); err != nil || k != keys[0] {
		t.Fatalf("a later open: %p, %v", k, err)
	}
	if got := g.opens.Load(); got != 1 {
		t.Fatalf("%d opens, want 1", got)
	}
}

// The caller doing the open gives up; a waiter whose context is live is not
// handed that caller's cancellation but opens the key itself.
func TestCacheOpenerCanceledWaiterOpens(t *testing.T) {
	waiting := waiters(t)
	g := newGated()
	c := NewCache(g)
	ctx, cancel := context.WithCancel(t.Context())
	openerErr := make(chan error, 1)
	go func() {
		_, err := c.OpenRunKey(ctx, "f", "r", []byte("blob"))
		openerErr <- err
	}()
	<-g.entered
	type result struct {
		k   *RunKey
		err error
	}
	waiter := make(chan result, 1)
	go func() {
		k, err := c.OpenRunKey(t.Context(), "f", "r", []byte("blob"))
		waiter <- result{k, err}
	}()
	<-waiting
	cancel()
	if err := <-openerErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("opener: %v", err)
	}
	select {
	case <-g.entered: // the waiter's own open
	case r := <-waiter:
		t.Fatalf("waiter given up with the opener: %v, %v", r.k, r.err)
	}
	close(g.release)
	if r := <-waiter; r.err != nil || r.k == nil {
		t.Fatalf("waiter: %v, %v", r.k, r.err)
	}
	if got := g.opens.Load(); got != 2 {
		t.Fatalf("%d opens, want 2", got)
	}
}

func TestCacheWaiterCanceled(t *testing.T) {
	waiting := waiters(t)
	g := newGated()
	c := NewCache(g)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := c.OpenRunKey(t.Context(), "f", "r", []byte("blob")); err != nil {
			t.Errorf("opener: %v", err)
		}
	}()
	<-g.entered
	ctx, cancel := context.WithCancel(t.Context())
	waiterErr := make(chan error, 1)
	go func() {
		_, err := c.OpenRunKey(ctx, "f", "r", []byte("blob"))
		waiterErr <- err
	}()
	<-waiting
	cancel()
	if err := <-waiterErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiter: %v", err)
	}
	close(g.release)
	<-done
}

// A Forget while the key is being opened wins: the open's key is destroyed
// and its callers told so, and the next open starts afresh.
func TestCacheForgetDuringOpen(t *testing.T) {
	g := newGated()
	c := NewCache(g)
	type result struct {
		k   *RunKey
		err error
	}
	res := make(chan result, 1)
	go func() {
		k, err := c.OpenRunKey(t.Context(), "f", "r", []byte("blob"))
		res <- result{k, err}
	}()
	<-g.entered
	c.Forget("f", "r")
	close(g.release)
	if r := <-res; r.k != nil || !errors.Is(r.err, ErrKeyUnavailable) {
		t.Fatalf("open across a Forget: %v, %v", r.k, r.err)
	}
	k, err := c.OpenRunKey(t.Context(), "f", "r", []byte("blob"))
	if err != nil || k.cipher() == nil {
		t.Fatalf("open after the Forget: %v, %v", k, err)
	}
	if got := g.opens.Load(); got != 2 {
		t.Fatalf("%d opens, want 2", got)
	}
}

func TestCacheKeyringPanics(t *testing.T) {
	waiting := waiters(t)
	g := newGated()
	g.panics = true
	c := NewCache(g)
	recovered := make(chan any, 1)
	go func() {
		defer func() { recovered <- recover() }()
		c.OpenRunKey(t.Context(), "f", "r", []byte("blob"))
	}()
	<-g.entered
	waiterErr := make(chan error, 1)
	go func() {
		k, err := c.OpenRunKey(t.Context(), "f", "r", []byte("blob"))
		if k != nil {
			err = errors.New("a key after a panic")
		}
		waiterErr <- err
	}()
	<-waiting
	close(g.release)
	if p := <-recovered; p == nil {
		t.Fatal("the panic was swallowed")
	}
	if err := <-waiterErr; err == nil {
		t.Fatal("the waiter got no error")
	}
}
