package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/emulator/emutest"
	"github.com/orgfs/orgfs/internal/testkit"
)

// Modes and times travel: what a writer gave a file (chmod, touch -d, git,
// rsync -a) rides in its content type, and every desk shows it: a second
// mount with its own cache dir, and the first after its cache dir is
// removed. A chmod of a file already up waits for its next upload. Where
// the service drops a content type's parameters (type-no-params), each
// desk shows its own, as before.
func TestModesAndTimesTravel(t *testing.T) {
	t.Run("default", func(t *testing.T) { travel(t, emulator.Dialect{}) })
	t.Run("type-no-params", func(t *testing.T) {
		d, err := emulator.DialectOf("type-no-params")
		if err != nil {
			t.Fatal(err)
		}
		travel(t, d)
	})
}

func travel(t *testing.T, dialect emulator.Dialect) {
	kept := !dialect.TypeNoParams
	srv := emutest.Start(t, emulator.Options{Seed: emulator.SeedEmpty, Dialect: dialect, Log: testkit.Quiet()})
	creds := writeCreds(t, testkit.Creds(t, srv, emulator.OrgA))
	cacheA := t.TempDir()
	mount := func(cacheDir string) *daemon {
		return startDaemon(t, t.TempDir(), "--credentials", creds, "--cache-dir", cacheDir, "--write-back", "50ms", "--dir-cache-time", "200ms")
	}
	a, b := mount(cacheA), mount(t.TempDir())
	inA := func(p string) string { return filepath.Join(a.dir, "shared", "travel", p) }
	inB := func(p string) string { return filepath.Join(b.dir, "shared", "travel", p) }
	must(t, os.Mkdir(filepath.Join(a.dir, "shared", "travel"), 0o755))

	must(t, os.WriteFile(inA("run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o644))
	must(t, os.Chmod(inA("run.sh"), 0o755))
	must(t, os.WriteFile(inA("notes.txt"), []byte("notes\n"), 0o644))
	set := time.Date(2024, 1, 2, 3, 4, 5, 123456789, time.UTC)
	must(t, os.Chtimes(inA("notes.txt"), set, set))
	must(t, os.WriteFile(inA("plain.txt"), []byte("plain\n"), 0o644))
	syncMount(t, a)
	plainA := stat(t, inA("plain.txt"))

	// check has the files shown at dir with the mode and times A gave them
	// (or, where the service drops them, the defaults).
	check := func(where string, in func(string) string, travelled bool) {
		t.Helper()
		run, notes, plain := stat(t, in("run.sh")), stat(t, in("notes.txt")), stat(t, in("plain.txt"))
		switch {
		case travelled && (run.Mode().Perm() != 0o755 || !notes.ModTime().Equal(set) || !plain.ModTime().Equal(plainA.ModTime())):
			t.Fatalf("%s: run.sh %v, notes.txt %v, plain.txt %v; want 0755, %v and A's %v", where, run.Mode(), notes.ModTime(), plain.ModTime(), set, plainA.ModTime())
		case !travelled && (run.Mode().Perm() != 0o644 || notes.ModTime().Equal(set)):
			t.Fatalf("%s, the service dropping the parameters: run.sh %v, notes.txt %v; want the defaults (0644, the service's time)", where, run.Mode(), notes.ModTime())
		}
	}
	check("B", inB, kept)
	check("A", inA, true) // its own desk's store, either way

	// A, its cache dir removed: what the service keeps, nothing more.
	stopDaemon(t, a)
	must(t, os.RemoveAll(cacheA))
	a = mount(cacheA)
	check("A after its cache dir was removed", inA, kept)
	if !kept {
		return
	}

	// A chmod of a file already up stays on its desk until its next upload.
	must(t, os.Chmod(inA("run.sh"), 0o700))
	syncMount(t, a)
	time.Sleep(300 * time.Millisecond) // B's listing expires
	if m := stat(t, inB("run.sh")).Mode().Perm(); m != 0o755 {
		t.Fatalf("B shows run.sh %v after a chmod on A of the file up, want 0755 until its next upload", m)
	}
	f, err := os.OpenFile(inA("run.sh"), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	f.WriteString("echo again\n")
	must(t, f.Close())
	syncMount(t, a)
	testkit.WaitFor(t, 5*time.Second, "B to show run.sh 0700 after its next upload", func() bool {
		return stat(t, inB("run.sh")).Mode().Perm() == 0o700
	})

	// git: a clone on A is clean on B.
	src := t.TempDir()
	gitRun(t, src, "init", "-q")
	must(t, os.WriteFile(filepath.Join(src, "build.sh"), []byte("#!/bin/sh\nmake\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "README"), []byte("readme\n"), 0o644))
	gitRun(t, src, "add", ".")
	gitRun(t, src, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
	gitRun(t, inA(""), "clone", "-q", "--no-hardlinks", "file://"+src, "repo")
	syncMount(t, a)
	time.Sleep(300 * time.Millisecond)
	if out := gitRun(t, inB("repo"), "status", "--porcelain"); out != "" {
		t.Fatalf("git status on B of a clone made on A:\n%s", out)
	}

	// rsync -a into A, then the same tree against B: nothing to copy
	// (folder times stay on each desk: -O).
	tree := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(tree, "sub"), 0o755))
	for i, name := range []string{"a.sh", "b.txt", "sub/c.dat"} {
		p := filepath.Join(tree, name)
		must(t, os.WriteFile(p, []byte(strings.Repeat("x", 100*i+1)), 0o644))
		must(t, os.Chmod(p, []os.FileMode{0o755, 0o600, 0o640}[i]))
		when := time.Date(2023, 5, i+1, 10, 0, 0, 0, time.UTC)
		must(t, os.Chtimes(p, when, when))
	}
	if out, err := exec.Command("rsync", "-a", tree+"/", inA("tree")+"/").CombinedOutput(); err != nil {
		t.Fatalf("rsync -a into A: %v\n%s", err, out)
	}
	syncMount(t, a)
	time.Sleep(300 * time.Millisecond)
	out, err := exec.Command("rsync", "-a", "-O", "--dry-run", "--itemize-changes", tree+"/", inB("tree")+"/").CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Fatalf("rsync -a --dry-run --itemize-changes of the tree against B: %v\n%s", err, out)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func stat(t *testing.T, p string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// syncMount waits until what was written to d's mount is on the service
// (orgfs sync, through .ctl/sync).
func syncMount(t *testing.T, d *daemon) {
	t.Helper()
	must(t, os.WriteFile(filepath.Join(d.dir, ".ctl", "sync"), []byte("\n"), 0))
}

// stopDaemon unmounts d as SIGINT does, and waits for it.
func stopDaemon(t *testing.T, d *daemon) {
	t.Helper()
	must(t, d.cmd.Process.Signal(syscall.SIGINT))
	if code := d.wait(); code != 0 {
		t.Fatalf("the daemon exited %d:\n%s", code, d.out)
	}
}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
