package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// dotted is a name the architecture page gives in backquotes as X.y: a
// package's identifier (cache.Store), or a type's field or method
// (Fetcher.mu, Store.Bound); a leading * is allowed.
var dotted = regexp.MustCompile("`\\*?([A-Za-z_][A-Za-z0-9_]*)\\.([A-Za-z_][A-Za-z0-9_]*)`")

// TestArchitectureNamesWhatExists: every lock, type, field, method and
// package identifier docs/ARCHITECTURE.md names as X.y is there: X a
// package of the module and y one of its top-level names, or X a type of
// the module and y a field or method of it. Names of other packages
// (fuse.ReadResultFd) and of files (retiring.json) are passed over.
func TestArchitectureNamesWhatExists(t *testing.T) {
	_, root := module(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	decls := moduleDecls(t, root)
	checked := 0
	for _, m := range dotted.FindAllStringSubmatch(string(b), -1) {
		x, y := m[1], m[2]
		switch {
		case fileExt[y]:
			continue
		case decls.packages[x] != nil:
			if !decls.packages[x][y] {
				t.Errorf("docs/ARCHITECTURE.md names %s.%s: package %s declares no %s", x, y, x, y)
			}
		case decls.types[x] != nil:
			if !decls.types[x][y] {
				t.Errorf("docs/ARCHITECTURE.md names %s.%s: type %s has no field or method %s", x, y, x, y)
			}
		case decls.imports[x]:
			continue
		default:
			t.Errorf("docs/ARCHITECTURE.md names %s.%s: no package, type or import of the module is named %s", x, y, x)
		}
		checked++
	}
	if checked < 50 {
		t.Errorf("only %d names checked in docs/ARCHITECTURE.md: is the pattern still right?", checked)
	}
}

// fileExt are the extensions of the files (and commands, mount.orgfs) the
// page names.
var fileExt = map[string]bool{"go": true, "json": true, "jsonl": true, "md": true, "txt": true, "svg": true, "sh": true, "zip": true, "bad": true, "orgfs": true, "rclonelink": true}

// decls are the module's names, tests aside: by package name, its
// top-level identifiers; by type name (of any package), its fields,
// embedded types and methods; the names of the packages outside the
// module that its files import.
type decls struct {
	packages map[string]map[string]bool
	types    map[string]map[string]bool
	imports  map[string]bool
}

func moduleDecls(t *testing.T, root string) decls {
	t.Helper()
	d := decls{packages: map[string]map[string]bool{}, types: map[string]map[string]bool{}, imports: map[string]bool{}}
	add := func(m map[string]map[string]bool, k, v string) {
		if m[k] == nil {
			m[k] = map[string]bool{}
		}
		m[k][v] = true
	}
	fset := token.NewFileSet()
	for _, rel := range goFiles(t, root) {
		f, err := parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(rel)), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parsing %s: %v", rel, err)
		}
		pkg := f.Name.Name
		if d.packages[pkg] == nil {
			d.packages[pkg] = map[string]bool{}
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			name := path.Base(p)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			if !strings.HasPrefix(p, "github.com/orgfs/") {
				d.imports[strings.TrimSuffix(name, "/v2")] = true
			}
		}
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if decl.Recv == nil {
					add(d.packages, pkg, decl.Name.Name)
					continue
				}
				if name := strings.Trim(funcName(decl), "()"); strings.Contains(name, ").") {
					typ, method, _ := strings.Cut(name, ").")
					add(d.types, typ, method)
				}
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						add(d.packages, pkg, spec.Name.Name)
						if d.types[spec.Name.Name] == nil {
							d.types[spec.Name.Name] = map[string]bool{}
						}
						if st, ok := spec.Type.(*ast.StructType); ok {
							for _, field := range st.Fields.List {
								for _, n := range field.Names {
									add(d.types, spec.Name.Name, n.Name)
								}
								if len(field.Names) == 0 { // embedded
									add(d.types, spec.Name.Name, embeddedName(field.Type))
								}
							}
						}
						if it, ok := spec.Type.(*ast.InterfaceType); ok {
							for _, m := range it.Methods.List {
								for _, n := range m.Names {
									add(d.types, spec.Name.Name, n.Name)
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							add(d.packages, pkg, n.Name)
						}
					}
				}
			}
		}
	}
	return d
}

// embeddedName is the field name of an embedded type: T, *T, pkg.T.
func embeddedName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return embeddedName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	case *ast.IndexExpr:
		return embeddedName(e.X)
	}
	return ""
}
