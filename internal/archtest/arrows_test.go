package archtest

import (
	"bytes"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// An arrow is a dependency a layer must not have: no package matching from
// (the package or one below it; the package alone when exact) may import one
// matching any of forbidden, directly, or, unless direct, through other
// packages.
type arrow struct {
	from      string
	forbidden []string
	direct    bool
	exact     bool
}

// The layers, from the bottom: api talks to the service; place names where
// things are on it; writeback, the write side, uploads what the mount wrote
// and knows nothing of the read side; cache keeps the service's answers and
// drives the write side through its Store, and neither knows anything of
// FUSE or the kernel; fs is the FUSE tree and
// reaches the service only through api and cache (the rules of fs hold for
// the packages below it: fs/ctl, the control tree, and fs/fstest). The data
// tree, fs itself, knows nothing of the control tree: the command hands
// .ctl's root to fs.Mount.
var arrows = []arrow{
	{from: "api", forbidden: []string{"cache", "fs", "github.com/hanwen/go-fuse"}},
	{from: "place", forbidden: []string{"api", "cache", "writeback", "fs"}},
	{from: "writeback", forbidden: []string{"cache", "fs", "github.com/hanwen/go-fuse"}},
	{from: "cache", forbidden: []string{"fs", "github.com/hanwen/go-fuse"}},
	// os and golang.org/x/sys import syscall themselves: only cache's and
	// writeback's own imports are held to it, and to x/sys/unix (syscall by
	// another name).
	{from: "cache", forbidden: []string{"syscall", "golang.org/x/sys/unix"}, direct: true},
	{from: "writeback", forbidden: []string{"syscall", "golang.org/x/sys/unix"}, direct: true},
	{from: "fs", forbidden: []string{"net/http"}, direct: true},
	{from: "fs", forbidden: []string{"fs/ctl"}, exact: true},
}

// layers are the module's top folders the arrows name by their short path.
var layers = []string{"api", "place", "writeback", "cache", "fs"}

func TestDependencyArrows(t *testing.T) {
	mod, root := module(t)
	graph := importGraph(t, root, mod)
	full := func(p string) string {
		if top, _, _ := strings.Cut(p, "/"); slices.Contains(layers, top) {
			return mod + "/" + p
		}
		return p
	}
	for _, a := range arrows {
		from := full(a.from)
		var forbidden []string
		for _, f := range a.forbidden {
			forbidden = append(forbidden, full(f))
		}
		found := false
		for pkg := range graph {
			if !within(pkg, from) || (a.exact && pkg != from) {
				continue
			}
			found = true
			if chain := reach(graph, pkg, forbidden, a.direct); chain != nil {
				t.Errorf("%s must not import %s, but %s", a.from, strings.Join(a.forbidden, ", "), strings.Join(chain, " → "))
			}
		}
		if !found {
			t.Errorf("no package %s in the module", from)
		}
	}
}

// module returns the module's path and its root folder.
func module(t *testing.T) (path, dir string) {
	t.Helper()
	out := goTool(t, "", "", "list", "-m", "-f", "{{.Path}}\t{{.Dir}}")
	path, dir, ok := strings.Cut(strings.TrimSpace(out), "\t")
	if !ok {
		t.Fatalf("go list -m: %q", out)
	}
	return path, dir
}

// platforms are the systems the module builds for (make darwin).
var platforms = []string{"linux", "darwin"}

// importGraph maps every package of the module and every package they
// depend on to its imports (not its tests'), on every platform of
// platforms; a package of the module imports, besides, what any of its Go
// files imports, whatever its build constraints (sourceImports), so that a
// file for another system is held to the arrows too.
func importGraph(t *testing.T, root, mod string) map[string][]string {
	t.Helper()
	sets := map[string]map[string]bool{}
	add := func(pkg string, imports []string) {
		if sets[pkg] == nil {
			sets[pkg] = map[string]bool{}
		}
		for _, imp := range imports {
			sets[pkg][imp] = true
		}
	}
	for _, goos := range platforms {
		out := goTool(t, root, "GOOS="+goos, "list", "-e", "-deps", "-f", "{{.ImportPath}}\t{{join .Imports \" \"}}", "./...")
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			pkg, imports, _ := strings.Cut(line, "\t")
			add(pkg, strings.Fields(imports))
		}
	}
	for pkg, imports := range sourceImports(t, root, mod) {
		add(pkg, imports)
	}
	graph := map[string][]string{}
	for pkg, set := range sets {
		graph[pkg] = slices.Sorted(maps.Keys(set))
	}
	return graph
}

// sourceImports maps each package of the module to what its Go files
// (tests aside) import, every file read whatever its build constraints.
func sourceImports(t *testing.T, root, mod string) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string][]string{}
	for _, rel := range goFiles(t, root) {
		f, err := parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(rel)), nil, parser.ImportsOnly)
		if err != nil {
			t.Errorf("parsing %s: %v", rel, err)
			continue
		}
		pkg := mod
		if dir := path.Dir(rel); dir != "." {
			pkg = mod + "/" + dir
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Errorf("%s: import %s: %v", rel, imp.Path.Value, err)
				continue
			}
			out[pkg] = append(out[pkg], p)
		}
	}
	return out
}

// reach returns the first chain of imports from pkg to a package within one
// of forbidden (only pkg's own imports when direct), or nil.
func reach(graph map[string][]string, pkg string, forbidden []string, direct bool) []string {
	prev := map[string]string{pkg: ""}
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range graph[p] {
			if _, seen := prev[imp]; seen {
				continue
			}
			prev[imp] = p
			if slices.ContainsFunc(forbidden, func(f string) bool { return within(imp, f) }) {
				var chain []string
				for q := imp; q != ""; q = prev[q] {
					chain = append(chain, q)
				}
				slices.Reverse(chain)
				return chain
			}
			if !direct {
				queue = append(queue, imp)
			}
		}
	}
	return nil
}

// within reports whether pkg is p or a package below it.
func within(pkg, p string) bool {
	return pkg == p || strings.HasPrefix(pkg, p+"/")
}

// goTool runs the go command in dir, with env (NAME=value) added to the
// environment unless empty, and returns its standard output.
func goTool(t *testing.T, dir, env string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	if env != "" {
		cmd.Env = append(os.Environ(), env)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}
