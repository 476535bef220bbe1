package rie_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/seed-f6d3920e/warrant/internal/rie"
)

// TestBuildFailure: a bootstrap that does not compile is a *BuildError
// carrying the compiler's message.
func TestBuildFailure(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { undefinedThing() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := rie.Build(context.Background(), src, filepath.Join(dir, "out"))
	var be *rie.BuildError
	if !errors.As(err, &be) {
		t.Fatalf("Build = %v, want a *BuildError", err)
	}
	if !strings.Contains(be.FirstLine(), "undefined: undefinedThing") || !strings.Contains(err.Error(), "undefinedThing") {
		t.Fatalf("build error %q (first line %q) does not carry the compiler output", err, be.FirstLine())
	}
}

// TestBuildAllShared: two stacks building at once through one shared
// directory take turns and get the same binaries; a build that finds them
// up to date links nothing (the file is the same inode); and a rebuild
// replaces a shared binary without changing a bootstrap already linked
// out of it (one may be running).
func TestBuildAllShared(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared")
	pkgs := map[string]string{"toolfn": module + "/cmd/toolfn", "toolserver": module + "/cmd/toolserver"}
	outs := make([]map[string]string, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = rie.BuildAllShared(ctx, pkgs, filepath.Join(dir, fmt.Sprint("stack", i)), shared)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("stack %d: %v", i, err)
		}
	}
	ino := func(p string) uint64 {
		t.Helper()
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Sys().(*syscall.Stat_t).Ino
	}
	for name := range pkgs {
		if a, b, s := ino(outs[0][name]), ino(outs[1][name]), ino(filepath.Join(shared, name)); a != s || b != s {
			t.Fatalf("%s: the stacks' bootstraps (inodes %d, %d) are not the shared binary (%d)", name, a, b, s)
		}
	}
	before, err := os.ReadFile(outs[0]["toolfn"])
	if err != nil {
		t.Fatal(err)
	}
	// Up to date: nothing linked again.
	again, err := rie.BuildAllShared(ctx, pkgs, filepath.Join(dir, "stack2"), shared)
	if err != nil {
		t.Fatal(err)
	}
	if ino(again["toolfn"]) != ino(outs[0]["toolfn"]) {
		t.Fatal("an up-to-date build linked toolfn again")
	}
	// A shared binary that is not what the build would make (as after a
	// source change) is replaced; the bootstrap linked out keeps its bytes.
	if err := os.Remove(filepath.Join(shared, "toolfn")); err != nil {
		t.Fatal(err)
	}
	other, err := os.ReadFile(outs[0]["toolserver"]) // a Go binary, not toolfn's
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shared, "toolfn"), other, 0o755); err != nil {
		t.Fatal(err)
	}
	third, err := rie.BuildAllShared(ctx, pkgs, filepath.Join(dir, "stack3"), shared)
	if err != nil {
		t.Fatal(err)
	}
	rebuilt, err := os.ReadFile(third["toolfn"])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rebuilt, before) {
		t.Fatalf("the rebuilt toolfn (%d bytes) differs from the first build (%d bytes)", len(rebuilt), len(before))
	}
	kept, err := os.ReadFile(outs[0]["toolfn"])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(kept, before) {
		t.Fatal("the rebuild changed a bootstrap already linked out")
	}
}
