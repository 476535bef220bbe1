package rie

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/seed-f6d3920e/warrant/internal/proc"
)

// Options configure one emulator.
type Options struct {
	// Name is the function's name (AWS_LAMBDA_FUNCTION_NAME); required.
	Name string
	// Bootstrap is the path of the function's executable; required.
	Bootstrap string
	// Env is added to the minimal environment (see Start); a later entry
	// for the same variable wins.
	Env []string
	// Log receives the emulator's stdout and stderr, which carry the
	// function's own output. LogPath, when set, is a file opened for
	// appending and used as well. The last 64 KiB are also kept (LogTail).
	Log     io.Writer
	LogPath string
	// Timeout is the function timeout (AWS_LAMBDA_FUNCTION_TIMEOUT), whole
	// seconds; default 60 s.
	Timeout time.Duration
	// StartTimeout bounds the wait for the emulator to accept connections;
	// default 15 s.
	StartTimeout time.Duration
	// Binary is the emulator executable; default Binary(ctx).
	Binary string
}

// Emulator is one running emulator serving one function.
type Emulator struct {
	name, addr, apiAddr, bootstrap string

	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	logFile *os.File
	tail    *tailWriter
	client  *http.Client
	sem     chan struct{} // one invocation at a time

	mu   sync.Mutex
	seen []int // bootstrap PIDs seen under the emulator

	stopOnce sync.Once
	stopErr  error
}

// Start starts an emulator for opts.Bootstrap on two free loopback ports and
// waits until it accepts connections. The process gets a minimal
// environment: PATH, HOME, TMPDIR, AWS_REGION (default us-east-1), fake AWS
// credentials, AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE set to
// /dev/null (nothing read from ~/.aws), AWS_EC2_METADATA_DISABLED,
// AWS_LAMBDA_FUNCTION_NAME and AWS_LAMBDA_FUNCTION_TIMEOUT, then opts.Env.
// The emulator reads LOG_LEVEL itself. It runs in its own process group and,
// on Linux, is killed if this process dies.
func Start(ctx context.Context, opts Options) (*Emulator, error) {
	if opts.Name == "" || opts.Bootstrap == "" {
		return nil, errors.New("rie: Options.Name and Options.Bootstrap are required")
	}
	abs, err := filepath.Abs(opts.Bootstrap)
	if err != nil {
		return nil, fmt.Errorf("rie: %s: bootstrap: %w", opts.Name, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("rie: %s: bootstrap: %w", opts.Name, err)
	}
	opts.Bootstrap = abs
	bin := opts.Binary
	if bin == "" {
		var err error
		if bin, err = Binary(ctx); err != nil {
			return nil, err
		}
	}
	var lastErr error
	// Free ports are picked, then released for the emulator to bind: another
	// process may take one in between, so a start that fails is retried on
	// new ports.
	for attempt := 0; attempt < 3; attempt++ {
		e, err := start(ctx, bin, opts)
		if err == nil {
			return e, nil
		}
		lastErr = err
		if ctx.Err() != nil || !errors.Is(err, errExited) {
			break
		}
	}
	return nil, lastErr
}

// errExited marks an emulator that exited before it accepted connections
// (a port taken in between, say); Start retries those on new ports.
var errExited = errors.New("emulator exited")

// start is one attempt of Start on two newly picked ports.
func start(ctx context.Context, bin string, opts Options) (*Emulator, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, fmt.Errorf("rie: %s: %w", opts.Name, err)
	}
	e := &Emulator{
		name:      opts.Name,
		addr:      "127.0.0.1:" + strconv.Itoa(ports[0]),
		apiAddr:   "127.0.0.1:" + strconv.Itoa(ports[1]),
		bootstrap: opts.Bootstrap,
		done:      make(chan struct{}),
		sem:       make(chan struct{}, 1),
		tail:      &tailWriter{max: 64 << 10},
	}
	var sinks []io.Writer
	if opts.Log != nil {
		sinks = append(sinks, opts.Log)
	}
	if opts.LogPath != "" {
		f, err := os.OpenFile(opts.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("rie: %s: log: %w", opts.Name, err)
		}
		e.logFile = f
		sinks = append(sinks, f)
	}
	e.tail.sinks = sinks

	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	secs := int64((timeout + time.Second - 1) / time.Second)
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + homeDir(),
		"TMPDIR=" + os.TempDir(),
		"AWS_REGION=" + envOr("AWS_REGION", "us-east-1"),
		"AWS_ACCESS_KEY_ID=test",
		"AWS_SECRET_ACCESS_KEY=test",
		"AWS_CONFIG_FILE=/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_LAMBDA_FUNCTION_NAME=" + opts.Name,
		"AWS_LAMBDA_FUNCTION_TIMEOUT=" + strconv.FormatInt(secs, 10),
	}
	env = dedupEnv(append(env, opts.Env...))

	cmd := exec.Command(bin,
		"--runtime-interface-emulator-address", e.addr,
		"--runtime-api-address", e.apiAddr,
		opts.Bootstrap)
	cmd.Env = env
	cmd.Dir = filepath.Dir(opts.Bootstrap)
	cmd.Stdout, cmd.Stderr = e.tail, e.tail
	cmd.SysProcAttr = proc.Group()
	// The bootstrap inherits the output pipe; if it outlived the emulator,
	// Wait would block on it.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		e.closeLog()
		return nil, fmt.Errorf("rie: %s: start emulator: %w", opts.Name, err)
	}
	e.cmd = cmd
	go func() { e.waitErr = cmd.Wait(); close(e.done) }()
	e.client = &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}}

	wait := opts.StartTimeout
	if wait <= 0 {
		wait = 15 * time.Second
	}
	deadline := time.Now().Add(wait)
	for {
		c, err := net.DialTimeout("tcp", e.addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return e, nil
		}
		select {
		case <-e.done:
			e.closeLog()
			return nil, fmt.Errorf("rie: %s: %w at start (%v); log tail:\n%s", opts.Name, errExited, e.waitErr, e.LogTail(2048))
		case <-ctx.Done():
			_ = e.Stop()
			return nil, fmt.Errorf("rie: %s: start: %w", opts.Name, ctx.Err())
		case <-time.After(25 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = e.Stop()
			return nil, fmt.Errorf("rie: %s: emulator did not accept connections on %s within %s; log tail:\n%s", opts.Name, e.addr, wait, e.LogTail(2048))
		}
	}
}

