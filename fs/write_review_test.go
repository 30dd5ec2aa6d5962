package fs

// Regression tests from the review of the write path: each failed before its fix.

import (
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Review finding 1 (fixed): mv of an uploaded file, then append to the new name at once.
func TestWriteReviewRenameUploadedThenAppend(t *testing.T) {
	e := newEnv(t, envOptions{})
	os.WriteFile(e.path("shared", "a.txt"), []byte("one\n"), 0o644)
	e.settle()
	if err := os.Rename(e.path("shared", "a.txt"), e.path("shared", "b.txt")); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(e.path("shared", "b.txt"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("two\n")
	f.Close()
	e.settle()
	t.Logf("b.txt on service = %q", e.serviceBytes("b.txt"))
	if _, ok := e.serviceFile("a.txt"); ok {
		t.Errorf("a.txt resurrected on the service: %q", e.serviceBytes("a.txt"))
	}
	if got := string(e.serviceBytes("b.txt")); got != "one\ntwo\n" {
		t.Errorf("b.txt = %q, want one two", got)
	}
}

// Review finding 2 (fixed): two concurrent opens for writing of an uploaded file.
func TestWriteReviewTwoWritersOfUploadedFile(t *testing.T) {
	e := newEnv(t, envOptions{})
	big := randomData(40<<20, 7)
	os.WriteFile(e.path("shared", "big.bin"), big, 0o644)
	e.settle()
	e.unmount()
	e.mount() // content not in the kernel's cache
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if i == 1 {
				time.Sleep(30 * time.Millisecond)
			}
			f, err := os.OpenFile(e.path("shared", "big.bin"), os.O_RDWR, 0)
			if err != nil {
				errs[i] = err
				return
			}
			_, errs[i] = f.WriteAt([]byte{'W', byte('0' + i)}, int64(i*10))
			f.Close()
		}(i)
	}
	wg.Wait()
	t.Logf("errs %v", errs)
	e.settle()
	got := e.serviceBytes("big.bin")
	want := append([]byte(nil), big...)
	copy(want[0:], "W0")
	copy(want[10:], "W1")
	if len(got) != len(want) {
		t.Fatalf("size %d want %d", len(got), len(want))
	}
	t.Logf("got[0:2]=%q got[10:12]=%q", got[0:2], got[10:12])
	if string(got[0:2]) != "W0" || string(got[10:12]) != "W1" {
		t.Errorf("a writer's bytes were lost")
	}
}

// Review finding 3 (fixed): recreate a name whose old inode is still held open; read it back.
func TestWriteReviewRecreateWhileOldHeld(t *testing.T) {
	e := newEnv(t, envOptions{writeBack: 5 * time.Second})
	p := e.path("shared", "x.txt")
	os.WriteFile(p, []byte("first"), 0o644)
	old, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("second!"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // past the entry timeout
	var st syscall.Stat_t
	serr := syscall.Stat(p, &st)
	t.Logf("stat: %v size %d", serr, st.Size)
	b, err := os.ReadFile(p)
	t.Logf("read back: %q %v", b, err)
	if string(b) != "second!" || st.Size != 7 {
		t.Errorf("pending file not readable / wrong size")
	}
}

// Review finding 4 (fixed): mtime set by utimes survives a fresh listing.
func TestWriteReviewMtimeAfterRelist(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := e.path("shared", "m.txt")
	os.WriteFile(p, []byte("m"), 0o644)
	when := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	os.Chtimes(p, when, when)
	e.settle()
	fi, _ := os.Stat(p)
	t.Logf("after upload: %v", fi.ModTime().UTC())
	e.dirs.DropAll()
	time.Sleep(1200 * time.Millisecond)
	fi, _ = os.Stat(p)
	t.Logf("after relist: %v", fi.ModTime().UTC())
	if !fi.ModTime().Equal(when) {
		t.Errorf("mtime lost after relisting")
	}
}

// Review finding 5 (fixed): mv of a pending file into another folder, fd kept; after upload fstat.
func TestWriteReviewMovePendingAcrossDirs(t *testing.T) {
	e := newEnv(t, envOptions{})
	os.Mkdir(e.path("shared", "d"), 0o755)
	f, err := os.Create(e.path("shared", "p.txt"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("hello")
	if err := os.Rename(e.path("shared", "p.txt"), e.path("shared", "d", "q.txt")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	e.settle()
	// same inode via the kernel (within the entry timeout) and via the fd
	b, err := os.ReadFile(e.path("shared", "d", "q.txt"))
	t.Logf("read: %q %v", b, err)
	g, _ := os.Open(e.path("shared", "d", "q.txt"))
	if g != nil {
		fi, _ := g.Stat()
		t.Logf("fstat size %d", fi.Size())
		g.Close()
	}
	if string(b) != "hello" {
		t.Errorf("read back after move+upload: %q %v", b, err)
	}
}

// P1b: like P1 but the node has seen its uploaded record (stat) before the mv.
func TestWriteReviewRenameUploadedThenAppendB(t *testing.T) {
	e := newEnv(t, envOptions{})
	os.WriteFile(e.path("shared", "a.txt"), []byte("one\n"), 0o644)
	e.settle()
	os.Stat(e.path("shared", "a.txt"))
	if err := os.Rename(e.path("shared", "a.txt"), e.path("shared", "b.txt")); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(e.path("shared", "b.txt"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("two\n")
	f.Close()
	e.settle()
	if _, ok := e.serviceFile("a.txt"); ok {
		t.Errorf("a.txt resurrected on the service: %q", e.serviceBytes("a.txt"))
	}
	if got := string(e.serviceBytes("b.txt")); got != "one\ntwo\n" {
		t.Errorf("b.txt = %q, want one two", got)
	}
}

// Review finding 6 (fixed): a failed rename of an uploaded file over a pending one destroys the pending one.
func TestWriteReviewFailedRenameOverPending(t *testing.T) {
	e := newEnv(t, envOptions{writeBack: 3 * time.Second})
	id := e.put(0, 0, "a.txt", []byte("service"))
	os.ReadDir(e.path("shared")) // listing cached with a.txt
	os.WriteFile(e.path("shared", "b.txt"), []byte("precious"), 0o644)
	if err := e.client.DeleteFile(t.Context(), id); err != nil { // someone else deleted a.txt meanwhile
		t.Fatal(err)
	}
	err := os.Rename(e.path("shared", "a.txt"), e.path("shared", "b.txt"))
	t.Logf("rename: %v", err)
	b, rerr := os.ReadFile(e.path("shared", "b.txt"))
	t.Logf("b.txt after failed rename: %q %v", b, rerr)
	e.settle()
	_, ok := e.serviceFile("b.txt")
	t.Logf("b.txt on service: %v", ok)
	if err != nil && (!ok || string(e.serviceBytes("b.txt")) != "precious") {
		t.Errorf("rename failed yet b.txt's pending content is gone")
	}
}
