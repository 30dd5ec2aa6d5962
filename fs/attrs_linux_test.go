package fs

// Modes, owners and times set on this desk (cache.Attrs) last as on a disk:
// across uploads, edits and remounts, until another writer changes the file.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
)

// attrs is what a test compares of a file or folder.
type attrs struct {
	Mode     uint32
	UID, GID uint32
	Mtime    time.Time
}

func statAttrs(t *testing.T, p string) attrs {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return attrs{Mode: st.Mode &^ syscall.S_IFMT, UID: st.Uid, GID: st.Gid, Mtime: time.Unix(st.Mtim.Unix()).UTC()}
}

func TestModesOwnersAndTimesLast(t *testing.T) {
	e := newEnv(t, envOptions{})
	script, data, dir := e.Path("shared", "run.sh"), e.Path("shared", "data"), e.Path("shared", "private")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho ran\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// chmod +x while pending, then run it: the kernel checks the mode.
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := runOnMount(script); err != nil || string(out) != "ran\n" {
		t.Fatalf("running a file made executable: %q %v", out, err)
	}
	if err := os.WriteFile(data, []byte("numbers"), 0o600); err != nil { // created 0600
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	e.settle()
	// Set on files the service holds now (uploaded): owner, mode, time.
	if err := os.Chown(data, 1234, 5678); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	if err := os.Chtimes(data, when, when); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dir, when, when); err != nil {
		t.Fatal(err)
	}
	want := map[string]attrs{
		"run.sh":  {Mode: 0o755, Mtime: statAttrs(t, script).Mtime},
		"data":    {Mode: 0o600, UID: 1234, GID: 5678, Mtime: when},
		"private": {Mode: 0o750, Mtime: when},
	}
	check := func(when string) {
		t.Helper()
		for name, w := range want {
			if got := statAttrs(t, e.Path("shared", name)); got != w {
				t.Errorf("%s: %s shows %+v, want %+v", when, name, got, w)
			}
		}
	}
	check("uploaded")
	// A remount on the same cache dir (the kernel's attributes gone with it).
	e.unmount()
	e.Mount()
	check("after a remount")
	script, data = e.Path("shared", "run.sh"), e.Path("shared", "data")
	// An edit keeps the mode (a new version on the service).
	f, err := os.OpenFile(script, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("echo again\n")
	f.Close()
	e.settle()
	if got := statAttrs(t, script).Mode; got != 0o755 {
		t.Errorf("after an edit run.sh shows mode %o, want 755", got)
	}
	// Another writer's version shows the service's defaults: what was set
	// here was set on the version it replaced.
	e.apiReplace("data", "theirs")
	e.Store.Dirs.Drop(place.DirKey{Area: place.Area{Kind: place.Shared}})
	// The folder is listed again and the kernel told, in the background.
	testkit.WaitFor(t, 5*time.Second, "another writer's version of data to show the defaults", func() bool {
		got := statAttrs(t, data)
		return got.Mode == 0o644 && got.UID == uint32(os.Getuid()) && !got.Mtime.Equal(when)
	})
}

// A folder's times move when an entry is made, removed or renamed in it
// through this mount, as a disk's do.
func TestFolderTimesMove(t *testing.T) {
	e := newEnv(t, envOptions{})
	dir := e.Path("shared", "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, step := range []struct {
		name string
		op   func() error
	}{
		{"create", func() error { return os.WriteFile(filepath.Join(dir, "a"), []byte("a"), 0o644) }},
		{"rename", func() error { return os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "b")) }},
		{"mkdir", func() error { return os.Mkdir(filepath.Join(dir, "sub"), 0o755) }},
		{"rmdir", func() error { return os.Remove(filepath.Join(dir, "sub")) }},
		{"unlink", func() error { return os.Remove(filepath.Join(dir, "b")) }},
	} {
		if err := os.Chtimes(dir, old, old); err != nil {
			t.Fatal(err)
		}
		if err := step.op(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := statAttrs(t, dir).Mtime; got.Before(time.Now().Add(-time.Minute)) {
			t.Errorf("after %s the folder's time is %v, want now", step.name, got)
		}
	}
}

