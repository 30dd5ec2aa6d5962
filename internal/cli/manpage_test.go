package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The manual pages hold every command and each of its flags, and every
// mount option; groff reads them without a warning (in CI groff is there).
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	if err := runMan([]string{dir}, &out); err != nil {
		t.Fatal(err)
	}
	page := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	orgfs, helper := page("man1/orgfs.1"), page("man8/mount.fuse.orgfs.8")
	for _, name := range commandNames() {
		if !strings.Contains(orgfs, `.SS "orgfs `+roff(name)) {
			t.Errorf("orgfs(1) has no section for orgfs %s", name)
		}
	}
	fs, _, err := commandFlags(commands()["mount"])
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"cache-max-size", "dir-cache-time", "pin-refresh", "write-back"} {
		if fs.Lookup(f) == nil || !strings.Contains(orgfs, `\fB\-\-`+roff(f)+`\fR`) {
			t.Errorf("orgfs(1) does not list mount --%s", f)
		}
	}
	for opt := range helperFlags {
		if !strings.Contains(helper, `.TP`+"\n"+`\fB`+roff(opt)+`\fR`) {
			t.Errorf("mount.fuse.orgfs(8) does not list the option %s", opt)
		}
	}
	groff, err := exec.LookPath("groff")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("groff is needed in CI (groff-base):", err)
		}
		t.Log("no groff here: the pages are not typeset")
		return
	}
	for _, name := range []string{"man1/orgfs.1", "man8/mount.fuse.orgfs.8"} {
		b, err := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z", filepath.Join(dir, name)).CombinedOutput()
		if err != nil || len(b) > 0 {
			t.Errorf("groff -ww on %s: %v\n%s", name, err, b)
		}
	}
}
