package fs

// Special nodes (special.go): fifos, sockets and device nodes kept by the
// mount in memory, never on the service.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// lstat is lstat(2) of p, fatal when it fails.
func lstat(t *testing.T, p string) syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatalf("lstat %s: %v", p, err)
	}
	return st
}

// watchNames records every request the mount sends (its URL and body) that
// holds one of names; the test fails at its end if any did.
func (e *testEnv) watchNames(names ...string) {
	var mu sync.Mutex
	var seen []string
	e.setHook(func(r *http.Request, answered bool) {
		if answered {
			return
		}
		text := r.URL.String()
		if r.GetBody != nil {
			if b, err := r.GetBody(); err == nil {
				body, _ := io.ReadAll(b)
				b.Close()
				text += " " + string(body)
			}
		}
		for _, n := range names {
			if strings.Contains(text, n) {
				mu.Lock()
				seen = append(seen, r.Method+" "+r.URL.Path+" names "+n)
				mu.Unlock()
			}
		}
	})
	e.T.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range seen {
			e.T.Errorf("a request named a special node: %s", s)
		}
	})
}

// TestSpecialNodesMadeHere: mknod of a fifo, a socket, a character and a
// block device, and mkfifo, show with their type, mode (less the umask),
// maker as owner, device number and times in lstat and readdir; the
// folder's times move; nothing reaches the service; a remount shows them
// gone.
func TestSpecialNodesMadeHere(t *testing.T) {
	e := newEnvMounted(t, envOptions{}, MountOptions{AllowOther: true}) // a maker other than the mount's owner
	if err := os.Chmod(filepath.Dir(e.Dir), 0o755); err != nil {
		t.Fatal(err)
	}
	sh := func(parts ...string) string { return e.Path(append([]string{"shared"}, parts...)...) }
	names := []string{"fifo-sp", "sock-sp", "chr-sp", "blk-sp", "umask-sp"}
	e.watchNames(names...)
	if err := os.Mkdir(sh("d"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sh("d"), 0o777); err != nil {
		t.Fatal(err)
	}
	umask := processUmask(t)
	e.settle()
	time.Sleep(1100 * time.Millisecond) // the kernel's attribute cache
	dirBefore := lstat(t, sh("d"))
	before := time.Now()
	time.Sleep(20 * time.Millisecond)

	dev := unix.Mkdev(8, 3)
	for _, c := range []struct {
		name string
		mode uint32
		dev  uint64
	}{
		{"fifo-sp", syscall.S_IFIFO | 0o640, 0},
		{"sock-sp", syscall.S_IFSOCK | 0o600, 0},
		{"chr-sp", syscall.S_IFCHR | 0o620, dev},
		{"blk-sp", syscall.S_IFBLK | 0o660, dev},
	} {
		if err := unix.Mknod(sh("d", c.name), c.mode, int(c.dev)); err != nil {
			t.Fatalf("mknod %s: %v", c.name, err)
		}
		st := lstat(t, sh("d", c.name))
		mode := c.mode &^ umask
		if st.Mode != mode || st.Uid != 0 || st.Gid != 0 || st.Rdev != c.dev || st.Nlink != 1 {
			t.Errorf("%s: mode %o uid %d gid %d rdev %#x nlink %d; want %o 0 0 %#x 1", c.name, st.Mode, st.Uid, st.Gid, st.Rdev, st.Nlink, mode, c.dev)
		}
		for what, ts := range map[string]syscall.Timespec{"atime": st.Atim, "mtime": st.Mtim, "ctime": st.Ctim} {
			if got := time.Unix(ts.Unix()); got.Before(before) || got.After(time.Now()) {
				t.Errorf("%s: %s %v, not the time it was made", c.name, what, got)
			}
		}
	}
	// The maker owns it, less its umask (the kernel takes it from the
	// mode): a child of uid 1234 with umask 027.
	mk := exec.Command("/bin/sh", "-c", `umask 027 && mkfifo "$1"`, "sh", sh("d", "umask-sp"))
	mk.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1234, Gid: 1235}}
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("mkfifo by uid 1234 with umask 027: %v %s", err, out)
	}
	if st := lstat(t, sh("d", "umask-sp")); st.Mode != syscall.S_IFIFO|0o640 || st.Uid != 1234 || st.Gid != 1235 {
		t.Errorf("mkfifo (0666) by 1234:1235 with umask 027: mode %o owner %d:%d, want fifo 0640 1234:1235", st.Mode, st.Uid, st.Gid)
	}

	// readdir: each with its type (d_type) and inode number.
	ents, err := os.ReadDir(sh("d"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{"fifo-sp": os.ModeNamedPipe, "sock-sp": os.ModeSocket, "chr-sp": os.ModeDevice | os.ModeCharDevice,
		"blk-sp": os.ModeDevice, "umask-sp": os.ModeNamedPipe}
	if len(ents) != len(want) {
		t.Errorf("readdir lists %d entries, want %d", len(ents), len(want))
	}
	for _, d := range ents {
		if d.Type() != want[d.Name()] {
			t.Errorf("readdir: %s has type %v, want %v", d.Name(), d.Type(), want[d.Name()])
		}
	}
	if ino := direntIno(t, sh("d"), "chr-sp"); ino != lstat(t, sh("d", "chr-sp")).Ino {
		t.Errorf("readdir's inode number of chr-sp %d, lstat's %d", ino, lstat(t, sh("d", "chr-sp")).Ino)
	}
	dirAfter := lstat(t, sh("d"))
	if dirAfter.Mtim.Nano() <= dirBefore.Mtim.Nano() || dirAfter.Ctim.Nano() <= dirBefore.Ctim.Nano() {
		t.Errorf("the folder's mtime/ctime after mknod %v/%v, before %v/%v", dirAfter.Mtim, dirAfter.Ctim, dirBefore.Mtim, dirBefore.Ctim)
	}

	expectErrno(t, "mkfifo in recordings/", syscall.Mkfifo(e.Path("recordings", "fifo-sp"), 0o644), syscall.EROFS)

	e.settle()
	for _, n := range names {
		e.wantGone("d/" + n)
	}

	// Another desk puts a file of a node's name: the node shows, once.
	dirID := lstat(t, sh("d")).Ino - 1<<40 // a folder's inode number is its id above 2^40 (fileIno)
	e.put(0, int64(dirID), "fifo-sp", []byte("another desk's"))
	e.Store.Dirs.DropAll()
	ents, err = os.ReadDir(sh("d"))
	if err != nil {
		t.Fatal(err)
	}
	shown := 0
	for _, d := range ents {
		if d.Name() == "fifo-sp" {
			shown++
			if d.Type() != os.ModeNamedPipe {
				t.Errorf("readdir shows fifo-sp, also on the service, as %v", d.Type())
			}
		}
	}
	if shown != 1 {
		t.Errorf("readdir lists fifo-sp %d times, also on the service", shown)
	}
	if ino, want := direntIno(t, sh("d"), "fifo-sp"), lstat(t, sh("d", "fifo-sp")).Ino; ino != want {
		t.Errorf("readdir gives fifo-sp, also on the service, inode number %d, lstat %d", ino, want)
	}
	e.unmount()
	e.Mount()
	for _, n := range names[1:] {
		if _, err := os.Lstat(sh("d", n)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after a remount: %v, want it gone", n, err)
		}
	}
	if st := lstat(t, sh("d", "fifo-sp")); st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		t.Errorf("after a remount fifo-sp shows mode %o, want the other desk's file", st.Mode)
	}
}

