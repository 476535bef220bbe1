// Package rie runs Lambda function bootstraps under the AWS Lambda Runtime
// Interface Emulator pinned in go.mod (`go tool aws-lambda-rie`), the emulator
// `sam local invoke` runs inside its container, without Docker.
//
// One Emulator is one function: its own emulator process on two loopback
// ports of its own (the invoke API and the runtime API the bootstrap talks
// to), in its own process group. The emulator serves one invocation at a
// time (two at once crash it), so Invoke queues callers. Stop ends the
// emulator and the bootstrap it started (which the emulator puts in a
// process group of its own) by their PIDs: nothing is left running.
//
// Unix only (process groups); the emulator itself is Linux-first.
package rie

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/seed-f6d3920e/warrant/internal/proc"
)

// InvokePath is the emulator's invoke route (the Lambda Invoke API's).
const InvokePath = "/2015-03-31/functions/function/invocations"

var binary struct {
	mu   sync.Mutex
	path string
}

// Binary returns the path of the pinned emulator binary, as `go tool -n
// aws-lambda-rie` names it (building it into the Go build cache if needed).
// Run that binary directly rather than through `go tool`, so that the
// emulator is the process Stop signals and no `go` parent is left behind.
// The working directory must be inside the module.
func Binary(ctx context.Context) (string, error) {
	binary.mu.Lock()
	defer binary.mu.Unlock()
	if binary.path != "" {
		return binary.path, nil
	}
	cmd := exec.CommandContext(ctx, "go", "tool", "-n", "aws-lambda-rie")
	cmd.SysProcAttr = proc.Group() // its compiler processes die with it
	cmd.Cancel = func() error { proc.KillGroup(cmd.Process.Pid, syscall.SIGKILL); return nil }
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("rie: go tool -n aws-lambda-rie: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	path := strings.TrimSpace(string(out))
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("rie: go tool -n aws-lambda-rie named %q: %w", path, err)
	}
	binary.path = path
	return path, nil
}

// BuildError is a failed `go build` of a bootstrap, with the compiler output.
type BuildError struct {
	Pkg    string
	Output string
	Err    error
}

func (e *BuildError) Error() string {
	out := strings.TrimSpace(e.Output)
	if out == "" {
		return fmt.Sprintf("rie: build %s: %v", e.Pkg, e.Err)
	}
	return fmt.Sprintf("rie: build %s: %v\n%s", e.Pkg, e.Err, out)
}

func (e *BuildError) Unwrap() error { return e.Err }

// FirstLine is the first compiler message (the line to show a person), or
// the exec error when the compiler said nothing.
func (e *BuildError) FirstLine() string {
	for _, l := range strings.Split(e.Output, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	return e.Err.Error()
}

// Build compiles pkg (an import path, or a directory or ./relative path
// from the working directory) as <outDir>/bootstrap, the way the Makefile
// builds it for the Lambda provided.al2023 runtime (-tags lambda.norpc
// -trimpath, CGO_ENABLED=0) but for the host's GOOS/GOARCH, so the emulator
// can exec it here. A failed build is a *BuildError carrying the compiler
// output.
func Build(ctx context.Context, pkg, outDir string) (string, error) {
	outDir, err := filepath.Abs(outDir)
	if err != nil {
		return "", fmt.Errorf("rie: build %s: %w", pkg, err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", fmt.Errorf("rie: build %s: %w", pkg, err)
	}
	out := filepath.Join(outDir, "bootstrap")
	if err := goBuild(ctx, out, pkg); err != nil {
		return "", err
	}
	return out, nil
}

// BuildAll builds several bootstraps with one `go build` (each dependency
// compiled once, the links in parallel): pkgs maps a name to its package,
// and each lands in <outDir>/<name>/bootstrap. It returns the paths by name.
// The packages' last path elements must differ. A failure is a *BuildError
// whose Pkg is the package the compiler complained about first.
func BuildAll(ctx context.Context, pkgs map[string]string, outDir string) (map[string]string, error) {
	outDir, err := filepath.Abs(outDir)
	if err != nil {
		return nil, fmt.Errorf("rie: build: %w", err)
	}
	tmp := filepath.Join(outDir, ".bin")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("rie: build: %w", err)
	}
	defer os.RemoveAll(tmp)
	names := make([]string, 0, len(pkgs))
	for n := range pkgs {
		names = append(names, n)
	}
	slices.Sort(names)
	var list []string
	for _, n := range names {
		list = append(list, pkgs[n])
	}
	if err := goBuild(ctx, tmp+string(os.PathSeparator), list...); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, n := range names {
		dir := filepath.Join(outDir, n)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("rie: build: %w", err)
		}
		dst := filepath.Join(dir, "bootstrap")
		if err := os.Rename(filepath.Join(tmp, filepath.Base(pkgs[n])), dst); err != nil {
			return nil, fmt.Errorf("rie: build %s: %w", pkgs[n], err)
		}
		out[n] = dst
	}
	return out, nil
}

