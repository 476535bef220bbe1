// Command demo walks the local stack through a real scenario over its HTTP
// API only: a run held on a court filing, counsel's warrant, the resume that
// files exactly once, a replay and another firm refused, the stream
// projection catching up and the ledger export verified. Start the stack
// first (`make run`, or `go run ./cmd/localapi`); `localapi -demo` runs the
// same walkthrough itself.
//
// Exit status: 0 every check passed, 1 a check failed (the last line names
// it), 2 usage error.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/seed-f6d3920e/warrant/internal/walkthrough"
)

func main() {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	base := fs.String("base-url", "http://127.0.0.1:3000", "the local API's base `URL`")
	logDir := fs.String("log-dir", "", "`DIR` for the ledger export (default a new temp dir)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "demo: unexpected arguments %v\n", fs.Args())
		os.Exit(2)
	}
	if *logDir != "" {
		if err := os.MkdirAll(*logDir, 0o755); err != nil {
			fmt.Fprintf(os.Stderr, "demo: %v\n", err)
			os.Exit(1)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := walkthrough.Run(ctx, walkthrough.Config{BaseURL: *base, LogDir: *logDir, Out: os.Stdout}); err != nil {
		os.Exit(1)
	}
}
