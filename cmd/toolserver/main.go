// Command toolserver serves Warrant's reference tools (pkg/tools: two matter
// reads, a draft, an e-mail, a filing, a deletion) on loopback only, as an
// MCP server over Streamable HTTP at /mcp (pkg/tools/mcpserver) and as an
// HTTPS-style endpoint at /https/<tool> (pkg/tools/httpserver: one POST a
// call, what Warrant's https target sends; plain http, as loopback allows).
// Their effects are
// recorded as the functions record them: one OUT#<effect_ref> item in the
// run's partition of the functions' table, at most once per effect_ref.
//
// Usage:
//
//	toolserver [-addr 127.0.0.1:0]
//
// -addr must be a loopback IP and a port (127.0.0.1:0, the default, picks a
// free port; [::1]:PORT); anything else is refused with exit status 2. Once
// it listens, toolserver prints exactly one line to stdout, the URL of its
// MCP endpoint:
//
//	http://127.0.0.1:PORT/mcp
//
// and nothing else there; the HTTP endpoint's base URL is the same origin's
// /https/. Its log (stderr, JSON lines) names each call's
// tool, outcome and run ids, never an input or a result.
//
// Environment, as the functions read it: TABLE_NAME (required), and the AWS
// SDK's own configuration: AWS_REGION, AWS_ENDPOINT_URL_DYNAMODB (the local
// stack's DynamoDB), credentials.
//
// SIGINT or SIGTERM stops it: no new connections, calls in flight finish
// (for up to 10 s), exit status 0. Exit status 1: the table's configuration
// does not load, or it cannot listen or serve.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/seed-f6d3920e/warrant/internal/wire"
	"github.com/seed-f6d3920e/warrant/pkg/failure"
	"github.com/seed-f6d3920e/warrant/pkg/tools"
	"github.com/seed-f6d3920e/warrant/pkg/tools/httpserver"
	"github.com/seed-f6d3920e/warrant/pkg/tools/mcpserver"
	"github.com/seed-f6d3920e/warrant/pkg/tools/serve"
)

// Path is where the MCP endpoint is served, HTTPSPath the HTTP endpoint's
// base; every other path is 404.
const (
	Path      = "/mcp"
	HTTPSPath = "/https/"
)

// shutdownGrace is how long calls in flight may take to finish once a
// signal came.
const shutdownGrace = 10 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command: it serves until ctx ends and returns the exit status.
func run(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("toolserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "the loopback `ADDR` (IP:port) to listen on; port 0 picks a free one")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "toolserver: unexpected arguments %v\n", fs.Args())
		return 2
	}
	if err := loopback(*addr); err != nil {
		fmt.Fprintf(stderr, "toolserver: -addr %q: %v\n", *addr, err)
		return 2
	}
	logger := failure.NewLogger(stderr)
	outbox, err := wire.Outbox(ctx, lookup)
	if err != nil {
		logger.Log(ctx, failure.Build(err, failure.StageConfig, "toolserver", failure.Identity{}))
		return 1
	}
	reference := tools.Reference(outbox, nil)
	srv, err := mcpserver.New(reference, mcpserver.Options{
		Annotations: mcpserver.ReferenceAnnotations(), Logger: logger})
	if err != nil {
		logger.Log(ctx, failure.Build(err, failure.StageConfig, "toolserver", failure.Identity{}))
		return 1
	}
	set, err := serve.New(reference)
	if err != nil {
		logger.Log(ctx, failure.Build(err, failure.StageConfig, "toolserver", failure.Identity{}))
		return 1
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "toolserver: listen on %s: %v\n", *addr, err)
		return 1
	}
	mux := http.NewServeMux()
	mux.Handle(Path, mcpserver.Handler(srv))
	mux.Handle(HTTPSPath, http.StripPrefix(strings.TrimSuffix(HTTPSPath, "/"), httpserver.Handler(set, logger)))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(l) }()

	url := "http://" + l.Addr().String() + Path
	fmt.Fprintln(stdout, url)
	logger.Info(ctx, "ready", "url", url)

	select {
	case err := <-served:
		fmt.Fprintf(stderr, "toolserver: serve: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		fmt.Fprintf(stderr, "toolserver: shutdown: %v\n", err)
		return 1
	}
	logger.Info(context.Background(), "stopped")
	return 0
}

// loopback accepts an IP literal on the loopback network and a port. A host
// name is refused, localhost included: what it resolves to is not this
// command's to vouch for.
func loopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() || ip.Zone() != "" {
		return errors.New("not a loopback IP address (use 127.0.0.1:PORT or [::1]:PORT): the server has no authentication")
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return err
	}
	return nil
}
