package handlers_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seed-f6d3920e/warrant/internal/awscalls"
	"github.com/seed-f6d3920e/warrant/pkg/handlers"
)

var updateCalls = flag.Bool("update-calls", false, "rewrite docs/DEPLOY.md's table of the functions' calls from TestRolesCoverCalls")

// stackFunctions are the functions of the test stack, by their template
// names (<name>Function, <name>Role).
var stackFunctions = []string{"Invoke", "Approve", "Resume", "Runs", "Worker", "Sweeper", "StreamReduce"}

// iamReport is deploy/iamcheck.py's output.
type iamReport struct {
	Functions map[string]struct {
		Role  string `json:"role"`
		Calls []struct {
			Action        string   `json:"action"`
			Resource      string   `json:"resource"`
			Operations    []string `json:"operations"`
			AllowedBy     string   `json:"allowed_by"`
			AlsoAllowedBy []string `json:"also_allowed_by"`
			NotEvaluated  []string `json:"conditions_not_evaluated"`
		} `json:"calls"`
		Denied  []deniedCall `json:"denied"`
		Unused  []string     `json:"unused"`
		Removal []struct {
			Statement string       `json:"statement"`
			Denied    []deniedCall `json:"denied"`
		} `json:"removal"`
		Redundant []string `json:"redundant"`
	} `json:"functions"`
}

type deniedCall struct {
	Action     string   `json:"action"`
	Resource   string   `json:"resource"`
	Operations []string `json:"operations"`
}

// denial is how the check names a call a role does not allow.
func denial(function, role string, d deniedCall) string {
	return fmt.Sprintf("%s (%s) is not allowed %s on %s", function, role, d.Action, d.Resource)
}

