package archtest

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	// maxFileLines is a smoke alarm, not a layout rule: a Go file of the
	// module (tests aside, the emulator included) that grows past it has
	// likely gone wrong; files are otherwise split by concern, not by size.
	maxFileLines = 1000
	// maxFuncLines bounds a function, from its signature to its closing
	// brace, in the files of funcLimited (tests aside).
	maxFuncLines = 80
)

// funcLimited are the folders (with the folders below them) and files, from
// the module's root, whose functions are held to maxFuncLines.
var funcLimited = []string{"fs", "cache", "internal/cli", "internal/emulator"}

func TestFileSizes(t *testing.T) {
	_, root := module(t)
	for _, rel := range goFiles(t, root) {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		if n := lines(b); n > maxFileLines {
			t.Errorf("%s has %d lines, more than %d", rel, n, maxFileLines)
		}
	}
}

func TestFunctionSizes(t *testing.T) {
	_, root := module(t)
	fset := token.NewFileSet()
	for _, rel := range goFiles(t, root) {
		limited := false
		for _, p := range funcLimited {
			limited = limited || within(rel, p)
		}
		if !limited {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("parsing %s: %v", rel, err)
			continue
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			start, end := fset.Position(fn.Pos()).Line, fset.Position(fn.End()).Line
			if n := end - start + 1; n > maxFuncLines {
				t.Errorf("%s:%d: %s has %d lines, more than %d", rel, start, funcName(fn), n, maxFuncLines)
			}
		}
	}
}

// goFiles returns the module's Go files, tests aside, by their slash paths
// from root; testdata, vendor and hidden folders are passed over.
func goFiles(t *testing.T, root string) []string { return moduleFiles(t, root, false) }

// moduleFiles returns the module's Go files by their slash paths from root:
// its tests (_test.go) when tests is set, else the others; testdata, vendor
// and hidden folders are passed over.
func moduleFiles(t *testing.T, root string, tests bool) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && strings.HasSuffix(name, "_test.go") == tests {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// lines counts the lines of b as wc -l does, and a last one without a
// newline.
func lines(b []byte) int {
	n := bytes.Count(b, []byte("\n"))
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// funcName names a function or method as the reader finds it: Name or
// (Type).Name.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if ix, ok := typ.(*ast.IndexExpr); ok { // a generic type
		typ = ix.X
	}
	if ix, ok := typ.(*ast.IndexListExpr); ok {
		typ = ix.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return "(" + id.Name + ")." + fn.Name.Name
	}
	return fn.Name.Name
}
