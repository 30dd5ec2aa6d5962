package fs

// Rows of docs/SEMANTICS.md that no other test held: mmap, O_DIRECT,
// fallocate, flock, RENAME_WHITEOUT, renames between areas, syncfs, and
// what a second desk sees of this desk's modes and of its folders.

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
)

// A read-only map reads a service file's content; a shared writable map's
// stores reach the file (read back through read(2)) and, after msync, fsync
// and close, the service. The maps are made by a child (this test binary
// run again, as mmapChild): a page fault on the mount in the process that
// serves it deadlocks the process (the fault holds its mmap lock while the
// server's threads need it).
func TestMmapReadOnlyAndSharedWritable(t *testing.T) {
	if mode := os.Getenv("ORGFS_MMAP_CHILD"); mode != "" {
		mmapChild(t, mode, os.Getenv("ORGFS_MMAP_PATH"), os.Getenv("ORGFS_MMAP_DATA"))
		return
	}
	e := newEnv(t, envOptions{})
	want := bytes.Repeat([]byte("0123456789abcdef"), 1024) // 16 KiB, 4 pages
	e.put(0, e.root(0), "ro.bin", want)
	child := func(mode, path string, in []byte) []byte {
		t.Helper()
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, self, "-test.run=^TestMmapReadOnlyAndSharedWritable$", "-test.count=1")
		data := filepath.Join(t.TempDir(), "data") // off the mount
		if err := os.WriteFile(data, in, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(os.Environ(), "ORGFS_MMAP_CHILD="+mode, "ORGFS_MMAP_PATH="+path, "ORGFS_MMAP_DATA="+data)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the %s map: %v: %s", mode, err, out)
		}
		out, err := os.ReadFile(data)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := child("ro", e.Path("shared", "ro.bin"), nil); !bytes.Equal(got, want) {
		t.Errorf("the read-only map differs from the service's content: %d bytes, first %q", len(got), got[:min(16, len(got))])
	}

	p := e.Path("shared", "rw.bin")
	if err := os.WriteFile(p, make([]byte, len(want)), 0o644); err != nil {
		t.Fatal(err)
	}
	child("rw", p, want)
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
		t.Errorf("read(2) after the map's stores: %d bytes, equal %v (%v)", len(got), bytes.Equal(got, want), err)
	}
	e.settle()
	if got := e.serviceBytes("rw.bin"); !bytes.Equal(got, want) {
		t.Errorf("the service has %d bytes of rw.bin, not the map's stores (first %q)", len(got), got[:min(16, len(got))])
	}
}

// mmapChild maps path: "ro" writes the mapped bytes to the file data; "rw"
// stores data's content into a shared writable map of the file's size, then msync, munmap,
// fsync and close.
func mmapChild(t *testing.T, mode, path, data string) {
	flag, prot := os.O_RDONLY, syscall.PROT_READ
	if mode == "rw" {
		flag, prot = os.O_RDWR, syscall.PROT_READ|syscall.PROT_WRITE
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), prot, syscall.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap %s: %v", mode, err)
	}
	if mode == "ro" {
		if err := os.WriteFile(data, m, 0o600); err != nil {
			t.Fatal(err)
		}
		syscall.Munmap(m)
		return
	}
	in, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	copy(m, in)
	const msSync = 4 // MS_SYNC
	if _, _, errno := syscall.Syscall(syscall.SYS_MSYNC, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), msSync); errno != 0 {
		t.Fatalf("msync: %v", errno)
	}
	if err := syscall.Munmap(m); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("fsync after the map's stores: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// O_DIRECT is accepted: an aligned write and read through it, the content
// on the service, then an O_DIRECT read of the file uploaded.
func TestODirectAccepted(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := e.Path("shared", "direct.bin")
	const size = 8192
	// An aligned buffer: a page of a larger slice.
	raw := make([]byte, size+4096)
	off := int(4096 - uintptr(unsafe.Pointer(&raw[0]))%4096)
	buf := raw[off : off+size]
	copy(buf, bytes.Repeat([]byte("direct I/O "), size/11+1))
	want := append([]byte(nil), buf...)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR|syscall.O_DIRECT, 0o644)
	if err != nil {
		t.Fatalf("open(O_DIRECT): %v", err)
	}
	defer f.Close()
	if n, err := f.WriteAt(buf, 0); err != nil || n != size {
		t.Fatalf("an O_DIRECT write: %d %v", n, err)
	}
	clear(buf)
	if n, err := f.ReadAt(buf, 0); err != nil || n != size || !bytes.Equal(buf, want) {
		t.Fatalf("an O_DIRECT read: %d %v, equal %v", n, err, bytes.Equal(buf, want))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	e.settle()
	if got := e.serviceBytes("direct.bin"); !bytes.Equal(got, want) {
		t.Errorf("the service has %d bytes of direct.bin, not what O_DIRECT wrote", len(got))
	}
	// An existing file (on the service now) opened O_DIRECT, to read.
	r, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		t.Fatalf("open(O_DIRECT) of a service file: %v", err)
	}
	defer r.Close()
	clear(buf)
	if n, err := r.ReadAt(buf, 0); err != nil || n != size || !bytes.Equal(buf, want) {
		t.Errorf("an O_DIRECT read of a service file: %d %v, equal %v", n, err, bytes.Equal(buf, want))
	}
}

