package deploy

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/awslabs/goformation/v7/cloudformation/global"
)

func TestTemplateDeclaresExactlyTheFunctions(t *testing.T) {
	tmpl := typedTemplate(t)
	got := keys(tmpl.GetAllServerlessFunctionResources())
	if want := keys(functionPackages); !slices.Equal(got, want) {
		t.Fatalf("AWS::Serverless::Function resources = %v, want %v", got, want)
	}
	for id, fn := range tmpl.GetAllServerlessFunctionResources() {
		if fn.CodeUri == nil || aws.ToString(fn.CodeUri.String) != "." {
			t.Errorf("%s: CodeUri must be \".\" (one root go.mod), got %+v", id, fn.CodeUri)
		}
		if m := fn.AWSCloudFormationMetadata["BuildMethod"]; m != "makefile" {
			t.Errorf("%s: Metadata.BuildMethod = %v, want makefile", id, m)
		}
		if fn.Runtime != nil || fn.Handler != nil {
			t.Errorf("%s: Runtime/Handler belong in Globals, got %v/%v", id, aws.ToString(fn.Runtime), aws.ToString(fn.Handler))
		}
	}
}

// makefile is the part of a Makefile these tests need: variables and the
// recipe lines of each target.
type makefile struct {
	vars  map[string]string
	rules map[string][]string
}

var (
	makeVarDef = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*(\?=|::=|:=|\+=|=)\s*(.*)$`)
	makeVarRef = regexp.MustCompile(`\$[({]([A-Za-z_][A-Za-z0-9_]*)[)}]`)
)

func parseMakefile(text string) makefile {
	mf := makefile{vars: map[string]string{}, rules: map[string][]string{}}
	var lines []string
	var cont strings.Builder
	for _, l := range strings.Split(text, "\n") {
		if strings.HasSuffix(l, "\\") {
			cont.WriteString(strings.TrimSuffix(l, "\\") + " ")
			continue
		}
		cont.WriteString(l)
		lines = append(lines, cont.String())
		cont.Reset()
	}
	var targets []string
	for _, l := range lines {
		if strings.HasPrefix(l, "\t") {
			for _, tg := range targets {
				mf.rules[tg] = append(mf.rules[tg], strings.TrimSpace(l))
			}
			continue
		}
		trimmed := strings.TrimSpace(l)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue // blank and comment lines do not end a recipe
		}
		targets = nil
		if m := makeVarDef.FindStringSubmatch(trimmed); m != nil {
			if m[2] == "+=" {
				mf.vars[m[1]] = strings.TrimSpace(mf.vars[m[1]] + " " + m[3])
			} else if _, set := mf.vars[m[1]]; !set || m[2] != "?=" {
				mf.vars[m[1]] = m[3]
			}
			continue
		}
		head, recipe, ok := strings.Cut(trimmed, ":")
		if !ok {
			continue
		}
		targets = strings.Fields(head)
		for _, tg := range targets {
			if _, seen := mf.rules[tg]; !seen {
				mf.rules[tg] = []string{} // a target with no recipe is still a target
			}
			if _, r, ok := strings.Cut(recipe, ";"); ok {
				mf.rules[tg] = append(mf.rules[tg], strings.TrimSpace(r))
			}
		}
	}
	return mf
}

// expand substitutes the Makefile's own variables, leaving the others (such
// as ARTIFACTS_DIR, which sam build passes) as written.
func (mf makefile) expand(s string) string {
	for range 10 {
		next := makeVarRef.ReplaceAllStringFunc(s, func(ref string) string {
			if v, ok := mf.vars[makeVarRef.FindStringSubmatch(ref)[1]]; ok {
				return v
			}
			return ref
		})
		if next == s {
			break
		}
		s = next
	}
	return s
}

func TestMakefileBuildsEachFunction(t *testing.T) {
	data, err := os.ReadFile(makefilePath)
	if err != nil {
		t.Fatal(err)
	}
	mf := parseMakefile(string(data))
	for _, id := range keys(functionPackages) {
		pkg := functionPackages[id]
		target := "build-" + id
		recipe, ok := mf.rules[target]
		if !ok {
			t.Errorf("Makefile has no %s target: sam build (BuildMethod: makefile) runs it; write it like the other build-<LogicalId> targets (docs/DEPLOY.md lists them)", target)
			continue
		}
		cmd := mf.expand(strings.Join(recipe, " ; "))
		fields := strings.Fields(cmd)
		for _, want := range []string{"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0", "-trimpath", "./functions/" + pkg} {
			if !slices.Contains(fields, want) {
				t.Errorf("%s: recipe lacks %s: %s", target, want, cmd)
			}
		}
		if !strings.Contains(cmd, "go build") {
			t.Errorf("%s: recipe does not run go build: %s", target, cmd)
		}
		if i := slices.Index(fields, "-tags"); i < 0 || i+1 == len(fields) || !slices.Contains(strings.Split(strings.Trim(fields[i+1], `'"`), ","), "lambda.norpc") {
			t.Errorf("%s: recipe does not build with -tags lambda.norpc: %s", target, cmd)
		}
		if i := slices.Index(fields, "-o"); i < 0 || i+1 == len(fields) ||
			(fields[i+1] != "$(ARTIFACTS_DIR)/bootstrap" && fields[i+1] != "${ARTIFACTS_DIR}/bootstrap") {
			t.Errorf("%s: recipe must write -o $(ARTIFACTS_DIR)/bootstrap: %s", target, cmd)
		}
	}
}

