package failure_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoAWSDependencies keeps the AWS SDK out of the packages that must not
// link it: pkg/failure links nothing from github.com/aws/ (the adapters
// classify their own SDK errors), and the pure reducer and the contracts
// link no AWS service client. pkg/dynamo is the control: it must show its
// client, or the listing proves nothing.
func TestNoAWSDependencies(t *testing.T) {
	goTool, err := exec.LookPath("go") // go test puts its own GOROOT/bin first on PATH
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	const pkg = "github.com/seed-f6d3920e/warrant/pkg/"
	const service = "github.com/aws/aws-sdk-go-v2/service/"
	forbidden := map[string]string{
		pkg + "failure":   "github.com/aws/",
		pkg + "reducer":   service,
		pkg + "contracts": service,
	}
	const control, controlDep = pkg + "dynamo", service + "dynamodb"

	args := []string{"list", "-test=false", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", control}
	for p := range forbidden {
		args = append(args, p)
	}
	out, err := exec.Command(goTool, args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		p, deps := fields[0], fields[1:]
		seen[p] = true
		if p == control {
			if !containsPrefix(deps, controlDep) {
				t.Errorf("%s does not list %s: the dependency listing is broken", p, controlDep)
			}
			continue
		}
		for _, d := range deps {
			if strings.HasPrefix(d, forbidden[p]) {
				t.Errorf("%s depends on %s", p, d)
			}
		}
	}
	for p := range forbidden {
		if !seen[p] {
			t.Errorf("go list did not report %s", p)
		}
	}
}

func containsPrefix(deps []string, prefix string) bool {
	for _, d := range deps {
		if strings.HasPrefix(d, prefix) {
			return true
		}
	}
	return false
}
