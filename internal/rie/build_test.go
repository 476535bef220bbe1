package rie_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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