// TestFunctionPackagesStartLambda: each function package is a main whose
// func main leads to lambda.Start, itself or through the module's packages
// it calls (a shared wiring package, say): see goSource.startsLambda.
func TestFunctionPackagesStartLambda(t *testing.T) {
	src := newGoSource(t)
	for _, id := range keys(functionPackages) {
		path := src.functionPath(functionPackages[id])
		chain, ok, err := src.startsLambda(path)
		switch {
		case err != nil:
			t.Errorf("%s: %v", id, err)
		case !ok:
			t.Errorf("%s: func main of %s never leads to %s.Start", id, path, lambdaImport)
		default:
			t.Logf("%s: %s", id, strings.Join(chain, " -> "))
		}
	}

	// And no function package the template does not deploy.
	entries, err := os.ReadDir(functionsDir)
	if err != nil {
		t.Fatal(err)
	}
	deployed := map[string]bool{}
	for _, pkg := range functionPackages {
		deployed[pkg] = true
	}
	for _, e := range entries {
		if e.IsDir() && !deployed[e.Name()] {
			t.Errorf("functions/%s is not a function of template.yaml", e.Name())
		}
	}
}

func TestArchitecturesOnlyInGlobals(t *testing.T) {
	tmpl := typedTemplate(t)
	g, ok := tmpl.Globals["Function"].(*global.Function)
	if !ok || g == nil {
		t.Fatalf("Globals.Function is missing (%T)", tmpl.Globals["Function"])
	}
	if g.Architectures == nil || !slices.Equal(*g.Architectures, []string{"arm64"}) {
		t.Errorf("Globals.Function.Architectures = %v, want [arm64]", g.Architectures)
	}
	if aws.ToString(g.Runtime) != "provided.al2023" || aws.ToString(g.Handler) != "bootstrap" {
		t.Errorf("Globals.Function Runtime/Handler = %q/%q, want provided.al2023/bootstrap", aws.ToString(g.Runtime), aws.ToString(g.Handler))
	}
	for id, fn := range tmpl.GetAllServerlessFunctionResources() {
		if fn.Architectures != nil {
			t.Errorf("%s sets Architectures %v: keep it in Globals only (cfn-lint flags both)", id, fn.Architectures)
		}
	}
}

// TestLogging reads LoggingConfig raw (goformation limit 1).
func TestLogging(t *testing.T) {
	raw := rawTemplate(t)
	if f := get(raw, "Globals", "Function", "LoggingConfig", "LogFormat"); f != "JSON" {
		t.Errorf("Globals.Function.LoggingConfig.LogFormat = %v, want JSON (EMF failure lines)", f)
	}
	groups := map[string]string{}
	for id := range functionPackages {
		fn := mustResource(t, raw, id, "AWS::Serverless::Function")
		lg := refOf(get(fn, "Properties", "LoggingConfig", "LogGroup"))
		if lg == "" {
			t.Errorf("%s: LoggingConfig.LogGroup must !Ref its own AWS::Logs::LogGroup", id)
			continue
		}
		if other, dup := groups[lg]; dup {
			t.Errorf("%s and %s share log group %s", id, other, lg)
		}
		groups[lg] = id
		g := mustResource(t, raw, lg, "AWS::Logs::LogGroup")
		if refOf(get(g, "Properties", "RetentionInDays")) != "LogRetentionDays" {
			t.Errorf("%s: RetentionInDays must be !Ref LogRetentionDays", lg)
		}
	}
}
