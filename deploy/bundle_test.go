package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/pkg/config"
)

// readsDocuments reports whether a function reads a document a "file:" source
// can name (config.FunctionVars).
func readsDocuments(pkg string) bool {
	return slices.ContainsFunc(config.FunctionVars[pkg], func(v string) bool {
		return v == "TOOL_POLICY" || v == "TOOL_CATALOG" || v == "AGENTS"
	})
}

// TestMakefileBundlesTheDocuments: the build target of every function that
// reads a document (and only those) copies BUNDLE_DIR into its artifacts
// before building its bootstrap, so the bootstrap is the binary whatever
// the folder holds.
func TestMakefileBundlesTheDocuments(t *testing.T) {
	data, err := os.ReadFile(makefilePath)
	if err != nil {
		t.Fatal(err)
	}
	mf := parseMakefile(string(data))
	if got := mf.vars["BUNDLE_DIR"]; got != "bundle" {
		t.Errorf("BUNDLE_DIR defaults to %q, want bundle (docs/DEPLOY.md)", got)
	}
	if got := mf.expand("$(LAMBDA_BUNDLE)"); got != `bash deploy/bundle.sh "bundle" "$(ARTIFACTS_DIR)"` {
		t.Errorf("LAMBDA_BUNDLE is %s", got)
	}
	for _, id := range keys(functionPackages) {
		recipe := mf.rules["build-"+id]
		i := slices.Index(recipe, "$(LAMBDA_BUNDLE)")
		switch reads := readsDocuments(functionPackages[id]); {
		case reads && i < 0:
			t.Errorf("build-%s: %s reads TOOL_POLICY, TOOL_CATALOG or AGENTS but its recipe does not copy the bundle ($(LAMBDA_BUNDLE)): %v", id, id, recipe)
		case !reads && i >= 0:
			t.Errorf("build-%s: copies the bundle into a function that reads no document", id)
		case reads && i > slices.IndexFunc(recipe, func(l string) bool { return strings.HasPrefix(l, "$(LAMBDA_GOBUILD)") }):
			t.Errorf("build-%s: copies the bundle after building the bootstrap: %v", id, recipe)
		}
	}
}

// TestBundleBuild runs the worker's build target as sam build does (make
// build-WorkerFunction with ARTIFACTS_DIR), with GO=true standing in for the
// Go build, and finds the bundle's files in the artifacts at the paths a
// "file:" source names; a missing folder copies nothing, and a symbolic link
// or a bootstrap in the folder fails the build before anything is copied.
func TestBundleBuild(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	build := func(bundle string) (string, string, error) {
		artifacts := filepath.Join(t.TempDir(), "WorkerFunction")
		cmd := exec.Command("make", "-s", "build-WorkerFunction", "GO=true", "ARTIFACTS_DIR="+artifacts, "BUNDLE_DIR="+bundle)
		cmd.Dir = root
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return artifacts, out.String(), err
	}
	files := map[string]string{
		"tool_catalog.json":       `{"tools": {}}`,
		"agents.json":             `{"agents": {}}`,
		"prompts/dms.txt":         "You file documents.",
		"firm-7/tool_policy.json": `{"extends": "embedded"}`,
	}
	bundle := t.TempDir()
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(bundle, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bundle, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	artifacts, out, err := build(bundle)
	if err != nil {
		t.Fatalf("make build-WorkerFunction: %v\n%s", err, out)
	}
	for name, body := range files {
		if got, err := os.ReadFile(filepath.Join(artifacts, name)); err != nil || string(got) != body {
			t.Errorf("artifacts/%s: %q, %v; want %q", name, got, err, body)
		}
	}

	artifacts, out, err = build(filepath.Join(t.TempDir(), "none"))
	if entries, _ := os.ReadDir(artifacts); err != nil || len(entries) != 0 {
		t.Errorf("without a bundle folder: %v, artifacts %v; want success and nothing copied\n%s", err, entries, out)
	}

	for name, bad := range map[string]func(dir string) error{
		"a symbolic link": func(dir string) error { return os.Symlink("/etc/hostname", filepath.Join(dir, "catalog.json")) },
		"a bootstrap": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "bootstrap"), []byte("#!/bin/sh\n"), 0o755)
		},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "agents.json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := bad(dir); err != nil {
			t.Fatal(err)
		}
		artifacts, out, err := build(dir)
		if _, statErr := os.Stat(filepath.Join(artifacts, "agents.json")); err == nil || statErr == nil {
			t.Errorf("a bundle with %s: make %v, agents.json copied: %v; want the build refused, nothing copied\n%s", name, err, statErr == nil, out)
		}
	}
}

// TestBundlePathPattern: the *File parameters take a path inside the bundle,
// never out of it.
func TestBundlePathPattern(t *testing.T) {
	raw := rawTemplate(t)
	pattern := regexp.MustCompile(str(get(raw, "Parameters", "ToolPolicyFile", "AllowedPattern")))
	for path, ok := range map[string]bool{
		"": true, "tool_catalog.json": true, "firm-7/tool_policy.json": true, "prompts/v2/dms.txt": true,
		"../tool_catalog.json": false, "/etc/passwd": false, "./a.json": false, "a/../../b": false, ".env": false,
		"a b.json": false, "a//b": false, "a/": false, "a\\b": false,
	} {
		if pattern.MatchString(path) != ok {
			t.Errorf("%q: admitted %v, want %v", path, !ok, ok)
		}
	}
}
