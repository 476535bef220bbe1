package deploy

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The functions' Go source as the Makefile builds it, read without the go
// command: which module packages a function's main package reaches, and
// whether its main leads to lambda.Start. A function's main may do the work
// itself or call a shared wiring package of the module; these helpers follow
// it there, so the checks hold the function, not the layout of main.go.

const goModPath = "../go.mod"

// lambdaContext selects files the way `make build-<LogicalId>` compiles a
// bootstrap: linux/arm64, CGO off, -tags lambda.norpc.
func lambdaContext() build.Context {
	c := build.Default
	c.GOOS, c.GOARCH, c.CgoEnabled = "linux", "arm64", false
	c.BuildTags = []string{"lambda.norpc"}
	return c
}

// srcPkg is one module package, parsed.
type srcPkg struct {
	path, dir, name string
	imports         []string // module packages it imports
	files           []*ast.File
	funcs           map[string]*ast.FuncDecl   // top-level functions by name
	methods         map[string][]*ast.FuncDecl // methods by name, any receiver
	fileOf          map[*ast.FuncDecl]*ast.File
}

// goSource loads module packages from the repository on demand.
type goSource struct {
	t      *testing.T
	root   string // the repository, where go.mod is
	module string // its module path
	ctx    build.Context
	fset   *token.FileSet
	pkgs   map[string]*srcPkg
}

func newGoSource(t *testing.T) *goSource {
	t.Helper()
	f, err := os.Open(goModPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	module := ""
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			module = strings.Trim(strings.TrimSpace(m), `"`)
			break
		}
	}
	if module == "" {
		t.Fatalf("%s has no module line", goModPath)
	}
	return &goSource{t: t, root: filepath.Dir(goModPath), module: module, ctx: lambdaContext(),
		fset: token.NewFileSet(), pkgs: map[string]*srcPkg{}}
}

func (s *goSource) inModule(path string) bool {
	return path == s.module || strings.HasPrefix(path, s.module+"/")
}

// functionPath is the import path of functions/<pkg>.
func (s *goSource) functionPath(pkg string) string { return s.module + "/functions/" + pkg }

// load parses the module package path (its non-test files for the Lambda
// build).
func (s *goSource) load(path string) (*srcPkg, error) {
	if p, ok := s.pkgs[path]; ok {
		return p, nil
	}
	if !s.inModule(path) {
		return nil, fmt.Errorf("%s is not in module %s", path, s.module)
	}
	dir := filepath.Join(s.root, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(path, s.module), "/")))
	bp, err := s.ctx.ImportDir(dir, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	p := &srcPkg{path: path, dir: dir, name: bp.Name, funcs: map[string]*ast.FuncDecl{},
		methods: map[string][]*ast.FuncDecl{}, fileOf: map[*ast.FuncDecl]*ast.File{}}
	for _, imp := range bp.Imports {
		if s.inModule(imp) {
			p.imports = append(p.imports, imp)
		}
	}
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(s.fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			return nil, err
		}
		p.files = append(p.files, f)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			p.fileOf[fd] = f
			if fd.Recv == nil {
				p.funcs[fd.Name.Name] = fd
			} else {
				p.methods[fd.Name.Name] = append(p.methods[fd.Name.Name], fd)
			}
		}
	}
	s.pkgs[path] = p
	return p, nil
}

// closure is path and every module package it imports, directly or not,
// sorted.
func (s *goSource) closure(path string) ([]*srcPkg, error) {
	seen := map[string]bool{path: true}
	queue := []string{path}
	var out []*srcPkg
	for len(queue) > 0 {
		p, err := s.load(queue[0])
		if err != nil {
			return nil, err
		}
		queue = queue[1:]
		out = append(out, p)
		for _, imp := range p.imports {
			if !seen[imp] {
				seen[imp] = true
				queue = append(queue, imp)
			}
		}
	}
	slices.SortFunc(out, func(a, b *srcPkg) int { return strings.Compare(a.path, b.path) })
	return out, nil
}

