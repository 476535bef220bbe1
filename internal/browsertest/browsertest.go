// Package browsertest starts the headless Chromium the desk's browser tests
// drive (github.com/chromedp/chromedp). Missing, the browser fails the test
// under CI=true (.ci/run installs Debian's package) and skips it elsewhere
// with the install command.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"
)

// Install is the command that installs the browser on Debian.
const Install = "apt-get update && apt-get install -y chromium"

// Chromium returns the browser's path.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no Chromium on PATH; CI installs it (.ci/run): %s", Install)
	}
	t.Skipf("no Chromium on PATH; install it to run the browser test: %s", Install)
	return ""
}

// Browser starts a headless Chromium for the test and returns the context
// of its first tab; it is stopped when the test ends.
func Browser(t testing.TB) context.Context {
	t.Helper()
	path := Chromium(t)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 1400))...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return ctx
}