func goBuild(ctx context.Context, out string, pkgs ...string) error {
	args := append([]string{"build", "-tags", "lambda.norpc", "-trimpath", "-o", out}, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
	// A group of its own, killed whole when ctx ends: the compiler and
	// linker processes go with it.
	cmd.SysProcAttr = proc.Group()
	cmd.Cancel = func() error { proc.KillGroup(cmd.Process.Pid, syscall.SIGKILL); return nil }
	cmd.WaitDelay = 5 * time.Second
	b, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	pkg := strings.Join(pkgs, " ")
	if len(pkgs) > 1 {
		// "# <import path>" heads each failing package's messages.
		for _, l := range strings.Split(string(b), "\n") {
			if p, ok := strings.CutPrefix(l, "# "); ok {
				pkg = strings.TrimSpace(p)
				break
			}
		}
	}
	return &BuildError{Pkg: pkg, Output: string(b), Err: err}
}

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

var errExited = errors.New("emulator exited")

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

// FunctionError is an invocation the function (or its runtime) answered with
// an error document, {"errorMessage", "errorType"}: a handler that returned
// an error, a panic, or a bootstrap that exited (Runtime.ExitError).
type FunctionError struct {
	Type       string   `json:"errorType"`
	Message    string   `json:"errorMessage"`
	StackTrace []string `json:"stackTrace,omitempty"`
	// Status is the emulator's HTTP status (200 for a handler error, 502
	// for a failed init).
	Status int `json:"-"`
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("function error %s: %s", e.Type, e.Message)
}

// Invoke sends payload to the function and returns its response payload.
// Calls are queued: the emulator never sees two at once. A function error
// is a *FunctionError; ctx bounds the wait in the queue and the call.
func (e *Emulator) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("rie: %s: invoke: %w", e.name, ctx.Err())
	}
	defer func() { <-e.sem }()
	defer e.noteChildren()
	select {
	case <-e.done:
		return nil, fmt.Errorf("rie: %s: invoke: emulator is not running (%v)", e.name, e.waitErr)
	default:
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL(), bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("rie: %s: invoke: %w", e.name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("rie: %s: invoke: read response: %w", e.name, err)
	}
	if fe := asFunctionError(resp, body); fe != nil {
		return nil, fe
	}
	if resp.StatusCode == http.StatusBadGateway && len(bytes.TrimSpace(body)) == 0 {
		// The emulator's answer when the bootstrap exited (during init or the
		// invocation) without posting an error: its log says why.
		return nil, e.exitError()
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("rie: %s: invoke: emulator answered %d: %s", e.name, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// exitError describes a bootstrap that exited, from the emulator's log.
func (e *Emulator) exitError() *FunctionError {
	fe := &FunctionError{Type: "Runtime.ExitError", Status: http.StatusBadGateway,
		Message: "the function exited (emulator answered 502); see its log"}
	// Let the emulator finish logging the failure.
	time.Sleep(50 * time.Millisecond)
	for _, l := range strings.Split(e.LogTail(16<<10), "\n") {
		if _, after, ok := strings.Cut(l, "[ERROR] (rapid) "); ok {
			fe.Message = strings.TrimSpace(after)
			break // the first error is the cause; later ones follow from it
		}
	}
	return fe
}

// asFunctionError recognizes the Lambda error document: a JSON object whose
// only members are errorMessage, errorType and stackTrace. A handler's own
// payload (an API Gateway response, a batch response) never has that shape.
func asFunctionError(resp *http.Response, body []byte) *FunctionError {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return nil
	}
	_, hasType := m["errorType"]
	_, hasMsg := m["errorMessage"]
	if !hasType && !hasMsg {
		return nil
	}
	for k := range m {
		if k != "errorType" && k != "errorMessage" && k != "stackTrace" {
			return nil
		}
	}
	fe := &FunctionError{Status: resp.StatusCode}
	if json.Unmarshal(body, fe) != nil {
		fe = &FunctionError{Status: resp.StatusCode, Message: string(body)}
	}
	if fe.Type == "" {
		fe.Type = resp.Header.Get("X-Amz-Function-Error")
	}
	return fe
}

// Stop ends the emulator and every bootstrap it started: SIGTERM to their
// process groups, then SIGKILL to whatever is left after 3 s. It waits for
// them to exit and is safe to call more than once.
func (e *Emulator) Stop() error {
	e.stopOnce.Do(func() { e.stopErr = e.stop() })
	return e.stopErr
}

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

func (e *Emulator) closeLog() {
	if e.logFile != nil {
		_ = e.logFile.Close()
	}
}

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

// tailWriter fans the output out to sinks and keeps its last max bytes.
type tailWriter struct {
	mu    sync.Mutex
	sinks []io.Writer
	buf   []byte
	max   int
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.sinks {
		_, _ = s.Write(p) // a failing log sink must not stop the emulator
	}
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailWriter) last(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if n > 0 && len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a free loopback port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func dedupEnv(env []string) []string {
	idx := map[string]int{}
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			out[i] = kv
			continue
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	return out
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func homeDir() string {
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	return os.TempDir()
}
