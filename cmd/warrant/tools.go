package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/mcp"
	"github.com/seed-f6d3920e/warrant/pkg/secrets"
	"github.com/seed-f6d3920e/warrant/pkg/toolpolicy"
)

// errCheckFailed is a catalog that does not pass tools check: the report
// says why, line by line.
var errCheckFailed = errors.New("the catalog does not pass")

// toolsCheckCmd validates a tool catalog before it is published: it loads
// (as the functions load it), every server it names is reached and offers
// every tool with exactly the schema the catalog pins (on drift the
// server's current hash is printed, for a catalog that means to follow it),
// and the risk policy lists every tool (an unlisted one would be denied).
func toolsCheckCmd(args []string, stdout io.Writer) error {
	fs := newFlags("tools check")
	catalogFile := fs.String("catalog", "", "the tool catalog `FILE` (required)")
	policyFile := fs.String("policy", "", "the risk policy `FILE` the catalog is used with (default: the embedded policy)")
	timeout := fs.Duration("timeout", 20*time.Second, "how long each server has to answer")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || *catalogFile == "" {
		return usageErr("tools check takes --catalog FILE [--policy FILE]")
	}
	doc, err := os.ReadFile(*catalogFile)
	if err != nil {
		return err
	}
	cat, err := catalog.Parse(doc)
	if err != nil {
		return fmt.Errorf("%s: %w", *catalogFile, err)
	}
	policy, err := toolpolicy.Embedded()
	if *policyFile != "" {
		policy, err = toolpolicy.LoadFile(*policyFile)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "catalog %s: %d tool(s), %d server(s), version %s\n", *catalogFile, len(cat.Tools), len(cat.Servers), cat.Version)
	problems := 0
	problem := func(format string, args ...any) {
		problems++
		fmt.Fprintf(stdout, "  PROBLEM "+format+"\n", args...)
	}
	var sm mcp.Secrets
	for _, name := range sortedNames(cat.Servers) {
		srv := cat.Servers[name]
		switch srv.Kind {
		case catalog.TargetHTTPS:
			// An endpoint publishes no tool list to compare: its tools'
			// schemas are the catalog's own. Reaching its origin (TCP, and
			// TLS for https) sends no call.
			fmt.Fprintf(stdout, "server %s (%s, https):\n", name, srv.URL)
			if err := reachOrigin(srv.URL, *timeout); err != nil {
				problem("not reached: %v", err)
				continue
			}
			fmt.Fprintf(stdout, "  ok reached; its tools' schemas are the catalog's own (nothing to compare)\n")
			continue
		case catalog.TargetLambda:
			fmt.Fprintf(stdout, "server %s (%s, lambda):\n", name, srv.Function)
			fmt.Fprintf(stdout, "  not reached: the worker's role invokes it (the stack's ToolFunctionArns must list this ARN); its tools' schemas are the catalog's own\n")
			continue
		}
		fmt.Fprintf(stdout, "server %s (%s):\n", name, srv.URL)
		if srv.Auth.Kind != catalog.AuthNone && sm == nil {
			sm = awsSecrets()
		}
		offered, err := serverTools(srv, sm, *timeout)
		if err != nil {
			problem("not reached: %v", err)
			continue
		}
		for _, tname := range cat.Names() {
			t := cat.Tools[tname]
			if t.Target.Kind != catalog.TargetMCP || t.Target.Server != name {
				continue
			}
			rt, ok := offered[t.Target.Tool]
			switch {
			case !ok:
				problem("%s: the server offers no tool %s", tname, t.Target.Tool)
			case rt.SchemaSHA256 != t.Target.SchemaSHA256:
				problem("%s: the server's %s has another schema: pinned %s, the server's is %s", tname, t.Target.Tool, t.Target.SchemaSHA256, rt.SchemaSHA256)
			default:
				fmt.Fprintf(stdout, "  ok %s: %s, schema %s\n", tname, t.Target.Tool, t.Target.SchemaSHA256)
			}
		}
	}
	fmt.Fprintf(stdout, "policy %s:\n", policy.Version())
	for _, tname := range cat.Names() {
		t := cat.Tools[tname]
		if t.Target.Kind == catalog.TargetBuiltin {
			fmt.Fprintf(stdout, "  builtin %s: runs in process\n", tname)
		}
		floor, listed := policy.Floor(tname)
		if !listed {
			problem("%s: the policy does not list it, so every call of it is denied", tname)
			continue
		}
		fmt.Fprintf(stdout, "  ok %s: %s (%s)\n", tname, floor, t.Class)
	}
	if problems > 0 {
		fmt.Fprintf(stdout, "check: %d problem(s)\n", problems)
		return errCheckFailed
	}
	fmt.Fprintln(stdout, "check: ok")
	return nil
}

// reachOrigin connects to the URL's origin (and shakes hands for https)
// within timeout, sending nothing.
func reachOrigin(raw string, timeout time.Duration) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	addr := net.JoinHostPort(u.Hostname(), port)
	d := &net.Dialer{Timeout: timeout}
	if u.Scheme == "https" {
		conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12})
		if err != nil {
			return err
		}
		return conn.Close()
	}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return err
	}
	return conn.Close()
}

// serverTools reaches an MCP server as the functions do and returns the
// tools it offers, by name.
func serverTools(srv catalog.Server, sm mcp.Secrets, timeout time.Duration) (map[string]mcp.RemoteTool, error) {
	return reachServer(srv, sm, nil, timeout)
}

// reachServer lists an MCP server's tools with pkg/mcp's target (hc nil:
// the target's own transport), by name.
func reachServer(srv catalog.Server, sm mcp.Secrets, hc *http.Client, timeout time.Duration) (map[string]mcp.RemoteTool, error) {
	t, err := mcp.New(mcpConfig(srv, sm, hc))
	if err != nil {
		return nil, err
	}
	defer t.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	list, err := t.Tools(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]mcp.RemoteTool, len(list))
	for _, rt := range list {
		out[rt.Name] = rt
	}
	return out, nil
}

// mcpConfig is the target configuration of a catalog's MCP server, as the
// worker builds it.
func mcpConfig(srv catalog.Server, sm mcp.Secrets, hc *http.Client) mcp.Config {
	return mcp.Config{Name: srv.Name, URL: srv.URL, Secrets: sm, HTTPClient: hc,
		Auth: mcp.Auth{Kind: mcp.AuthKind(srv.Auth.Kind), TokenSecretID: srv.Auth.Secret, TokenURL: srv.Auth.TokenURL,
			ClientID: srv.Auth.ClientID, ClientSecretID: srv.Auth.ClientSecret, Scopes: srv.Auth.Scopes},
		OnServerRequest: func(string) {}}
}

// awsSecrets reads the servers' credentials with the operator's AWS
// configuration, as the worker does with its role.
func awsSecrets() mcp.Secrets {
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		return secretsUnavailable{err}
	}
	return &secrets.Manager{Client: secretsmanager.NewFromConfig(cfg)}
}

type secretsUnavailable struct{ err error }

func (s secretsUnavailable) GetSecret(context.Context, string) (string, error) {
	return "", fmt.Errorf("AWS configuration: %w", s.err)
}

func sortedNames[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
