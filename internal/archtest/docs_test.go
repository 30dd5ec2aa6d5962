package archtest

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// citedDocs are the documents, from the module's root, that name the tests
// pinning each promise.
var citedDocs = []string{"docs/SEMANTICS.md", "docs/RELIABILITY.md"}

var (
	// citation is a test named in backquotes, `TestX` or `FuzzX` alone, and
	// the test file given right after it, as in "`TestX` (fs/x_test.go".
	citation = regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9_]*)`(?: \\(`?([A-Za-z0-9_./-]+_test\\.go))?")
	// testFunc is the declaration of a test or fuzz test.
	testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Za-z0-9_]*)\(`)
)

// TestDocsCiteTestsThatExist: every test SEMANTICS.md and RELIABILITY.md
// cite as pinning a behaviour is a func TestX( (or FuzzX) of a _test.go file
// of the module, and of the file named right after it when one is, so that a
// test renamed, moved or removed does not leave a promise that reads as
// pinned and is not.
func TestDocsCiteTestsThatExist(t *testing.T) {
	_, root := module(t)
	tests := testFuncs(t, root)
	if len(tests) == 0 {
		t.Fatal("no test found in the module")
	}
	for _, doc := range citedDocs {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, m := range citation.FindAllStringSubmatch(string(b), -1) {
			name, file := m[1], m[2]
			switch {
			case seen[m[0]]:
			case tests[name] == nil:
				t.Errorf("%s cites `%s`, which is no test of the module", doc, name)
			case file != "" && !tests[name][file]:
				t.Errorf("%s cites `%s` in %s, which declares no such test (it is in %v)", doc, name, file, slices.Sorted(maps.Keys(tests[name])))
			}
			seen[m[0]] = true
		}
	}
}

// TestDocsLeaveNoPromiseUnpinned: no behaviour in SEMANTICS.md or
// RELIABILITY.md is marked as held by no test ("not pinned"); each cites its
// test, or says why no test can exist.
func TestDocsLeaveNoPromiseUnpinned(t *testing.T) {
	_, root := module(t)
	unpinned := regexp.MustCompile(`(?i)not\s+pinned`)
	for _, doc := range citedDocs {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if unpinned.MatchString(line) {
				t.Errorf("%s:%d: a behaviour with no test: %q (cite the test that pins it, or say why none can)", doc, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// testFuncs maps the tests and fuzz tests declared in the module's
// _test.go files (hidden, testdata and vendor folders passed over) to the
// files, by their slash paths from root, that declare them.
func testFuncs(t *testing.T, root string) map[string]map[string]bool {
	t.Helper()
	names := map[string]map[string]bool{}
	for _, rel := range moduleFiles(t, root, true) {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(b), -1) {
			if names[m[1]] == nil {
				names[m[1]] = map[string]bool{}
			}
			names[m[1]][rel] = true
		}
	}
	return names
}
