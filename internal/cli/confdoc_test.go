package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestConfigurationDocIsCurrent: docs/CONFIGURATION.md is what the commands'
// flag sets render (confdoc.go); with ORGFS_UPDATE_DOCS=1 it writes it.
func TestConfigurationDocIsCurrent(t *testing.T) {
	const regenerate = "make docs (or ORGFS_UPDATE_DOCS=1 go test ./internal/cli -run TestConfigurationDocIsCurrent)"
	got, err := renderConfigurationDoc()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "docs", "CONFIGURATION.md")
	if os.Getenv("ORGFS_UPDATE_DOCS") != "" {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: generate it with %s", err, regenerate)
	}
	if want := string(b); want != got {
		wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
		i := 0
		for i < len(wl) && i < len(gl) && wl[i] == gl[i] {
			i++
		}
		line := func(l []string) string {
			if i < len(l) {
				return l[i]
			}
			return "(end of file)"
		}
		t.Fatalf("docs/CONFIGURATION.md is not what the flag sets say; regenerate it with %s.\n"+
			"First difference, line %d:\n  file:  %s\n  flags: %s", regenerate, i+1, line(wl), line(gl))
	}
}

// Every command of the table and every flag of each has its place in the
// reference, and each default the reference states instead of this
// machine's is a flag's.
func TestConfigurationDocNamesEveryFlag(t *testing.T) {
	doc, err := renderConfigurationDoc()
	if err != nil {
		t.Fatal(err)
	}
	sets := map[string]*pflag.FlagSet{}
	for name, cmd := range commands() {
		if !strings.Contains(doc, "\n## orgfs "+name+"\n") {
			t.Errorf("no section for orgfs %s", name)
		}
		fs, _, err := commandFlags(cmd)
		if err != nil {
			t.Fatal(err)
		}
		if fs == nil {
			continue
		}
		sets[name] = fs
		fs.VisitAll(func(f *pflag.Flag) {
			if !strings.Contains(doc, "| `--"+f.Name+"` |") {
				t.Errorf("orgfs %s --%s is not in the reference", name, f.Name)
			}
		})
	}
	for key := range machineDefaults {
		name, flag, _ := strings.Cut(key, " --")
		if fs := sets[name]; fs == nil || fs.Lookup(flag) == nil {
			t.Errorf("machineDefaults names %q, which is no flag", key)
		}
	}
	for opt := range helperFlags {
		if !strings.Contains(doc, "| `"+opt) {
			t.Errorf("mount option %s is not in the reference", opt)
		}
	}
}
