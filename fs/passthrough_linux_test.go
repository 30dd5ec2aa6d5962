package fs

import (
	"bytes"
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/testkit"
)

// needPassthrough fails the test when the kernel refused passthrough in CI
// (the CI machine runs a kernel that has it), and skips it elsewhere.
func needPassthrough(t *testing.T, e *testEnv) {
	t.Helper()
	mode, _ := e.fsys.PassthroughMode()
	if mode == "on" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("passthrough is %s", mode)
	}
	t.Skipf("passthrough is %s", mode)
}

// readAll reads what is left of f.
func readAll(t *testing.T, f *os.File) string {
	t.Helper()
	var b bytes.Buffer
	if _, err := b.ReadFrom(f); err != nil {
		t.Fatalf("reading %s: %v", f.Name(), err)
	}
	return b.String()
}

// A file whose content is whole in the cache is read in passthrough: the
// kernel reads the cache's file, and the daemon is asked for no read.
func TestPassthroughReadsCachedFiles(t *testing.T) {
	e := newEnv(t, envOptions{})
	needPassthrough(t, e)
	data := bytes.Repeat([]byte("passthrough "), 50_000) // 600 KB
	e.put(0, e.root(0), "cached.bin", data)
	p := e.Path("shared", "cached.bin")
	if fileSum(t, p) != sum(data) { // fetched into the cache, read through the daemon
		t.Fatal("first read differs")
	}
	dropKernelCache(t, p) // the pages the first read left
	_, opensBefore := e.fsys.PassthroughMode()
	before := e.fsys.KernelRequests()
	if fileSum(t, p) != sum(data) {
		t.Fatal("read in passthrough differs")
	}
	after := e.fsys.KernelRequests()
	if after.Reads != before.Reads {
		t.Errorf("the daemon was asked %d reads of a cached file", after.Reads-before.Reads)
	}
	if _, opens := e.fsys.PassthroughMode(); opens != opensBefore+1 {
		t.Errorf("passthrough opens %d, then %d: want one more", opensBefore, opens)
	}
}

