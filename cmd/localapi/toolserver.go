package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/seed-f6d3920e/warrant/internal/lambdalocal"
	"github.com/seed-f6d3920e/warrant/internal/proc"
	"github.com/seed-f6d3920e/warrant/internal/walkthrough"
	"github.com/seed-f6d3920e/warrant/pkg/catalog"
)

// The reference tools' MCP server (cmd/toolserver) on the local stack: the
// firm's own system of the demo, which the functions reach through the MCP
// path as they would a document system.

// toolServer is the running reference MCP server.
type toolServer struct {
	cmd *exec.Cmd
	URL string
	log *os.File
}

var toolServerURL = regexp.MustCompile(`^http://127\.0\.0\.1:[0-9]+/mcp$`)

// startToolServer starts bin on addr (a loopback address) over the stack's
// table, and reads the URL it serves.
func (s *Stack) startToolServer(ctx context.Context, bin, addr string) (*toolServer, error) {
	logPath := filepath.Join(s.cfg.LogDir, "toolserver.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("toolserver: %w", err)
	}
	cmd := exec.Command(bin, "-addr", addr)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TABLE_NAME=" + s.SystemsTable(),
		"AWS_REGION=" + s.Region, "AWS_ENDPOINT_URL_DYNAMODB=" + s.systemsDDB(),
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_CONFIG_FILE=/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true"}
	cmd.Stderr, cmd.SysProcAttr = logf, proc.Group()
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("toolserver: %w", err)
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("toolserver: %w", err)
	}
	t := &toolServer{cmd: cmd, log: logf}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case u, ok := <-line:
		if !ok || !toolServerURL.MatchString(u) {
			t.stop()
			return nil, fmt.Errorf("toolserver: it did not say where it listens (log: %s)", logPath)
		}
		t.URL = u
	case <-time.After(30 * time.Second):
		t.stop()
		return nil, fmt.Errorf("toolserver: not listening after 30s (log: %s)", logPath)
	case <-ctx.Done():
		t.stop()
		return nil, ctx.Err()
	}
	return t, nil
}

