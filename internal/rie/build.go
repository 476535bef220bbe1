package rie

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
// builds it for the Lambda provided.al2023 runtime (-tags lambda.norpc,
// CGO_ENABLED=0) but for the host's GOOS/GOARCH, so the emulator
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
	return BuildAllShared(ctx, pkgs, outDir, "")
}

// BuildAllShared is BuildAll through shared, a directory of binaries kept
// between calls (made if missing; "" means a temporary one): the one `go
// build -o shared/` links only the binaries whose inputs changed since the
// last call (an unchanged one is not linked again: `go build` compares its
// build ID), and each is then hard-linked (copied where the file system
// will not link) to <outDir>/<name>/bootstrap. Callers take turns on
// shared/.lock, so concurrent stacks never write one file at once. A
// rebuild replaces a file in shared (a new inode; `go build` never writes
// into the old one), so a bootstrap already linked out, and perhaps
// running, is never changed under it.
func BuildAllShared(ctx context.Context, pkgs map[string]string, outDir, shared string) (map[string]string, error) {
	outDir, err := filepath.Abs(outDir)
	if err != nil {
		return nil, fmt.Errorf("rie: build: %w", err)
	}
	if shared == "" {
		shared = filepath.Join(outDir, ".bin")
		defer os.RemoveAll(shared)
	} else if shared, err = filepath.Abs(shared); err != nil {
		return nil, fmt.Errorf("rie: build: %w", err)
	}
	if err := os.MkdirAll(shared, 0o755); err != nil {
		return nil, fmt.Errorf("rie: build: %w", err)
	}
	unlock, err := proc.Lock(filepath.Join(shared, ".lock"))
	if err != nil {
		return nil, fmt.Errorf("rie: build: %w", err)
	}
	defer unlock()
	names := make([]string, 0, len(pkgs))
	for n := range pkgs {
		names = append(names, n)
	}
	slices.Sort(names)
	var list []string
	for _, n := range names {
		list = append(list, pkgs[n])
	}
	if err := goBuild(ctx, shared+string(os.PathSeparator), list...); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, n := range names {
		dir := filepath.Join(outDir, n)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("rie: build: %w", err)
		}
		dst := filepath.Join(dir, "bootstrap")
		if err := linkOrCopy(filepath.Join(shared, filepath.Base(pkgs[n])), dst); err != nil {
			return nil, fmt.Errorf("rie: build %s: %w", pkgs[n], err)
		}
		out[n] = dst
	}
	return out, nil
}

// linkOrCopy puts src's bytes at dst (replacing dst): a hard link, or a
// copy where the file system will not link.
func linkOrCopy(src, dst string) error {
	if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if os.Link(src, dst) == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	o, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(o, in); err != nil {
		o.Close()
		return err
	}
	return o.Close()
}

// goBuild runs `go build -tags lambda.norpc -ldflags=-s -w -o out
// pkgs...` for the host, CGO off; a failure is a *BuildError naming the
// package the compiler complained about first. No -trimpath (unlike the
// deployed build): the emulator (`go tool aws-lambda-rie`, built without
// it) then shares every compiled standard package with the bootstraps, on
// an empty cache the larger part of its build (docs/DECISIONS.md).
func goBuild(ctx context.Context, out string, pkgs ...string) error {
	args := append([]string{"build", "-tags", "lambda.norpc", "-ldflags=-s -w", "-o", out}, pkgs...)
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