// processUmask is the test process's umask (read, not set: setting it
// would touch every thread).
func processUmask(t *testing.T) uint32 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			if err != nil {
				t.Fatal(err)
			}
			return uint32(m)
		}
	}
	t.Fatal("no Umask in /proc/self/status")
	return 0
}

// direntIno is the inode number readdir gives name in folder dir.
func direntIno(t *testing.T, dir, name string) uint64 {
	t.Helper()
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	buf := make([]byte, 8192)
	for {
		n, err := syscall.ReadDirent(fd, buf)
		if err != nil || n == 0 {
			t.Fatalf("%s is not listed in %s (%v)", name, dir, err)
		}
		for b := buf[:n]; len(b) > 0; {
			reclen := int(b[16]) | int(b[17])<<8
			ino := uint64(0)
			for i := 7; i >= 0; i-- {
				ino = ino<<8 | uint64(b[i])
			}
			entName := string(b[19:reclen])
			if i := strings.IndexByte(entName, 0); i >= 0 {
				entName = entName[:i]
			}
			if entName == name {
				return ino
			}
			b = b[reclen:]
		}
	}
}

// TestFifoAndSocketWorkThroughTheMount: a fifo made here carries bytes from
// one process to another; a unix socket bound here by one process takes
// another's connection.
func TestFifoAndSocketWorkThroughTheMount(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.watchNames("pipe-sp", "sock-sp")
	fifo := e.Path("shared", "pipe-sp")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var got bytes.Buffer
	reader := exec.CommandContext(ctx, "cat", fifo)
	reader.Stdout = &got
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, "sh", "-c", `printf 'through the fifo' > "$1"`, "sh", fifo).CombinedOutput(); err != nil {
		t.Errorf("the writer: %v %s", err, out)
	}
	if err := reader.Wait(); err != nil || got.String() != "through the fifo" {
		t.Errorf("the reader read %q (%v)", got.String(), err)
	}

	// The socket's path is relative: a unix socket's path holds 107 bytes.
	server := exec.CommandContext(ctx, "python3", "-c", `
import socket
s = socket.socket(socket.AF_UNIX)
s.bind("sock-sp")
s.listen(1)
print("listening", flush=True)
c, _ = s.accept()
c.sendall(c.recv(1).upper())
c.close()
`)
	server.Dir = e.Path("shared")
	stdout, err := server.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var serverErr bytes.Buffer
	server.Stderr = &serverErr
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer server.Wait()
	line := make([]byte, len("listening\n"))
	if _, err := io.ReadFull(stdout, line); err != nil {
		t.Fatalf("the server: %v %s", err, serverErr.String())
	}
	if st := lstat(t, e.Path("shared", "sock-sp")); st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		t.Errorf("the bound socket shows mode %o", st.Mode)
	}
	client := exec.CommandContext(ctx, "python3", "-c", `
import socket
s = socket.socket(socket.AF_UNIX)
s.connect("sock-sp")
s.sendall(b"x")
print(s.recv(1).decode(), end="")
`)
	client.Dir = e.Path("shared")
	if out, err := client.CombinedOutput(); err != nil || string(out) != "X" {
		t.Errorf("the client got %q (%v)", out, err)
	}
}

