package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// TestPackage installs the .deb as a user does and uses what it laid out:
// make package builds the .deb and .rpm of amd64 and arm64; dpkg -i
// installs this machine's, which lintian finds no error in; man -w finds
// orgfs(1) and mount.fuse.orgfs(8);
// mount -t fuse.orgfs and an fstab line with mount -a mount the emulator
// through the installed helper; the installed bash completion completes
// orgfs st<TAB> and orgfs mount --log-f<TAB>; dpkg -r leaves none of its
// files; the .rpm holds the same files. It changes the machine (as root):
// CI runs it, elsewhere ORGFS_PACKAGE_TEST=1 does.
func TestPackage(t *testing.T) {
	if os.Getenv("CI") == "" && os.Getenv("ORGFS_PACKAGE_TEST") == "" {
		t.Skip("installs a package on this machine: run in CI, or with ORGFS_PACKAGE_TEST=1 (as root)")
	}
	for _, tool := range []string{"make", "dpkg", "dpkg-deb", "lintian", "man", "mount", "rpm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed: %v", tool, err)
		}
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("make", "package")
	for _, pattern := range []string{"orgfs_*_amd64.deb", "orgfs_*_arm64.deb", "orgfs-*.x86_64.rpm", "orgfs-*.aarch64.rpm"} {
		if m, _ := filepath.Glob(filepath.Join(repo, "dist", pattern)); len(m) != 1 {
			t.Fatalf("dist/%s: %d packages, want one", pattern, len(m))
		}
	}
	debs, _ := filepath.Glob(filepath.Join(repo, "dist", "orgfs_*_"+runtime.GOARCH+".deb"))
	rpmArch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	rpms, _ := filepath.Glob(filepath.Join(repo, "dist", "orgfs-*."+rpmArch+".rpm"))
	if len(debs) != 1 || len(rpms) != 1 {
		t.Fatalf("no package for %s: %v %v", runtime.GOARCH, debs, rpms)
	}
	out, _ := exec.Command("lintian", "--tag-display-limit", "0", debs[0]).CombinedOutput() // exit 1 on a warning
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "E: ") {
			t.Errorf("lintian: %s", l)
		} else if strings.HasPrefix(l, "W: ") {
			t.Logf("lintian: %s", l)
		}
	}
	files := debFiles(run("dpkg-deb", "-c", debs[0]))
	if rpmFiles := strings.Fields(run("rpm", "-qlp", rpms[0])); !slices.Equal(files, onlyFiles(rpmFiles, files)) {
		t.Errorf("the .rpm holds %v, the .deb %v", rpmFiles, files)
	}

	run("dpkg", "-i", debs[0])
	t.Cleanup(func() { exec.Command("dpkg", "-r", "orgfs").Run() })
	for _, page := range []string{"orgfs", "mount.fuse.orgfs"} {
		if out := run("man", "-w", page); !strings.Contains(out, "/usr/share/man/") {
			t.Errorf("man -w %s: %s", page, out)
		}
	}

	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedDemo})
	creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	dir := t.TempDir()
	opts := "credentials=" + creds + ",cache_dir=" + t.TempDir() + ",_netdev"
	t.Cleanup(func() { exec.Command("fusermount3", "-u", "-z", dir).Run() })
	mountCheck := func(how string, args ...string) {
		t.Helper()
		run("mount", args...)
		if b, err := os.ReadFile(filepath.Join(dir, "shared", "Welcome.txt")); err != nil || len(b) == 0 {
			t.Fatalf("%s: reading through the mount: %v", how, err)
		}
		run("/usr/bin/orgfs", "unmount", dir)
		if mounted(dir) {
			t.Fatalf("%s: still mounted", how)
		}
	}
	mountCheck("mount -t fuse.orgfs", "-t", "fuse.orgfs", "-o", opts, "orgfs", dir)
	fstab := filepath.Join(t.TempDir(), "fstab")
	os.WriteFile(fstab, []byte("orgfs "+dir+" fuse.orgfs "+opts+" 0 0\n"), 0o644)
	mountCheck("mount -a of an fstab line", "-a", "-T", fstab, "-t", "fuse.orgfs")

	for line, want := range map[string]string{"orgfs st": "status", "orgfs mount --log-f": "--log-format --log-file"} {
		script := `source /usr/share/bash-completion/completions/orgfs || exit 1
read -ra COMP_WORDS <<< "$LINE"
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_orgfs
printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.Command("bash", "-c", script)
		cmd.Env = append(os.Environ(), "LINE="+line)
		out, err := cmd.CombinedOutput()
		if got := strings.Join(strings.Fields(string(out)), " "); err != nil || got != want {
			t.Errorf("the installed completion of %q<TAB>: %q, %v; want %q", line, got, err, want)
		}
	}

	run("dpkg", "-r", "orgfs")
	for _, f := range files {
		if _, err := os.Lstat(f); err == nil {
			t.Errorf("%s is left after dpkg -r", f)
		}
	}
}

// debFiles are the files and links dpkg-deb -c lists (not the folders),
// as absolute paths, sorted.
func debFiles(listing string) []string {
	var out []string
	for _, l := range strings.Split(listing, "\n") {
		f := strings.Fields(l)
		if len(f) < 6 || strings.HasPrefix(f[0], "d") {
			continue
		}
		out = append(out, strings.TrimPrefix(f[5], "."))
	}
	slices.Sort(out)
	return out
}

// onlyFiles is those of paths (rpm -qlp: folders too) that are not folders
// of want, sorted.
func onlyFiles(paths, want []string) []string {
	var out []string
	for _, p := range paths {
		isDir := slices.ContainsFunc(want, func(w string) bool { return strings.HasPrefix(w, p+"/") })
		if !isDir {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}