// TestRolesCoverCalls walks the demo (invoke, the worker, held on the
// filing's warrant, the pending list, approved with counsel's edit,
// resumed, stream-reduce, a sweep, the evidence) on a stack whose functions
// record every AWS call they make, and checks each against the function's
// role in the translated template with moto's IAM evaluator
// (deploy/iamcheck.py). A call the role does not allow fails, naming the
// function, the action and the resource; so does a statement whose removal
// denies nothing the walk needs without being reported redundant. The
// tables in docs/DEPLOY.md ("What each function calls") are this check's
// output (-update-calls rewrites them).
func TestRolesCoverCalls(t *testing.T) {
	py := pythonWith(t, "moto", "samtranslator")
	rec := &awscalls.Recorder{}
	s := newStack(t, stackOptions{calls: rec})
	h := s.startHeld(t)
	if len(listApprovals(t, s)) == 0 {
		t.Fatal("the held run's warrant is not pending")
	}
	if resp := s.call(approveEdited(t, h, filingEdit(fixMatter, "Amended Motion to Compel"))); resp.StatusCode != 200 {
		t.Fatalf("approve edited: %d %s", resp.StatusCode, resp.Body)
	}
	if v := decode[handlers.RunView](t, s.call(resumeReq(t, h))); v.Status != "completed" {
		t.Fatalf("resume: %+v", v)
	}
	if rep := s.settle(h.runID); rep.Checkpoints != 1 {
		t.Fatalf("sweep: %+v, want one checkpoint", rep)
	}
	s.bundle(h.runID, nil)
	s.trusted()

	dir := t.TempDir()
	transformed := filepath.Join(dir, "transformed.json")
	run(t, py, filepath.Join("..", "..", "deploy", "translate.py"), filepath.Join("..", "..", "template.yaml"), "--out", transformed)
	rep := iamCheck(t, py, dir, transformed, s, rec.Calls())
	for _, fn := range stackFunctions {
		if _, ok := rep.Functions[fn]; !ok {
			t.Errorf("%s made no AWS call on the walk: the stack did not record it", fn)
		}
	}
	for fn, r := range rep.Functions {
		for _, d := range r.Denied {
			t.Errorf("%s (by %s)", denial(fn, r.Role, d), strings.Join(d.Operations, ", "))
		}
		// Each statement a call needed is needed: without it, some call
		// of the walk is denied, and the check names it; or it is reported
		// redundant (another statement allows each of its calls).
		for _, rm := range r.Removal {
			if len(rm.Denied) == 0 {
				if !slices.Contains(r.Redundant, rm.Statement) {
					t.Errorf("%s: without %s nothing is denied, yet it is not reported redundant", fn, rm.Statement)
				}
				t.Logf("%s: statement %s is redundant: another statement allows every call it allows", fn, rm.Statement)
				continue
			}
			d := rm.Denied[0]
			if msg := denial(fn, r.Role, deniedCall{Action: d.Action, Resource: d.Resource}); !strings.Contains(msg, fn) ||
				!strings.Contains(msg, d.Action) || !strings.Contains(msg, d.Resource) {
				t.Errorf("without %s: %q does not name the function, the action and the resource", rm.Statement, msg)
			}
		}
	}
	// The removal, end to end: the template without StreamReduceRole's
	// statement that lets it update projections, checked again, denies
	// a call of the walk and names it.
	cut := filepath.Join(dir, "cut.json")
	withoutStatement(t, transformed, cut, "StreamReduceRole", "Projection")
	cutRep := iamCheck(t, py, dir, cut, s, rec.Calls())
	if r := cutRep.Functions["StreamReduce"]; len(r.Denied) == 0 {
		t.Error("without StreamReduceRole's Projection statement, no call of the walk is denied")
	} else if msg := denial("StreamReduce", r.Role, r.Denied[0]); !strings.Contains(msg, "StreamReduce") ||
		!strings.Contains(msg, "dynamodb:") || !strings.Contains(msg, ":table/") {
		t.Errorf("the denial %q does not name the function, the action and the resource", msg)
	}

	doc := callsTables(rep)
	path := filepath.Join("..", "..", "docs", "DEPLOY.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- calls:begin (TestRolesCoverCalls -update-calls writes this) -->\n", "<!-- calls:end -->"
	i, j := bytes.Index(raw, []byte(begin)), bytes.Index(raw, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("docs/DEPLOY.md has no %q ... %q section", strings.TrimSpace(begin), end)
	}
	if got := string(raw[i+len(begin) : j]); got != doc {
		if !*updateCalls {
			t.Errorf("docs/DEPLOY.md's tables of the functions' calls are not what the check finds (go test ./pkg/handlers -run TestRolesCoverCalls -update-calls); the check finds:\n%s", doc)
			return
		}
		out := slices.Concat(raw[:i+len(begin)], []byte(doc), raw[j:])
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// iamCheck runs deploy/iamcheck.py on calls against the translated template.
// The stack's table and bus are the template's Table and NotificationBus.
func iamCheck(t *testing.T, py, dir, transformed string, s *stack, calls []awscalls.Call) iamReport {
	t.Helper()
	in, err := json.Marshal(map[string]any{
		"names": map[string]string{s.table: "Table", "warrant-test-notifications": "NotificationBus"},
		"calls": calls})
	if err != nil {
		t.Fatal(err)
	}
	callsPath := filepath.Join(dir, "calls.json")
	if err := os.WriteFile(callsPath, in, 0o600); err != nil {
		t.Fatal(err)
	}
	out := run(t, py, filepath.Join("..", "..", "deploy", "iamcheck.py"), transformed, callsPath,
		"--samconfig", filepath.Join("..", "..", "samconfig.toml"))
	var rep iamReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("iamcheck output: %v\n%s", err, out)
	}
	return rep
}

// withoutStatement copies the translated template at from to to, role's
// statement sid removed.
func withoutStatement(t *testing.T, from, to, role, sid string) {
	t.Helper()
	raw, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	var tpl map[string]any
	if err := json.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	removed := false
	props := tpl["Resources"].(map[string]any)[role].(map[string]any)["Properties"].(map[string]any)
	for _, p := range props["Policies"].([]any) {
		doc := p.(map[string]any)["PolicyDocument"].(map[string]any)
		doc["Statement"] = slices.DeleteFunc(doc["Statement"].([]any), func(st any) bool {
			m, ok := st.(map[string]any)
			if ok && m["Sid"] == sid {
				removed = true
			}
			return ok && m["Sid"] == sid
		})
	}
	if !removed {
		t.Fatalf("%s has no statement %s", role, sid)
	}
	out, _ := json.Marshal(tpl)
	if err := os.WriteFile(to, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// callsTables is docs/DEPLOY.md's tables: per function, each call, the
// statement that allows it and the conditions the evaluator did not.
func callsTables(rep iamReport) string {
	var b strings.Builder
	for _, fn := range stackFunctions {
		r, ok := rep.Functions[fn]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "\n#### %s (%s)\n\n", fn, r.Role)
		b.WriteString("| Action | Resource | Made by | Allowed by | Conditions not evaluated |\n| --- | --- | --- | --- | --- |\n")
		for _, c := range r.Calls {
			by := strings.Join(append([]string{c.AllowedBy}, c.AlsoAllowedBy...), ", ")
			conds := "none"
			if len(c.NotEvaluated) > 0 {
				conds = strings.Join(c.NotEvaluated, ", ")
			}
			fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s |\n", c.Action, c.Resource, strings.Join(c.Operations, ", "), by, conds)
		}
		for _, d := range r.Denied {
			fmt.Fprintf(&b, "| `%s` | `%s` | %s | **denied** | |\n", d.Action, d.Resource, strings.Join(d.Operations, ", "))
		}
		unused := "none"
		if len(r.Unused) > 0 {
			unused = strings.Join(r.Unused, ", ")
		}
		fmt.Fprintf(&b, "\nStatements no call of the walk needed: %s.\n", unused)
		if len(r.Redundant) > 0 {
			fmt.Fprintf(&b, "Redundant (another statement allows each of their calls): %s.\n", strings.Join(r.Redundant, ", "))
		}
	}
	b.WriteString("\n")
	return b.String()
}

// pythonWith is python3 if it imports each module; else the test is
// skipped (failed when CI=true: CI installs them).
func pythonWith(t *testing.T, modules ...string) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import "+strings.Join(modules, ", ")).Run()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 with %v is required in CI: %v", modules, err)
		}
		t.Skipf("python3 with %v: %v", modules, err)
	}
	return py
}

// run runs a command and returns its standard output; a failure fails
// the test with its standard error.
func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}