// A file open in passthrough can be written, truncated and replaced as on a
// disk: the readers open read the change at once, and it is uploaded.
func TestPassthroughFileChangedWhileOpen(t *testing.T) {
	e := newEnv(t, envOptions{})
	needPassthrough(t, e)
	e.put(0, e.root(0), "log.txt", []byte("one\n"))
	p := e.Path("shared", "log.txt")
	if b, err := os.ReadFile(p); err != nil || string(b) != "one\n" { // now in the cache
		t.Fatalf("read %q, %v", b, err)
	}
	r, err := os.Open(p) // in passthrough
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := readAll(t, r); got != "one\n" {
		t.Fatalf("reader read %q", got)
	}
	// An append: the staging copy is the file the reader reads.
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatalf("opening for append while a reader has the file: %v", err)
	}
	if _, err := w.WriteString("two\n"); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, r); got != "two\n" { // tail -f
		t.Errorf("the reader read %q after the append, want %q", got, "two\n")
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := string(e.serviceBytes("log.txt")); got != "one\ntwo\n" {
		t.Errorf("after fsync the service holds %q", got)
	}
	if _, err := w.WriteString("three\n"); err != nil { // after the fsync's upload
		t.Fatal(err)
	}
	// A close is a change: noted before close(2) returns (the release comes
	// later, and not at all while a duplicate of the descriptor is open).
	fd, err := syscall.Dup(int(w.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if ents := e.Store.Staging.Entries(); len(ents) != 1 || ents[0].State != "open" {
		t.Errorf("staged after the close: %+v, want the file changed, open", ents)
	}
	// orgfs sync (and the unmount's drain) sends what an open writer wrote
	// so far, though none of it came through the daemon: also after a sync
	// (here) left the file uploaded.
	if _, err := e.Store.Staging.FlushAll(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := syscall.Write(fd, []byte("four\n")); err != nil {
		t.Fatal(err)
	}
	e.fsys.NotePassthroughWriters()
	if _, err := e.Store.Staging.FlushAll(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if got := string(e.serviceBytes("log.txt")); got != "one\ntwo\nthree\nfour\n" {
		t.Errorf("after orgfs sync with the writer open, the service holds %q", got)
	}
	syscall.Close(fd)
	e.settle()
	if got := string(e.serviceBytes("log.txt")); got != "one\ntwo\nthree\nfour\n" {
		t.Errorf("after close the service holds %q", got)
	}
	// A truncate by name, then a replacement (O_TRUNC), the reader still open.
	if err := os.Truncate(p, 4); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "one\n" {
		t.Errorf("after truncate the file reads %q, %v", b, err)
	}
	if err := os.WriteFile(p, []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Seek(0, 0)
	if got := readAll(t, r); got != "new\n" {
		t.Errorf("the reader reads %q after the replacement", got)
	}
	e.settle()
	if got := string(e.serviceBytes("log.txt")); got != "new\n" {
		t.Errorf("the service holds %q", got)
	}
	// What was cached of the first version did not take the changes: a new
	// open reads the service's current version.
	r.Close()
	if b, err := os.ReadFile(p); err != nil || string(b) != "new\n" {
		t.Errorf("reopened: %q, %v", b, err)
	}
}

// An open the daemon serves (a writer that has not written, a reader of
// content not whole in the cache) and a reader of cached content share a
// file: the kernel refuses passthrough beside another open (EIO), so the
// reader is served by the daemon too.
func TestPassthroughBesideOtherOpens(t *testing.T) {
	e := newEnv(t, envOptions{})
	needPassthrough(t, e)
	e.put(0, e.root(0), "shared.txt", []byte("content"))
	p := e.Path("shared", "shared.txt")
	if b, err := os.ReadFile(p); err != nil || string(b) != "content" {
		t.Fatalf("read %q, %v", b, err)
	}
	w, err := os.OpenFile(p, os.O_WRONLY, 0) // served by the daemon, nothing staged yet
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 3 {
		b, err := os.ReadFile(p)
		if err != nil || string(b) != "content" {
			t.Fatalf("read %d beside a writer: %q, %v", i, b, err)
		}
	}
	if _, err := w.WriteAt([]byte("C"), 0); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "Content" {
		t.Fatalf("read after the write: %q, %v", b, err)
	}
	w.Close()
	e.settle()
	// And the other way: a reader in passthrough first, then a writer that
	// opens with O_TRUNC, then readers.
	r, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatalf("replacing a file open for reading: %v", err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "x" {
		t.Fatalf("read after the replacement: %q, %v", b, err)
	}
}

// A file open in passthrough renamed, alone or with its folder, is one the
// kernel still reads and writes through that open's file: its staging copy
// under the new name is that file, so new opens and writers go on with it.
func TestPassthroughFileRenamedWhileOpen(t *testing.T) {
	e := newEnv(t, envOptions{})
	needPassthrough(t, e)
	dir := e.mkdir(0, e.root(0), "d")
	e.put(0, dir, "a.txt", []byte("a1\n"))
	e.put(0, e.root(0), "b.txt", []byte("b1\n"))
	for _, name := range []string{"d/a.txt", "b.txt"} {
		if _, err := os.ReadFile(e.Path("shared", name)); err != nil { // now in the cache
			t.Fatal(err)
		}
	}
	ra, err := os.Open(e.Path("shared", "d", "a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := os.Open(e.Path("shared", "b.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	if err := os.Rename(e.Path("shared", "b.txt"), e.Path("shared", "b2.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(e.Path("shared", "d"), e.Path("shared", "d2")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		r          *os.File
		path, want string
	}{{rb, "b2.txt", "b1\nb2\n"}, {ra, "d2/a.txt", "a1\na2\n"}} {
		p := e.Path("shared", c.path)
		if b, err := os.ReadFile(p); err != nil || string(b) != c.want[:3] {
			t.Errorf("%s renamed reads %q, %v", c.path, b, err)
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatalf("opening %s renamed for writing: %v", c.path, err)
		}
		f.WriteString(c.want[3:])
		f.Close()
		if got := readAll(t, c.r); got != c.want {
			t.Errorf("the reader of %s read %q", c.path, got)
		}
	}
	e.settle()
	for _, c := range []struct{ path, want string }{{"b2.txt", "b1\nb2\n"}, {"d2/a.txt", "a1\na2\n"}} {
		if got := string(e.serviceBytes(c.path)); got != c.want {
			t.Errorf("the service holds %q at %s", got, c.path)
		}
	}
	if _, ok := e.serviceFile("b.txt"); ok {
		t.Error("b.txt is still on the service")
	}
}

// An upload that ends while the file is open (here a reader of the pending
// file) retires at the last close, and its content becomes the cache's file
// of the version it made, as when nobody holds it: the file stays readable
// beside a reader in passthrough, and is not downloaded again.
func TestPassthroughUploadEndsWhileOpen(t *testing.T) {
	e := newEnv(t, envOptions{})
	needPassthrough(t, e)
	e.put(0, e.root(0), "grow.txt", []byte("one\n"))
	p := e.Path("shared", "grow.txt")
	if b, err := os.ReadFile(p); err != nil || string(b) != "one\n" {
		t.Fatalf("read %q, %v", b, err)
	}
	r, err := os.Open(p) // in passthrough, open throughout
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString("two\n")
	r2, err := os.Open(p) // a reader of the pending file
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	e.settle() // uploaded while r2 holds it
	r2.Close() // the last close retires it
	gets := e.objectGets()
	for i := range 3 {
		b, err := os.ReadFile(p)
		if err != nil || string(b) != "one\ntwo\n" {
			t.Fatalf("read %d after the upload: %q, %v", i, b, err)
		}
	}
	if n := e.objectGets() - gets; n != 0 {
		t.Errorf("%d downloads of a file uploaded from here", n)
	}
	if got := readAll(t, r); got != "one\ntwo\n" {
		t.Errorf("the first reader read %q", got)
	}
}

// A file made here is written through the daemon, not in passthrough: a
// mapping of a file open in passthrough holds the local file, so its writes
// after the close would reach the daemon never.
func TestPassthroughNotForNewFiles(t *testing.T) {
	e := newEnv(t, envOptions{WriteBack: time.Hour})
	needPassthrough(t, e)
	data := testkit.RandBytes(3<<20+5, 9)
	p := e.Path("shared", "new.bin")
	_, opens := e.fsys.PassthroughMode()
	before := e.fsys.KernelRequests()
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if after := e.fsys.KernelRequests(); after.Writes == before.Writes {
		t.Error("no write reached the daemon")
	}
	if _, now := e.fsys.PassthroughMode(); now != opens {
		t.Errorf("passthrough opens %d, then %d", opens, now)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := e.Store.Staging.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.serviceBytes("new.bin"); sum(got) != sum(data) {
		t.Errorf("the service holds %d bytes, not what was written", len(got))
	}
}