// Name is the function's name.
func (e *Emulator) Name() string { return e.name }

// Addr is the emulator's invoke address, 127.0.0.1:PORT.
func (e *Emulator) Addr() string { return e.addr }

// Bootstrap is the absolute path of the function's executable.
func (e *Emulator) Bootstrap() string { return e.bootstrap }

// RuntimeAPIAddr is the runtime API address the bootstrap talks to.
func (e *Emulator) RuntimeAPIAddr() string { return e.apiAddr }

// URL is the emulator's invoke URL.
func (e *Emulator) URL() string { return "http://" + e.addr + InvokePath }

// PID is the emulator process's id (also its process group id).
func (e *Emulator) PID() int { return e.cmd.Process.Pid }

// Done is closed when the emulator process has exited.
func (e *Emulator) Done() <-chan struct{} { return e.done }

// BootstrapPIDs are the bootstrap processes seen under the emulator so far
// (the emulator starts the bootstrap on the first invocation, and again
// after it dies).
func (e *Emulator) BootstrapPIDs() []int {
	e.noteChildren()
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.seen)
}

// PIDs is the emulator's PID followed by BootstrapPIDs.
func (e *Emulator) PIDs() []int { return append([]int{e.PID()}, e.BootstrapPIDs()...) }

// noteChildren records the emulator's current children (its bootstraps),
// so Stop can end them after they have left its process group.
func (e *Emulator) noteChildren() {
	select {
	case <-e.done:
		return // its children, if any, are no longer its children
	default:
	}
	kids := proc.Children(e.PID())
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, k := range kids {
		if !slices.Contains(e.seen, k) {
			e.seen = append(e.seen, k)
		}
	}
}

// LogTail returns up to the last n bytes of the emulator's output.
func (e *Emulator) LogTail(n int) string { return e.tail.last(n) }

// Stop ends the emulator and every bootstrap it started: SIGTERM to their
// process groups, then SIGKILL to whatever is left after 3 s. It waits for
// them to exit and is safe to call more than once.
func (e *Emulator) Stop() error {
	e.stopOnce.Do(func() { e.stopErr = e.stop() })
	return e.stopErr
}

// stop is Stop's one run.
func (e *Emulator) stop() error {
	e.noteChildren()
	e.mu.Lock()
	kids := slices.Clone(e.seen)
	e.mu.Unlock()
	pid := e.PID()
	signalAll := func(sig syscall.Signal) {
		for _, k := range kids {
			if proc.Alive(k) {
				proc.KillGroup(k, sig)
			}
		}
		select {
		case <-e.done:
		default:
			proc.KillGroup(pid, sig)
		}
	}
	signalAll(syscall.SIGTERM)
	allGone := func() bool {
		select {
		case <-e.done:
		default:
			return false
		}
		for _, k := range kids {
			if proc.Alive(k) {
				return false
			}
		}
		return true
	}
	if !waitFor(3*time.Second, allGone) {
		signalAll(syscall.SIGKILL)
		if !waitFor(5*time.Second, allGone) {
			e.closeLog()
			return fmt.Errorf("rie: %s: processes still running after SIGKILL (emulator %d, bootstraps %v)", e.name, pid, kids)
		}
	}
	if t, ok := e.client.Transport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
	e.closeLog()
	return nil
}

// closeLog closes Options.LogPath's file, if one was opened.
func (e *Emulator) closeLog() {
	if e.logFile != nil {
		_ = e.logFile.Close()
	}
}

// waitFor polls cond every 20 ms for up to d and reports whether it held.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