// stop ends the server (SIGTERM, then the process group) and waits for it.
func (t *toolServer) stop() {
	if t == nil || t.cmd.Process == nil {
		return
	}
	_ = t.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = t.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(12 * time.Second):
		proc.KillGroup(t.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	t.log.Close()
}

// localCatalog is the embedded tool catalog with every builtin tool moved
// onto the reference MCP server at url, each pinned to its schema: the
// demo's tools, reached as a firm's would be.
func localCatalog(url string) ([]byte, error) {
	return catalog.OnServer(catalog.Server{Name: "reference", Kind: catalog.TargetMCP, URL: url, Auth: catalog.Auth{Kind: catalog.AuthNone}})
}

// moduleRoot is the folder of the module the template is in (its nearest
// folder with a go.mod, upward), where cmd/toolserver and cmd/toolfn are.
func moduleRoot(templatePath string) string {
	dir, err := filepath.Abs(filepath.Dir(templatePath))
	if err != nil {
		dir = filepath.Dir(templatePath)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// systemsDDB is the DynamoDB endpoint of the firm's systems' own table: the
// stack's, or in a rehearsal a minidyn of their own (they are not part of
// the deployment, so not in moto, whose decisions are Warrant's calls only).
func (s *Stack) systemsDDB() string {
	if s.systemsURL != "" {
		return s.systemsURL
	}
	return s.ddbURL
}

// rehearsalCatalog is the rehearsal's tool catalog: the demo's tools on
// the reference MCP server at mcpURL, but the court filing on the firm's
// HTTPS endpoint (httpsURL) and the client e-mail on the firm's Lambda
// function (fn, an ARN): a tool of each kind of target a firm's catalog
// names.
func rehearsalCatalog(mcpURL, httpsURL, fn string) ([]byte, error) {
	b, err := localCatalog(mcpURL)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	servers, _ := doc["servers"].(map[string]any)
	tools, _ := doc["tools"].(map[string]any)
	servers["firm-https"] = map[string]any{"kind": catalog.TargetHTTPS, "url": httpsURL, "auth": map[string]any{"kind": catalog.AuthNone}, "final_client_errors": true}
	servers["firm-lambda"] = map[string]any{"kind": catalog.TargetLambda, "function": fn}
	for tool, server := range map[string]string{walkthrough.FilingTool: "firm-https", walkthrough.EmailTool: "firm-lambda"} {
		t, _ := tools[tool].(map[string]any)
		if t == nil {
			return nil, fmt.Errorf("the catalog has no tool %s", tool)
		}
		kind := servers[server].(map[string]any)["kind"]
		t["target"] = map[string]any{"kind": kind, "server": server, "tool": tool}
	}
	b, err = json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	if _, err := catalog.Parse(b); err != nil {
		return nil, fmt.Errorf("the rehearsal's catalog: %w", err)
	}
	return b, nil
}

// ReferenceFunction is the reference tools' Lambda function (cmd/toolfn)
// on the local stack; a catalog names it by any ARN of that name, e.g.
// arn:aws:lambda:us-east-1:000000000000:function:warrant-reference-tools.
const ReferenceFunction = "warrant-reference-tools"

// startFunctions serves the firm's Lambda functions on the local Invoke
// API: the reference tools' (bin, cmd/toolfn built) and the caller's
// (-function NAME=PKG), each under an emulator over the stack's table.
func (s *Stack) startFunctions(ctx context.Context, bin string) error {
	fns := map[string]string{ReferenceFunction: bin}
	for name, pkg := range s.cfg.Functions {
		if name == ReferenceFunction {
			return fmt.Errorf("-function %s: that name is the reference tools' function", name)
		}
		fns[name] = pkg
	}
	logPath := filepath.Join(s.cfg.LogDir, "functions.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("functions: %w", err)
	}
	e, err := lambdalocal.Start(ctx, lambdalocal.Options{Functions: fns, Log: logf, Timeout: 5 * time.Minute,
		Env: []string{"TABLE_NAME=" + s.SystemsTable(), "AWS_REGION=" + s.Region, "AWS_ENDPOINT_URL_DYNAMODB=" + s.systemsDDB(),
			"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_CONFIG_FILE=/dev/null",
			"AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true"}})
	if err != nil {
		logf.Close()
		return fmt.Errorf("functions: %w (log: %s)", err, logPath)
	}
	s.lambdas, s.fnLog = e, logf
	names := slices.Sorted(maps.Keys(fns))
	s.say("functions: %s on the local Lambda API %s (log %s)", strings.Join(names, ", "), e.URL(), logPath)
	return nil
}

// startTools starts the reference tools' MCP server and settles the
// functions' TOOL_CATALOG, AGENTS and TOOL_POLICY: the caller's (a file's
// path made absolute, since a function reads a relative one from its
// bundle), or the local catalog naming the server.
func (s *Stack) startTools(ctx context.Context, bin string) error {
	addr := s.cfg.ToolsAddr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	t, err := s.startToolServer(ctx, bin, addr)
	if err != nil {
		return err
	}
	s.tools = t
	s.say("tools: the reference tools' MCP server on %s (log %s)", t.URL, filepath.Join(s.cfg.LogDir, "toolserver.log"))
	for _, v := range []struct{ name, spec string }{{"TOOL_CATALOG", s.cfg.ToolCatalog}, {"AGENTS", s.cfg.Agents}, {"TOOL_POLICY", s.cfg.ToolPolicy}} {
		spec := v.spec
		if where, ok := strings.CutPrefix(spec, "file:"); ok {
			abs, err := filepath.Abs(where)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			spec = "file:" + abs
		}
		if spec == "" && v.name == "TOOL_CATALOG" {
			doc, err := localCatalog(t.URL)
			if err != nil {
				return fmt.Errorf("the local tool catalog: %w", err)
			}
			path := filepath.Join(s.cfg.LogDir, "catalog.json")
			if err := os.WriteFile(path, doc, 0o644); err != nil {
				return fmt.Errorf("the local tool catalog: %w", err)
			}
			spec = "file:" + path
			s.say("tools: the local catalog %s (the reference tools over MCP)", path)
		}
		if spec != "" {
			s.toolEnv = append(s.toolEnv, v.name+"="+spec)
		}
	}
	return nil
}
