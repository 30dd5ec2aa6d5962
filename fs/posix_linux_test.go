package fs

// The errnos and edges of the POSIX operations that docs/SEMANTICS.md
// promises, one check each, on a real mount.

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/orgfs/orgfs/place"
)

// renameat2 calls renameat2(2) with flags (unix.RENAME_NOREPLACE,
// RENAME_EXCHANGE, RENAME_WHITEOUT).
func renameat2(from, to string, flags uint) error {
	return unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, flags)
}

func expectErrno(t *testing.T, what string, err error, want syscall.Errno) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: %v, want %v", what, err, want)
	}
}

func TestPosixEdges(t *testing.T) {
	e := newEnv(t, envOptions{})
	sh := func(parts ...string) string { return e.Path(append([]string{"shared"}, parts...)...) }
	if err := os.WriteFile(sh("f"), []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sh("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(sh("g"), []byte("g"), 0o644)
	e.settle()

	// create
	_, err := os.OpenFile(sh("f"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	expectErrno(t, "O_EXCL of an existing file", err, syscall.EEXIST)
	_, err = os.OpenFile(sh("d"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	expectErrno(t, "create of a folder's name", err, syscall.EISDIR)
	_, err = os.Create(e.Path("new-at-root"))
	expectErrno(t, "create in the root", err, syscall.EROFS)
	expectErrno(t, "mkdir in computers/", os.Mkdir(e.Path("computers", "new"), 0o755), syscall.EROFS)

	// unlink, rmdir
	expectErrno(t, "unlink of a folder", syscall.Unlink(sh("d")), syscall.EISDIR)
	if err := os.Mkdir(sh("litter"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sh("litter", ".DS_Store"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Rmdir(sh("litter")); err != nil {
		t.Errorf("rmdir of a folder holding only desktop files: %v", err)
	}

	// rename flags and places
	expectErrno(t, "RENAME_NOREPLACE over an existing name", renameat2(sh("f"), sh("g"), 1), syscall.EEXIST)
	expectErrno(t, "RENAME_EXCHANGE", renameat2(sh("f"), sh("g"), 2), syscall.EINVAL)
	if err := renameat2(sh("g"), sh("g2"), 1); err != nil {
		t.Errorf("RENAME_NOREPLACE to a free name: %v", err)
	}
	expectErrno(t, "rename into recordings/", os.Rename(sh("g2"), e.Path("recordings", "g2")), syscall.EROFS)

	// links, special files, xattrs
	if err := os.Symlink("f", sh("ln")); err != nil { // a link file (links_linux_test.go)
		t.Errorf("symlink: %v", err)
	}
	expectErrno(t, "link", os.Link(sh("f"), sh("hard")), syscall.ENOTSUP)
	if err := syscall.Mkfifo(sh("fifo"), 0o644); err != nil { // kept in memory (special_linux_test.go)
		t.Errorf("mkfifo: %v", err)
	}
	// getxattr: not supported, which the kernel learns at the first and
	// then answers itself (ls -l asks three per file).
	asked := getxattrAsked.Load()
	_, err = syscall.Getxattr(sh("f"), "user.x", make([]byte, 64))
	expectErrno(t, "getxattr", err, syscall.ENOTSUP)
	_, err = syscall.Getxattr(e.Path("shared"), "security.selinux", nil)
	expectErrno(t, "getxattr of a folder", err, syscall.ENOTSUP)
	expectErrno(t, "removexattr", syscall.Removexattr(sh("f"), "user.x"), syscall.ENODATA)
	if n := getxattrAsked.Load() - asked; n > 1 {
		t.Errorf("%d getxattr requests reached the daemon, want at most 1 (the kernel remembers)", n)
	}
	expectErrno(t, "setxattr", syscall.Setxattr(sh("f"), "user.x", []byte("v"), 0), syscall.ENOTSUP)
	if n, err := syscall.Listxattr(sh("f"), make([]byte, 64)); err != nil || n != 0 {
		t.Errorf("listxattr: %d %v, want empty", n, err)
	}

	// fsync of a file only read: 0.
	r, err := os.Open(sh("f"))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(); err != nil {
		t.Errorf("fsync of a file only read: %v", err)
	}
	r.Close()
}

// open(O_TRUNC) of a service file fetches nothing of its old content.
func TestTruncatingOpenFetchesNothing(t *testing.T) {
	e := newEnv(t, envOptions{})
	id := e.put(0, e.root(0), "big.bin", make([]byte, 2<<20)) // on the service only
	_ = id
	gets := e.objectGets()
	if err := os.WriteFile(e.Path("shared", "big.bin"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := e.objectGets() - gets; n != 0 {
		t.Errorf("open(O_TRUNC) of a service file made %d object GETs, want none", n)
	}
	e.settle()
	if got := string(e.serviceBytes("big.bin")); got != "new" {
		t.Errorf("big.bin on the service: %q", got)
	}
}

// The change time moves with chmod, chown and rename, and is never before
// the modification time.
func TestChangeTimeMoves(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := e.Path("shared", "f")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.settle()
	ctime := func() time.Time {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		if st.Ctim.Nano() < st.Mtim.Nano() {
			t.Errorf("ctime %v before mtime %v", st.Ctim, st.Mtim)
		}
		return time.Unix(st.Ctim.Unix())
	}
	for _, step := range []struct {
		name string
		op   func() error
	}{
		{"chmod", func() error { return os.Chmod(p, 0o600) }},
		{"chown", func() error { return os.Chown(p, 42, 42) }},
		{"utimes to the past", func() error {
			old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
			return os.Chtimes(p, old, old)
		}},
		{"rename", func() error {
			q := filepath.Join(filepath.Dir(p), "f2")
			err := os.Rename(p, q)
			p = q
			return err
		}},
	} {
		before := ctime()
		time.Sleep(20 * time.Millisecond)
		if err := step.op(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		time.Sleep(1100 * time.Millisecond) // the kernel's attribute cache
		if after := ctime(); !after.After(before) {
			t.Errorf("after %s the change time is %v, was %v", step.name, after, before)
		}
	}
}

// utimensat sets the access time apart from the modification time; a
// folder's link count counts its subfolders, as on a disk.
func TestAccessTimeAndFolderLinks(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := e.Path("shared", "f")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	atime, mtime := time.Unix(1900000000, 0), time.Unix(1950000000, 0)
	if err := os.Chtimes(p, atime, mtime); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		if st.Atim.Sec != atime.Unix() || st.Mtim.Sec != mtime.Unix() {
			t.Errorf("%s: atime %d mtime %d, want %d %d", when, st.Atim.Sec, st.Mtim.Sec, atime.Unix(), mtime.Unix())
		}
	}
	check("pending")
	e.settle()
	time.Sleep(1100 * time.Millisecond) // the kernel's attribute cache
	check("uploaded")
	d := e.Path("shared", "d")
	for _, sub := range []string{"d", "d/a", "d/b"} {
		if err := os.Mkdir(e.Path("shared", sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	nlink := func(p string) uint64 {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		return st.Nlink
	}
	// Right after the mkdirs and a rename out, without a listing between
	// (the kernel's attribute cache aside).
	time.Sleep(1100 * time.Millisecond)
	if n := nlink(d); n != 4 {
		t.Errorf("a folder with 2 subfolders: nlink %d, want 4", n)
	}
	if err := os.Rename(e.Path("shared", "d", "b"), e.Path("shared", "b")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if n := nlink(d); n != 3 {
		t.Errorf("after a subfolder moved out: nlink %d, want 3", n)
	}
}

// What close and fsync promise (docs/RELIABILITY.md, Guarantees): after
// close the bytes are in the staging copy on local disk, nothing sent yet
// (a long --write-back); after fsync returns 0 they are on the service.
func TestCloseStagesFsyncUploads(t *testing.T) {
	e := newEnv(t, envOptions{WriteBack: time.Hour})
	data := []byte("acknowledged by close, then by fsync")
	if err := os.WriteFile(e.Path("shared", "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	st := e.Store.Staging.Lookup(place.Target{Area: place.Area{Kind: place.Shared}, Name: "f"})
	if st == nil {
		t.Fatal("after close the file is not staged")
	}
	got, err := os.ReadFile(st.File().Name())
	if err != nil || string(got) != string(data) {
		t.Fatalf("the staging copy on disk holds %q (%v)", got, err)
	}
	if _, ok := e.serviceFile("f"); ok {
		t.Fatal("sent before its write-back time")
	}
	f, err := os.OpenFile(e.Path("shared", "f"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() // before the unmount, also on a failure
	f.WriteString("!")
	if err := f.Sync(); err != nil {
		t.Fatalf("fsync: %v", err)
	}
	// At once, no waiting: fsync returned, so the service has it.
	if got := string(e.serviceBytes("f")); got != string(data)+"!" {
		t.Errorf("after fsync the service holds %q", got)
	}
}
