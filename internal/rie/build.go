package rie

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/seed-f6d3920e/warrant/internal/proc"
)

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

// goBuild runs `go build -tags lambda.norpc -trimpath -o out pkgs...` for
// the host, CGO off; a failure is a *BuildError naming the package the
// compiler complained about first.
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