// rsync -a twice, and again after a remount, transfers and itemizes
// nothing: modes, times and folder times set by the first run last.
func TestRsyncTwiceItemizesNothing(t *testing.T) {
	if _, err := exec.LookPath("rsync"); err != nil {
		t.Fatal("rsync is needed (apt-get install rsync)")
	}
	e := newEnv(t, envOptions{})
	src := t.TempDir()
	files := map[string]os.FileMode{"a.txt": 0o644, "run.sh": 0o755, "secret": 0o600, "sub/b.txt": 0o640, "sub/deep/c": 0o664}
	for name, mode := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("content of "+name), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(src, "sub"), 0o750); err != nil {
		t.Fatal(err)
	}
	past := time.Date(2019, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, p := range []string{"sub/deep", "sub", "."} {
		os.Chtimes(filepath.Join(src, p), past, past)
	}
	dst := e.Path("shared", "dst")
	rsync := func(when string) string {
		t.Helper()
		out, err := exec.Command("rsync", "-a", "-i", src+"/", dst+"/").CombinedOutput()
		if err != nil {
			t.Fatalf("%s: rsync: %v\n%s", when, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if out := rsync("first run"); strings.Count(out, "\n")+1 < len(files) {
		t.Fatalf("the first run itemized too little:\n%s", out)
	}
	if out := rsync("second run, pending"); out != "" {
		t.Errorf("a second rsync -a itemized:\n%s", out)
	}
	e.settle()
	if out := rsync("third run, uploaded"); out != "" {
		t.Errorf("rsync -a after the uploads itemized:\n%s", out)
	}
	e.unmount()
	e.Mount()
	dst = e.Path("shared", "dst")
	if out := rsync("after a remount"); out != "" {
		t.Errorf("rsync -a after a remount itemized:\n%s", out)
	}
}

// runOnMount runs the program at p, a file of the mount, through a shell (sh
// execs it, so the kernel checks its mode). Not directly: the test process
// serves the mount, and a fork that execs a file of the mount can deadlock
// it (the forking thread waits for the exec, the exec for the mount, the
// mount for a garbage collection that waits for the forking thread).
func runOnMount(p string) ([]byte, error) {
	out, err := exec.Command("/bin/sh", "-c", `exec "$0"`, p).CombinedOutput()
	return out, err
}

// A mode and a modification time set on one desk before the upload go up
// with the file (its content type): another desk, and this desk with a new
// cache dir, show them. Owners are that desk's: user ids differ between
// machines; the others show the mount's owner.
func TestModesAndTimesTravelOwnersStay(t *testing.T) {
	a, b := twoDesks(t)
	p := "f"
	if err := os.WriteFile(a.Path("shared", p), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chmod(a.Path("shared", p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(a.Path("shared", p), 4242, 4343); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(a.Path("shared", p), old, old); err != nil {
		t.Fatal(err)
	}
	a.settle()
	check := func(who string, path string, want func(st *syscall.Stat_t) bool) {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Stat(path, &st); err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		if !want(&st) {
			t.Errorf("%s: mode %o uid %d gid %d mtime %d", who, st.Mode&0o7777, st.Uid, st.Gid, st.Mtim.Sec)
		}
	}
	check("desk A", a.Path("shared", p), func(st *syscall.Stat_t) bool {
		return st.Mode&0o7777 == 0o700 && st.Uid == 4242 && st.Gid == 4343 && st.Mtim.Sec == old.Unix()
	})
	travelled := func(st *syscall.Stat_t) bool {
		return st.Mode&0o7777 == 0o700 && st.Uid == uint32(os.Getuid()) && st.Gid == uint32(os.Getgid()) && st.Mtim.Sec == old.Unix()
	}
	check("desk B", b.Path("shared", p), travelled)

	// Desk A again, with a new cache dir.
	a.unmount()
	a.CacheDir = t.TempDir()
	a.Mount()
	check("desk A with a new cache dir", a.Path("shared", p), travelled)
}