// fallocate(2) answers EOPNOTSUPP, on a new file and on a service file, and
// changes neither's size.
func TestFallocateIsNotSupported(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.put(0, e.root(0), "old.bin", []byte("old"))
	for _, name := range []string{"new.bin", "old.bin"} {
		f, err := os.OpenFile(e.Path("shared", name), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		expectErrno(t, "fallocate of "+name, syscall.Fallocate(int(f.Fd()), 0, 0, 1<<20), syscall.EOPNOTSUPP)
		if st, err := f.Stat(); err != nil || st.Size() >= 1<<20 {
			t.Errorf("%s after fallocate: size %d (%v)", name, st.Size(), err)
		}
		f.Close()
	}
}

// flock locks are the local kernel's: an exclusive lock is granted, a
// second open file description of the same file is refused one
// (EWOULDBLOCK) until it is released, and no request goes to the service.
func TestFlockIsLocal(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := e.Path("shared", "lock")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.settle()
	a, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	before := e.allRequests()
	if err := syscall.Flock(int(a.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("flock LOCK_EX: %v", err)
	}
	expectErrno(t, "a second LOCK_EX", syscall.Flock(int(b.Fd()), syscall.LOCK_EX|syscall.LOCK_NB), syscall.EWOULDBLOCK)
	if err := syscall.Flock(int(a.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(b.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Errorf("LOCK_EX after the first was released: %v", err)
	}
	if n := e.allRequests() - before; n != 0 {
		t.Errorf("flock made %d requests", n)
	}
}

// renameat2(RENAME_WHITEOUT) is taken as a plain rename: the file moves,
// and no whiteout is left at the old name (the mount cannot hold one).
// The kernel lets only CAP_MKNOD ask it; the test runs as root.
func TestRenameWhiteoutIsAPlainRename(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("RENAME_WHITEOUT needs CAP_MKNOD")
	}
	e := newEnv(t, envOptions{})
	if err := os.WriteFile(e.Path("shared", "w"), []byte("moved"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.settle()
	if err := renameat2(e.Path("shared", "w"), e.Path("shared", "w2"), 4); err != nil {
		t.Fatalf("RENAME_WHITEOUT: %v", err)
	}
	if got := readFile(t, e.Path("shared", "w2")); got != "moved" {
		t.Errorf("w2 reads %q", got)
	}
	if _, err := os.Lstat(e.Path("shared", "w")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old name after RENAME_WHITEOUT: %v, want ENOENT", err)
	}
	e.settle()
	if got := e.serviceBytes("w2"); string(got) != "moved" {
		t.Errorf("w2 on the service: %q", got)
	}
	if _, ok := e.serviceFile("w"); ok {
		t.Errorf("the old name is still on the service")
	}
}

// A file moves between shared/ and a computer's storage, both ways, as
// between folders (on the service too); a folder, empty or not, to another
// area is EXDEV and stays.
func TestRenameBetweenAreas(t *testing.T) {
	e := newEnv(t, envOptions{})
	machine := e.Emu.Fixtures(e.Org).StoppedMachine
	comp := e.Path("computers", "Workstation")
	if err := os.WriteFile(e.Path("shared", "f"), []byte("from shared"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.put(machine, e.root(machine), "g", []byte("from the computer"))
	e.settle()
	if err := os.Rename(e.Path("shared", "f"), comp+"/f"); err != nil {
		t.Fatalf("rename shared/ → computers/: %v", err)
	}
	if err := os.Rename(comp+"/g", e.Path("shared", "g")); err != nil {
		t.Fatalf("rename computers/ → shared/: %v", err)
	}
	if got := readFile(t, comp+"/f"); got != "from shared" {
		t.Errorf("computers/Workstation/f reads %q", got)
	}
	if got := readFile(t, e.Path("shared", "g")); got != "from the computer" {
		t.Errorf("shared/g reads %q", got)
	}
	e.settle()
	if got := string(e.serviceBytes("g")); got != "from the computer" {
		t.Errorf("shared/g on the service: %q", got)
	}
	if _, ok := e.serviceFile("f"); ok {
		t.Errorf("shared/f is still on the service")
	}
	files, err := e.Client.MachineFiles(t.Context(), machine, api.ListFilesRequest{}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range files {
		names[f.Name] = true
	}
	if !names["f"] || names["g"] {
		t.Errorf("the computer's storage on the service has %v, want f and not g", names)
	}

	// Folders: EXDEV, both left where they were.
	if err := os.Mkdir(e.Path("shared", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(e.Path("shared", "full"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.Path("shared", "full", "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.settle()
	for _, d := range []string{"empty", "full"} {
		expectErrno(t, "rename of folder "+d+" to a computer", os.Rename(e.Path("shared", d), comp+"/"+d), syscall.EXDEV)
		if st, err := os.Stat(e.Path("shared", d)); err != nil || !st.IsDir() {
			t.Errorf("shared/%s after the refused rename: %v", d, err)
		}
		if _, err := os.Stat(comp + "/" + d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("computers/Workstation/%s after the refused rename: %v", d, err)
		}
	}
}

// sync(1) and syncfs flush the local staging only: a file written and
// closed under a long --write-back is not on the service after syncfs.
func TestSyncfsUploadsNothing(t *testing.T) {
	e := newEnv(t, envOptions{WriteBack: time.Hour})
	p := e.Path("shared", "staged")
	if err := os.WriteFile(p, []byte("waits"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(e.Path("shared"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		t.Fatalf("syncfs: %v", err)
	}
	syscall.Sync()
	time.Sleep(300 * time.Millisecond) // an upload started would be under way
	if st := e.Store.Staging.Stats(); st.Pending != 1 || st.Uploading != 0 {
		t.Errorf("after syncfs the staging is %+v, want one file pending", st)
	}
	if _, ok := e.serviceFile("staged"); ok {
		t.Errorf("syncfs uploaded the file")
	}
}

// mkdir of a name another desk made since this desk listed the folder is
// EEXIST from the service: folders are not merged, the other's stays.
func TestMkdirOfANameAnotherDeskMade(t *testing.T) {
	a, b := twoDesks(t)
	if _, err := os.ReadDir(b.Path("shared")); err != nil { // B lists shared/ (cached for a minute) before A makes d
		t.Fatal(err)
	}
	if err := os.Mkdir(a.Path("shared", "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.Path("shared", "d", "a's"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.settle()
	expectErrno(t, "mkdir on B of a name A made", os.Mkdir(b.Path("shared", "d"), 0o755), syscall.EEXIST)
	files, err := a.Client.SharedFiles(t.Context(), api.ListFilesRequest{}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if f.Name == "d" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d folders named d on the service, want 1", n)
	}
	b.Store.Dirs.Drop(place.DirKey{Area: place.Area{Kind: place.Shared}})
	time.Sleep(1100 * time.Millisecond)
	if got := readFile(t, b.Path("shared", "d", "a's")); got != "a" {
		t.Errorf("B reads d/a's %q", got)
	}
}

// Modes, owners and times set on one desk are that desk's: another desk,
// and this desk with a new cache dir, show the service's defaults.
func TestAttributesAreThisDesksOnly(t *testing.T) {
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
	defaults := func(st *syscall.Stat_t) bool {
		return st.Mode&0o7777 == 0o644 && st.Uid == uint32(os.Getuid()) && st.Gid == uint32(os.Getgid()) && st.Mtim.Sec != old.Unix()
	}
	check("desk B", b.Path("shared", p), defaults)

	// Desk A again, with a new cache dir.
	a.unmount()
	a.CacheDir = t.TempDir()
	a.Mount()
	check("desk A with a new cache dir", a.Path("shared", p), defaults)
}

// A service file's inode number comes from its id: the same on two desks
// and after a remount; another writer's new version (a new id) is a new
// number. (A file this mount uploads keeps the number it had while
// pending: TestOwnUploadKeepsIdentity.)
func TestInodeNumbersFollowTheServiceID(t *testing.T) {
	a, b := twoDesks(t)
	a.put(0, a.root(0), "f", []byte("v1"))
	ino := func(p string) uint64 {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	first := ino(a.Path("shared", "f"))
	if other := ino(b.Path("shared", "f")); other != first {
		t.Errorf("desk B shows inode %d, desk A %d", other, first)
	}
	a.unmount()
	a.Mount()
	if again := ino(a.Path("shared", "f")); again != first {
		t.Errorf("after a remount inode %d, was %d", again, first)
	}
	a.apiReplace("f", "v2")
	a.Store.Dirs.Drop(place.DirKey{Area: place.Area{Kind: place.Shared}})
	// The folder is listed again and the kernel told, in the background.
	testkit.WaitFor(t, 5*time.Second, "the replacement to read", func() bool {
		b, err := os.ReadFile(a.Path("shared", "f"))
		return err == nil && string(b) == "v2"
	})
	if next := ino(a.Path("shared", "f")); next == first {
		t.Errorf("another writer's new version kept inode %d", first)
	}
}

// statfs of an area with no entry yet (its quota cannot be learnt) shows a
// free 4 TiB disk.
func TestStatfsOfAnEmptyAreaIsALargeFreeDisk(t *testing.T) {
	e := newEnv(t, envOptions{}) // the empty seed: shared/ and the computer's storage hold nothing
	for _, p := range []string{e.Path("shared"), e.Path("computers", "Workstation")} {
		var st syscall.Statfs_t
		if err := syscall.Statfs(p, &st); err != nil {
			t.Fatal(err)
		}
		if size := st.Blocks * uint64(st.Bsize); size != 4<<40 || st.Bavail != st.Blocks || st.Bfree != st.Blocks {
			t.Errorf("statfs %s: %d blocks of %d (%d free, %d available), want a free 4 TiB", p, st.Blocks, st.Bsize, st.Bfree, st.Bavail)
		}
	}
}

// Two descriptors of one file writing the same bytes: the later write(2)
// wins, as on a local file, here and on the service.
func TestOverlappingWritesLaterWins(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := e.Path("shared", "both")
	if err := os.WriteFile(p, []byte("0000000000"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.settle() // a service file: the two writers share one staging copy
	a, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, w := range []struct {
		f    *os.File
		data string
		off  int64
	}{{a, "aaaaaa", 2}, {b, "bbbb", 0}, {a, "AA", 3}} {
		if _, err := w.f.WriteAt([]byte(w.data), w.off); err != nil {
			t.Fatal(err)
		}
	}
	a.Close()
	b.Close()
	const want = "bbbAAaaa00"
	if got := readFile(t, p); got != want {
		t.Errorf("after overlapping writes reads %q, want %q", got, want)
	}
	e.settle()
	if got := string(e.serviceBytes("both")); got != want {
		t.Errorf("on the service %q, want %q", got, want)
	}
}

// A rename of a file another writer replaced since this mount listed it:
// the content seen here goes up under the new name, and the other writer's
// version stays under the old name (the delete is by id).
func TestRenameOfAFileReplacedElsewhere(t *testing.T) {
	e := newEnv(t, envOptions{}) // listings kept a minute
	e.put(0, e.root(0), "f", []byte("seen here"))
	if got := readFile(t, e.Path("shared", "f")); got != "seen here" {
		t.Fatalf("f reads %q", got)
	}
	e.apiReplace("f", "theirs") // a new id; the listing here still has the old
	if err := os.Rename(e.Path("shared", "f"), e.Path("shared", "g")); err != nil {
		t.Fatalf("rename: %v", err)
	}
	e.settle()
	if got := string(e.serviceBytes("g")); got != "seen here" {
		t.Errorf("g on the service: %q, want the content seen here", got)
	}
	if got := string(e.serviceBytes("f")); got != "theirs" {
		t.Errorf("f on the service: %q, want the other writer's version", got)
	}
}