// TestSpecialNodeChangesAsOnADisk: chmod, chown and utimes of a special
// node (its change time moves), truncate refused; unlink; rename within and
// across folders keeping its inode number, over another node, a file, a
// pending file and a link (which go), over a folder EISDIR, with
// RENAME_NOREPLACE EEXIST; a file renamed over one; rmdir of a folder
// holding one ENOTEMPTY; EEXIST making anything at its name, and making one
// at any name shown.
func TestSpecialNodeChangesAsOnADisk(t *testing.T) {
	e := newEnv(t, envOptions{})
	sh := func(parts ...string) string { return e.Path(append([]string{"shared"}, parts...)...) }
	e.watchNames("-sp")
	if err := os.Mkdir(sh("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := sh("n-sp")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	ino := lstat(t, p).Ino
	ctimeMoves := func(what string, op func() error) {
		t.Helper()
		before := lstat(t, p).Ctim
		time.Sleep(20 * time.Millisecond)
		if err := op(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if after := lstat(t, p).Ctim; after.Nano() <= before.Nano() {
			t.Errorf("after %s the change time is %v, was %v", what, after, before)
		}
	}
	ctimeMoves("chmod", func() error { return os.Chmod(p, 0o600) })
	ctimeMoves("chown", func() error { return os.Lchown(p, 42, 43) })
	atime, mtime := time.Unix(1900000000, 0), time.Unix(1950000000, 0)
	ctimeMoves("utimes", func() error { return os.Chtimes(p, atime, mtime) })
	st := lstat(t, p)
	if st.Mode != syscall.S_IFIFO|0o600 || st.Uid != 42 || st.Gid != 43 || st.Atim.Sec != atime.Unix() || st.Mtim.Sec != mtime.Unix() {
		t.Errorf("after chmod, chown, utimes: mode %o owner %d:%d atime %d mtime %d", st.Mode, st.Uid, st.Gid, st.Atim.Sec, st.Mtim.Sec)
	}
	expectErrno(t, "truncate of a fifo", os.Truncate(p, 0), syscall.EINVAL)

	// EEXIST both ways.
	expectErrno(t, "mkdir over a fifo", os.Mkdir(p, 0o755), syscall.EEXIST)
	expectErrno(t, "symlink over a fifo", os.Symlink("x", p), syscall.EEXIST)
	expectErrno(t, "mkfifo over a fifo", syscall.Mkfifo(p, 0o644), syscall.EEXIST)
	_, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	expectErrno(t, "O_CREAT|O_EXCL over a fifo", err, syscall.EEXIST)
	if err := os.WriteFile(sh("pending"), []byte("pending"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("pending", sh("ln")); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"pending", "d", "ln"} {
		expectErrno(t, "mkfifo over "+n, syscall.Mkfifo(sh(n), 0o644), syscall.EEXIST)
	}

	// Renames keep the inode number; the folders' times move.
	time.Sleep(1100 * time.Millisecond)
	dBefore := lstat(t, sh("d"))
	ctimeMoves("rename within a folder", func() error {
		old := p
		p = sh("m-sp")
		return os.Rename(old, p)
	})
	if err := os.Rename(p, sh("d", "n-sp")); err != nil {
		t.Fatal(err)
	}
	p = sh("d", "n-sp")
	if got := lstat(t, p).Ino; got != ino {
		t.Errorf("renamed twice, inode %d, was %d", got, ino)
	}
	if dAfter := lstat(t, sh("d")); dAfter.Mtim.Nano() <= dBefore.Mtim.Nano() {
		t.Errorf("the folder renamed into: mtime %v, was %v", dAfter.Mtim, dBefore.Mtim)
	}
	if _, err := os.Lstat(sh("n-sp")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old name after the renames: %v", err)
	}
	// Over another node, a pending file, a link, a file on the service.
	if err := syscall.Mkfifo(sh("d", "other-sp"), 0o644); err != nil {
		t.Fatal(err)
	}
	expectErrno(t, "RENAME_NOREPLACE over a fifo", renameat2(p, sh("d", "other-sp"), unix.RENAME_NOREPLACE), syscall.EEXIST)
	expectErrno(t, "RENAME_NOREPLACE over a file", renameat2(p, sh("pending"), unix.RENAME_NOREPLACE), syscall.EEXIST)
	if err := os.Mkdir(sh("d2"), 0o755); err != nil {
		t.Fatal(err)
	}
	expectErrno(t, "a fifo over a folder", syscall.Rename(p, sh("d2")), syscall.EISDIR) // os.Rename refuses it itself
	if err := os.WriteFile(sh("uploaded"), []byte("up"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.settle()
	for _, over := range []string{sh("d", "other-sp"), sh("pending"), sh("ln"), sh("uploaded")} {
		if err := os.Rename(p, over); err != nil {
			t.Fatalf("a fifo over %s: %v", over, err)
		}
		p = over
		if st := lstat(t, p); st.Ino != ino || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
			t.Errorf("at %s: inode %d mode %o, want the fifo %d", p, st.Ino, st.Mode, ino)
		}
	}
	e.settle()
	for _, n := range []string{"pending", "ln.rclonelink", "uploaded"} {
		e.wantGone(n) // the files displaced are deleted, never uploaded
	}

	// A file renamed over a node: the node goes.
	if err := os.WriteFile(sh("f"), []byte("file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(sh("f"), p); err != nil {
		t.Fatalf("a file over a fifo: %v", err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "file" {
		t.Errorf("the file renamed over a fifo reads %q (%v)", b, err)
	}
	time.Sleep(1100 * time.Millisecond) // looked up again, past the kernel's entry cache
	if st := lstat(t, p); st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size != 4 {
		t.Errorf("the file renamed over a fifo shows mode %o size %d", st.Mode, st.Size)
	}
	e.settle()
	if got := string(e.serviceBytes("uploaded")); got != "file" {
		t.Errorf("the file renamed over the fifo holds %q on the service", got)
	}

	// rmdir, unlink; an open fifo unlinked shows no link.
	if err := syscall.Mkfifo(sh("d", "last-sp"), 0o644); err != nil {
		t.Fatal(err)
	}
	expectErrno(t, "rmdir of a folder holding a fifo", syscall.Rmdir(sh("d")), syscall.ENOTEMPTY)
	fd, err := syscall.Open(sh("d", "last-sp"), syscall.O_RDWR|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Unlink(sh("d", "last-sp")); err != nil {
		t.Fatal(err)
	}
	var fst syscall.Stat_t
	if err := syscall.Fstat(fd, &fst); err != nil || fst.Nlink != 0 {
		t.Errorf("fstat of an open fifo unlinked: nlink %d (%v), want 0", fst.Nlink, err)
	}
	if _, err := os.Lstat(sh("d", "last-sp")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after unlink: %v", err)
	}
	if err := syscall.Rmdir(sh("d")); err != nil {
		t.Errorf("rmdir once the fifo is gone: %v", err)
	}
}

// TestFolderRenameCarriesSpecialNodes: a folder renamed takes its special
// nodes (and its subfolders' nodes) along, with their inode numbers: one
// empty on the service, and one with content.
func TestFolderRenameCarriesSpecialNodes(t *testing.T) {
	e := newEnv(t, envOptions{})
	sh := func(parts ...string) string { return e.Path(append([]string{"shared"}, parts...)...) }
	for _, d := range []string{"empty", "full", "full/sub"} {
		if err := os.Mkdir(sh(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(sh("full", "f"), []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	nodes := []string{"empty/a", "full/b", "full/sub/c"}
	inos := map[string]uint64{}
	for _, n := range nodes {
		if err := syscall.Mkfifo(sh(n), 0o644); err != nil {
			t.Fatal(err)
		}
		inos[filepath.Base(n)] = lstat(t, sh(n)).Ino
	}
	e.settle()
	if err := os.Rename(sh("empty"), sh("empty2")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(sh("full"), sh("full2")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // looked up again, past the kernel's entry cache
	for _, n := range []string{"empty2/a", "full2/b", "full2/sub/c"} {
		var st syscall.Stat_t
		if err := syscall.Lstat(sh(n), &st); err != nil || st.Ino != inos[filepath.Base(n)] || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
			t.Errorf("%s after the folder's rename: inode %d mode %o (%v), want the fifo %d", n, st.Ino, st.Mode, err, inos[filepath.Base(n)])
		}
	}
	if err := os.Mkdir(sh("target"), 0o755); err != nil {
		t.Fatal(err)
	}
	expectErrno(t, "a folder over an empty folder holding a fifo", syscall.Rename(sh("target"), sh("empty2")), syscall.ENOTEMPTY)
}

// mknod of a regular file makes an empty file as create does, uploaded.
func TestMknodOfARegularFile(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := e.Path("shared", "plain")
	if err := unix.Mknod(p, syscall.S_IFREG|0o600, 0); err != nil {
		t.Fatal(err)
	}
	if st := lstat(t, p); st.Mode != syscall.S_IFREG|0o600 || st.Size != 0 {
		t.Errorf("mknod S_IFREG: mode %o size %d", st.Mode, st.Size)
	}
	expectErrno(t, "mknod over a file", unix.Mknod(p, syscall.S_IFREG|0o600, 0), syscall.EEXIST)
	e.settle()
	if f, ok := e.serviceFile("plain"); !ok || f.Size != 0 {
		t.Errorf("the file made by mknod on the service: %+v %v", f, ok)
	}
}
