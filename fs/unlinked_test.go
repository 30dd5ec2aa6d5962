package fs

// Tests of files unlinked while open (unlinked.go).

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/orgfs/orgfs/internal/testkit"
)

// TestUnlinkWhileOpenForReading: as POSIX has it, a file unlinked while open
// loses its name at once and stays readable through the open descriptor; it
// goes from the service at the last close (or when the mount ends).
func TestUnlinkWhileOpenForReading(t *testing.T) {
	e := newEnv(t, envOptions{})
	data := testkit.RandBytes(3<<20+123, 7) // more than one block: not all fetched at the first read
	e.put(0, e.root(0), "open.bin", data)
	e.put(0, e.root(0), "kept-open.bin", []byte("until the end"))
	f, err := os.Open(e.Path("shared", "open.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 100)
	if _, err := io.ReadFull(f, head); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(e.Path("shared", "open.bin")); err != nil {
		t.Fatalf("rm of a file open for reading: %v", err)
	}
	if _, err := os.Stat(e.Path("shared", "open.bin")); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("stat after rm: %v, want ENOENT", err)
	}
	ents, _ := os.ReadDir(e.Path("shared"))
	if slices.ContainsFunc(ents, func(d os.DirEntry) bool { return d.Name() == "open.bin" }) {
		t.Fatal("listed after rm")
	}
	if _, ok := e.serviceFile("open.bin"); !ok {
		t.Fatal("deleted from the service while still open")
	}
	rest, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(append(head, rest...), data) {
		t.Fatalf("read through the open descriptor after rm: %d bytes, %v", len(head)+len(rest), err)
	}
	f.Close()
	testkit.WaitFor(t, 10*time.Second, "the deletion at the last close", func() bool {
		_, ok := e.serviceFile("open.bin")
		return !ok
	})

	// Still open when the mount ends (a daemon told to end while programs
	// hold files): deleted then, as orgfs mount calls DeleteUnlinked.
	g, err := os.Open(e.Path("shared", "kept-open.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := os.Remove(e.Path("shared", "kept-open.bin")); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.serviceFile("kept-open.bin"); !ok {
		t.Fatal("deleted from the service while still open")
	}
	e.fsys.DeleteUnlinked()
	if _, ok := e.serviceFile("kept-open.bin"); ok {
		t.Fatal("a file unlinked while open is still on the service after DeleteUnlinked")
	}
}

// TestUnlinkWhileOpenPending: a pending file unlinked while open reads and
// writes on through its descriptor, and nothing of it reaches the service.
func TestUnlinkWhileOpenPending(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := e.Path("shared", "scratch.txt")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("before rm;"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(" after rm"); err != nil {
		t.Fatalf("write after rm: %v", err)
	}
	got := make([]byte, 100)
	n, err := f.ReadAt(got, 0)
	if err != nil && err != io.EOF || string(got[:n]) != "before rm; after rm" {
		t.Fatalf("read after rm: %q, %v", got[:n], err)
	}
	f.Close()
	e.settle()
	if _, ok := e.serviceFile("scratch.txt"); ok {
		t.Fatal("an unlinked pending file reached the service")
	}
}

// TestUnlinkWhileOpenThenCreateAgain: a new file of the name is a file of
// its own, whatever the old descriptor still does.
func TestUnlinkWhileOpenThenCreateAgain(t *testing.T) {
	e := newEnv(t, envOptions{})
	p := e.Path("shared", "again.txt")
	old, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	old.WriteString("old content, longer")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "new" {
		t.Fatalf("the new file reads %q, %v", b, err)
	}
	got := make([]byte, 100)
	n, _ := old.ReadAt(got, 0)
	if string(got[:n]) != "old content, longer" && string(got[:n]) != "old" {
		t.Fatalf("the old descriptor reads %q", got[:n])
	}
	old.Close()
	e.settle()
	if b := e.serviceBytes("again.txt"); string(b) != "new" {
		t.Fatalf("service has %q", b)
	}
}
