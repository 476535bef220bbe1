package rie

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/seed-f6d3920e/warrant/internal/proc"
)

// binary caches the path Binary found, for the life of the process.
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
	// CGO off, as the bootstraps build (goBuild): on an empty cache the
	// emulator then reuses their compiled standard library.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
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
