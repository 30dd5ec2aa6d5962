package fs

// What the handles (handle.go) leave to the kernel, on a real mount: maps
// go through the page cache and the handles' reads and writes; O_DIRECT is
// accepted; fallocate is not implemented (EOPNOTSUPP); flock locks are the
// kernel's own; syncfs uploads nothing (a handle's fsync does).

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/orgfs/orgfs/cache"
	"github.com/orgfs/orgfs/internal/testkit"
	"golang.org/x/sys/unix"
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
	e := newEnv(t, envOptions{ColdDirectIO: true})
	want := bytes.Repeat([]byte("0123456789abcdef"), 1024) // 16 KiB, 4 pages
	e.put(0, e.root(0), "ro.bin", want)
	big := testkit.RandBytes(directColdMin+4096, 11)
	e.put(0, e.root(0), "cold.bin", big)
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
	// With --cold-direct-io, a large file opened cold is read with direct
	// I/O (file.go): a shared map of it needs the kernel's
	// DIRECT_IO_ALLOW_MMAP, asked for at mount.
	if !e.fsys.directCold.Load() {
		t.Log("the kernel lacks FUSE's DIRECT_IO_ALLOW_MMAP (Linux 6.6+): the large file is read through the page cache")
	}
	if got := child("ro", e.Path("shared", "cold.bin"), nil); !bytes.Equal(got, big) {
		t.Errorf("the read-only map of a large file opened cold differs from the service's content: %d bytes", len(got))
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

// With --cold-direct-io, a large file opened before its content is in the
// cache is read with direct I/O: each read(2) reaches the daemon, none is
// answered from (or fills) the kernel's page cache. A small one keeps the
// page cache, and so does the large one once its content is all in the
// cache; without the option, so does every file.
func TestColdLargeFileIsReadWithDirectIO(t *testing.T) {
	big := testkit.RandBytes(directColdMin+(1<<20), 12)
	small := testkit.RandBytes(1<<20, 13)
	off := newEnv(t, envOptions{})
	off.put(0, off.root(0), "big.bin", big)
	e := newEnv(t, envOptions{ColdDirectIO: true})
	if !e.fsys.directCold.Load() {
		t.Skip("the kernel lacks FUSE's DIRECT_IO_ALLOW_MMAP (Linux 6.6+): cold reads keep the page cache")
	}
	e.put(0, e.root(0), "big.bin", big)
	e.put(0, e.root(0), "small.bin", small)
	// reads opens name on e's mount, reads the same 4 KiB 8 times, and
	// says how many reads reached the daemon.
	reads := func(e *testEnv, name string, want []byte) int64 {
		t.Helper()
		f, err := os.Open(e.Path("shared", name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		before := e.fsys.KernelRequests().Reads
		buf := make([]byte, 4096)
		for range 8 {
			if n, err := f.ReadAt(buf, 8192); err != nil || !bytes.Equal(buf[:n], want[8192:8192+4096]) {
				t.Fatalf("%s: read %d bytes (%v), not the service's", name, n, err)
			}
		}
		return e.fsys.KernelRequests().Reads - before
	}
	// Each read of up to 1 MiB (cat's) is answered by a splice: the largest
	// READ's reply fits in a pipe (mount_linux.go's maxRead), as the mount
	// says when made directly.
	if os.Geteuid() == 0 {
		mounts, err := os.ReadFile("/proc/self/mounts")
		if err != nil {
			t.Fatal(err)
		}
		want, found := fmt.Sprintf("max_read=%d", maxRead()), false
		for _, l := range strings.Split(string(mounts), "\n") {
			if f := strings.Fields(l); len(f) > 3 && f[1] == e.Dir {
				found = true
				if !strings.Contains(f[3], want) {
					t.Errorf("the mount's options are %s, want %s", f[3], want)
				}
			}
		}
		if !found {
			t.Errorf("%s is not in /proc/self/mounts", e.Dir)
		}
	}
	if n := reads(off, "big.bin", big); n >= 8 {
		t.Errorf("without --cold-direct-io, 8 reads of a large file opened cold reached the daemon %d times, want the page cache to answer", n)
	}
	if n := reads(e, "big.bin", big); n < 8 {
		t.Errorf("8 reads of a large file opened cold reached the daemon %d times, want each (direct I/O)", n)
	}
	if n := reads(e, "small.bin", small); n >= 8 {
		t.Errorf("8 reads of a small file reached the daemon %d times, want the page cache to answer", n)
	}
	if got, err := os.ReadFile(e.Path("shared", "big.bin")); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("reading big.bin whole: %d bytes (%v), not the service's", len(got), err)
	}
	f, ok := e.serviceFile("big.bin")
	if !ok {
		t.Fatal("big.bin is not on the service")
	}
	testkit.WaitFor(t, 10*time.Second, "big.bin all in the cache", func() bool { return e.Store.Content.Complete(cache.MetaOf(f)) })
	if n := reads(e, "big.bin", big); n >= 8 {
		t.Errorf("8 reads of a large file all in the cache reached the daemon %d times, want the page cache or passthrough to answer", n)
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
