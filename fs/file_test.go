package fs

// Tests of files (file.go): attributes that follow the listing, staging for
// writing, truncation and times set.

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/testkit"
	"github.com/orgfs/orgfs/place"
)

func TestKnownInodeFollowsListingAndShortObjectIsAnError(t *testing.T) {
	e := newEnv(t, envOptions{})
	root := e.root(0)
	data := testkit.RandBytes(3000, 1)
	e.put(0, root, "grow.bin", data)
	f, err := os.Open(e.Path("shared", "grow.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files, _ := e.Client.SharedFiles(t.Context(), api.ListFilesRequest{}).Collect()
	rec := files[0]
	// The service lists the same file (same id) with another size and time.
	rec.Size, rec.LastModified = 9000, rec.LastModified.Add(time.Minute)
	e.Store.Dirs.Put(place.DirKey{Area: place.Area{Kind: place.Shared}}, rec)
	// The cache tells the kernel in the background (fs/kernel.go).
	var st os.FileInfo
	testkit.WaitFor(t, 5*time.Second, "stat to show the listing's size", func() bool {
		st, err = os.Stat(e.Path("shared", "grow.bin"))
		return err == nil && st.Size() == 9000
	})
	fst, err := f.Stat()
	if err != nil || fst.Size() != 9000 || !fst.ModTime().Equal(rec.LastModified) {
		t.Fatalf("fstat of the open file: size %d mtime %v (%v); the known inode was not updated", fst.Size(), fst.ModTime(), err)
	}
	// The object holds 3000 bytes, the listing says 9000: reading past the
	// object's end is an error, never a silent short file: ESTALE, as for
	// any version changed under an open descriptor (it was EIO before the
	// many-writers work).
	g, err := os.Open(e.Path("shared", "grow.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	_, err = io.ReadAll(g)
	if !errors.Is(err, syscall.ESTALE) {
		t.Fatalf("reading a file shorter than listed: %v, want ESTALE", err)
	}
}

// A listing's news told late, after this mount's own edit of the file (an
// upload that ended put its record in the listing), does not bring back the
// record from before the edit: the file node refuses a record older than
// the one it holds (cache.Listing.Seq). Its goroutine once ran that late
// under load and stat showed the size from before an upload.
func TestLateListingNewsDoesNotUndoAnEdit(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.put(0, e.root(0), "late.bin", testkit.RandBytes(3000, 1))
	key := place.DirKey{Area: place.Area{Kind: place.Shared}}
	p := e.Path("shared", "late.bin")
	if st, err := os.Stat(p); err != nil || st.Size() != 3000 {
		t.Fatalf("stat: %v, %v", st, err)
	}
	old, err := e.Store.Dirs.List(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(old.Files, func(f api.File) bool { return f.Name == "late.bin" })
	if i < 0 {
		t.Fatal("late.bin is not listed")
	}
	rec := old.Files[i]
	edited := rec
	edited.Size, edited.LastModified = 9000, rec.LastModified.Add(time.Minute)
	e.Store.Dirs.Put(key, edited) // as an upload's end does
	testkit.WaitFor(t, 5*time.Second, "stat to show the edit", func() bool {
		st, err := os.Stat(p)
		return err == nil && st.Size() == 9000
	})
	e.fsys.dirNode(key).tellKernel("late.bin", rec, old.Fetched, old.Seq) // the old listing's news, late
	if st, err := os.Stat(p); err != nil || st.Size() != 9000 {
		t.Fatalf("stat after the late news of the listing from before the edit: size %d (%v), want 9000", st.Size(), err)
	}
	if v, err := e.Store.Dirs.List(t.Context(), key); err != nil || v.Seq <= old.Seq {
		t.Fatalf("the edited listing's number %d, the old one's %d (%v)", v.Seq, old.Seq, err)
	}
}

func TestEditInPlace(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := e.Path("shared", "doc.txt")
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
	tmp := e.Path("shared", ".doc.txt.swp")
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

// Review finding 2 (fixed): two concurrent opens for writing of an uploaded
// file, each writing two bytes: both succeed, and the service ends up with
// the whole 40 MiB, byte for byte, with both writers' bytes in it.
func TestWriteReviewTwoWritersOfUploadedFile(t *testing.T) {
	e := newEnv(t, envOptions{})
	big := testkit.RandBytes(40<<20, 7)
	if err := os.WriteFile(e.Path("shared", "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	e.settle()
	e.unmount()
	e.Mount() // content not in the kernel's cache
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if i == 1 {
				time.Sleep(30 * time.Millisecond)
			}
			f, err := os.OpenFile(e.Path("shared", "big.bin"), os.O_RDWR, 0)
			if err != nil {
				errs[i] = err
				return
			}
			_, errs[i] = f.WriteAt([]byte{'W', byte('0' + i)}, int64(i*10))
			if err := f.Close(); errs[i] == nil {
				errs[i] = err
			}
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	e.settle()
	got := e.serviceBytes("big.bin")
	want := append([]byte(nil), big...)
	copy(want[0:], "W0")
	copy(want[10:], "W1")
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("the service holds %d bytes, want %d; first difference at offset %d", len(got), len(want), i)
	}
}

// Review finding 4 (fixed): mtime set by utimes survives a fresh listing.
func TestWriteReviewMtimeAfterRelist(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := e.Path("shared", "m.txt")
	os.WriteFile(p, []byte("m"), 0o644)
	when := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	os.Chtimes(p, when, when)
	e.settle()
	fi, _ := os.Stat(p)
	t.Logf("after upload: %v", fi.ModTime().UTC())
	e.Store.Dirs.DropAll()
	time.Sleep(1200 * time.Millisecond)
	fi, _ = os.Stat(p)
	t.Logf("after relist: %v", fi.ModTime().UTC())
	if !fi.ModTime().Equal(when) {
		t.Errorf("mtime lost after relisting")
	}
}

// A time set on a file just uploaded (its record still the mount's own, not
// yet listed by the service) survives the first real listing.
func TestMtimeSetAfterUploadSurvivesRelist(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := e.Path("shared", "late.txt")
	os.WriteFile(p, []byte("late"), 0o644)
	e.settle()
	when := time.Date(2002, 3, 4, 5, 6, 7, 0, time.UTC)
	if err := os.Chtimes(p, when, when); err != nil {
		t.Fatal(err)
	}
	e.Store.Dirs.DropAll()
	time.Sleep(1200 * time.Millisecond) // the kernel's attributes expire
	if fi, err := os.Stat(p); err != nil || !fi.ModTime().Equal(when) {
		t.Fatalf("mtime after the first real listing: %v, %v; want %v", fi.ModTime().UTC(), err, when)
	}
}

// An open for writing without O_TRUNC of a file on the service fetches
// nothing; its first write fetches the whole content (the write waits for
// it), once, into the staging copy; a file whose content is in the cache is
// copied from there, with no request. An open closed without a write stages
// and sends nothing.
func TestOpenForWritingFetchesAtTheFirstWrite(t *testing.T) {
	const size = 6 << 20
	e := newEnv(t, envOptions{})
	data := testkit.RandBytes(size, 4)
	e.put(0, e.root(0), "cold.bin", data)
	e.put(0, e.root(0), "warm.bin", data)
	untouched := e.put(0, e.root(0), "untouched.bin", data)
	if b, err := os.ReadFile(e.Path("shared", "warm.bin")); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("reading warm.bin: %v", err)
	}
	sent := func() int64 { return e.Emu.Stats().Objects.BytesOut }
	urls := func() int64 { return e.Requests("POST /files/download") }

	before, beforeURLs := sent(), urls()
	f, err := os.OpenFile(e.Path("shared", "cold.bin"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, u := sent()-before, urls()-beforeURLs; n != 0 || u != 0 {
		t.Errorf("the open for writing fetched %d bytes (%d URL requests), want none", n, u)
	}
	if _, err := f.WriteAt([]byte("EDIT"), 100); err != nil {
		t.Fatal(err)
	}
	if n := sent() - before; n != size {
		t.Errorf("the first write fetched %d bytes, want the whole file's %d", n, size)
	}
	if _, err := f.WriteAt([]byte("MORE"), 5<<20); err != nil {
		t.Fatal(err)
	}
	if n := sent() - before; n != size {
		t.Errorf("after a second write %d bytes fetched, want %d: the content once", n, size)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	before, beforeURLs = sent(), urls()
	g, err := os.OpenFile(e.Path("shared", "warm.bin"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := g.WriteAt([]byte("EDIT"), 100); err != nil {
		t.Fatal(err)
	}
	if n, u := sent()-before, urls()-beforeURLs; n != 0 || u != 0 {
		t.Errorf("the first write to a file whose content is cached fetched %d bytes (%d URL requests), want none", n, u)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}

	// Opened and closed without a write: nothing staged, nothing sent.
	before = sent()
	h, err := os.OpenFile(e.Path("shared", "untouched.bin"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if n := sent() - before; n != 0 {
		t.Errorf("an open for writing closed without a write fetched %d bytes", n)
	}
	if names := e.stagedNames(); slices.Contains(names, "untouched.bin") {
		t.Errorf("staged %q: the file opened for writing and closed without a write among them", names)
	}
	e.settle()
	if f, ok := e.serviceFile("untouched.bin"); !ok || f.ID != untouched {
		t.Errorf("the file opened for writing and closed without a write was uploaded again (%+v)", f)
	}
	want := slices.Clone(data)
	copy(want[100:], "EDIT")
	if got := e.serviceBytes("warm.bin"); !bytes.Equal(got, want) {
		t.Error("warm.bin on the service is not the content with the edit")
	}
	copy(want[5<<20:], "MORE")
	if got := e.serviceBytes("cold.bin"); !bytes.Equal(got, want) {
		t.Error("cold.bin on the service is not the content with the edits")
	}
}
