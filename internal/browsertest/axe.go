package browsertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// axe-core (https://github.com/dequelabs/axe-core), the accessibility
// checker the browser tests run on every page and state of the desk. It is
// installed from npm once per machine into the user's cache directory (the
// test needs npm: under CI=true a missing npm fails the test, elsewhere it
// skips it with the reason, as the browser tests do for Chromium).
const axeVersion = "4.14.1"

var axeOnce struct {
	sync.Once
	src string
	err error
}

// AxeSource is axe.min.js, installed if need be.
func AxeSource(t testing.TB) string {
	t.Helper()
	axeOnce.Do(func() { axeOnce.src, axeOnce.err = installAxe() })
	if axeOnce.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("axe-core: %v", axeOnce.err)
		}
		t.Skipf("axe-core is not available, so the accessibility checks cannot run: %v", axeOnce.err)
	}
	return axeOnce.src
}

// installAxe installs axe-core@axeVersion with npm into
// <cache>/warrant-desk/axe-core-<version> (a temporary directory beside it
// first, renamed into place, so two test processes never see half an
// install) and returns axe.min.js.
func installAxe() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "warrant-desk", "axe-core-"+axeVersion)
	script := filepath.Join(dir, "node_modules", "axe-core", "axe.min.js")
	if b, err := os.ReadFile(script); err == nil {
		return string(b), nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", errors.New("no npm on PATH (Debian: apt-get install -y npm)")
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command(npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix", tmp, "axe-core@"+axeVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install axe-core@%s: %v\n%s", axeVersion, err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(script); statErr != nil { // not another process's install
			return "", err
		}
	}
	b, err := os.ReadFile(script)
	return string(b), err
}

// axeViolation is one rule axe found broken, with the elements that break it.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	URL    string `json:"helpUrl"`
	Nodes  []struct {
		Target  []any  `json:"target"`
		HTML    string `json:"html"`
		Summary string `json:"failureSummary"`
	} `json:"nodes"`
}

// runAxe runs axe-core (every rule it runs by default: WCAG 2.x A and AA
// and its best practices) on the page of ctx as it is now.
func runAxe(ctx context.Context, src string) ([]axeViolation, error) {
	// Evaluated as a DevTools script, which the page's
	// Content-Security-Policy does not govern (the page itself could not
	// load it: its policy allows its own scripts only).
	loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`typeof axe !== 'undefined'`))
	if err != nil {
		return nil, fmt.Errorf("inject axe-core: %w", err)
	}
	if !loaded {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](src+"\n;null")); err != nil {
			return nil, fmt.Errorf("inject axe-core: %w", err)
		}
	}
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](`axe.run(document, {resultTypes: ['violations']}).then((r) => JSON.stringify(r.violations))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		return nil, fmt.Errorf("axe.run: %w", err)
	}
	var vs []axeViolation
	if err := json.Unmarshal([]byte(raw), &vs); err != nil {
		return nil, err
	}
	return vs, nil
}

// CheckAxe fails the test on any violation axe finds on the page of ctx
// in the state named state, printing each.
func CheckAxe(t *testing.T, ctx context.Context, state string) {
	t.Helper()
	vs, err := runAxe(ctx, AxeSource(t))
	if err != nil {
		t.Fatalf("axe on %s: %v", state, err)
	}
	if len(vs) == 0 {
		t.Logf("axe: %s: 0 violations", state)
		return
	}
	t.Errorf("axe: %s: %d violations:\n%s", state, len(vs), describeViolations(vs))
}

func describeViolations(vs []axeViolation) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "  %s (%s): %s <%s>\n", v.ID, v.Impact, v.Help, v.URL)
		for _, n := range v.Nodes {
			fmt.Fprintf(&b, "    %v %s\n      %s\n", n.Target, n.HTML, strings.ReplaceAll(n.Summary, "\n", "\n      "))
		}
	}
	return b.String()
}
