package dynamotest

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/internal/proc"
)

// The moto_server process is shared by every test of the binary: it is slow
// to start (1-2 s). It starts on first use and Main stops it.
var motoServer struct {
	once    sync.Once
	url     string
	err     error
	cmd     *exec.Cmd
	done    chan struct{}
	logPath string
	// serial: moto_server handles requests on threads without a lock around
	// DynamoDB operations. A conditional put checks, then writes; a
	// canceled TransactWriteItems restores a deep copy of the whole table
	// taken before it ran, erasing whatever another request committed
	// meanwhile. So requests to it are sent one at a time.
	serial sync.Mutex
}

// errMotoMissing means moto_server is not on PATH.
var errMotoMissing = errors.New("moto_server not found on PATH (pip install 'moto[server]')")

// Moto returns an endpoint on the shared moto_server, started on a free
// loopback port on first use. Without moto_server it skips the test, or
// fails it when CI=true: a missing fidelity endpoint must fail CI. Use Main
// in TestMain so the server is stopped.
func Moto(t testing.TB) *Endpoint {
	t.Helper()
	ep, err := moto(t)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("dynamotest: moto is required in CI: %v", err)
		}
		t.Skipf("dynamotest: %v", err)
	}
	return ep
}

// MotoForProcesses is Moto's address for programs the test starts (a whole
// stack of functions): a loopback proxy that sends moto_server one request
// at a time, holding the same lock as the test's own clients, so that
// several processes' transactions do not erase each other's writes (see
// motoServer.serial). It lives until the test ends.
func MotoForProcesses(t testing.TB) string {
	t.Helper()
	Moto(t) // started, or the test skipped (failed with CI=true)
	m := &motoServer
	target, err := url.Parse(m.url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The whole answer is written while the lock is held: the server
		// has applied the request once it answers.
		m.serial.Lock()
		defer m.serial.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func moto(t testing.TB) (*Endpoint, error) {
	m := &motoServer
	m.once.Do(func() { m.url, m.err = startMoto() })
	if m.err != nil {
		return nil, m.err
	}
	counter, faults := &Counter{}, &Faults{}
	return &Endpoint{
		Name:              "moto",
		URL:               m.url,
		Client:            newClient(t, m.url, counter, faults, &m.serial),
		Counter:           counter,
		Faults:            faults,
		ReportsAllReasons: true,
		Lenient:           []string{LenientSerialized},
	}, nil
}

func startMoto() (string, error) {
	path, err := exec.LookPath("moto_server")
	if err != nil {
		return "", errMotoMissing
	}
	port, err := freePort()
	if err != nil {
		return "", err
	}
	logf, err := os.CreateTemp("", "dynamotest-moto-*.log")
	if err != nil {
		return "", err
	}
	defer logf.Close() // the child has its own descriptor
	cmd := exec.Command(path, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group (so stopping it reaches any child it forks),
	// killed by the kernel if the test binary dies without running Main's
	// cleanup. The moto_server shim execs down to python, keeping the pid.
	cmd.SysProcAttr = proc.Group()
	if err := cmd.Start(); err != nil {
		os.Remove(logf.Name())
		return "", fmt.Errorf("start moto_server: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	motoServer.cmd, motoServer.done, motoServer.logPath = cmd, done, logf.Name()

	url := "http://127.0.0.1:" + strconv.Itoa(port)
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(url + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			return url, nil
		}
		select {
		case <-done:
			return "", fmt.Errorf("moto_server exited at start; output in %s", logf.Name())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stopMoto()
			return "", fmt.Errorf("moto_server did not answer on %s within 30s", url)
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// stopMoto stops moto_server and its process group, by its pid: SIGTERM,
// then SIGKILL if it has not exited within 5 s.
func stopMoto() {
	m := &motoServer
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	pid := m.cmd.Process.Pid
	proc.KillGroup(pid, syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(5 * time.Second):
		proc.KillGroup(pid, syscall.SIGKILL)
		<-m.done
	}
	m.cmd = nil
}

// Main runs the tests and then stops anything they started. Call it from
// TestMain:
//
//	func TestMain(m *testing.M) { dynamotest.Main(m) }
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main for a TestMain with more to do after the tests: it runs them,
// stops moto and returns the exit code.
func Run(m *testing.M) int {
	code := m.Run()
	stopMoto()
	if motoServer.logPath != "" {
		if code == 0 {
			os.Remove(motoServer.logPath)
		} else {
			fmt.Fprintf(os.Stderr, "dynamotest: moto_server output kept in %s\n", motoServer.logPath)
		}
	}
	return code
}
