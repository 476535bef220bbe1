package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seed-f6d3920e/warrant/pkg/catalog"
	"github.com/seed-f6d3920e/warrant/pkg/contracts"
)

// The documents whose commands TestDocCommands runs.
var commandDocs = []string{"README.md", "docs/LOCAL.md", "docs/EVIDENCE.md"}

// notRun lists, by their exact text (a trailing "  # comment" left out),
// the commands of commandDocs that a test cannot run, and why. Every other
// command runs, so a command added to the documents runs by default; an
// entry that matches no command fails the test, so the list cannot go stale.
var notRun = map[string]string{
	"make localapi":            "TestAddingATool runs this test binary as localapi",
	"make run":                 "the stack this test starts (localapi on loopback; here on a free port, walking the demo first)",
	"make test":                "the whole suite, this test included",
	"make demo":                "the walkthrough on 127.0.0.1:3000 (a port a developer's stack may hold): TestDemoHeadless runs it on a free port, and make test runs this very target",
	"make validate":            "cfn-lint, the SAM transform and go test ./deploy: make test runs the first two in its validate target and the last in its go test step",
	"make deploy-rehearsal":    "deploy's TestDeployRehearsal and TestDeployRehearsalWalk, which make test's go test step runs (TestMakeDeployRehearsal checks the target runs them)",
	"make deploy":              "needs the SAM CLI and an AWS account",
	"make deploy SAM_ENV=prod": "needs the SAM CLI and an AWS account",
	`API=$(aws cloudformation describe-stacks --stack-name warrant-dev --query "Stacks[0].Outputs[?OutputKey=='ApiUrl'].OutputValue" --output text)`:                                                         "needs a deployed stack; the test sets API to the local stack instead (and TOKEN to a token the local gateway ignores)",
	`for k in $(seq "$PARTS"); do curl -s "http://127.0.0.1:3000/v1/runs/$RUN/evidence?checkpoint=$CKPT&seq=$SEQ&part=$k" > "part-$k.json"; done`:                                                            "needs a bundle too big for one answer, which no local scenario makes; pkg/handlers' TestEvidenceInParts fetches such a bundle's parts through the runs function and joins them with the next command, as written",
	`jq -s 'sort_by(.part.number) | .[0] + {ledger: (map(.ledger) | add), receipts: (map(.receipts) | add), log: (.[0].log + {entries: (map(.log.entries) | add)})} | del(.part)' part-*.json > bundle.json`: "joins the parts the previous command fetched; pkg/handlers' TestEvidenceInParts runs it, as written, on real parts",
	"go run ./cmd/warrant evidence verify --public-key key.pem bundle.json":                                                                                                                                  "docs/EVIDENCE.md fetches key.pem and the walkthrough run's bundle.json from the stack, then runs this very command",
	"go run ./cmd/warrant ledger verify --key kms:<LedgerKey ARN> ledger.ndjson":                                                                                                                             "needs the deployed LedgerKey in KMS; the walkthrough verifies the same export's signed head with the local key",
	"WARRANT_API=$API WARRANT_TOKEN=$TOKEN go run ./cmd/warrant effect reconcile <run_id> <effect_ref> --outcome executed --external-ref SF-2026-118734":                                                     "needs an effect whose outcome is unknown (a worker lost while it ran), which no local scenario leaves; cmd/warrant's and pkg/handlers' reconcile tests cover the route",
}

// docCommand is one command of a ```sh block: its lines joined where they
// end in a backslash, comments and blank lines left out.
type docCommand struct {
	doc     string
	section string // the "## " heading it is under
	line    int    // of its first line
	text    string
}

// addToolSection is docs/LOCAL.md's walkthrough of adding a tool: its
// commands run against a stack started with the section's own catalog,
// policy, agents and model script (TestAddingATool), not the demo's.
const addToolSection = "Adding a tool"

// witnessSection is docs/EVIDENCE.md's witness: its commands run against a
// witness and a bundle of their own (cmd/witness, TestDocWitness), not the
// stack.
const witnessSection = "A witness"

func (c docCommand) String() string { return fmt.Sprintf("%s:%d: %s", c.doc, c.line, c.text) }

// key is the command as notRun names it.
func (c docCommand) key() string { return trailingComment.ReplaceAllString(c.text, "") }

