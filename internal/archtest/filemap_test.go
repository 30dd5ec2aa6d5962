package archtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArchitectureNamesEveryFile: docs/ARCHITECTURE.md names every non-test
// Go file of the module by its path from the root, in backquotes, so the
// map a newcomer reads is never behind the tree; and it names no Go file
// that is gone.
func TestArchitectureNamesEveryFile(t *testing.T) {
	_, root := module(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	files := goFiles(t, root)
	for _, rel := range files {
		if !strings.Contains(doc, "`"+rel+"`") {
			t.Errorf("docs/ARCHITECTURE.md does not name %s (as `%s`)", rel, rel)
		}
	}
	// Every path of a Go file it names in backquotes is a file there.
	parts := strings.Split(doc, "`")
	for i := 1; i < len(parts); i += 2 {
		quoted := parts[i]
		if !strings.HasSuffix(quoted, ".go") || !strings.Contains(quoted, "/") || strings.ContainsAny(quoted, " *") {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(quoted))); err != nil {
			t.Errorf("docs/ARCHITECTURE.md names %s, which is not in the tree", quoted)
		}
	}
}