// fileImports maps the names a file refers to its imports by to their paths:
// the module's packages (by their package name unless renamed) and
// lambdaImport. Other imports, blank and dot imports are left out.
func (s *goSource) fileImports(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil || (path != lambdaImport && !s.inModule(path)) {
			continue
		}
		name := ""
		switch {
		case imp.Name != nil:
			name = imp.Name.Name
		case path == lambdaImport:
			name = "lambda"
		default:
			p, err := s.load(path)
			if err != nil {
				s.t.Errorf("%s imports %s: %v", s.fset.Position(f.Pos()).Filename, path, err)
				continue
			}
			name = p.name
		}
		if name != "_" && name != "." {
			out[name] = path
		}
	}
	return out
}

// startsLambda reports whether the main function of the module package path
// leads to lambda.Start (or another of its Start* functions), and by which chain
// of functions. It follows what a function's body refers to: the package's
// own functions, functions of the module packages its file imports (a shared
// wiring package), and methods of those packages by name; never a package
// outside the module but aws-lambda-go/lambda itself.
func (s *goSource) startsLambda(path string) (chain []string, ok bool, err error) {
	p, err := s.load(path)
	if err != nil {
		return nil, false, err
	}
	if p.name != "main" {
		return nil, false, fmt.Errorf("%s is package %s, want main", path, p.name)
	}
	main := p.funcs["main"]
	if main == nil {
		return nil, false, fmt.Errorf("%s has no func main", path)
	}
	type fn struct {
		pkg  *srcPkg
		decl *ast.FuncDecl
	}
	visited := map[*ast.FuncDecl]bool{}
	var walk func(f fn, chain []string) ([]string, bool)
	walk = func(f fn, chain []string) ([]string, bool) {
		if visited[f.decl] {
			return nil, false
		}
		visited[f.decl] = true
		name := f.decl.Name.Name
		if f.pkg.path != path {
			name = f.pkg.name + "." + name
		}
		chain = append(slices.Clip(chain), name)
		imports := s.fileImports(f.pkg.fileOf[f.decl])
		var next []fn
		found := "" // the lambda.Start* function reached
		var visit func(n ast.Node) bool
		visit = func(n ast.Node) bool {
			if found != "" {
				return false
			}
			switch x := n.(type) {
			case *ast.Ident:
				// A function of this package (not a local that shadows it).
				if d := f.pkg.funcs[x.Name]; d != nil && (x.Obj == nil || x.Obj.Decl == d) {
					next = append(next, fn{f.pkg, d})
				}
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && id.Obj == nil {
					if ip, ok := imports[id.Name]; ok {
						if ip == lambdaImport {
							// Start, StartWithOptions, StartHandlerFunc, ...
							if strings.HasPrefix(x.Sel.Name, "Start") {
								found = x.Sel.Name
							}
						} else if q, err := s.load(ip); err == nil && q.funcs[x.Sel.Name] != nil {
							next = append(next, fn{q, q.funcs[x.Sel.Name]})
						}
						return false
					}
				}
				// A method value or call: any method of that name in this
				// package or the module packages this file imports.
				for _, ip := range append([]string{f.pkg.path}, mapValues(imports)...) {
					if q, err := s.load(ip); err == nil {
						for _, d := range q.methods[x.Sel.Name] {
							next = append(next, fn{q, d})
						}
					}
				}
				ast.Inspect(x.X, visit)
				return false
			}
			return true
		}
		ast.Inspect(f.decl.Body, visit)
		if found != "" {
			return append(chain, "lambda."+found), true
		}
		for _, g := range next {
			if c, ok := walk(g, chain); ok {
				return c, true
			}
		}
		return nil, false
	}
	chain, ok = walk(fn{p, main}, nil)
	return chain, ok, nil
}

// mapValues is m's values in key order.
func mapValues(m map[string]string) []string {
	var out []string
	for _, k := range keys(m) {
		if m[k] != lambdaImport {
			out = append(out, m[k])
		}
	}
	return out
}