var (
	trailingComment = regexp.MustCompile(`\s+#\s.*$`)
	// A placeholder line, NAME=<path>[; NAME=<path>]...: the value is the
	// member at path of the JSON the block's previous command printed.
	placeholders = regexp.MustCompile(`^[A-Z_]+=<[a-z_.]+>(;\s*[A-Z_]+=<[a-z_.]+>)*$`)
	placeholder  = regexp.MustCompile(`([A-Z_]+)=<([a-z_.]+)>`)
)

// shellCommands reads the commands of a document's ```sh blocks, and
// refuses a curl command in running text, where it would not be run.
func shellCommands(t *testing.T, doc string) []docCommand {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, doc))
	if err != nil {
		t.Fatal(err)
	}
	var out []docCommand
	var cur *docCommand
	inSh, inOther := false, false
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```") && (inSh || inOther):
			if cur != nil {
				t.Errorf("%s: a command ends in a backslash at the block's end", cur)
			}
			inSh, inOther, cur = false, false, nil
			continue
		case trimmed == "```sh":
			inSh = true
			continue
		case strings.HasPrefix(trimmed, "```"):
			inOther = true
			continue
		}
		if inOther {
			continue
		}
		if !inSh && strings.HasPrefix(line, "## ") {
			section = strings.TrimPrefix(line, "## ")
		}
		if !inSh {
			if strings.Contains(line, "`curl ") {
				t.Errorf("%s:%d: a curl command in running text is never run; put it in a ```sh block", doc, n)
			}
			continue
		}
		if cur == nil && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur == nil {
			cur = &docCommand{doc: doc, section: section, line: n}
		}
		text, more := strings.CutSuffix(trimmed, `\`)
		cur.text = strings.TrimSpace(cur.text + " " + text)
		if !more {
			out = append(out, *cur)
			cur = nil
		}
	}
	return out
}

// docFixtures are the files the README's operator CLI examples name,
// written to the directory the commands run in (ledger.ndjson comes from
// the running stack).
var docFixtures = map[string]string{
	"input.json": `{"matter_id":"3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99","to":"gc@ridgeway-logistics.example","subject":"Status","body":"The motion was filed."}`,
	"email.json": `{"matter_id":"3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99","to":"gc@ridgeway-logistics.example","cc":["counsel@harbor-freight.example"],"subject":"Status","body":"The motion was filed."}`,
	"run.json": `{"firm_id":"0f8e5c1a-2b3d-4e6f-8a9b-1c2d3e4f5a6b","matter_id":"3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99","agent_key":"matter_assistant",` +
		`"user_id":"9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d","roles":["associate"],"firm_domains":["warrant-law.example"],"client_domains":["ridgeway-logistics.example"]}`,
}

// TestDocCommands runs every command of the ```sh blocks of README.md and
// docs/LOCAL.md against a local stack, so an example that drifts from the
// code fails: each must exit 0, and each HTTP answer a curl in it gets must
// be below 400. notRun lists, with a reason, the commands that cannot run
// here. What the test does to the commands, and nothing else:
//
//   - they run with bash in a directory that mirrors the repository (a
//     symbolic link to each top-level entry) and holds docFixtures and
//     ledger.ndjson, the walkthrough's export of the filing run, so the
//     files the examples name exist and the repository gets none of them;
//   - 127.0.0.1:3000 and localhost:3000 become the test stack's address;
//   - API is the test stack's base URL and TOKEN a placeholder (the local
//     gateway makes its own token), for the deployment's curl;
//   - a line NAME=<path> (RUN=<run_id>, APPROVAL=<pending_approval.approval_request_id>)
//     sets NAME to that member of the JSON the block's previous command
//     printed, as a reader copies it from the answer;
//   - curl is a shell function that adds -w to report the HTTP status on
//     stderr.
func TestDocCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the whole stack; skipped with -short")
	}
	var cmds []docCommand
	for _, doc := range commandDocs {
		cmds = append(cmds, shellCommands(t, doc)...)
	}
	listed := map[string]bool{}
	for _, c := range cmds {
		if _, ok := notRun[c.key()]; ok {
			listed[c.key()] = true
		}
	}
	for k := range notRun {
		if !listed[k] {
			t.Errorf("notRun lists %q, which no command of %v is", k, commandDocs)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	logDir := t.TempDir()
	addr := freeAddr(t)
	stdout, stderr, stop := runStack(t, ctx, nil, "-demo", "-addr", addr, "-log-dir", logDir)
	defer stop()
	if !waitFor(4*time.Minute, func() bool {
		return strings.Contains(stdout.String(), "checks passed") || strings.Contains(stdout.String(), "✗")
	}) || !strings.Contains(stdout.String(), "checks passed") {
		t.Fatalf("the walkthrough did not pass:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}

	work := mirrorRepo(t)
	for name, body := range docFixtures {
		if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exports, _ := filepath.Glob(filepath.Join(logDir, "ledger-*.ndjson"))
	for _, f := range exports {
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(`"file_court_document"`)) {
			if err := os.WriteFile(filepath.Join(work, "ledger.ndjson"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	_, port, _ := strings.Cut(addr, ":")
	vars := map[string]string{"API": "http://" + addr, "TOKEN": "local-token-the-gateway-ignores"}
	var last []byte // the previous command's stdout
	for _, c := range cmds {
		if reason, ok := notRun[c.key()]; ok {
			t.Logf("not run: %s (%s)", c, reason)
			continue
		}
		if c.section == addToolSection {
			continue // TestAddingATool runs these on a stack of their own
		}
		if c.section == witnessSection {
			continue // cmd/witness's TestDocWitness runs these
		}
		if placeholders.MatchString(c.text) {
			for _, m := range placeholder.FindAllStringSubmatch(c.text, -1) {
				v, err := jsonMember(last, m[2])
				if err != nil {
					t.Fatalf("%s: %v in the answer before it:\n%s", c, err, last)
				}
				vars[m[1]] = v
			}
			continue
		}
		text := strings.NewReplacer("127.0.0.1:3000", addr, "localhost:3000", "localhost:"+port).Replace(c.text)
		out, status, err := runDocCommand(ctx, work, text, vars)
		if err != nil {
			t.Fatalf("%s\n%v\nstdout:\n%s", c, err, out)
		}
		t.Logf("ran: %s -> %v", c, status)
		last = out
	}
}

// runDocCommand runs one command with bash in dir, with vars in its
// environment, and returns its stdout and the HTTP statuses its curls got;
// a non-zero exit, an HTTP answer of 400 or above, or a curl whose status
// could not be read is an error.
func runDocCommand(ctx context.Context, dir, text string, vars map[string]string) ([]byte, []string, error) {
	script := "set -o pipefail\ncurl() { command curl -w '%{stderr}\\n@status %{http_code}\\n' \"$@\"; }\n" + text + "\n"
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, "bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "DYNAMODB_ENDPOINT=") || strings.HasPrefix(kv, "MODEL_BACKEND=") || strings.HasPrefix(kv, "TABLE_NAME=")
	})
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var statuses []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if s, ok := strings.CutPrefix(l, "@status "); ok {
			statuses = append(statuses, s)
		}
	}
	if err != nil {
		return stdout.Bytes(), statuses, fmt.Errorf("exit: %v\nstderr:\n%s", err, stderr.String())
	}
	if strings.Contains(text, "curl ") && len(statuses) == 0 {
		return stdout.Bytes(), statuses, fmt.Errorf("no HTTP status reported (a -w of its own?)\nstderr:\n%s", stderr.String())
	}
	for _, s := range statuses {
		if s < "200" || s >= "400" {
			return stdout.Bytes(), statuses, fmt.Errorf("HTTP %s\nstderr:\n%s", s, stderr.String())
		}
	}
	return stdout.Bytes(), statuses, nil
}

// jsonMember reads the string at a dotted path of a JSON object.
func jsonMember(doc []byte, path string) (string, error) {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return "", fmt.Errorf("not JSON: %v", err)
	}
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("no member %s", path)
		}
		v = m[k]
	}
	s, ok := v.(string)
	if !ok || s == "" {
		return "", fmt.Errorf("no string at %s", path)
	}
	return s, nil
}

// mirrorRepo makes a directory with a symbolic link to each top-level entry
// of the repository but its VCS and build output, where commands run as
// from the root without writing there.
func mirrorRepo(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(repo)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, e := range entries {
		switch e.Name() {
		case ".git", "bin", ".localapi":
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestAddingATool runs docs/LOCAL.md's "Adding a tool" as a reader would,
// once for each bin/localapi command line of the section (the tool on the
// reference MCP server, on its HTTPS endpoint, on its Lambda function): the
// stack started with that line's TOOL_CATALOG, TOOL_POLICY, AGENTS and
// -model-script (on free ports, the catalog's reference server moved to the
// stack's), then every other command of the section against it, the
// catalog the line names in place of the first's: tools import prints the
// example's entry from the reference server (importedIsExample), tools
// check passes, the clerk's run holds on the new tool, counsel signs, the
// memo is saved through the firm's system and the run completes.
func TestAddingATool(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the whole stack; skipped with -short")
	}
	var cmds []docCommand
	for _, c := range shellCommands(t, "docs/LOCAL.md") {
		if c.section == addToolSection {
			cmds = append(cmds, c)
		}
	}
	isStack := func(c docCommand) bool { return strings.Contains(c.text, "bin/localapi ") }
	start := slices.IndexFunc(cmds, isStack)
	if start < 0 || cmds[0].text != "make localapi" {
		t.Fatalf("the section has no `make localapi` then bin/localapi command line: %v", cmds)
	}
	var stacks, walk []docCommand
	for _, c := range cmds[start:] {
		if isStack(c) {
			stacks = append(stacks, c)
		} else {
			walk = append(walk, c)
		}
	}
	if !slices.ContainsFunc(walk, func(c docCommand) bool { return strings.Contains(c.text, "warrant tools import") }) {
		t.Fatal("the section imports no tool from the reference server (warrant tools import)")
	}
	if len(stacks) != 3 {
		t.Fatalf("want the tool on MCP, HTTPS and Lambda: %d bin/localapi lines", len(stacks))
	}
	root, err := filepath.Abs(repo)
	if err != nil {
		t.Fatal(err)
	}
	docCatalog := catalogOf(stacks[0])
	for _, line := range stacks {
		t.Run(filepath.Base(catalogOf(line)), func(t *testing.T) { addingATool(t, root, line, walk, docCatalog) })
	}
}

// catalogOf is the TOOL_CATALOG file a bin/localapi command line names.
func catalogOf(c docCommand) string {
	for _, f := range strings.Fields(c.text) {
		if v, ok := strings.CutPrefix(f, "TOOL_CATALOG=file:"); ok {
			return v
		}
	}
	return ""
}

// addingATool starts the stack line says and runs walk against it, the
// catalog it names in place of docCatalog.
func addingATool(t *testing.T, root string, line docCommand, walk []docCommand, docCatalog string) {
	addr, tools := freeAddr(t), freeAddr(t)
	// The documented catalogs name the reference server at 127.0.0.1:3001;
	// this stack's is on a free port.
	b, err := os.ReadFile(filepath.Join(root, catalogOf(line)))
	if err != nil {
		t.Fatal(err)
	}
	catalogCopy := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.WriteFile(catalogCopy, bytes.ReplaceAll(b, []byte("127.0.0.1:3001"), []byte(tools)), 0o644); err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(line.text)
	var env, args []string
	for i, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok && i < slices.Index(fields, "bin/localapi") {
			if strings.HasPrefix(v, "file:") {
				v = "file:" + filepath.Join(root, strings.TrimPrefix(v, "file:"))
			}
			if k == "TOOL_CATALOG" {
				v = "file:" + catalogCopy
			}
			env = append(env, k+"="+v)
			continue
		}
		if f != "bin/localapi" {
			args = append(args, f)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	_, stderr, stop := runStack(t, ctx, env, append(args, "-addr", addr, "-tools-addr", tools, "-log-dir", t.TempDir())...)
	defer stop()
	if !waitFor(4*time.Minute, func() bool { return strings.Contains(stderr.String(), "api: http://") }) {
		t.Fatalf("the stack did not come up:\nstderr:\n%s", stderr.String())
	}
	work := mirrorRepo(t)
	vars := map[string]string{}
	var last []byte
	for _, c := range walk {
		if placeholders.MatchString(c.text) {
			for _, m := range placeholder.FindAllStringSubmatch(c.text, -1) {
				v, err := jsonMember(last, m[2])
				if err != nil {
					t.Fatalf("%s: %v in the answer before it:\n%s", c, err, last)
				}
				vars[m[1]] = v
			}
			continue
		}
		text := strings.NewReplacer("127.0.0.1:3000", addr, "127.0.0.1:3001", tools, docCatalog, catalogCopy).Replace(c.text)
		out, status, err := runDocCommand(ctx, work, text, vars)
		if err != nil {
			t.Fatalf("%s\n%v\nstdout:\n%s\nstack:\n%s", c, err, out, stderr.String())
		}
		t.Logf("ran: %s -> %v", c, status)
		if strings.Contains(c.text, "warrant tools import") {
			importedIsExample(t, c, out, filepath.Join(root, docCatalog), tools)
		}
		last = out
	}
	var final struct {
		Status    string `json:"status"`
		FinalText string `json:"final_text"`
		Actions   []struct {
			ToolName  string `json:"tool_name"`
			Outcome   string `json:"outcome"`
			EffectRef string `json:"effect_ref"`
		} `json:"actions"`
		ActionsNotDone int `json:"actions_not_done"`
	}
	if err := json.Unmarshal(last, &final); err != nil || final.Status != "completed" || final.FinalText != "The memo is saved in the matter." {
		t.Fatalf("the clerk's run ended %s (%v): %s", final.Status, err, last)
	}
	// What the section says: the memo saved once, under its effect_ref.
	if len(final.Actions) != 1 || final.Actions[0].ToolName != "save_research_memo" || final.Actions[0].Outcome != "done" ||
		final.Actions[0].EffectRef == "" || final.ActionsNotDone != 0 {
		t.Fatalf("the clerk's run's actions: %s", last)
	}
}

// userMembers are the members of a catalog entry that tools import leaves
// to the user.
var userMembers = []string{"title", "description", "summary", "matter_field", "class", "timeout"}

// importedIsExample holds what the section's tools import printed to the
// example catalog (at path, its reference server moved to tools): the same
// document once the members the user decides are set as the example sets
// them, so the example's schema and pin are the server's, copied by no
// one; and the catalog refuses the printed document as it stands.
func importedIsExample(t *testing.T, c docCommand, out []byte, path, tools string) {
	t.Helper()
	if _, err := catalog.Parse(out); err == nil {
		t.Errorf("%s: the catalog loads what tools import printed, its {{TO_SET}} members unset", c)
	}
	example, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	example = bytes.ReplaceAll(example, []byte("127.0.0.1:3001"), []byte(tools))
	type doc struct {
		Servers map[string]any                        `json:"servers"`
		Tools   map[string]map[string]json.RawMessage `json:"tools"`
	}
	var got, want doc
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: not a JSON document: %v\n%s", c, err, out)
	}
	if err := json.Unmarshal(example, &want); err != nil {
		t.Fatal(err)
	}
	for name, entry := range got.Tools {
		// The reference server titles its tools: the import carries the
		// title over, for the firm to keep or rewrite as it does the
		// description.
		if _, ok := entry["title"]; !ok {
			t.Errorf("%s: the import left out the server's title for %s", c, name)
		}
		for _, m := range userMembers {
			if v, ok := want.Tools[name][m]; ok {
				entry[m] = v
			} else {
				delete(entry, m)
			}
		}
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	gc, err1 := contracts.Canonicalize(g)
	wc, err2 := contracts.Canonicalize(w)
	if err1 != nil || err2 != nil || !bytes.Equal(gc, wc) {
		t.Fatalf("%s printed, with the user's members set as %s sets them:\n%s\nwant:\n%s", c, path, gc, wc)
	}
}

// runStack starts bin/localapi with args and env added to its environment,
// returning its stdout and stderr as they grow and a stop to defer (SIGTERM,
// then a kill after 30 s) before ctx is cancelled.
func runStack(t *testing.T, ctx context.Context, env []string, args ...string) (stdout, stderr *lockedBuffer, stop func()) {
	t.Helper()
	stack := localapi(ctx, args...)
	stack.Env = append(stack.Env, env...)
	stdout, stderr = &lockedBuffer{}, &lockedBuffer{}
	stack.Stdout, stack.Stderr = stdout, stderr
	stack.WaitDelay = 10 * time.Second
	if err := stack.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- stack.Wait() }()
	return stdout, stderr, func() {
		_ = stack.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = stack.Cancel()
			<-exited
		}
	}
}
