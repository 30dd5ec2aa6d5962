package fs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
)

// settle waits until nothing is staged: every write reached the service.
func (e *testEnv) settle() {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st := e.staging.Stats()
		if st.Pending == 0 && st.Uploading == 0 {
			if st.Failed > 0 {
				e.t.Fatalf("uploads failed: %+v %+v", st, e.staging.Entries())
			}
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("uploads did not finish: %+v %+v", st, e.staging.Entries())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serviceFile finds shared/PATH on the service through the API.
func (e *testEnv) serviceFile(path string) (api.File, bool) {
	e.t.Helper()
	parent := int64(0)
	var cur api.File
	for _, name := range strings.Split(path, "/") {
		found := false
		files, err := e.client.SharedFiles(e.t.Context(), api.ListFilesRequest{ParentID: parent}).Collect()
		if err != nil {
			e.t.Fatal(err)
		}
		for _, f := range files {
			if f.Name == name {
				cur, parent, found = f, f.ID, true
			}
		}
		if !found {
			return api.File{}, false
		}
	}
	return cur, true
}

// serviceBytes downloads shared/PATH through the API.
func (e *testEnv) serviceBytes(path string) []byte {
	e.t.Helper()
	f, ok := e.serviceFile(path)
	if !ok {
		e.t.Fatalf("shared/%s is not on the service", path)
	}
	if f.Size == 0 {
		return []byte{}
	}
	link, err := e.client.FileURL(e.t.Context(), f.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	r, err := e.client.ReadRange(e.t.Context(), link.URL, 0, -1)
	if err != nil {
		e.t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestCopySizes(t *testing.T) {
	e := newEnv(t, envOptions{})
	src := t.TempDir()
	const mib = 1 << 20
	sizes := []int{0, 1, 5*mib - 1, 5 * mib, 5*mib + 1, 100 * mib}
	want := map[string][]byte{}
	for i, n := range sizes {
		name := fmt.Sprintf("s%d.bin", n)
		want[name] = randomData(n, int64(i))
		os.WriteFile(filepath.Join(src, name), want[name], 0o644)
		run(t, "cp", filepath.Join(src, name), e.path("shared", name))
	}
	e.settle()
	for name, data := range want {
		if got := e.serviceBytes(name); !bytes.Equal(got, data) {
			t.Errorf("%s on the service: %d bytes, want %d (equal %v)", name, len(got), len(data), bytes.Equal(got, data))
		}
	}
	// Again through a new mount.
	e.unmount()
	e.mount()
	for name, data := range want {
		if got := fileSum(t, e.path("shared", name)); got != sum(data) {
			t.Errorf("%s after remount differs", name)
		}
	}
}

func TestTreesCpRsyncTar(t *testing.T) {
	e := newEnv(t, envOptions{})
	src := filepath.Join(t.TempDir(), "tree")
	want := map[string][]byte{}
	for i := 0; i < 30; i++ {
		rel := filepath.Join(fmt.Sprintf("d%d", i%3), fmt.Sprintf("sub%d", i%2), fmt.Sprintf("f %d.txt", i))
		os.MkdirAll(filepath.Join(src, filepath.Dir(rel)), 0o755)
		want[rel] = randomData(100+i*997, int64(i))
		os.WriteFile(filepath.Join(src, rel), want[rel], 0o644)
	}
	run(t, "cp", "-r", src, e.path("shared", "cp-tree"))
	run(t, "rsync", "-a", src+"/", e.path("shared", "rsync-tree")+"/")
	tarball := filepath.Join(t.TempDir(), "t.tar")
	run(t, "tar", "-cf", tarball, "-C", src, ".")
	os.Mkdir(e.path("shared", "tar-tree"), 0o755)
	run(t, "tar", "-xf", tarball, "-C", e.path("shared", "tar-tree"))
	e.settle()
	for _, top := range []string{"cp-tree", "rsync-tree", "tar-tree"} {
		for rel, data := range want {
			if got := e.serviceBytes(top + "/" + filepath.ToSlash(rel)); !bytes.Equal(got, data) {
				t.Fatalf("%s/%s differs on the service", top, rel)
			}
		}
	}
	// A second rsync transfers nothing.
	out := run(t, "rsync", "-a", "--stats", src+"/", e.path("shared", "rsync-tree")+"/")
	if !strings.Contains(out, "Number of regular files transferred: 0") {
		t.Errorf("the second rsync transferred files:\n%s", out)
	}
	// And again through a new mount.
	e.unmount()
	e.mount()
	for _, top := range []string{"cp-tree", "rsync-tree", "tar-tree"} {
		for rel, data := range want {
			if b, err := os.ReadFile(e.path("shared", top, rel)); err != nil || !bytes.Equal(b, data) {
				t.Fatalf("%s/%s after remount: %v", top, rel, err)
			}
		}
	}
}

func TestEditInPlace(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := e.path("shared", "doc.txt")
	if err := os.WriteFile(p, []byte("hello world"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.settle()
	// append
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(", again")
	f.Close()
	e.settle()
	if got := string(e.serviceBytes("doc.txt")); got != "hello world, again" {
		t.Fatalf("after append: %q", got)
	}
	// dd with seek into the existing file, not truncating it
	run(t, "dd", "if=/dev/zero", "of="+p, "bs=1", "seek=6", "count=5", "conv=notrunc", "status=none")
	e.settle()
	if got := string(e.serviceBytes("doc.txt")); got != "hello \x00\x00\x00\x00\x00, again" {
		t.Fatalf("after dd seek: %q", got)
	}
	// truncate down and up
	run(t, "truncate", "-s", "5", p)
	e.settle()
	if got := string(e.serviceBytes("doc.txt")); got != "hello" {
		t.Fatalf("after truncate down: %q", got)
	}
	run(t, "truncate", "-s", "8", p)
	e.settle()
	if got := e.serviceBytes("doc.txt"); !bytes.Equal(got, []byte("hello\x00\x00\x00")) {
		t.Fatalf("after truncate up: %q", got)
	}
	// an editor's save: write a temp file, fsync, rename over
	tmp := e.path("shared", ".doc.txt.swp")
	g, err := os.Create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	g.WriteString("new content")
	if err := g.Sync(); err != nil {
		t.Fatalf("fsync: %v", err)
	}
	g.Close()
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	e.settle()
	if got := string(e.serviceBytes("doc.txt")); got != "new content" {
		t.Fatalf("after save-and-rename: %q", got)
	}
	if _, ok := e.serviceFile(".doc.txt.swp"); ok {
		t.Fatal("the temp file is on the service")
	}
	// chmod, chown and utimes succeed; the time shows
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatalf("chmod: %v", err)
	}
	if err := os.Chown(p, 0, 0); err != nil {
		t.Fatalf("chown: %v", err)
	}
	when := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(p, when, when); err != nil {
		t.Fatalf("utimes: %v", err)
	}
	if st, _ := os.Stat(p); !st.ModTime().Equal(when) {
		t.Errorf("mtime after utimes: %v", st.ModTime())
	}
}

func TestFoldersAndMoves(t *testing.T) {
	e := newEnv(t, envOptions{})
	deep := e.path("shared", "a", "b", "c")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatalf("mkdir -p: %v", err)
	}
	os.WriteFile(filepath.Join(deep, "f.txt"), []byte("x"), 0o644)
	e.settle()
	if got := string(e.serviceBytes("a/b/c/f.txt")); got != "x" {
		t.Fatalf("a/b/c/f.txt = %q", got)
	}
	// rmdir of a non-empty folder: ENOTEMPTY, nothing deleted
	if err := syscall.Rmdir(e.path("shared", "a", "b")); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("rmdir a/b: %v, want ENOTEMPTY", err)
	}
	if _, ok := e.serviceFile("a/b/c/f.txt"); !ok {
		t.Fatal("rmdir of a non-empty folder deleted content")
	}
	// mv of an uploaded file, of a pending one, and of a folder
	if err := os.Rename(filepath.Join(deep, "f.txt"), e.path("shared", "moved.txt")); err != nil {
		t.Fatalf("mv uploaded: %v", err)
	}
	os.WriteFile(e.path("shared", "pending.txt"), []byte("p"), 0o644)
	if err := os.Rename(e.path("shared", "pending.txt"), e.path("shared", "a", "pending-moved.txt")); err != nil {
		t.Fatalf("mv pending: %v", err)
	}
	if err := os.Rename(e.path("shared", "a"), e.path("shared", "z")); !errors.Is(err, syscall.EXDEV) {
		t.Fatalf("rename of a folder: %v, want EXDEV", err)
	}
	run(t, "mv", e.path("shared", "a"), e.path("shared", "z")) // copies and deletes
	e.settle()
	if got := string(e.serviceBytes("moved.txt")); got != "x" {
		t.Fatalf("moved.txt = %q", got)
	}
	if got := string(e.serviceBytes("z/pending-moved.txt")); got != "p" {
		t.Fatalf("z/pending-moved.txt = %q", got)
	}
	for _, gone := range []string{"a", "pending.txt", "a/b/c/f.txt"} {
		if _, ok := e.serviceFile(gone); ok {
			t.Errorf("%s is still on the service", gone)
		}
	}
	// rm -r works because it empties first
	run(t, "rm", "-r", e.path("shared", "z"))
	if _, ok := e.serviceFile("z"); ok {
		t.Fatal("rm -r left the folder")
	}
	// recordings stay read-only
	if err := os.WriteFile(e.path("recordings", "x"), []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("writing in recordings/: %v", err)
	}
}

func TestStorageFullKeepsTheStagedCopy(t *testing.T) {
	e := newEnv(t, envOptions{})
	if err := e.emu.SetStorageQuota(e.org, 0, 1000); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(e.path("shared", "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	f.Write(randomData(5000, 1))
	err = f.Sync()
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("fsync with the storage full: %v, want ENOSPC", err)
	}
	if st := e.staging.Stats(); st.Failed != 1 {
		t.Fatalf("staging after 450: %+v", st)
	}
	// The staged copy is still readable through the mount.
	if b, err := os.ReadFile(e.path("shared", "big.bin")); err != nil || len(b) != 5000 {
		t.Fatalf("the staged copy: %d bytes, %v", len(b), err)
	}
	e.emu.SetStorageQuota(e.org, 0, 1<<30)
	e.staging.Retry()
	e.settle()
	if got := e.serviceBytes("big.bin"); !bytes.Equal(got, randomData(5000, 1)) {
		t.Fatal("the retried upload differs")
	}
}

func TestWritesUnderFaults(t *testing.T) {
	e := newEnv(t, envOptions{emu: emulator.Options{FaultSeed: 11}})
	os.ReadDir(e.path("shared"))
	want := map[string][]byte{}
	for i := 0; i < 4; i++ {
		want[fmt.Sprintf("big%d.bin", i)] = randomData(50<<20, int64(i))
	}
	for i := 0; i < 500; i++ {
		want[fmt.Sprintf("small/%03d.txt", i)] = randomData(100+i*13, int64(1000+i))
	}
	if err := os.Mkdir(e.path("shared", "small"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.emu.SetFaultRate(0.1)
	for name, data := range want {
		if err := os.WriteFile(e.path("shared", name), data, 0o644); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	e.settle()
	e.emu.SetFaultRate(0)
	if e.emu.Stats().Objects.Faults == 0 {
		t.Fatal("no fault was injected")
	}
	for name, data := range want {
		if got := e.serviceBytes(name); !bytes.Equal(got, data) {
			t.Fatalf("%s differs on the service", name)
		}
	}
	if st := e.staging.Stats(); st.StagedBytes != 0 || st.Pending != 0 {
		t.Fatalf("left staged: %+v", st)
	}
}

func TestDesktopLitterIsNotUploaded(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, name := range []string{".DS_Store", "Thumbs.db", "._report.pdf"} {
		if err := os.WriteFile(e.path("shared", name), []byte("x"), 0o644); !errors.Is(err, syscall.EACCES) {
			t.Errorf("creating %s: %v, want EACCES", name, err)
		}
	}
	e.settle()
	if n := e.requests("POST /files"); n != 0 {
		t.Errorf("desktop files made %d uploads", n)
	}
}

func TestFullLocalDiskIsENOSPC(t *testing.T) {
	staging := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", staging).CombinedOutput(); err != nil {
		t.Fatalf("a small tmpfs for the staging dir: %v: %s", err, out)
	}
	t.Cleanup(func() { syscall.Unmount(staging, syscall.MNT_DETACH) })
	e := newEnv(t, envOptions{stagingDir: filepath.Join(staging, "s")})
	err := os.WriteFile(e.path("shared", "huge.bin"), make([]byte, 4<<20), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing 4 MiB with 1 MiB of local disk: %v, want ENOSPC", err)
	}
}
