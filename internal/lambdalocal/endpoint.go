package lambdalocal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed-f6d3920e/warrant/internal/rie"
)

// Options configure an Endpoint.
type Options struct {
	// Functions maps each function's name to what it runs: a Go package
	// (an import path, or a directory from the working directory) that
	// Start builds as a bootstrap (rie.Build), or the path of a bootstrap
	// already built. Required.
	Functions map[string]string
	// Addr is the loopback address the endpoint listens on (default
	// 127.0.0.1:0, a free port).
	Addr string
	// Timeout is each function's timeout, whole seconds (default 60 s).
	Timeout time.Duration
	// Env is added to each function's environment (rie.Options.Env).
	Env []string
	// Log receives the emulators' output, which carries the functions' own
	// (nil: only the emulators' last 64 KiB are kept).
	Log io.Writer
	// Fault, when set, is asked about each Invoke request the endpoint
	// accepted (a function it serves, a JSON payload within Lambda's 6 MB)
	// before the function is called; n counts that function's accepted
	// requests from 1, faulted ones included. It may be called from several
	// goroutines at once.
	Fault func(function string, n int) Fault
}

// Endpoint is the Lambda Invoke API for a set of functions, each under an
// emulator of its own.
type Endpoint struct {
	url   string
	srv   *http.Server
	fns   map[string]*function
	fault func(string, int) Fault
	tmp   string // the build directory Start made, removed by Stop

	// ctx bounds the invocations: one the endpoint accepted runs to its
	// end whatever its caller does, until Stop.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	stopping bool
	calls    sync.WaitGroup // requests being served

	stopOnce sync.Once
	stopErr  error
}

// function is one function and its emulator.
type function struct {
	name     string
	emu      *rie.Emulator
	requests atomic.Int64
}

// nameRE is a function name as Lambda allows it.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Start builds the functions that are packages, starts an emulator for each
// and serves the Invoke API for them. The working directory must be inside
// the module (rie.Binary). Stop ends it all.
func Start(ctx context.Context, opts Options) (*Endpoint, error) {
	if len(opts.Functions) == 0 {
		return nil, errors.New("lambdalocal: Options.Functions is empty")
	}
	names := make([]string, 0, len(opts.Functions))
	for name := range opts.Functions {
		if !nameRE.MatchString(name) {
			return nil, fmt.Errorf("lambdalocal: %q is not a Lambda function name (letters, digits, - and _, at most 64)", name)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if host, _, err := net.SplitHostPort(addr); err != nil || !net.ParseIP(host).IsLoopback() {
		return nil, fmt.Errorf("lambdalocal: Addr %q is not a loopback IP address and port", addr)
	}

	e := &Endpoint{fns: map[string]*function{}, fault: opts.Fault}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	ok := false
	defer func() {
		if !ok {
			e.Stop()
		}
	}()
	bootstraps, err := e.build(ctx, opts.Functions)
	if err != nil {
		return nil, err
	}
	var log io.Writer
	if opts.Log != nil {
		log = &lockedWriter{w: opts.Log} // the emulators write at once
	}
	for _, name := range names {
		emu, err := rie.Start(ctx, rie.Options{Name: name, Bootstrap: bootstraps[opts.Functions[name]],
			Env: opts.Env, Log: log, Timeout: opts.Timeout})
		if err != nil {
			return nil, fmt.Errorf("lambdalocal: %w", err)
		}
		e.fns[name] = &function{name: name, emu: emu}
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("lambdalocal: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /2015-03-31/functions/{name}/invocations", e.invoke)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "UnknownOperationException", "lambdalocal serves Invoke only")
	})
	e.srv = &http.Server{Handler: e.track(mux), ReadHeaderTimeout: 10 * time.Second}
	e.url = "http://" + ln.Addr().String()
	go e.srv.Serve(ln)
	ok = true
	return e, nil
}

// build returns each function's bootstrap by its Functions value, building
// each package once.
func (e *Endpoint) build(ctx context.Context, specs map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for _, spec := range specs {
		if _, done := out[spec]; done {
			continue
		}
		if st, err := os.Stat(spec); err == nil && st.Mode().IsRegular() {
			out[spec] = spec
			continue
		}
		if e.tmp == "" {
			var err error
			if e.tmp, err = os.MkdirTemp("", "lambdalocal-"); err != nil {
				return nil, fmt.Errorf("lambdalocal: %w", err)
			}
		}
		bin, err := rie.Build(ctx, spec, filepath.Join(e.tmp, strconv.Itoa(len(out))))
		if err != nil {
			return nil, fmt.Errorf("lambdalocal: %w", err)
		}
		out[spec] = bin
	}
	return out, nil
}

// track counts the requests being served, so that Stop waits for them, and
// refuses those that come once Stop has begun.
func (e *Endpoint) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		if e.stopping {
			e.mu.Unlock()
			writeError(w, http.StatusServiceUnavailable, "ServiceException", "lambdalocal is stopping")
			return
		}
		e.calls.Add(1)
		e.mu.Unlock()
		defer e.calls.Done()
		next.ServeHTTP(w, r)
	})
}

// URL is the endpoint's base URL (http://127.0.0.1:PORT), an SDK client's
// BaseEndpoint.
func (e *Endpoint) URL() string { return e.url }

// Requests is how many Invoke requests for function the endpoint has
// accepted, faulted ones included.
func (e *Endpoint) Requests(function string) int {
	if fn := e.fns[function]; fn != nil {
		return int(fn.requests.Load())
	}
	return 0
}

// PIDs lists, by function name, the process ids the endpoint started for
// it: its emulator's and the bootstraps seen under it so far.
func (e *Endpoint) PIDs() map[string][]int {
	out := make(map[string][]int, len(e.fns))
	for name, fn := range e.fns {
		out[name] = fn.emu.PIDs()
	}
	return out
}

// Stop closes the listener and every connection, ends the emulators and
// their bootstraps, waits for the requests being served, and removes what
// Start built. It is safe to call more than once.
func (e *Endpoint) Stop() error {
	e.stopOnce.Do(func() {
		e.mu.Lock()
		e.stopping = true
		e.mu.Unlock()
		var errs []error
		if e.srv != nil {
			errs = append(errs, e.srv.Close())
		}
		e.cancel() // queued invocations give up
		for _, fn := range e.fns {
			errs = append(errs, fn.emu.Stop())
		}
		e.calls.Wait()
		if e.tmp != "" {
			errs = append(errs, os.RemoveAll(e.tmp))
		}
		e.stopErr = errors.Join(errs...)
	})
	return e.stopErr
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
