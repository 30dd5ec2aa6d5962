package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// storeParts are the parts of cache.Store that package fs (and the packages
// below it) may not reach into: they change state only through the Store's
// named operations, which carry their ordering rules (a folder's times, what
// the attribute store keeps, what a discard drops).
var storeParts = map[string]bool{"Staging": true, "Attrs": true}

// TestFSChangesStateThroughTheStore: no Go file of fs or below it, tests
// aside, selects a field named Staging or Attrs (store.Staging.X,
// store.Attrs.X).
func TestFSChangesStateThroughTheStore(t *testing.T) {
	_, root := module(t)
	fset := token.NewFileSet()
	for _, rel := range goFiles(t, root) {
		if !within(rel, "fs") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("parsing %s: %v", rel, err)
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && storeParts[sel.Sel.Name] {
				t.Errorf("%s: reaches into the Store's %s (use a Store operation)", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}
